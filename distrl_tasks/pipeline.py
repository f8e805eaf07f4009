"""Rounds of the pipeline, in one process: what `distrl round` and `distrl demo` run.

Each round is collect → label → version → train → evaluate → register, every step one call of a
stage (the same functions Airflow tasks and `dvc repro` call), so a round started here lands in
the same MLflow registry and DVC remote as one started anywhere else.

Synchronous mode (DigiRL) runs the steps in sequence. Asynchronous mode (DistRL) overlaps them:
while the learner trains, evaluates and registers round ``r``, the actors already collect round
``r + 1`` with the behaviour policy they have (one version behind); the learner corrects for that
staleness with importance weights (``behavior_log_prob`` and ``policy_version`` are recorded on
every step). Collection for round ``r + 1`` therefore never waits for training of round ``r``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
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


def _collect(cfg: Config, round_: int, workdir: str | os.PathLike, farm: dict | None) -> dict:
    from distrl_tasks.stages import collect

    address = {"adb_host": farm["host"], "adb_port": farm["port"]} if farm else {}
    return collect.run(cfg, round=round_, workdir=workdir, **address)


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
) -> list[RoundResult]:
    """Bootstrap if needed, then run ``rounds`` rounds (default ``orchestration.rounds``).

    Rounds already finished (their stage manifests exist) are returned without redoing work.
    """
    from distrl_tasks.stages import bootstrap, farm

    n = rounds if rounds is not None else cfg.orchestration.rounds
    if n < 1:
        raise ValueError(f"rounds must be >= 1, got {n}")
    bootstrap.run(cfg, workdir=workdir)
    results: list[RoundResult] = []
    record = farm.start(cfg, workdir=workdir)
    try:
        if cfg.orchestration.asynchronous:
            results = _async_rounds(cfg, workdir, record, first_round, n, on_round)
        else:
            for r in range(first_round, first_round + n):
                start = time.perf_counter()
                result = RoundResult(r, collect=_collect(cfg, r, workdir, record))
                _learn(cfg, result, workdir)
                result.seconds = time.perf_counter() - start
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
) -> list[RoundResult]:
    results: list[RoundResult] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="actor") as actor:
        start = time.perf_counter()
        pending: Future = actor.submit(_collect, cfg, first, workdir, record)
        for r in range(first, first + n):
            result = RoundResult(r, collect=pending.result())
            if r + 1 < first + n:  # the actors go on with the next round right away
                pending = actor.submit(_collect, cfg, r + 1, workdir, record)
            _learn(cfg, result, workdir)
            now = time.perf_counter()
            result.seconds, start = now - start, now
            results.append(result)
            if on_round:
                on_round(result)
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
