"""Rounds of the pipeline, in one process: what `distrl round` and `distrl demo` run.

Each round is collect → label → version → train → evaluate → register, every step one call of a
stage (the same functions Airflow tasks and `dvc repro` call), so a round started here lands in
the same MLflow registry and DVC remote as one started anywhere else.

Synchronous mode (DigiRL) runs the steps in sequence. Asynchronous mode (DistRL) overlaps them:
while the learner trains, evaluates and registers round ``r``, the actors already collect round
``r + 1`` with the behaviour policy they have (one version behind); the learner corrects for that
staleness with importance weights (``behavior_log_prob`` and ``policy_version`` are recorded on
every step). Collection for round ``r + 1`` therefore never waits for training of round ``r``.

A wall-clock budget (``budget_s``) bounds a run instead of, or as well as, a number of rounds:
the clock starts when the farm is up, and a round is learned only while :func:`budget_allows`
says it is expected to finish in time (elapsed time plus the mean duration of the rounds so far;
the first round always runs). In asynchronous mode the actors start another collection whenever
time is left; a collection that finishes after the learner stopped is reported through
``on_collect`` but never trained on.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from distrl_tasks.config import Config


@dataclass
class RoundResult:
    """The manifests of one round and how long it took."""

    round: int
    collect: dict[str, Any] = field(default_factory=dict)
    label: dict[str, Any] = field(default_factory=dict)
    version: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    evaluate: dict[str, Any] = field(default_factory=dict)
    register: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    collected_s: float = 0.0  # when its collection finished, seconds since the rounds started
    finished_s: float = 0.0  # when it was registered, seconds since the rounds started

    def row(self) -> dict[str, Any]:
        """One line of the per-round table."""
        c = self.collect
        return {
            "round": self.round,
            "train_success": c.get("success_rate", 0.0),
            "test_success": self.evaluate.get("success_rate", 0.0),
            "trajectories": c.get("trajectories", 0),
            "steps_per_s": c.get("steps_per_s", 0.0),
            "version": self.register.get("version"),
            "champion": self.register.get("champion"),
            "seconds": self.seconds,
        }


CollectCallback = Callable[[int, dict[str, Any], float], None]


def budget_allows(
    elapsed_s: float, budget_s: float | None, round_seconds: Sequence[float] = ()
) -> bool:
    """Whether another round is expected to finish within the wall-clock budget.

    Args:
        elapsed_s: seconds since the rounds started.
        budget_s: the budget (None: no budget, always True).
        round_seconds: durations of the rounds so far (their mean predicts the next one; the
            first round, with no history, always starts).

    Returns:
        ``elapsed_s + mean(round_seconds) <= budget_s``.
    """
    if budget_s is None:
        return True
    expected = statistics.fmean(round_seconds) if round_seconds else 0.0
    return elapsed_s + expected <= budget_s


def _collect(cfg: Config, round_: int, workdir: str | os.PathLike, farm: dict | None) -> dict:
    from distrl_tasks.stages import collect

    address = {"adb_host": farm["host"], "adb_port": farm["port"]} if farm else {}
    return collect.run(cfg, round=round_, workdir=workdir, **address)


def _timed_collect(
    cfg: Config, round_: int, workdir: str | os.PathLike, farm: dict | None, t0: float
) -> tuple[dict, float]:
    """The collect manifest and when it finished (seconds since ``t0``)."""
    manifest = _collect(cfg, round_, workdir, farm)
    return manifest, time.perf_counter() - t0


def _learn(cfg: Config, result: RoundResult, workdir: str | os.PathLike) -> None:
    """label → version → train → evaluate → register for a round whose data is collected."""
    from distrl_tasks.stages import evaluate, label, register, train, version

    r = result.round
    result.label = label.run(cfg, round=r, workdir=workdir)
    result.version = version.run(cfg, round=r, workdir=workdir)
    data_version = result.version["data_version"]
    result.train = train.run(cfg, round=r, data_version=data_version, workdir=workdir)
    ckpt = result.train["checkpoint_dir"]
    result.evaluate = evaluate.run(cfg, round=r, checkpoint_dir=ckpt, workdir=workdir)
    result.register = register.run(
        cfg,
        round=r,
        checkpoint_dir=ckpt,
        data_version=data_version,
        evaluation=result.evaluate,
        workdir=workdir,
    )


def run_rounds(
    cfg: Config,
    *,
    workdir: str | os.PathLike = ".",
    rounds: int | None = None,
    first_round: int = 1,
    on_round: Callable[[RoundResult], None] | None = None,
    budget_s: float | None = None,
    on_collect: CollectCallback | None = None,
) -> list[RoundResult]:
    """Bootstrap if needed, then run ``rounds`` rounds (default ``orchestration.rounds``).

    Rounds already finished (their stage manifests exist) are returned without redoing work.

    Args:
        cfg: the configuration (``orchestration.asynchronous`` picks the mode).
        workdir: project working directory.
        rounds: at most this many rounds (default ``orchestration.rounds``).
        first_round: number of the first round.
        on_round: called with each finished round.
        budget_s: wall-clock budget in seconds, counted from when the farm is up: no round is
            learned once :func:`budget_allows` expects it to end past the budget (None: none).
        on_collect: called in the calling thread as ``on_collect(round, manifest, finished_s)``
            for every finished collection, ``finished_s`` being when it finished (seconds since
            the rounds started), including a last asynchronous one that is never learned.
    """
    from distrl_tasks.stages import bootstrap, farm

    n = rounds if rounds is not None else cfg.orchestration.rounds
    if n < 1:
        raise ValueError(f"rounds must be >= 1, got {n}")
    if budget_s is not None and not budget_s > 0:
        raise ValueError(f"budget_s must be > 0, got {budget_s}")
    bootstrap.run(cfg, workdir=workdir)
    results: list[RoundResult] = []
    record = farm.start(cfg, workdir=workdir)
    try:
        if cfg.orchestration.asynchronous:
            results = _async_rounds(
                cfg, workdir, record, first_round, n, on_round, budget_s, on_collect
            )
        else:
            t0 = time.perf_counter()
            for r in range(first_round, first_round + n):
                start = time.perf_counter()
                if not budget_allows(start - t0, budget_s, [x.seconds for x in results]):
                    break
                manifest, collected_s = _timed_collect(cfg, r, workdir, record, t0)
                if on_collect:
                    on_collect(r, manifest, collected_s)
                result = RoundResult(r, collect=manifest, collected_s=collected_s)
                _learn(cfg, result, workdir)
                now = time.perf_counter()
                result.seconds, result.finished_s = now - start, now - t0
                results.append(result)
                if on_round:
                    on_round(result)
    finally:
        farm.stop(cfg, workdir=workdir)
    return results


def _async_rounds(
    cfg: Config,
    workdir: str | os.PathLike,
    record: dict,
    first: int,
    n: int,
    on_round: Callable[[RoundResult], None] | None,
    budget_s: float | None = None,
    on_collect: CollectCallback | None = None,
) -> list[RoundResult]:
    results: list[RoundResult] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="actor") as actor:
        t0 = start = time.perf_counter()
        pending: Future | None = actor.submit(_timed_collect, cfg, first, workdir, record, t0)
        for r in range(first, first + n):
            if pending is None:
                break
            manifest, collected_s = pending.result()
            if on_collect:
                on_collect(r, manifest, collected_s)
            result = RoundResult(r, collect=manifest, collected_s=collected_s)
            pending = None
            if r + 1 < first + n and budget_allows(time.perf_counter() - t0, budget_s):
                # the actors go on with the next round right away, while time is left
                pending = actor.submit(_timed_collect, cfg, r + 1, workdir, record, t0)
            _learn(cfg, result, workdir)
            now = time.perf_counter()
            result.seconds, result.finished_s, start = now - start, now - t0, now
            results.append(result)
            if on_round:
                on_round(result)
            if pending is not None and not budget_allows(
                now - t0, budget_s, [x.seconds for x in results]
            ):
                manifest, collected_s = pending.result()  # collected in time, never learned
                if on_collect:
                    on_collect(r + 1, manifest, collected_s)
                break
    return results


def format_rounds(results: list[RoundResult], sft_success: float | None = None) -> str:
    """The per-round table the demo prints."""
    head = (
        f"{'round':>5} {'train succ':>10} {'test succ':>9} {'trajs':>6} {'steps/s':>8} "
        f"{'version':>7} {'champion':>8} {'wall s':>7}"
    )
    lines = [head, "-" * len(head)]
    if sft_success is not None:
        lines.append(f"{'SFT':>5} {'':>10} {sft_success:>9.1%}")
    for res in results:
        row = res.row()
        lines.append(
            f"{row['round']:>5} {row['train_success']:>10.1%} {row['test_success']:>9.1%} "
            f"{row['trajectories']:>6} {row['steps_per_s']:>8.1f} {row['version']!s:>7} "
            f"{row['champion']!s:>8} {row['seconds']:>7.0f}"
        )
    return "\n".join(lines)
