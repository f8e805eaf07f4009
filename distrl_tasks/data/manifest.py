"""A shard's files on disk: the manifest record beside the Parquet file and its checksums.

Manifests are written with :func:`distrl_tasks.protocol.files.atomic_write`, so one is either
absent (or its old version) or complete, never partial.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST_SUFFIX = ".manifest.json"


@dataclass(frozen=True)
class ShardInfo:
    """What a shard's manifest records."""

    name: str
    path: Path
    rows: int
    trajectories: int
    sha256: str
    rounds: tuple[int, ...]
    policy_versions: tuple[int, ...]
    splits: tuple[str, ...]
    feature_dim: int
    schema_version: int
    created_at: str
    gamma: float | None = None

    @property
    def manifest_path(self) -> Path:
        """Path of the manifest next to the Parquet file."""
        return self.path.with_name(self.name + MANIFEST_SUFFIX)

    def to_json(self) -> dict:
        """The manifest as a JSON-ready dict."""
        out = dataclasses.asdict(self)
        out["file"] = out.pop("path").name
        return out

    @classmethod
    def from_json(cls, data: Mapping, directory: Path) -> ShardInfo:
        """Parse a manifest dict (KeyError/TypeError/ValueError if malformed)."""
        return cls(
            name=str(data["name"]),
            path=directory / str(data["file"]),
            rows=int(data["rows"]),
            trajectories=int(data["trajectories"]),
            sha256=str(data["sha256"]),
            rounds=tuple(int(r) for r in data["rounds"]),
            policy_versions=tuple(int(v) for v in data["policy_versions"]),
            splits=tuple(str(s) for s in data["splits"]),
            feature_dim=int(data["feature_dim"]),
            schema_version=int(data["schema_version"]),
            created_at=str(data["created_at"]),
            gamma=None if data.get("gamma") is None else float(data["gamma"]),
        )


@dataclass(frozen=True)
class Quarantined:
    """A file moved out of the data directory, and why."""

    original: Path
    moved_to: Path
    reason: str


@dataclass
class VerifyReport:
    """Outcome of :func:`verify_shards`."""

    shards: list[ShardInfo] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)  # in-flight temp files, orphan manifests

    @property
    def ok(self) -> bool:
        """True when nothing had to be quarantined."""
        return not self.quarantined


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(path: Path) -> ShardInfo:
    """Parse the manifest file at ``path`` (JSON, ValueError/KeyError/TypeError if malformed)."""
    return ShardInfo.from_json(json.loads(path.read_text()), path.parent)
