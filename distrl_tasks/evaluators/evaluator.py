"""The evaluator interface: judge whether a trajectory's final screen completes its goal.

An evaluator answers with a :class:`Verdict`. Only ``success`` and ``failure`` are labels; an
``unlabeled`` verdict means "no answer yet" (the service refused, timed out, or replied with
something unparseable) and must be retried later, never counted as a failure.
"""

from __future__ import annotations

import asyncio
import os
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from distrl_tasks.config import ConfigError
from distrl_tasks.protocol.progress import progress_bar

API_KEY_ENV = "GEMINI_API_KEY"  # where the Gemini key is read from, first
GEMINI_CONNECTION = "gemini_default"  # the Airflow connection whose password is the key


class MissingApiKeyError(ConfigError):
    """Labeling needs a Gemini API key and none was found (a configuration error)."""


def require_labeling_key(cfg: Any, api_key: str | None = None) -> None:
    """Fail before any work when ``evaluator.kind`` is gemini and there is no key to label with.

    Args:
        cfg: the project config.
        api_key: a key found elsewhere (an Airflow connection); else ``GEMINI_API_KEY``.

    Raises:
        MissingApiKeyError: naming both places a key can come from.
    """
    if cfg.evaluator.kind != "gemini":
        return
    key = api_key if api_key is not None else os.environ.get(API_KEY_ENV, "")
    if not key.strip():
        raise MissingApiKeyError(
            "evaluator.kind is 'gemini' but no Gemini API key was found: set "
            f"{API_KEY_ENV} in the environment, or (under Airflow) define the connection "
            f"'{GEMINI_CONNECTION}' with the key as its password"
        )


Status = Literal["success", "failure", "unlabeled"]
STATUSES: tuple[str, ...] = ("success", "failure", "unlabeled")


@dataclass(frozen=True)
class Verdict:
    """One judgement of one trajectory, with what it cost to obtain.

    Attributes:
        status: ``success``, ``failure`` or ``unlabeled`` (no usable answer; retry later).
        reason: why: the model's explanation, or what went wrong when unlabeled.
        evaluator: which evaluator produced it, e.g. ``gemini:gemini-1.5-pro``.
        calls: 1 when the label needed the API (0 on a cache hit or for a local evaluator).
        attempts: HTTP requests sent, retries included.
        latency_s: wall time of the whole judgement, waits and retries included.
        prompt_tokens: input tokens reported by the service (summed over answered attempts).
        response_tokens: output tokens reported by the service.
        cost_usd: estimated price of those tokens.
        cache_hit: the verdict came from the response cache.
        raw_text: the model's raw answer, when there was one.
    """

    status: Status
    reason: str = ""
    evaluator: str = ""
    calls: int = 0
    attempts: int = 0
    latency_s: float = 0.0
    prompt_tokens: int = 0
    response_tokens: int = 0
    cost_usd: float = 0.0
    cache_hit: bool = False
    raw_text: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Verdict.status must be one of {STATUSES}, got {self.status!r}")

    @property
    def reward(self) -> float | None:
        """1.0 for success, 0.0 for failure, ``None`` when unlabeled (not a zero reward)."""
        if self.status == "success":
            return 1.0
        if self.status == "failure":
            return 0.0
        return None

    @property
    def labeled(self) -> bool:
        """Whether this verdict is a usable label."""
        return self.status != "unlabeled"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (for manifests and Parquet columns), ``reward`` included."""
        out = asdict(self)
        out["reward"] = self.reward
        return out


def unlabeled(reason: str, **usage: Any) -> Verdict:
    """Shorthand for a verdict that carries no label, only the reason it has none."""
    return Verdict(status="unlabeled", reason=reason, **usage)


class Evaluator(ABC):
    """Judges trajectories. Subclasses implement :meth:`judge`; batching comes for free."""

    name: str = "evaluator"

    @abstractmethod
    async def judge(self, goal: str, screenshots: Sequence[bytes]) -> Verdict:
        """Judge whether the final screenshot(s) of a trajectory complete ``goal``.

        Args:
            goal: the task instruction, e.g. ``"Set an alarm for 6pm"``.
            screenshots: PNG/JPEG bytes of the trajectory's observations, oldest first; an
                evaluator looks at the last one (or the last few).

        Returns:
            The verdict. Transient trouble yields ``unlabeled``, never an exception.
        """

    async def judge_many(
        self, items: Sequence[tuple[str, Sequence[bytes]]], *, progress: bool = False
    ) -> list[Verdict]:
        """Judge many trajectories concurrently; results keep the order of ``items``."""
        bar = progress_bar(
            total=len(items), desc=f"label[{self.name}]", unit="traj", enabled=progress
        )

        async def one(goal: str, shots: Sequence[bytes]) -> Verdict:
            verdict = await self.judge(goal, shots)
            bar.update(1)
            return verdict

        try:
            return list(await asyncio.gather(*(one(g, s) for g, s in items)))
        finally:
            bar.close()

    def label_many(
        self, items: Iterable[tuple[str, Sequence[bytes]]], *, progress: bool = True
    ) -> list[Verdict]:
        """Synchronous batch labeling with a progress bar (for stages and the CLI).

        Args:
            items: ``(goal, screenshots)`` pairs.
            progress: show a tqdm bar.

        Raises:
            RuntimeError: called from inside a running event loop (use :meth:`judge_many`).
        """
        items = [_check_item(i, item) for i, item in enumerate(items)]
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.judge_many(items, progress=progress))
        raise RuntimeError(
            "label_many() cannot run inside an event loop; await judge_many() instead"
        )


def _check_item(index: int, item: Any) -> tuple[str, Sequence[bytes]]:
    """Validate one ``(goal, screenshots)`` pair early, with a message naming the culprit."""
    if not isinstance(item, tuple | list) or len(item) != 2:
        raise TypeError(f"item {index}: expected a (goal, screenshots) pair, got {item!r:.80}")
    goal, shots = item
    if not isinstance(goal, str) or not goal.strip():
        raise ValueError(f"item {index}: goal must be a non-empty string, got {goal!r:.80}")
    if isinstance(shots, bytes | bytearray) or not all(isinstance(s, bytes) for s in shots):
        raise TypeError(f"item {index}: screenshots must be a list of image bytes")
    return goal, list(shots)
