"""The learning benchmark's per-family breakdown: which kinds of goal each final policy solves.

One test success rate hides where it comes from. On General, 65 of the first 96 test goals are
web searches, so a method can gain five points by solving four more searches while every other
family stays at zero; the breakdown shows it. The counts come from the final evaluations the
benchmark already ran (the evaluate stage caches each one with its per-family summary), so
building the table evaluates nothing unless a cached evaluation was deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from distrl_tasks.bench.export import PolicyExport, exported_elsewhere
from distrl_tasks.bench.profiles import (
    SFT,
    final_checkpoint,
    final_eval_dir,
    final_test_evaluation,
)
from distrl_tasks.bench.records import RunRecord
from distrl_tasks.bench.report import METHOD_LABELS, TASK_SET_LABELS
from distrl_tasks.bench.setup import (
    LearningBenchSettings,
    SFTPolicy,
    run_config,
    run_dir,
    start_world_seeds,
)


@dataclass
class FamilyTally:
    """Successes and episodes per family, summed over ``evaluations`` evaluations of the same
    goals (one per seed)."""

    evaluations: int = 0
    families: dict[str, list[int]] = field(default_factory=dict)  # family -> [successes, episodes]

    def add(self, per_family: Mapping[str, Mapping]) -> None:
        """Add one evaluation's ``per_family`` summary ({family: {episodes, success_rate, ...}},
        as the evaluate stage's manifest holds it).

        Raises:
            ValueError: the evaluation scored other goals than the ones added before.
        """
        episodes = {f: int(s["episodes"]) for f, s in per_family.items()}
        if self.evaluations:
            before = {f: n // self.evaluations for f, (_, n) in self.families.items()}
            if before != episodes:
                raise ValueError(
                    f"an evaluation of other goals: families {episodes} after {before}"
                )
        for family, stats in per_family.items():
            total = self.families.setdefault(family, [0, 0])
            total[0] += round(float(stats["success_rate"]) * episodes[family])
            total[1] += episodes[family]
        self.evaluations += 1

    def goals(self, family: str) -> int:
        """How many goals of ``family`` one evaluation scored."""
        return self.families[family][1] // self.evaluations

    def per_evaluation(self, family: str | None = None) -> float:
        """Mean successes per evaluation on ``family`` (every family when None)."""
        names = [family] if family is not None else list(self.families)
        return sum(self.families[f][0] for f in names if f in self.families) / self.evaluations


# (method or "sft", task set) -> its tally over seeds
FamilyCounts = dict[tuple[str, str], FamilyTally]


def final_family_counts(
    settings: LearningBenchSettings,
    records: Sequence[RunRecord],
    sft: Mapping[str, SFTPolicy],
    root: Path,
    *,
    exports: Mapping[str, PolicyExport] | None = None,
    log: Callable[[str], None] = print,
) -> FamilyCounts:
    """Per-family successes of each task set's SFT policy (on every seed's world) and of every
    run's final policy on the first ``settings.eval_test`` test goals, from the final
    evaluations (the same checkpoint, settings and directory as the run's own, so the evaluate
    stage's cache answers; what is not cached is evaluated now and logged). A policy whose
    checkpoint is not on this machine is read from its export in ``exports`` (by directory
    name)."""
    counts: FamilyCounts = {}
    exports = exports or {}

    def add(key: tuple[str, str], per_family: Mapping[str, Mapping]) -> None:
        counts.setdefault(key, FamilyTally()).add(per_family)

    def measure(key: tuple[str, str], cfg, checkpoint: Path, workdir: Path) -> None:
        m = final_test_evaluation(settings, cfg, checkpoint, workdir)
        if not m.get("reused"):
            log(f"[families] {key[0]} / {key[1]}: evaluated again (its cache was gone)")
        add(key, m["per_family"])

    for ts, policy in sft.items():
        if exported := exported_elsewhere(exports, policy.workdir, policy.policy_dir):
            add((SFT, ts), exported.per_family)
            continue
        for seed in start_world_seeds(settings, policy):
            cfg = run_config(settings, ts, seed=seed, latency=False)
            measure((SFT, ts), cfg, policy.policy_dir, policy.workdir)
    for r in records:
        workdir = run_dir(settings, r.method, r.task_set, r.seed, sft[r.task_set], root)
        if exported := exported_elsewhere(exports, workdir):  # ran on another machine
            add((r.method, r.task_set), exported.per_family)
            continue
        cfg = run_config(settings, r.task_set, method=r.method, seed=r.seed, latency=False)
        eval_dir = final_eval_dir(r, workdir, sft[r.task_set])
        checkpoint = final_checkpoint(r, workdir, sft[r.task_set])
        measure((r.method, r.task_set), cfg, checkpoint, eval_dir)
    return counts


def _count(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def family_table(counts: FamilyCounts, methods: Sequence[str], task_set: str) -> str:
    """Markdown: per family, the goals solved per seed by SFT and each method on ``task_set``.

    A row is ``family (goals)``, the goals being how many of the evaluated test goals belong
    to the family; a cell is the mean number of them solved per seed. Columns are SFT and the
    methods with finished runs; families are ordered by goals, then name; the last row is the
    total.

    Raises:
        ValueError: no counts for ``task_set``, or columns that scored different goals.
    """
    columns = [m for m in (SFT, *methods) if (m, task_set) in counts]
    if not columns:
        raise ValueError(f"no per-family counts for task set {task_set!r}")
    tallies = [counts[(m, task_set)] for m in columns]
    goals = {f: tallies[0].goals(f) for f in tallies[0].families}
    for m, tally in zip(columns, tallies, strict=True):
        mine = {f: tally.goals(f) for f in tally.families}
        if mine != goals:
            raise ValueError(f"{m} on {task_set} scored other goals: {mine} vs {goals}")
    labels = ["SFT" if m == SFT else METHOD_LABELS[m] for m in columns]
    name = TASK_SET_LABELS.get(task_set, task_set)
    lines = [
        f"| {name} family (goals) | " + " | ".join(labels) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for family in sorted(goals, key=lambda f: (-goals[f], f)):
        cells = " | ".join(_count(t.per_evaluation(family)) for t in tallies)
        lines.append(f"| {family} ({goals[family]}) | {cells} |")
    totals = " | ".join(_count(t.per_evaluation()) for t in tallies)
    lines.append(f"| all ({sum(goals.values())}) | {totals} |")
    return "\n".join(lines)


def family_tables(counts: FamilyCounts, methods: Sequence[str], task_sets: Sequence[str]) -> str:
    """:func:`family_table` for each task set with counts, under one heading line."""
    tables = [family_table(counts, methods, ts) for ts in task_sets if (SFT, ts) in counts]
    if not tables:
        return ""
    head = "Goals solved per family in the final test evaluations (mean per seed):"
    return head + "\n\n" + "\n\n".join(tables)
