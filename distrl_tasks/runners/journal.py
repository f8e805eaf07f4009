"""A per-episode journal, so a collection killed half-way keeps what it finished.

The collect stage writes its shards once, at the end of the round. Without more, a worker killed
mid-round (a preempted machine, a SIGKILLed Celery worker) loses every trajectory it had
finished, and the retry collects them again: different trajectories, the same round. The
journal closes that gap: every finished episode is written at once as its own small verified
shard (atomic, checksummed: :func:`~distrl_tasks.data.shards.write_shard`), and a retry of the
same (round, worker) reads them back and skips those episodes, so each trajectory finished
before the kill ends up in the round's shards exactly once, as it was collected.

An entry is matched by trajectory id, which is deterministic in (round, device, episode index),
and must have the goal the retry's plan gives that slot; anything else (a half-written file, a
changed plan) is dropped and re-collected. The journal also keeps the settings its episodes were
collected under (:func:`distrl_tasks.stages.collect.recorded_under`), so a retry under other
ones is refused instead of mixing two worlds in one round. The stage clears the journal once the
round's manifest is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from distrl_tasks.data.shards import MANIFEST_SUFFIX, read_verified, verify_shards, write_shard
from distrl_tasks.protocol.files import atomic_write_json
from distrl_tasks.runners.trajectory import TRUNCATED, Episode


def journal_dir(shard_dir: str | os.PathLike, round_: int, worker: int, split: str) -> Path:
    """Where (round, worker, split)'s journal lives: a hidden folder beside the shards it will
    become (shard readers look at files only, never into folders), so it is on the same disk
    as they are, wherever the retry runs."""
    return Path(shard_dir) / ".journal" / f"r{round_:06d}-w{worker:02d}-{split}"


SETTINGS_FILE = "recorded_under.json"  # not a shard: the verifier passes over it


def _entry_name(trajectory_id: str) -> str:
    # device serials may hold ':' (network devices); shard names may not
    return "ep-" + hashlib.sha256(trajectory_id.encode()).hexdigest()[:24]


class EpisodeJournal:
    """Finished episodes of one (round, worker), one verified shard each.

    Args:
        directory: the journal's directory (:func:`journal_dir`).
        round_: the round every entry belongs to.
        feature_dim: size of ``image_features`` in the rows.
        gamma: discount the labeled rows' ``mc_return`` must match.
        settings: what the episodes are collected under, written beside the first entry
            (``None``: nothing is written, and nothing can be checked on a retry).
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        round_: int,
        feature_dim: int,
        gamma: float,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.round = round_
        self.feature_dim = feature_dim
        self.gamma = gamma
        self.settings = dict(settings) if settings is not None else None
        self._lock = threading.Lock()  # device threads finish episodes concurrently
        self._settings_written = False
        self.recorded = 0

    def recorded_settings(self) -> dict[str, Any] | None:
        """The settings an earlier attempt journaled episodes under; ``None`` when the journal
        holds no episode or was written before settings were kept (taken as it is)."""
        path = self.directory / SETTINGS_FILE
        if not path.is_file() or not any(self.directory.glob("*.parquet")):
            return None
        return json.loads(path.read_text())

    def record(self, episode: Episode) -> None:
        """Write a finished episode (no-op for one without rows: nothing to keep)."""
        if not episode.rows:
            return
        with self._lock:  # the settings go down before the first entry can
            if self.settings is not None and not self._settings_written:
                atomic_write_json(self.directory / SETTINGS_FILE, self.settings)
                self._settings_written = True
        write_shard(
            episode.rows,
            self.directory,
            round=self.round,
            name=_entry_name(episode.trajectory_id),
            feature_dim=self.feature_dim,
            gamma=self.gamma,
            overwrite=True,
        )
        with self._lock:
            self.recorded += 1

    def load(self, planned: Mapping[str, str]) -> dict[str, Episode]:
        """The journaled episodes whose id and goal the plan ``planned`` (id -> goal) holds.

        Broken entries are quarantined by the shard verifier and come back as missing; entries
        the plan does not hold (another plan, e.g. after a config change) are deleted.
        """
        if not self.directory.is_dir():
            return {}
        report = verify_shards(self.directory, temp_grace_s=0.0)
        if not report.shards:
            return {}
        table = read_verified(report.shards)
        by_id: dict[str, list[dict]] = {}
        for row in table.to_pylist():
            by_id.setdefault(row["trajectory_id"], []).append(row)
        kept: dict[str, Episode] = {}
        for tid, rows in by_id.items():
            rows.sort(key=lambda r: r["step"])
            if planned.get(tid) != rows[0]["task"]:
                name = _entry_name(tid)
                for suffix in (".parquet", MANIFEST_SUFFIX):
                    (self.directory / f"{name}{suffix}").unlink(missing_ok=True)
                continue
            kept[tid] = episode_from_rows(rows)
        return kept

    def clear(self) -> None:
        """Remove the journal (the round's shards and manifest hold everything now), and the
        ``.journal`` folder with it once no other journal is in it."""
        shutil.rmtree(self.directory, ignore_errors=True)
        with contextlib.suppress(OSError):  # not empty: another worker's journal is in it
            self.directory.parent.rmdir()


def episode_from_rows(rows: Sequence[dict]) -> Episode:
    """The :class:`Episode` a journaled trajectory's rows describe."""
    first, last = rows[0], rows[-1]
    labeled = first["label_status"] == "labeled"
    truncated = first["evaluator"] == TRUNCATED
    return Episode(
        trajectory_id=first["trajectory_id"],
        goal=first["task"],
        device=first["device"],
        rows=list(rows),
        success=bool(last["trajectory_reward"]) if labeled else None,
        error="truncated before the journal's restart" if truncated else "",
        reason="journal",
    )
