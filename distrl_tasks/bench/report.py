"""The learning benchmark's numbers: aggregation, the Table 1, curves, plots, RESULTS.md section.

Everything here is pure (records in, text or PNG files out), so it is unit-tested on hand-built
records; :mod:`distrl_tasks.bench.learning` produces the records. The records themselves
(:class:`RunRecord`, :class:`RoundPoint`) and the step functions that read them at a wall time
(:func:`step_at`, :func:`trajectories_at`, :func:`success_at`, :func:`curve`, ...) live in
:mod:`distrl_tasks.bench.records`; the settings and machine lines in
:mod:`distrl_tasks.bench.describe`.

Conventions:

* success rates are fractions in [0, 1] in records and percentages in tables and plots;
* ``mean ± std`` is over seeds, ``std`` the sample standard deviation (n - 1; 0 for one seed);
* curves are step functions of wall time since a run's rounds started: the success of the
  newest policy evaluated by then (before the first round, the SFT policy's on the run's own
  seed, :func:`~distrl_tasks.bench.records.start_success`), and the trajectories of every
  collection finished by then;
* a row is a method under one set of overrides (:attr:`RunRecord.overrides`, what a run's
  settings change from the benchmark's defaults): runs under other overrides are another row,
  labelled with them, never averaged with the defaults' (an ablation beside the benchmark).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from distrl_tasks.bench.records import (
    SFT_CHECK_SEED,
    RunRecord,
    curve,
    start_success,
    trajectories_at,
)
from distrl_tasks.config.algorithm_specs import SPECS, algorithm_spec

METHOD_LABELS = {s.name: s.label for s in SPECS}  # in the specs' order, which tables keep
TASK_SET_LABELS = {"general": "General", "webshop": "WebShop"}
COLUMNS: tuple[tuple[str, str], ...] = (
    ("general", "train"),
    ("general", "test"),
    ("webshop", "train"),
    ("webshop", "test"),
)
START_MARK = "<!-- learning-benchmark:start -->"
END_MARK = "<!-- learning-benchmark:end -->"
SYNC_REFERENCE = "digirl"  # the synchronous method the asynchronous one is compared with
ASYNC_METHOD = "distrl"
BEST_GAP_TARGET = 0.5  # the best RL method closes this share of the SFT-to-expert gap
EVERY_GAP_TARGET = 0.25  # ... and every RL method at least this share (papers: 67% for DigiRL)
TRAJECTORY_RATIO_TARGET = 2.4


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value).

    Raises:
        ValueError: no values.
    """
    if not values:
        raise ValueError("mean_std needs at least one value")
    mean = statistics.fmean(values)
    return mean, statistics.stdev(values) if len(values) > 1 else 0.0


def format_cell(values: Sequence[float], *, std: bool = True) -> str:
    """Success rates (fractions) as ``"mean ± std"`` percentages; ``"–"`` when empty."""
    if not values:
        return "–"
    mean, sd = mean_std([100.0 * v for v in values])
    return f"{mean:.1f} ± {sd:.1f}" if std else f"{mean:.1f}"


def overrides_text(overrides: Mapping[str, Any] | None) -> str:
    """Overrides as ``key=value, ...`` in key order, values spelled as ``--set`` takes them
    ("" for none)."""
    return ", ".join(
        f"{k}={v if isinstance(v, str) else json.dumps(v)}"
        for k, v in sorted((overrides or {}).items())
    )


def beyond(
    overrides: Mapping[str, Any] | None, base: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``overrides`` less those of ``base`` (a key of ``base`` that ``overrides`` lacks: at its
    default, spelled ``(default)``)."""
    overrides, base = overrides or {}, base or {}
    out = {k: v for k, v in overrides.items() if k not in base or base[k] != v}
    return {**out, **{k: "(default)" for k in base if k not in overrides}}


# What a synchronous run never reads: the asynchronous learner's settings (bench.setup leaves
# them out of its overrides), so an invocation's own value of one is no label of its row.
ASYNC_LEARNER_PREFIX = "orchestration.continuous."


def read_base(record: RunRecord, base: Mapping[str, Any] | None) -> dict[str, Any]:
    """``base`` as far as ``record``'s run reads it: without the asynchronous learner's keys
    for a synchronous run (the method's own topology, unless its overrides force one)."""
    base = dict(base or {})
    asynchronous = (record.overrides or {}).get(
        "orchestration.asynchronous", algorithm_spec(record.method).asynchronous
    )
    if asynchronous:
        return base
    return {k: v for k, v in base.items() if not k.startswith(ASYNC_LEARNER_PREFIX)}


def variant(record: RunRecord, base: Mapping[str, Any] | None = None) -> str:
    """The row of ``record`` within its method: its overrides beyond ``base`` (an invocation's
    own, which its settings lines list; None: the defaults) as text ("": ``base``'s row)."""
    return overrides_text(beyond(record.overrides, read_base(record, base)))


def row_label(method: str, variant_: str = "") -> str:
    """A row's label: the method's name, then its overrides in parentheses if any."""
    name = METHOD_LABELS.get(method, method)
    return f"{name} ({variant_})" if variant_ else name


def variants(
    records: Iterable[RunRecord], method: str, base: Mapping[str, Any] | None = None
) -> list[str]:
    """The override sets ``method`` ran under in ``records`` (:func:`variant` beyond ``base``):
    the fewest first (``base``'s own, ""), then by text."""
    found = {
        variant(r, base): len(beyond(r.overrides, read_base(r, base)))
        for r in records
        if r.method == method
    }
    return sorted(found, key=lambda v: (found[v], v))


def final_values(
    records: Iterable[RunRecord],
    method: str,
    task_set: str,
    split: str,
    variant_: str | None = None,
    base: Mapping[str, Any] | None = None,
) -> list:
    """The final success rates of every seed of ``method`` on one column, seed order; only the
    runs under the overrides ``variant_`` (:func:`variant` beyond ``base``) unless it is None."""
    chosen = [
        r
        for r in records
        if r.method == method
        and r.task_set == task_set
        and (variant_ is None or variant(r, base) == variant_)
    ]
    return [r.final[split] for r in sorted(chosen, key=lambda r: r.seed) if split in r.final]


def results_table(
    records: Sequence[RunRecord],
    sft: Mapping[tuple[str, str], Sequence[float]],
    methods: Sequence[str],
    base: Mapping[str, Any] | None = None,
) -> str:
    """The papers' Table 1: SFT row, then one row per method and set of overrides (``base``'s
    first; a method that did not run keeps one row); columns General/WebShop x train/test;
    success % as mean ± std over seeds (``–`` where not run). ``sft``: per column, the SFT
    policy's success on each seed's world (one policy, so the spread is the worlds').

    ``base``: the invocation's own overrides (None: none); rows are labelled with what a run's
    overrides add to them, so its own runs keep the method's plain name.
    """
    head = ["Method"] + [f"{TASK_SET_LABELS[ts]} {split}" for ts, split in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sft_cells = [format_cell(sft[c], std=len(sft[c]) > 1) if c in sft else "–" for c in COLUMNS]
    lines.append("| SFT | " + " | ".join(sft_cells) + " |")
    for method in methods:
        for v in variants(records, method, base) or [""]:
            cells = [
                format_cell(final_values(records, method, ts, sp, v, base)) for ts, sp in COLUMNS
            ]
            lines.append(f"| {row_label(method, v)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_curves(
    records: Sequence[RunRecord],
    sft_round_success: Mapping[str, float],
    methods: Sequence[str],
    out_dir: str | os.PathLike,
    budget_s: float,
    base: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Per task set: success vs wall time and trajectories vs wall time (one line per method
    and set of overrides, mean over seeds, shaded ± std); returns the PNG paths.

    ``sft_round_success`` is each task set's SFT check, made on seed
    :data:`~distrl_tasks.bench.records.SFT_CHECK_SEED`; each run's success curve starts at
    its own seed's (:func:`~distrl_tasks.bench.records.start_success`).

    ``base``: the invocation's own overrides (None: none); rows are labelled with what a run's
    overrides add to them, so its own runs keep the method's plain name.
    """
    from matplotlib.figure import Figure  # no pyplot: no global state, the Agg canvas

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for task_set in sorted({r.task_set for r in records}):
        mine = [r for r in records if r.task_set == task_set]
        end = max([budget_s] + [p.finished_s for r in mine for p in r.rounds])
        grid = np.linspace(0.0, end, 200)
        initial = sft_round_success.get(task_set, 0.0)
        for kind, ylabel in (
            ("success", "test success (first N tasks), %"),
            ("trajectories", "trajectories collected"),
        ):
            fig = Figure(figsize=(6.4, 4.0))
            ax = fig.subplots()
            for method, v in [(m, v) for m in methods for v in variants(mine, m, base)]:
                runs = [r for r in mine if r.method == method and variant(r, base) == v]
                starts = [start_success(r, initial) for r in runs]
                mean, std = curve(runs, grid, kind, starts)
                scale = 100.0 if kind == "success" else 1.0
                label = f"{row_label(method, v)} (n={len(runs)})"
                ax.plot(grid / 60, mean * scale, label=label, drawstyle="steps-post")
                ax.fill_between(
                    grid / 60, (mean - std) * scale, (mean + std) * scale, alpha=0.2, step="post"
                )
            ax.axvline(budget_s / 60, color="grey", linestyle="--", linewidth=1, label="budget")
            ax.set_xlabel("wall time since the rounds started, min")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{TASK_SET_LABELS.get(task_set, task_set)}: {kind} vs wall time")
            ax.grid(alpha=0.3)
            ax.legend(loc="best", fontsize="small")
            fig.tight_layout()
            path = out / f"learning_{kind}_{task_set}.png"
            fig.savefig(path, dpi=100)
            paths.append(path)
    return paths


@dataclass(frozen=True)
class Target:
    """One of the issue's targets and how the run measured against it."""

    name: str
    met: bool | None  # None: not measurable with the methods/task sets that ran
    detail: str

    @property
    def verdict(self) -> str:
        return {True: "met", False: "not met", None: "not measured"}[self.met]


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def evaluate_targets(
    records: Sequence[RunRecord],
    starts: Mapping[tuple[str, str, int], float],
    budget_s: float,
    base: Mapping[str, Any] | None = None,
) -> list[Target]:
    """The targets: the share of the gap between SFT and the expert (100%) that RL closes on the
    test goals, ``(mean RL - mean SFT) / (1 - mean SFT)`` per task set over a method's seeds,
    each seed's SFT figure measured on that seed's world (the best method >= 50%, every method
    >= 25%), DistRL >= DigiRL on test success at the same budget, and asynchronous trajectories
    at the budget >= 2.4x synchronous (DistRL over DigiRL), per task set.

    ``starts``: the SFT policy's success keyed ``(task set, split, seed)``; a seed without one
    takes seed :data:`~distrl_tasks.bench.records.SFT_CHECK_SEED`'s.

    The targets are the benchmark's: per method, only the runs of its first set of overrides
    (:func:`variants` beyond ``base``: the invocation's own where they ran) count, never
    averaged with an ablation's.
    """
    first = {m: variants(records, m, base)[0] for m in {r.method for r in records}}
    records = [r for r in records if variant(r, base) == first[r.method]]
    methods = sorted({r.method for r in records}, key=lambda m: list(METHOD_LABELS).index(m))
    task_sets = sorted({r.task_set for r in records})
    out = []

    closed: dict[str, dict[str, float]] = {}  # task set -> method -> share of the gap closed
    start_of: dict[str, dict[int, float]] = {}  # task set -> seed -> the start measured there
    for ts in task_sets:
        fallback = starts.get((ts, "test", SFT_CHECK_SEED))
        for m in methods:
            pairs = {  # seed -> (the run's test success, the start's on the same world)
                r.seed: (r.final["test"], starts.get((ts, "test", r.seed), fallback))
                for r in records
                if (r.method, r.task_set) == (m, ts) and "test" in r.final
            }
            pairs = {seed: (rl, sft) for seed, (rl, sft) in pairs.items() if sft is not None}
            if not pairs:
                continue
            measured = {
                seed: starts[(ts, "test", seed)] for seed in pairs if (ts, "test", seed) in starts
            }
            start_of.setdefault(ts, {}).update(measured)
            rl = statistics.fmean(v[0] for v in pairs.values())
            sft = statistics.fmean(v[1] for v in pairs.values())
            if sft < 1.0:
                closed.setdefault(ts, {})[m] = (rl - sft) / (1.0 - sft)
    parts = [
        f"{TASK_SET_LABELS[ts]} (SFT "
        + "/".join(f"{100 * v:.1f}" for _, v in sorted(start_of[ts].items()))
        + f"% on seeds {','.join(str(k) for k in sorted(start_of[ts]))}): "
        + ", ".join(f"{METHOD_LABELS[m]} {100 * c:+.0f}%" for m, c in by_method.items())
        for ts, by_method in closed.items()
    ]
    detail = "share of the gap closed, " + ("; ".join(parts) if parts else "–")
    best = [max(v.values()) >= BEST_GAP_TARGET for v in closed.values()]
    every = [c >= EVERY_GAP_TARGET for v in closed.values() for c in v.values()]
    out.append(
        Target(
            f"the best RL method closes >= {BEST_GAP_TARGET:.0%} of the gap between SFT and the "
            "expert on test goals",
            all(best) if best else None,
            detail,
        )
    )
    out.append(
        Target(
            f"every RL method closes >= {EVERY_GAP_TARGET:.0%} of that gap",
            all(every) if every else None,
            detail,
        )
    )

    verdicts, parts = [], []
    for ts in task_sets:
        a = _mean(final_values(records, ASYNC_METHOD, ts, "test"))
        s = _mean(final_values(records, SYNC_REFERENCE, ts, "test"))
        if a is not None and s is not None:
            verdicts.append(a >= s)
            parts.append(f"{TASK_SET_LABELS[ts]} test {100 * a:.1f}% vs {100 * s:.1f}%")
    out.append(
        Target(
            "DistRL's success at equal wall time >= DigiRL's",
            all(verdicts) if verdicts else None,
            "; ".join(parts) or "–",
        )
    )

    verdicts, parts = [], []
    for ts in task_sets:
        counts = {
            m: _mean(
                [trajectories_at(r, budget_s) for r in records if (r.method, r.task_set) == (m, ts)]
            )
            for m in methods
        }
        a, s = counts.get(ASYNC_METHOD), counts.get(SYNC_REFERENCE)
        if a is not None and s:
            verdicts.append(a / s >= TRAJECTORY_RATIO_TARGET)
            others = ", ".join(f"{METHOD_LABELS[m]} {c:.0f}" for m, c in counts.items() if c)
            parts.append(f"{TASK_SET_LABELS[ts]}: {a / s:.2f}x ({others})")
    out.append(
        Target(
            f"asynchronous collection gathers >= {TRAJECTORY_RATIO_TARGET}x the trajectories of "
            "synchronous collection in the same time",
            all(verdicts) if verdicts else None,
            "trajectories at the budget, mean over seeds: " + ("; ".join(parts) or "–"),
        )
    )
    return out


def run_details_table(
    records: Sequence[RunRecord],
    methods: Sequence[str],
    base: Mapping[str, Any] | None = None,
) -> str:
    """Per method, set of overrides and task set: rounds learned within the budget, trajectories
    collected by the budget, the learner's optimizer steps after round 0
    (:attr:`RunRecord.online_updates`), round of the evaluated policy, wall time of the rounds
    (means over seeds).

    ``base``: the invocation's own overrides (None: none); rows are labelled with what a run's
    overrides add to them, so its own runs keep the method's plain name.
    """
    lines = [
        "| Method | Task set | Seeds | Rounds in budget | Trajectories by budget | "
        "Online updates | Evaluated round | Rounds wall (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for ts in sorted({r.task_set for r in records}):
        for m, v in [(method, v) for method in methods for v in variants(records, method, base)]:
            runs = [r for r in records if (r.method, r.task_set, variant(r, base)) == (m, ts, v)]
            if not runs:
                continue
            rounds = mean_std([r.rounds_in_budget for r in runs])
            trajs = mean_std([trajectories_at(r, r.budget_s) for r in runs])
            walls = mean_std([r.wall_s for r in runs])
            updates = [r.online_updates for r in runs]
            if None in updates:  # records from before steps were kept, their manifests gone
                updates_cell = "n/a"
            else:
                mean, sd = mean_std(updates)
                updates_cell = f"{mean:.0f} ± {sd:.0f}"
            finals = ", ".join(str(r.final_round) for r in sorted(runs, key=lambda r: r.seed))
            lines.append(
                f"| {row_label(m, v)} | {TASK_SET_LABELS.get(ts, ts)} | {len(runs)} | "
                f"{rounds[0]:.1f} ± {rounds[1]:.1f} | {trajs[0]:.0f} ± {trajs[1]:.0f} | "
                f"{updates_cell} | {finals} | {walls[0]:.0f} ± {walls[1]:.0f} |"
            )
    return "\n".join(lines)


RECORDS_DIR = Path("benchmarks") / "results"


def dated_record(
    topic: str, date: str | None = None, root: str | os.PathLike = RECORDS_DIR
) -> Path:
    """Where a new measurement's record goes: ``<root>/<date>-<topic>.md`` (default: today).

    ``benchmarks/RESULTS.md`` is the current table; its row for a target is replaced by hand
    with the new figure and a link to this record.
    """
    return Path(root) / f"{date or time.strftime('%Y-%m-%d')}-{topic}.md"


def write_record(
    path: str | os.PathLike, section: str, marks: tuple[str, str] | None = None
) -> Path:
    """Put ``section`` into the record at ``path`` (replacing an earlier run's of the same day),
    atomically; a new record starts with a title naming its date."""
    path = Path(path)
    text = path.read_text() if path.is_file() else f"# {path.stem}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(replace_section(text, section, marks))
    os.replace(tmp, path)
    return path


def replace_section(text: str, section: str, marks: tuple[str, str] | None = None) -> str:
    """``text`` with the block between the benchmark markers (default: the learning
    benchmark's) replaced by ``section`` (which carries the markers), or ``section`` appended
    when the markers are absent."""
    start_mark, end_mark = marks or (START_MARK, END_MARK)
    if not section.startswith(start_mark) or not section.rstrip().endswith(end_mark):
        raise ValueError(f"the section must start with {start_mark} and end with {end_mark}")
    start, end = text.find(start_mark), text.find(end_mark)
    if start != -1 and end > start:
        return text[:start] + section.rstrip() + text[end + len(end_mark) :]
    head = text.rstrip("\n") + "\n\n" if text.strip() else ""
    return head + section.rstrip() + "\n"


def format_minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.2f} h"


def results_section(
    *,
    table: str,
    details: str,
    targets: Sequence[Target],
    plots: Sequence[Path],
    results_dir: str | os.PathLike,
    settings_lines: Sequence[str],
    machine: Mapping[str, Any],
    date: str,
    command: str,
    wall_s: float,
) -> str:
    """The RESULTS.md block (markers included) for one benchmark invocation."""
    rel = [Path(os.path.relpath(p, results_dir)).as_posix() for p in plots]
    lines = [
        START_MARK,
        "## Learning benchmark: asynchronous vs synchronous RL (a Table 1 on the simulator)",
        "",
        f"Command: `{command}`. Date: {date}. Machine: `nproc` = {machine['nproc']}, "
        f"`{machine['cpu']}`, Python {machine['python']}, torch {machine['torch']}. "
        f"Wall time of the whole command: {format_minutes(wall_s)}.",
        "",
        "Settings:",
        *[f"- {line}" for line in settings_lines],
        "",
        "Success rate (%), final policy of each run, mean ± std over seeds "
        "(test: first tasks of the file in order; train: a seeded sample, the same for all):",
        "",
        table,
        "",
        "Runs:",
        "",
        details,
        "",
        "Targets:",
        *[f"- {t.name}: **{t.verdict}** — {t.detail}" for t in targets],
        "",
        "Plots: " + ", ".join(f"[{Path(p).name}]({p})" for p in rel),
        "",
        *[f"![{Path(p).stem}]({p})" for p in rel],
        END_MARK,
    ]
    return "\n".join(lines) + "\n"
