"""A learning-benchmark run's record and what it says at a given wall time.

:class:`RunRecord` (with its :class:`RoundPoint` rounds) is what
:mod:`distrl_tasks.bench.learning` writes for each (method, task set, seed) run, and the
functions here read it as step functions of wall time since the run's rounds started: the success
of the newest policy evaluated by then (the SFT policy's before the first round), and the
trajectories of every collection finished by then. They are kept apart from
:mod:`distrl_tasks.bench.report`, which aggregates records into tables, plots, targets and the
RESULTS.md section, because they are the data model and its time axis, with no reporting in them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

# The benchmark's defaults that moved since runs recorded their overrides against them: entry g
# holds the values, at defaults generation g, of the keys generation g + 1 moved. A record's
# overrides are relative to its generation's defaults (bench.setup.current_overrides reads them
# against today's).
DEFAULTS_BEFORE: tuple[dict[str, Any], ...] = (
    # generation 1: DistRL's continuous learner (a replay ratio, a window of 4 rounds) by default
    {
        "orchestration.continuous.replay_ratio": 0.0,
        "orchestration.continuous.replay_window_rounds": 0,
    },
    # generation 2: the tap-target pointer on, and the continuous learner in a process of its own,
    # by default
    {"agent.pointer": False, "orchestration.continuous.learner_process": False},
    # generation 3: the bootstrap's expert demonstrations recorded in the live world by default
    {"sim.dynamics.bootstrap_profile": "static"},
)
DEFAULTS_GENERATION = len(DEFAULTS_BEFORE)


@dataclass
class RoundPoint:
    """One learned round of a run, as the curves and MLflow see it."""

    round: int
    finished_s: float  # when it was registered, seconds since the rounds started
    collected_s: float  # when its collection finished
    trajectories: int  # trajectories its collection produced
    success: float  # per-round evaluation (first N test tasks), in [0, 1]
    steps: int | None = None  # the learner's optimizer steps so far (None: not recorded)


@dataclass
class RunRecord:
    """One (method, task set, seed) run of the benchmark."""

    method: str
    task_set: str
    seed: int
    budget_s: float
    final: dict[str, float]  # {"train": rate, "test": rate} of the final policy
    final_round: int  # round of the evaluated policy (0: no round finished in budget, SFT)
    rounds: list[RoundPoint] = field(default_factory=list)
    collections: list[tuple[float, int]] = field(default_factory=list)  # (finished_s, trajs)
    wall_s: float = 0.0  # the rounds' wall time, overshoot past the budget included
    eval_wall_s: float = 0.0  # final evaluations (not part of the budget)
    # bench.describe.machine_info() of the machine that ran it ({}: written before it was kept);
    # a wall-clock budget buys different work on different CPUs
    machine: dict[str, Any] = field(default_factory=dict)
    # what the run's settings change from the benchmark's defaults (bench.setup.run_overrides):
    # runs under other overrides are another row of the tables. None: written before they were
    # recorded (the reader fills them in where it can tell, see bench.export)
    overrides: dict[str, Any] | None = None
    # the defaults generation those overrides are relative to (DEFAULTS_BEFORE; 0: written
    # before the first move)
    overrides_generation: int = DEFAULTS_GENERATION
    # the SFT policy's per-round evaluation on this run's seed (its world), where its curve
    # starts; None: written before it was measured (see start_success)
    start_success: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        data = dict(data)
        data.setdefault("overrides_generation", 0)
        data["rounds"] = [RoundPoint(**r) for r in data.get("rounds", [])]
        data["collections"] = [(float(t), int(n)) for t, n in data.get("collections", [])]
        return cls(**data)

    @property
    def rounds_in_budget(self) -> int:
        return sum(r.finished_s <= self.budget_s for r in self.rounds)

    @property
    def online_updates(self) -> int | None:
        """Optimizer steps the learner took after round 0 up to the evaluated round.

        Round 0 is the off2on offline phase, the same work for every method, so this is what
        the budget's online data became. None where a round's steps were not recorded.
        """
        if self.final_round == 0:
            return 0
        steps = {r.round: r.steps for r in self.rounds}
        start, end = steps.get(0), steps.get(self.final_round)
        return None if start is None or end is None else end - start


def step_at(points: Iterable[tuple[float, float]], t: float, initial: float = 0.0) -> float:
    """Value of a right-continuous step function at ``t``: the value of the latest point whose
    time is <= ``t`` (``initial`` before the first)."""
    value = initial
    for time_, v in sorted(points, key=lambda p: p[0]):
        if time_ > t:
            break
        value = v
    return value


def cumulative(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """``(time, amount)`` events as ``(time, running total)``, in time order."""
    total, out = 0.0, []
    for time_, amount in sorted(points, key=lambda p: p[0]):
        total += amount
        out.append((time_, total))
    return out


def trajectories_at(record: RunRecord, t: float) -> float:
    """Trajectories of the collections of ``record`` that finished by ``t`` seconds."""
    return step_at(cumulative(record.collections), t)


def success_at(record: RunRecord, t: float, initial: float) -> float:
    """Per-round evaluation success of the newest policy registered by ``t`` seconds."""
    return step_at([(r.finished_s, r.success) for r in record.rounds], t, initial)


SFT_CHECK_SEED = 0  # the seed (sim.seed) of the SFT policy's own per-round evaluation


def start_success(record: RunRecord, sft_check: float, sft_seed: int = SFT_CHECK_SEED) -> float:
    """Where the success curve of ``record`` starts: the SFT policy's per-round evaluation on
    the run's own seed.

    That is :attr:`RunRecord.start_success` where the run measured it, else ``sft_check`` (the
    SFT policy's evaluation, made on ``sft_seed``) for a run on that seed. A run on another seed
    that did not measure it starts at its own first check (the nearest measurement on its
    seed's world; the SFT check of ``sft_seed`` is another world's), or ``sft_check`` if it has
    none.
    """
    if record.start_success is not None:
        return record.start_success
    if record.seed == sft_seed or not record.rounds:
        return sft_check
    return min(record.rounds, key=lambda r: r.finished_s).success


def curve(
    records: Sequence[RunRecord],
    grid: Sequence[float],
    kind: str,
    initial: float | Sequence[float] = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sample std over ``records`` of ``kind`` (``success`` or ``trajectories``) on
    the time ``grid``.

    Args:
        records: the runs.
        grid: the times, seconds since the rounds started.
        kind: ``success`` or ``trajectories``.
        initial: the success before a run's first check: one value for every run, or one per
            run in the order of ``records`` (:func:`start_success`).

    Raises:
        ValueError: an unknown ``kind``, or not one initial value per run.
    """
    if kind not in ("success", "trajectories"):
        raise ValueError(f"kind must be 'success' or 'trajectories', got {kind!r}")
    starts = [initial] * len(records) if isinstance(initial, int | float) else list(initial)
    if len(starts) != len(records):
        raise ValueError(f"{len(starts)} initial values for {len(records)} runs")
    rows = [
        [success_at(r, t, start) if kind == "success" else trajectories_at(r, t) for t in grid]
        for r, start in zip(records, starts, strict=True)
    ]
    values = np.asarray(rows, dtype=float).reshape(len(records), len(grid))
    std = values.std(axis=0, ddof=1) if len(records) > 1 else np.zeros(len(grid))
    return values.mean(axis=0), std
