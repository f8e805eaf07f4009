"""Registered policy versions as the pipeline reads them: tags parsed, task lists keyed.

A version's success rate only means something together with the task list it was measured on;
:func:`eval_tasks_key` names a list by its length and a hash of its goals in order, and each
evaluation is kept as a tag ``eval_success_rate.<tasks key>``. :class:`VersionInfo` is the typed
view of a version's tags; :func:`format_compare_table` prints versions side by side.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

EVAL_TASKS_TAG = "eval_tasks"
STEPS_TAG = "steps"
SCORE_TAG_PREFIX = "eval_success_rate."  # + tasks key: one tag per evaluated task list
_TASKS_KEY = re.compile(r"^[A-Za-z0-9_\-.]{1,100}$")


def eval_tasks_key(goals: Sequence[str]) -> str:
    """Stable identifier of an evaluation task list: its length and a hash of its goals in order.

    >>> eval_tasks_key(["open settings"])[:3]
    'n1-'
    """
    if isinstance(goals, str) or not goals:
        raise ValueError("eval_tasks_key needs a non-empty sequence of goal strings")
    digest = hashlib.sha256("\n".join(goals).encode()).hexdigest()[:16]
    return f"n{len(goals)}-{digest}"


def check_tasks_key(key: str) -> str:
    """``key`` if it is a valid task-list key (what :func:`eval_tasks_key` returns)."""
    if not isinstance(key, str) or not _TASKS_KEY.match(key):
        raise ValueError(
            f"eval_tasks_key must be 1-100 characters of letters, digits, '_', '-', '.', "
            f"got {key!r} (use eval_tasks_key(goals))"
        )
    return key


def check_rate(rate: float) -> float:
    """``rate`` as a float in [0, 1] (NaN and values outside are errors)."""
    value = float(rate)
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"eval_success_rate must be in [0, 1], got {rate!r}")
    return value


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "") else None
    except ValueError:
        return None


def _float_or_none(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


@dataclass(frozen=True)
class VersionInfo:
    """One registered policy version, as the compare table shows it.

    Attributes:
        version: registry version number.
        run_id: the run whose artifacts hold the checkpoint.
        source: artifact URI of the checkpoint directory.
        tags: all version tags.
        aliases: aliases pointing at this version.
    """

    version: int
    run_id: str
    source: str
    tags: Mapping[str, str] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()

    @property
    def round(self) -> int | None:
        return _int_or_none(self.tags.get("round"))

    @property
    def algorithm(self) -> str:
        return self.tags.get("algorithm", "")

    @property
    def policy_version(self) -> int | None:
        return _int_or_none(self.tags.get("policy_version"))

    @property
    def data_version(self) -> str:
        return self.tags.get("data_version", "")

    @property
    def eval_success_rate(self) -> float | None:
        return _float_or_none(self.tags.get("eval_success_rate"))

    @property
    def eval_tasks(self) -> str:
        return self.tags.get(EVAL_TASKS_TAG, "")

    @property
    def steps(self) -> int | None:
        return _int_or_none(self.tags.get(STEPS_TAG))

    def score_on(self, tasks_key: str) -> float | None:
        """Success rate recorded for exactly the task list ``tasks_key`` (None if never)."""
        score = _float_or_none(self.tags.get(SCORE_TAG_PREFIX + tasks_key))
        if score is None and self.eval_tasks == tasks_key:
            score = self.eval_success_rate
        return score


def format_compare_table(rows: Sequence[VersionInfo]) -> str:
    """A fixed-width text table of versions (what ``distrl registry compare`` prints)."""
    header = ("version", "round", "algorithm", "data_version", "eval_success", "eval_tasks")
    header += ("steps", "aliases")
    table = [header]
    for r in rows:
        rate = r.eval_success_rate
        table.append(
            (
                str(r.version),
                "-" if r.round is None else str(r.round),
                r.algorithm or "-",
                r.data_version[:12] or "-",
                "-" if rate is None else f"{100 * rate:.1f}%",
                r.eval_tasks or "-",
                "-" if r.steps is None else str(r.steps),
                ",".join(r.aliases) or "-",
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)
