"""On-disk cache of Gemini verdicts, so labeling the same screens twice costs nothing.

One small JSON file per entry, named by the key's hash, written atomically (temp file +
``os.replace``) so concurrent labelers and crashes never leave a half-written entry. Only real
labels (success/failure) are stored; unlabeled answers are retried on the next pass.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distrl_tasks.evaluators.evaluator import Verdict
from distrl_tasks.protocol.files import atomic_write_json

CACHE_FORMAT = 1


def cache_key(
    screenshots: Sequence[bytes],
    goal: str,
    prompt_version: str,
    model: str,
    downscale: int,
    endpoint: str,
) -> str:
    """Hex sha256 over the judged images' sha256s, the goal, prompt version, model, scale and
    endpoint (a test server's verdicts must never answer for the real one).

    Hashing each image separately keeps the key independent of how bytes would concatenate.
    """
    h = hashlib.sha256()
    for shot in screenshots:
        h.update(hashlib.sha256(shot).digest())
    meta = json.dumps([goal, prompt_version, model, downscale, endpoint], ensure_ascii=False)
    h.update(meta.encode("utf-8"))
    return h.hexdigest()


class VerdictCache:
    """Directory of cached verdicts (``<root>/<key[:2]>/<key>.json``).

    Args:
        root: cache directory; created on first write.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"cache key must be a 64-char hex sha256, got {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or ``None`` when absent or unreadable (a corrupt file is a miss)."""
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
            return None
        if data.get("status") not in ("success", "failure"):
            return None
        return data

    def put(self, key: str, verdict: Verdict, **meta: Any) -> Path:
        """Store a labeled verdict atomically; returns the file written.

        Raises:
            ValueError: the verdict is unlabeled (those must be retried, not remembered).
        """
        if not verdict.labeled:
            raise ValueError("unlabeled verdicts are not cached; they are retried later")
        entry = {
            "format": CACHE_FORMAT,
            "status": verdict.status,
            "reason": verdict.reason,
            "raw_text": verdict.raw_text,
            "evaluator": verdict.evaluator,
            "prompt_tokens": verdict.prompt_tokens,
            "response_tokens": verdict.response_tokens,
            "cost_usd": verdict.cost_usd,
            **meta,
        }
        path = self._path(key)
        atomic_write_json(path, entry, sort_keys=True, indent=1)
        return path

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("??/*.json")) if self.root.is_dir() else 0
