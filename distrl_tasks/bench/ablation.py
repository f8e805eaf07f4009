"""The ablation of issue 21: what makes DistRL learn, and what asynchrony buys.

Two parts, each arm run by the learning benchmark's machinery (:func:`bench.learning.run_one`:
same SFT policy, budget, devices, latency model and evaluation; finished runs cached by a hash
of their settings, so an interrupted ablation resumes and arms shared with a learning benchmark
in the same ``--workdir`` are not re-run):

* **factorial** (2 x 3): asynchronous vs synchronous collection x {A-RIDE, DigiRL, Filtered
  BC}, at equal wall clock;
* **variants**: A-RIDE with collection fixed (asynchronous), one change at a time from the
  configured form: the paper's signed advantage, no top-p filter, no critic pre-fit, 4 and 64
  windows per optimizer step, and continuous learning (the learner that never waits, at a
  replay ratio, instead of collect/learn rounds; its learner as a thread beside the actors, and
  in a process of its own).

Learning-rate search, the same for every arm: each arm runs with every ``algorithm.lm_lr`` of
``lrs`` (default :data:`DEFAULT_LRS`, a factor-3 grid around the configured 1e-5); the arm's
reported learning rate is the one with the best mean *train* success over seeds (the final
evaluation's sampled train tasks), and its *test* success is reported, so the test tasks never
choose a setting. The table shows every arm at its chosen rate, with the spread over seeds.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import os
import shutil
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distrl_tasks.bench.describe import machine_info
from distrl_tasks.bench.learning import run_one
from distrl_tasks.bench.records import RunRecord
from distrl_tasks.bench.report import dated_record, write_record
from distrl_tasks.bench.setup import LearningBenchSettings, bootstrap_sft
from distrl_tasks.stages.common import torch_threads

DEFAULT_LRS = (3e-6, 1e-5, 3e-5)
START_MARK, END_MARK = "<!-- ablation:start -->", "<!-- ablation:end -->"
PARTS = ("factorial", "variants")
VARIANTS: dict[str, dict[str, Any]] = {
    "configured": {},
    "signed": {"algorithm.distrl.advantage": "signed"},
    "unfiltered": {"algorithm.distrl.top_p": 1.0},
    "no_prefit": {"algorithm.critic_prefit.enabled": False},
    "windows_32": {"algorithm.distrl.windows": 32},  # the default until 2026-11-29
    "windows_64": {"algorithm.distrl.windows": 64},
    # priorities scored once per trajectory (then by the loss), not re-scored every round
    "rescore_new": {"algorithm.distrl.rescore": "new"},
    # the learner that never waits: 0.02 updates per transition (an update reads
    # algorithm.distrl.windows windows), and actors are not held back by rounds (the replay
    # window) but by the staleness gate
    "continuous": {
        "orchestration.continuous.replay_ratio": 0.02,
        "orchestration.continuous.learner_process": False,
    },
    # the same with the learner in a process of its own (no interpreter lock shared with actors)
    "continuous_process": {
        "orchestration.continuous.replay_ratio": 0.02,
        "orchestration.continuous.learner_process": True,
    },
}


@dataclass(frozen=True)
class Arm:
    """One setting of the ablation: a method, a collection mode, config changes."""

    part: str
    name: str
    method: str
    collection: str
    overrides: Mapping[str, Any]


def arms(parts: Sequence[str] = PARTS, names: Sequence[str] | None = None) -> list[Arm]:
    """The arms of the requested parts (see the module docstring), in a fixed order.

    Args:
        parts: which parts of the ablation.
        names: only these arms (e.g. ``distrl-windows_32``), so the ablation can run in parts
            that the run cache joins; ``None`` keeps every arm of ``parts``.

    Raises:
        ValueError: an unknown part, or a name that is no arm of ``parts``.
    """
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise ValueError(f"parts must be some of {PARTS}, got {list(parts)}")
    out = _all_arms(parts)
    if names is None:
        return out
    known = {a.name for a in out}
    missing = [n for n in names if n not in known]
    if missing or not names:
        raise ValueError(
            f"arms must be some of {sorted(known)} (parts {', '.join(parts)}), got {list(names)}"
        )
    wanted = set(names)
    return [a for a in out if a.name in wanted]


def _all_arms(parts: Sequence[str]) -> list[Arm]:
    out: list[Arm] = []
    if "factorial" in parts:
        for collection, method in itertools.product(
            ("async", "sync"), ("distrl", "digirl", "filtered_bc")
        ):
            out.append(Arm("factorial", f"{method}-{collection}", method, collection, {}))
    if "variants" in parts:
        for name, changes in VARIANTS.items():
            out.append(Arm("variants", f"distrl-{name}", "distrl", "async", changes))
    return out


def arm_settings(base: LearningBenchSettings, arm: Arm, lr: float) -> LearningBenchSettings:
    """The benchmark settings of one arm at one learning rate."""
    overrides = {**base.overrides, **arm.overrides, "algorithm.lm_lr": lr}
    return dataclasses.replace(
        base, methods=(arm.method,), collection=arm.collection, overrides=overrides
    )


@dataclass
class ArmResult:
    """Every run of one arm, and the learning rate chosen for it."""

    arm: Arm
    records: dict[float, list[RunRecord]]  # lr -> runs (seeds x task sets)

    def mean(self, lr: float, split: str) -> float:
        """Mean success on ``split`` over the runs at learning rate ``lr``."""
        return statistics.fmean(r.final[split] for r in self.records[lr])

    @property
    def best_lr(self) -> float:
        """The rate with the best mean train success (ties: the smaller rate)."""
        return max(sorted(self.records), key=lambda lr: (self.mean(lr, "train"), -lr))

    def summary(self) -> dict[str, Any]:
        runs = self.records[self.best_lr]
        test = [r.final["test"] for r in runs]
        return {
            "part": self.arm.part,
            "arm": self.arm.name,
            "lr": self.best_lr,
            "runs": len(runs),
            "test_mean": statistics.fmean(test),
            "test_spread": (max(test) - min(test)) if len(test) > 1 else 0.0,
            "train_mean": self.mean(self.best_lr, "train"),
            "trajectories": statistics.fmean(sum(n for _, n in r.collections) for r in runs),
            "rounds": statistics.fmean(r.rounds_in_budget for r in runs),
            "updates": _mean_or_none([r.online_updates for r in runs]),
        }


def _mean_or_none(values: Sequence[int | None]) -> float | None:
    return None if not values or None in values else statistics.fmean(values)


def run_ablation(
    base: LearningBenchSettings,
    *,
    parts: Sequence[str] = PARTS,
    arm_names: Sequence[str] | None = None,
    lrs: Sequence[float] = DEFAULT_LRS,
    workdir: str | os.PathLike = "runs/learning-bench",
    results_file: str | os.PathLike | None = "record",
    command: str = "distrl bench ablation",
    fresh: bool = False,
    log: Callable[[str], None] = print,
) -> tuple[str, list[ArmResult]]:
    """Run (or reuse) every arm at every learning rate; returns the table and the results."""
    if not lrs or any(not lr > 0 for lr in lrs):
        raise ValueError(f"lrs must be positive learning rates, got {list(lrs)}")
    selected = arms(parts, arm_names)
    root = Path(workdir).resolve()
    if fresh:
        shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with torch_threads(base.threads):
        sft = {ts: bootstrap_sft(base, ts, root, log=log) for ts in base.task_sets}
        results = []
        for arm in selected:
            records: dict[float, list[RunRecord]] = {}
            for lr in lrs:
                settings = arm_settings(base, arm, lr)
                records[lr] = [
                    run_one(settings, arm.method, ts, seed, sft[ts], root, log=log)
                    for ts, seed in itertools.product(base.task_sets, base.seeds)
                ]
            results.append(ArmResult(arm, records))
            s = results[-1].summary()
            log(f"[ablation] {arm.name}: lr {s['lr']:g}, test {s['test_mean']:.1%}")
    wall = time.perf_counter() - started
    table = ablation_table(results, {ts: p.success["test"] for ts, p in sft.items()})
    if results_file is not None:
        section = _section(table, base, lrs, selected, command, wall)
        path = dated_record("ablation") if str(results_file) == "record" else results_file
        write_record(path, section, (START_MARK, END_MARK))
    log(f"\n{table}\nDone in {wall / 60:.1f} min")
    return table, results


def ablation_table(results: Sequence[ArmResult], sft_test: Mapping[str, float]) -> str:
    """Markdown table: one row per arm at its chosen learning rate."""
    sft = " / ".join(f"{ts} {v:.1%}" for ts, v in sft_test.items())
    lines = [
        f"SFT test success: {sft}",
        "",
        "| part | arm | lm_lr (by train) | runs | test (mean) | test spread | train | "
        "trajectories | rounds | online updates | every lm_lr: train / test |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for res in results:
        s = res.summary()
        every = ", ".join(
            f"{lr:g}: {res.mean(lr, 'train'):.1%} / {res.mean(lr, 'test'):.1%}"
            for lr in sorted(res.records)
        )
        updates = "n/a" if s["updates"] is None else f"{s['updates']:.0f}"
        lines.append(
            f"| {s['part']} | {s['arm']} | {s['lr']:g} | {s['runs']} | {s['test_mean']:.1%} | "
            f"{s['test_spread']:.1%} | {s['train_mean']:.1%} | {s['trajectories']:.0f} | "
            f"{s['rounds']:.1f} | {updates} | {every} |"
        )
    ratios = factorial_ratios(results)
    return "\n".join(lines + (["", *ratios] if ratios else []))


def factorial_ratios(results: Sequence[ArmResult]) -> list[str]:
    """Per method with both factorial arms: what asynchronous collection gave over synchronous
    in the same budget, in trajectories (target >= 2.4x) and in online learner updates (>= 2x),
    each arm at its chosen learning rate; one markdown bullet per method."""
    by_name = {r.arm.name: r.summary() for r in results if r.arm.part == "factorial"}
    lines = []
    for method in ("distrl", "digirl", "filtered_bc"):
        a, s = by_name.get(f"{method}-async"), by_name.get(f"{method}-sync")
        if a is None or s is None:
            continue
        parts = [f"trajectories {a['trajectories']:.0f} / {s['trajectories']:.0f}"]
        if s["trajectories"]:
            parts[0] += f" ({a['trajectories'] / s['trajectories']:.2f}x; target >= 2.4x)"
        if a["updates"] is not None and s["updates"] is not None:
            ratio = f" ({a['updates'] / s['updates']:.2f}x; target >= 2x)" if s["updates"] else ""
            parts.append(f"online updates {a['updates']:.0f} / {s['updates']:.0f}{ratio}")
        lines.append(f"- {method}, asynchronous / synchronous: " + "; ".join(parts))
    return lines


def _section(
    table: str,
    base: LearningBenchSettings,
    lrs: Sequence[float],
    selected: Sequence[Arm],
    command: str,
    wall_s: float,
) -> str:
    m = machine_info()
    total = len(arms())
    scope = (
        "every arm"
        if len(selected) == total
        else f"{len(selected)} of the {total} arms ({', '.join(a.name for a in selected)})"
    )
    lr_text = (
        f"lm_lr searched over {', '.join(f'{x:g}' for x in lrs)} (chosen by train success)"
        if len(lrs) > 1
        else f"lm_lr {lrs[0]:g} only (no learning-rate search)"
    )
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            START_MARK,
            "## Ablation (issue 21)",
            "",
            f"`{command}` — {date}, {m['cpu']}, {m['nproc']} CPUs, preset "
            f"`{base.preset}`: {scope}; task sets {', '.join(base.task_sets)}; "
            f"seeds {', '.join(map(str, base.seeds))}; {base.budget_s:.0f} s per run on "
            f"{base.devices} devices; {lr_text}; this invocation took {wall_s / 60:.1f} min "
            "(runs cached by an earlier invocation or the learning benchmark are reused).",
            "",
            table,
            "",
            END_MARK,
        ]
    )
