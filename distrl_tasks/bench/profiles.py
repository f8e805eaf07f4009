"""The learning benchmark's reference evaluations: each final policy under other world profiles.

The benchmark's table is measured under the profile its runs use (``sim.dynamics.profile``,
``live`` by default). For reference, the same final policies (and the SFT policy) are evaluated
on the same first ``eval_test`` test goals under further profiles, ``static`` (the world the
bootstrap demonstrations come from) and ``hostile`` (more interruptions, misleading content):
how much of a method's success depends on the world staying as it was trained in. Each
evaluation is cached by the evaluate stage under its checkpoint digest and world, so a resumed
benchmark re-uses them; the SFT policy is evaluated on every seed's world, as the runs are.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from distrl_tasks.bench.export import PolicyExport, exported_elsewhere
from distrl_tasks.bench.records import RunRecord
from distrl_tasks.bench.report import METHOD_LABELS, format_cell
from distrl_tasks.bench.setup import (
    LearningBenchSettings,
    SFTPolicy,
    run_config,
    run_dir,
    start_world_seeds,
)
from distrl_tasks.config import Config
from distrl_tasks.stages.common import checkpoint_dir

SFT = "sft"
# (method or "sft", task set, profile) -> test success of each seed's final policy
ProfileResults = dict[tuple[str, str, str], list[float]]


def final_checkpoint(record: RunRecord, workdir: Path, sft: SFTPolicy) -> Path:
    """The policy a run's final evaluation measured: its last round in budget, or SFT's."""

    return checkpoint_dir(workdir, record.final_round) if record.final_round else sft.policy_dir


def final_eval_dir(record: RunRecord, workdir: Path, sft: SFTPolicy) -> Path:
    """Where a run's final evaluations are cached: its own directory, or, for a run with no
    round in budget (scored by SFT's policy), SFT's, where that policy's evaluations are."""
    return workdir if record.final_round else sft.workdir


def final_test_evaluation(
    settings: LearningBenchSettings, cfg: Config, checkpoint: Path, workdir: Path
) -> dict[str, Any]:
    """The evaluate stage's manifest for ``checkpoint`` on the benchmark's final test goals (the
    first ``settings.eval_test``, greedy; cached by the stage under ``workdir``)."""
    from distrl_tasks.stages import (
        evaluate,  # lazy: torch + pyarrow
    )

    return evaluate.run(
        cfg,
        round=0,
        checkpoint_dir=checkpoint,
        workdir=workdir,
        split="test",
        n_tasks=settings.eval_test,
    )


def evaluate_profiles(
    settings: LearningBenchSettings,
    records: Sequence[RunRecord],
    sft: Mapping[str, SFTPolicy],
    root: Path,
    profiles: Sequence[str],
    *,
    exports: Mapping[str, PolicyExport] | None = None,
    log: Callable[[str], None] = print,
) -> ProfileResults:
    """Evaluate every finished run's final policy, and each task set's SFT policy on every
    seed's world, under each of ``profiles`` on the first ``settings.eval_test`` test goals
    (greedy, latency off). A policy that is not on this machine is read from its export in
    ``exports`` (by directory name); a profile its export lacks is left out and logged."""
    results: ProfileResults = {}
    exports = exports or {}

    def read(key: tuple[str, str, str], exported: PolicyExport) -> None:
        if key[2] in exported.profiles:
            results.setdefault(key, []).append(exported.profiles[key[2]])
        else:
            log(f"[{key[2]}] {key[0]} / {key[1]}: not in the export of {exported.name}")

    def measure(key: tuple[str, str, str], checkpoint: Path, workdir: Path, cfg) -> None:
        m = final_test_evaluation(settings, cfg, checkpoint, workdir)
        results.setdefault(key, []).append(float(m["success_rate"]))
        cached = ", cached" if m.get("reused") else ""
        log(f"[{key[2]}] {key[0]} / {key[1]}: test {m['success_rate']:.1%}{cached}")

    for profile, ts in itertools.product(profiles, sft):
        if exported := exported_elsewhere(exports, sft[ts].workdir, sft[ts].policy_dir):
            read((SFT, ts, profile), exported)
            continue
        for seed in start_world_seeds(settings, sft[ts]):
            cfg = run_config(settings, ts, seed=seed, latency=False, dynamics=profile)
            measure((SFT, ts, profile), sft[ts].policy_dir, sft[ts].workdir, cfg)
    for profile, r in itertools.product(profiles, records):
        workdir = run_dir(settings, r.method, r.task_set, r.seed, sft[r.task_set], root)
        if exported := exported_elsewhere(exports, workdir):  # ran on another machine
            read((r.method, r.task_set, profile), exported)
            continue
        checkpoint = final_checkpoint(r, workdir, sft[r.task_set])
        cfg = run_config(
            settings, r.task_set, method=r.method, seed=r.seed, latency=False, dynamics=profile
        )
        eval_dir = final_eval_dir(r, workdir, sft[r.task_set])
        measure((r.method, r.task_set, profile), checkpoint, eval_dir, cfg)
    return results


def profiles_table(
    results: ProfileResults,
    main_profile: str,
    main: Mapping[tuple[str, str], list[float]],
    methods: Sequence[str],
    task_sets: Sequence[str],
    profiles: Sequence[str],
) -> str:
    """Markdown: test success (%) per method under the benchmark's profile and the others.

    Args:
        results: :func:`evaluate_profiles`' output.
        main_profile: the profile the benchmark ran under (its column comes from ``main``).
        main: (method or "sft", task set) -> test success per seed (for the SFT policy, per
            seed's world) under ``main_profile``.
        methods: the benchmark's methods, in table order.
        task_sets: the task sets, in column order.
        profiles: the reference profiles, in column order.
    """
    cols = [(ts, p) for ts in task_sets for p in (main_profile, *profiles)]
    names = {"general": "General", "webshop": "WebShop"}
    head = "| Method | " + " | ".join(f"{names.get(ts, ts)} {p}" for ts, p in cols) + " |"
    lines = [head, "|---" * (len(cols) + 1) + "|"]
    for method in (SFT, *methods):
        cells = []
        for ts, p in cols:
            values = main.get((method, ts)) if p == main_profile else results.get((method, ts, p))
            cells.append(format_cell(values) if values else "–")  # SFT: over worlds
        label = "SFT" if method == SFT else METHOD_LABELS[method]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
