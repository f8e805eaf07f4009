"""The learning benchmark: a Table 1 on the simulator, asynchronous vs synchronous RL.

Per task set (AitW General, WebShop): the SFT bootstrap runs once (the same policy for every
method and seed; its evaluation is the table's SFT row). Per method and seed, a fresh project
whose MLflow registry holds that checkpoint as version 1 (``behavior``, ``champion``) runs
:func:`~distrl_tasks.orchestration.pipeline.run_rounds` for the same wall-clock budget, counted from
its farm being up: DistRL = ``distrl`` with asynchronous rounds; DigiRL = ``digirl`` and Filtered BC
= ``filtered_bc`` with synchronous rounds. Each round is evaluated on the first ``round_eval_tasks``
test tasks (the curves). The policy evaluated at the end is the last one registered within the
budget (SFT's if none): the first ``eval_test`` test tasks in file order and ``eval_train`` train
tasks sampled with seed 0; greedy, oracle verdicts.

Fairness: every method gets the same budget, devices, latency model, episodes per round, SFT
policy, evaluation, data regime and the config's hyperparameters, untuned. With an offline phase
(``algorithm.mode`` off2on, the default) every run starts with round 0 inside its budget,
always synchronous; its dataset is not counted among the collected trajectories, which compare
the online collection modes. The seed is ``sim.seed``. The
emulator-calibrated latency model (time-scaled) is on during the rounds, off for the bootstrap
and the final evaluations (latency changes no verdict, only time).

Outputs: the table, a per-run table, the goals solved per family and the targets; PNG curves;
a ``benchmarks/RESULTS.md`` section between ``<!-- learning-benchmark:start/end -->``; MLflow in
``<workdir>/runs/mlflow.db`` (experiment ``learning-bench``): a parent run per invocation, a
nested run per (method, task set, seed) with per-round metrics (step = round) and final metrics;
the parent holds the artifacts.
Finished runs are cached per run directory (named by a hash of its settings): an interrupted
benchmark resumes; ``fresh=True`` starts over (do that after changing the code). Runs go seed by
seed (every method at seed 0, then at seed 1, ...), so a partial benchmark compares the methods.
With an export directory (the CLI's default ``benchmarks/learning_runs``), each SFT policy and
finished run also leaves a small committed export (:mod:`distrl_tasks.bench.export`), so parts
run on different machines join, and the report says which CPU ran which run. Records and
exports hold their overrides (what the settings change from the full preset); exported runs of
the same task sets, methods, seeds and SFT policy under other overrides (an ablation) are rows
of their own in the tables and curves, never averaged with the invocation's. Each run also
checks the SFT policy on its own seed (after the budget), where its success curve starts.

The full preset takes hours on a 2-core machine, so it is meant to run in parts
(``--seeds``/``--task-sets``) that the run cache joins (timings:
benchmarks/results/2026-11-24-learning-benchmark-asynchronous-synchronous-rl-table-1.md).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distrl_tasks.bench.describe import describe_settings, machine_info
from distrl_tasks.bench.export import (
    PolicyExport,
    collect_export,
    commits_line,
    machine_label,
    machines_line,
    read_export,
    sft_mismatches,
    variant_exports,
    variant_record,
    write_export,
)
from distrl_tasks.bench.families import family_tables, final_family_counts
from distrl_tasks.bench.profiles import (
    SFT,
    evaluate_profiles,
    final_checkpoint,
    final_eval_dir,
    final_test_evaluation,
    profiles_table,
)
from distrl_tasks.bench.records import (
    DEFAULTS_GENERATION,
    SFT_CHECK_SEED,
    RoundPoint,
    RunRecord,
)
from distrl_tasks.bench.report import (
    METHOD_LABELS,
    dated_record,
    evaluate_targets,
    plot_curves,
    results_section,
    results_table,
    run_details_table,
    write_record,
)
from distrl_tasks.bench.setup import (
    LearningBenchSettings,
    SFTPolicy,
    adopt_unseeded_evaluations,
    bootstrap_sft,
    current_overrides,
    new_project,
    run_config,
    run_dir,
    run_overrides,
    seed_registry,
    sft_key,
    sft_overrides,
    start_world_seeds,
)
from distrl_tasks.orchestration.pipeline import UNBOUNDED_ROUNDS, RoundResult, run_rounds
from distrl_tasks.stages.common import prune_round_checkpoints, read_manifest, torch_threads

EXPERIMENT = "learning-bench"
RECORD_FILE = "bench_record.json"


def report_finished(
    settings: LearningBenchSettings,
    workdir: str | os.PathLike = "runs/learning-bench",
    *,
    reference: bool = False,
    export_dir: str | os.PathLike | None = None,
    log: Callable[[str], None] = print,
) -> tuple[str, list[RunRecord]]:
    """The table of the runs of ``settings`` that finished so far in ``workdir``, joined with
    the exports in ``export_dir`` (runs and SFT policies finished on other machines; a local
    run wins).

    For a benchmark that was interrupted (or still runs elsewhere): task sets whose SFT
    bootstrap has not finished are left out, runs not finished show as ``–``. Exported runs of
    the same task sets, methods and seeds from the same SFT policy under other overrides (an
    ablation) are rows of their own in the tables (:func:`variants_beside`). No run is started
    and nothing is written (no RESULTS.md section, plots or MLflow runs: those belong to a whole
    benchmark); what may run are evaluations not cached yet: a finished SFT policy's on the
    benchmark's task lists and each seed's world, and with ``reference`` the final policies' under
    ``settings.reference_profiles``. Evaluations cached before their key named the world's seed
    are renamed to it once (:func:`~distrl_tasks.bench.setup.adopt_unseeded_evaluations`).
    """
    from distrl_tasks.stages import (
        bootstrap,  # lazy: torch + mlflow
    )

    root = Path(workdir).resolve()
    _adopt_old_cache(root, log)
    export_root = Path(export_dir) if export_dir is not None else None
    sft, records, exports, local = {}, [], {}, 0
    for ts in settings.task_sets:
        cfg = run_config(settings, ts, latency=False)
        name = f"sft-{ts}-{sft_key(cfg, settings)}"
        if (root / name / bootstrap.BOOTSTRAP_DIR / "manifest.json").is_file():
            sft[ts] = bootstrap_sft(settings, ts, root, log=log)  # evaluations cached: no run
        elif (exported := read_export(export_root, name)) is not None:
            sft[ts], exports[name] = sft_from_export(exported, root), exported
    for ts, seed, method in itertools.product(sft, settings.seeds, settings.methods):
        directory = run_dir(settings, method, ts, seed, sft[ts], root)
        exported = read_export(export_root, directory.name)
        if (directory / RECORD_FILE).is_file():
            cached = RunRecord.from_dict(json.loads((directory / RECORD_FILE).read_text()))
            records.append(own_overrides(cached, settings))
            local += exported is None
        elif exported is not None:
            records.append(own_overrides(exported.run_record, settings))
        if exported is not None:
            exports[directory.name] = exported
    beside = variants_beside(settings, sft, root, export_root, exports)
    base = own_base(settings)
    planned = len(settings.task_sets) * len(settings.seeds) * len(settings.methods)
    starts = sft_on_worlds(settings, sft)
    table = results_table(records + beside, sft_columns(starts), settings.methods, base)
    where = f"{root}" + (f" and {export_root}" if export_root is not None else "")
    others = f" (and {len(beside)} exported under other overrides)" if beside else ""
    log(f"{len(records)} of {planned} runs finished in {where}{others}\n\n{table}\n")
    if records or beside:
        log(run_details_table(records + beside, settings.methods, base) + "\n")
        log(provenance_note(list(exports.values()), local, sft) + "\n")
    for t in evaluate_targets(records, starts, settings.budget_s, base):
        log(f"- {t.name}: {t.verdict} ({t.detail})")
    if records:
        counts = final_family_counts(settings, records, sft, root, exports=exports, log=log)
        log("\n" + family_tables(counts, settings.methods, list(sft)))
    if reference and settings.reference_profiles and records:
        log("\n" + reference_table(settings, records, sft, root, exports=exports, log=log))
    return table, records


def _adopt_old_cache(root: Path, log: Callable[[str], None]) -> None:
    if adopted := adopt_unseeded_evaluations(root):
        log(f"{adopted} cached evaluations in {root} renamed to the key that names their world")


def own_base(settings: LearningBenchSettings) -> dict[str, Any]:
    """The invocation's own overrides, against which the tables label the other rows (one set
    for all: a method's fixed keys are the same in the run and the defaults)."""
    return run_overrides(settings, settings.methods[0], settings.task_sets[0])


def own_overrides(record: RunRecord, settings: LearningBenchSettings) -> RunRecord:
    """``record``, found under the name ``settings`` give it, with their overrides: the name is
    the cache key of ``settings``, so theirs are its own, against today's defaults (whatever
    it recorded: nothing, before they were recorded, or against older defaults)."""
    record.overrides = run_overrides(settings, record.method, record.task_set)
    record.overrides_generation = DEFAULTS_GENERATION
    return record


def variants_beside(
    settings: LearningBenchSettings,
    sft: Mapping[str, SFTPolicy],
    root: Path,
    export_root: Path | None,
    exports: Mapping[str, PolicyExport],
) -> list[RunRecord]:
    """The records of the exported runs beside the invocation's own: same task sets, methods,
    seeds and SFT checkpoint, other settings (:func:`~distrl_tasks.bench.export.variant_exports`),
    each with its overrides (a row of its own in the tables).

    One written before overrides were recorded and named as the benchmark's defaults name it
    is a run of the defaults (its name is their cache key); any other unknown one is a row of
    its own (:func:`~distrl_tasks.bench.export.variant_record`).
    """
    if export_root is None or not sft:
        return []
    from distrl_tasks.stages.evaluate import checkpoint_digest  # lazy: torch + pyarrow

    digests = {}
    for ts, p in sft.items():
        if p.policy_dir.exists():
            digests[ts] = checkpoint_digest(p.policy_dir)
        elif p.workdir.name in exports:
            digests[ts] = exports[p.workdir.name].checkpoint
    own = [
        run_dir(settings, m, ts, seed, sft[ts], root).name
        for ts, seed, m in itertools.product(sft, settings.seeds, settings.methods)
    ]
    found = variant_exports(
        export_root, own=own, task_sets=digests, methods=settings.methods, seeds=settings.seeds
    )
    defaults = LearningBenchSettings(config=settings.config)
    out = []
    for exported in found:
        record = exported.run_record
        if record.overrides is None:
            ts, method, seed = exported.task_set, record.method, record.seed
            if exported.name == run_dir(defaults, method, ts, seed, sft[ts], root).name:
                record.overrides = run_overrides(defaults, method, ts)  # today's defaults' name
                record.overrides_generation = DEFAULTS_GENERATION
        record.overrides = current_overrides(record, settings.config)
        record.overrides_generation = DEFAULTS_GENERATION
        out.append(record if record.overrides is not None else variant_record(exported))
    return out


def sft_from_export(exported: PolicyExport, root: Path) -> SFTPolicy:
    """An SFT policy known only from its export: its figures, and the directory it would have
    here (absent, so the tables read the export)."""
    workdir = root / exported.name
    return SFTPolicy(
        exported.task_set,
        workdir,
        workdir / "absent-policy",
        int(exported.sft.get("steps", 0)),
        {k: float(v) for k, v in exported.sft.get("success", {}).items()},
        str(exported.sft.get("tasks_key", "")),
    )


def provenance_note(
    exports: Sequence[PolicyExport], local: int, sft: Mapping[str, SFTPolicy]
) -> str:
    """Which machine and which commit ran which runs, and which exported runs started from
    another SFT checkpoint than the one this machine holds (different CPUs train different
    weights)."""
    from distrl_tasks.stages.evaluate import checkpoint_digest  # lazy: torch + pyarrow

    runs = [e for e in exports if e.record is not None]
    lines = [machines_line(runs, local), commits_line(runs)]
    here = {ts: checkpoint_digest(p.policy_dir) for ts, p in sft.items() if p.policy_dir.exists()}
    mismatched = sft_mismatches(runs, here)
    if mismatched:
        lines.append(
            f"{len(mismatched)} exported runs started from another SFT checkpoint than this "
            "machine's (the SFT row is this machine's): " + ", ".join(mismatched)
        )
    return "\n".join(lines)


def reference_table(
    settings: LearningBenchSettings,
    records: Sequence[RunRecord],
    sft: dict[str, SFTPolicy],
    root: Path,
    *,
    exports: Mapping[str, PolicyExport] | None = None,
    log: Callable[[str], None] = print,
) -> str:
    """The final policies' test success under the benchmark's world profile and under
    ``settings.reference_profiles`` (evaluated now unless cached or exported), as markdown."""
    profiles = settings.reference_profiles
    results = evaluate_profiles(settings, records, sft, root, profiles, exports=exports, log=log)
    main: dict[tuple[str, str], list[float]] = {}
    for r in records:
        main.setdefault((r.method, r.task_set), []).append(r.final["test"])
    for (ts, split, _), start in sft_on_worlds(settings, sft).items():
        if split == "test":
            main.setdefault((SFT, ts), []).append(start)
    profile = run_config(settings, settings.task_sets[0]).sim.dynamics.profile
    table = profiles_table(results, profile, main, settings.methods, list(sft), profiles)
    return (
        f"Test success (%) of the same final policies under other world profiles (first "
        f"{settings.eval_test} test goals, greedy; the runs trained and were scored under "
        f"`{profile}`):\n\n{table}"
    )


def run_one(
    settings: LearningBenchSettings,
    method: str,
    task_set: str,
    seed: int,
    sft: SFTPolicy,
    root: Path,
    *,
    export_dir: Path | None = None,
    log: Callable[[str], None] = print,
) -> RunRecord:
    """One (method, task set, seed) run within the budget, then its final evaluation; reused
    from ``bench_record.json`` when the same settings ran to the end before here, or from its
    export in ``export_dir`` when they ran to the end on another machine."""
    from distrl_tasks.stages import (
        evaluate,  # lazy: torch + pyarrow
    )

    cfg = run_config(settings, task_set, method=method, seed=seed)
    workdir = run_dir(settings, method, task_set, seed, sft, root)
    name = f"{METHOD_LABELS[method]} / {task_set} / seed {seed}"
    if (workdir / RECORD_FILE).is_file():
        log(f"[{name}] finished before: reusing {workdir / RECORD_FILE}")
        cached = RunRecord.from_dict(json.loads((workdir / RECORD_FILE).read_text()))
        return own_overrides(_with_steps(cached, workdir), settings)
    exported = read_export(export_dir, workdir.name)
    if exported is not None:
        log(
            f"[{name}] finished on {machine_label(exported.machine)} at commit "
            f"{exported.commit[:10] or '?'}: reusing its export"
        )
        return own_overrides(exported.run_record, settings)
    shutil.rmtree(workdir, ignore_errors=True)  # a half run would skew the clock: start over
    new_project(workdir)
    seed_registry(cfg, workdir, sft)
    collections: list[tuple[float, int]] = []

    def collected(round_: int, manifest: dict[str, Any], finished_s: float) -> None:
        if round_ > 0:  # round 0 is the offline dataset, the same for every method
            collections.append((finished_s, int(manifest.get("trajectories", 0))))

    def learned(r: RoundResult) -> None:
        log(
            f"[{name}] round {r.round}: {r.finished_s:.0f} s, {sum(n for _, n in collections)} "
            f"trajectories, test success {r.evaluate.get('success_rate', 0.0):.1%}"
        )

    log(f"[{name}] {settings.budget_s:.0f} s budget, {settings.devices} devices, in {workdir}")
    started = time.perf_counter()
    results = run_rounds(
        cfg,
        workdir=workdir,
        rounds=UNBOUNDED_ROUNDS,  # the budget, not a round count, ends a run
        budget_s=settings.budget_s,
        on_round=learned,
        on_collect=collected,
    )
    wall = time.perf_counter() - started
    in_budget = [r for r in results if r.finished_s <= settings.budget_s]
    final_round = in_budget[-1].round if in_budget else 0
    checkpoint = in_budget[-1].train["checkpoint_dir"] if in_budget else sft.policy_dir
    eval_cfg = run_config(settings, task_set, method=method, seed=seed, latency=False)
    eval_dir = workdir if in_budget else sft.workdir  # the SFT's evaluations are cached there
    t_eval, final = time.perf_counter(), {}
    for split, n in (("test", settings.eval_test), ("train", settings.eval_train)):
        m = evaluate.run(
            eval_cfg,
            round=final_round,
            checkpoint_dir=checkpoint,
            workdir=eval_dir,
            split=split,
            n_tasks=n,
        )
        final[split] = float(m["success_rate"])
    start = sft_check(settings, eval_cfg, seed, sft)
    record = RunRecord(
        method=method,
        task_set=task_set,
        seed=seed,
        budget_s=settings.budget_s,
        final=final,
        final_round=final_round,
        rounds=[_point(r) for r in results],
        collections=collections,
        wall_s=wall,
        eval_wall_s=time.perf_counter() - t_eval,
        machine=machine_info(),
        overrides=run_overrides(settings, method, task_set),
        start_success=start,
    )
    (workdir / RECORD_FILE).write_text(json.dumps(record.to_dict(), indent=2) + "\n")
    # the reference evaluations read only the final policy; the registry keeps every round's
    prune_round_checkpoints(workdir, 1, protect=[final_round])
    log(
        f"[{name}] done: {len(results)} rounds ({record.rounds_in_budget} in budget), "
        f"evaluated round {final_round}: train {final['train']:.1%}, test {final['test']:.1%}; "
        f"rounds {wall:.0f} s + final evaluation {record.eval_wall_s:.0f} s"
    )
    return record


def sft_check(settings: LearningBenchSettings, cfg: Any, seed: int, sft: SFTPolicy) -> float:
    """The SFT policy's per-round evaluation on the run's own seed, where its curve starts.

    The bootstrap's check ran on seed :data:`SFT_CHECK_SEED`; another seed's world is another,
    so it is measured here and cached beside the SFT's own evaluations (their key names the
    world's seed: every method's run on that seed reuses it).
    """
    if seed == SFT_CHECK_SEED:
        return sft.success["round"]
    from distrl_tasks.stages import evaluate  # lazy: torch + pyarrow

    m = evaluate.run(
        cfg,
        round=0,
        checkpoint_dir=sft.policy_dir,
        workdir=sft.workdir,
        split="test",
        n_tasks=settings.round_eval_tasks,
    )
    return float(m["success_rate"])


def sft_on_worlds(
    settings: LearningBenchSettings, sft: Mapping[str, SFTPolicy]
) -> dict[tuple[str, str, int], float]:
    """The SFT policy's final evaluation (train and test) on each seed's world: the start each
    run's gap is measured from, keyed ``(task set, split, seed)``.

    A run's farm is seeded by its seed, and the live world draws its dialogs and moved targets
    from it, so the start is measured on the same world as the run. Seed
    :data:`SFT_CHECK_SEED`'s are the bootstrap's own evaluations; the others are cached beside
    them (the evaluate stage's key names the world's seed).
    An SFT policy known only from its export has seed 0's alone (the targets then measure every
    seed from it, and say so).
    """
    from distrl_tasks.stages import evaluate  # lazy: torch + pyarrow

    starts: dict[tuple[str, str, int], float] = {}
    for ts, p in sft.items():
        seeds = start_world_seeds(settings, p)
        for split, n in (("train", settings.eval_train), ("test", settings.eval_test)):
            for seed in seeds:
                if seed == SFT_CHECK_SEED:  # the bootstrap's own evaluation
                    if split in p.success:
                        starts[(ts, split, seed)] = p.success[split]
                    continue
                m = evaluate.run(
                    run_config(settings, ts, seed=seed, latency=False),
                    round=0,
                    checkpoint_dir=p.policy_dir,
                    workdir=p.workdir,
                    split=split,
                    n_tasks=n,
                )
                starts[(ts, split, seed)] = float(m["success_rate"])
    return starts


def sft_columns(
    starts: Mapping[tuple[str, str, int], float],
) -> dict[tuple[str, str], list[float]]:
    """The SFT row's cells: per (task set, split), the start on each seed's world."""
    cols: dict[tuple[str, str], list[float]] = {}
    for (ts, split, _), v in sorted(starts.items()):
        cols.setdefault((ts, split), []).append(v)
    return cols


def run_export(
    settings: LearningBenchSettings, record: RunRecord, sft: SFTPolicy, root: Path
) -> PolicyExport:
    """A finished run's export (its final evaluations are cached: the reference profiles'
    are evaluated now if they were not yet)."""
    workdir = run_dir(settings, record.method, record.task_set, record.seed, sft, root)
    checkpoint = final_checkpoint(record, workdir, sft)

    def test_evaluation(profile: str | None) -> dict[str, Any]:
        cfg = run_config(
            settings,
            record.task_set,
            method=record.method,
            seed=record.seed,
            latency=False,
            dynamics=profile,
        )
        return final_test_evaluation(
            settings, cfg, checkpoint, final_eval_dir(record, workdir, sft)
        )

    return collect_export(
        name=workdir.name,
        task_set=record.task_set,
        checkpoint=checkpoint,
        sft_checkpoint=sft.policy_dir,
        test_evaluation=test_evaluation,
        profiles=settings.reference_profiles,
        record=record,
        machine=record.machine or None,
        overrides=(
            record.overrides
            if record.overrides is not None
            else run_overrides(settings, record.method, record.task_set)
        ),
    )


def sft_export(settings: LearningBenchSettings, sft: SFTPolicy) -> PolicyExport:
    """A task set's SFT policy's export: its evaluations, steps and per-round task list."""

    def test_evaluation(profile: str | None) -> dict[str, Any]:
        cfg = run_config(settings, sft.task_set, latency=False, dynamics=profile)
        return final_test_evaluation(settings, cfg, sft.policy_dir, sft.workdir)

    return collect_export(
        name=sft.workdir.name,
        task_set=sft.task_set,
        checkpoint=sft.policy_dir,
        sft_checkpoint=sft.policy_dir,
        test_evaluation=test_evaluation,
        profiles=settings.reference_profiles,
        sft={"steps": sft.steps, "success": sft.success, "tasks_key": sft.tasks_key},
        overrides=sft_overrides(settings, sft.task_set),
    )


def _starts(
    settings: LearningBenchSettings,
    root: Path,
    export_root: Path | None,
    exports: dict[str, PolicyExport],
    log: Callable[[str], None],
) -> dict[str, SFTPolicy]:
    """Each task set's SFT start, bootstrapped and evaluated (or read from the cache), and
    exported where it is not yet."""
    sft = {ts: bootstrap_sft(settings, ts, root, log=log) for ts in settings.task_sets}
    for p in sft.values():
        _export_missing(
            export_root, p.workdir.name, lambda p=p: sft_export(settings, p), exports, log
        )
    return sft


def build_starts(
    settings: LearningBenchSettings,
    workdir: str | os.PathLike = "runs/learning-bench",
    *,
    export_dir: str | os.PathLike | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, SFTPolicy]:
    """Build the SFT start of each task set of ``settings`` in ``workdir`` (its cache, which the
    benchmark's runs then reuse) and export it to ``export_dir``; runs no method and writes no
    record. Logs one line per start: its steps and success per evaluation."""
    root = Path(workdir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    _adopt_old_cache(root, log)
    export_root = Path(export_dir) if export_dir is not None else None
    with torch_threads(settings.threads):
        sft = _starts(settings, root, export_root, {}, log)
    for ts, p in sft.items():
        rates = ", ".join(f"{k} {100 * v:.1f}%" for k, v in p.success.items())
        log(f"[start] {ts}: {p.workdir.name}, {p.steps} SFT steps; {rates}")
    return sft


def _export_missing(
    export_dir: Path | None,
    name: str,
    make: Callable[[], PolicyExport],
    exports: dict[str, PolicyExport],
    log: Callable[[str], None],
) -> None:
    """Write the export ``name`` unless it exists (an existing one is read into ``exports``:
    an SFT export stays the policy the exported runs started from)."""
    if export_dir is None:
        return
    exported = read_export(export_dir, name)
    if exported is None:
        exported = make()
        log(f"[export] {write_export(export_dir, exported)}")
    exports[name] = exported


def _point(r: Any) -> RoundPoint:
    trajectories, success = r.row()["trajectories"], r.evaluate.get("success_rate", 0)
    steps = r.train.get("steps")
    return RoundPoint(
        r.round,
        r.finished_s,
        r.collected_s,
        int(trajectories),
        float(success),
        None if steps is None else int(steps),
    )


def _with_steps(record: RunRecord, workdir: Path) -> RunRecord:
    """Fill the learner steps that records written before :attr:`RoundPoint.steps` existed lack,
    from the rounds' train manifests in the run directory (left None where one is gone)."""

    for point in record.rounds:
        if point.steps is None:
            train = read_manifest(workdir, point.round, "train") or {}
            point.steps = int(train["steps"]) if "steps" in train else None
    return record


@dataclass
class BenchResult:
    """What :func:`run_benchmark` produced."""

    records: list[RunRecord]
    sft: dict[str, SFTPolicy]
    table: str
    section: str
    plots: list[Path]
    targets: list
    parent_run_id: str
    wall_s: float


def run_benchmark(
    settings: LearningBenchSettings,
    *,
    workdir: str | os.PathLike = "runs/learning-bench",
    results_file: str | os.PathLike | None = "record",
    plots_dir: str | os.PathLike = "benchmarks/plots",
    command: str = "distrl bench learning",
    fresh: bool = False,
    export_dir: str | os.PathLike | None = None,
    log: Callable[[str], None] = print,
) -> BenchResult:
    """Run the benchmark; write plots, MLflow runs and (unless ``results_file`` is None) its
    record: ``"record"`` is today's learning-benchmark record under ``benchmarks/results/``
    (:func:`~distrl_tasks.bench.report.dated_record`). Returns the records, the table and where
    everything went.

    With ``export_dir``, each SFT policy and finished run also gets a portable export there
    (``bench.export``), and a run exported there before, on any machine, is not run again.
    """
    from distrl_tasks.tracking.runs import KIND_TAG, Tracker  # lazy: mlflow + pyarrow

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    if results_file is not None and str(results_file) == "record":
        results_file = dated_record("learning-benchmark")
    record_path = Path(results_file) if results_file is not None else None
    cfg = run_config(settings, settings.task_sets[0])  # a bad override fails here, not later
    root = Path(workdir).resolve()
    if fresh:
        shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    _adopt_old_cache(root, log)
    started = time.perf_counter()
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    tracker = Tracker("sqlite:///runs/mlflow.db", EXPERIMENT, root=root)
    parent = tracker.start_run(f"learning-bench-{settings.preset}", tags={KIND_TAG: "benchmark"})
    with torch_threads(settings.threads):
        try:
            parent.log_params(settings.as_params())
            exports: dict[str, PolicyExport] = {}
            export_root = Path(export_dir) if export_dir is not None else None
            sft = _starts(settings, root, export_root, exports, log)
            records, local = [], 0
            # seed by seed: an interrupted benchmark holds every method for the seeds it finished
            for ts, seed, method in itertools.product(
                settings.task_sets, settings.seeds, settings.methods
            ):
                tags = {KIND_TAG: "bench-run", "method": method, "task_set": ts}
                params = {"method": method, "task_set": ts, "seed": seed, **settings.as_params()}
                with parent.stage_run(f"{method}-{ts}-s{seed}", params=params, tags=tags) as child:
                    record = run_one(
                        settings, method, ts, seed, sft[ts], root, export_dir=export_root, log=log
                    )
                    _log_record(child, record)
                records.append(record)
                workdir = run_dir(settings, method, ts, seed, sft[ts], root)
                if workdir.exists():
                    _export_missing(
                        export_root,
                        workdir.name,
                        lambda r=record, p=sft[ts]: run_export(settings, r, p, root),
                        exports,
                        log,
                    )
                    local += export_root is None
                else:
                    exports[workdir.name] = read_export(export_root, workdir.name)
            beside = variants_beside(settings, sft, root, export_root, exports)
            base = own_base(settings)
            starts = sft_on_worlds(settings, sft)
            table = results_table(records + beside, sft_columns(starts), settings.methods, base)
            targets = evaluate_targets(records, starts, settings.budget_s, base)
            details = run_details_table(records + beside, settings.methods, base)
            details += "\n\n" + provenance_note(list(exports.values()), local, sft)
            counts = final_family_counts(settings, records, sft, root, exports=exports, log=log)
            details += "\n\n" + family_tables(counts, settings.methods, list(sft))
            if settings.reference_profiles:
                details += "\n\n" + reference_table(
                    settings, records, sft, root, exports=exports, log=log
                )
            round_sft = {ts: p.success["round"] for ts, p in sft.items()}
            plots = plot_curves(
                records + beside, round_sft, settings.methods, plots_dir, settings.budget_s, base
            )
            wall = time.perf_counter() - started
            section = results_section(
                table=table,
                details=details,
                targets=targets,
                plots=plots,
                results_dir=Path(results_file).resolve().parent if results_file else plots_dir,
                settings_lines=describe_settings(
                    settings,
                    {ts: p.steps for ts, p in sft.items()},
                    cfg.algorithm,
                    cfg.orchestration.eval_devices,
                    cfg.sim.dynamics.bootstrap_profile,
                ),
                machine=machine_info(),
                date=date,
                command=command,
                wall_s=wall,
            )
            if results_file is not None:
                write_record(record_path, section)
            _log_outputs(parent, section, records, plots)
            parent.log_metrics({"perf/bench_wall_s": wall})
        except Exception:
            parent.end("FAILED")
            raise
        except BaseException:  # interrupted: the finished runs are cached for the next invocation
            parent.end("KILLED")
            raise
    parent.end("FINISHED")
    log(f"\n{table}\n")
    for t in targets:
        log(f"- {t.name}: {t.verdict} ({t.detail})")
    log(f"Done in {wall / 60:.1f} min; MLflow: sqlite:///{root}/runs/mlflow.db")
    return BenchResult(records, sft, table, section, plots, targets, parent.run_id, wall)


def _log_record(run: Any, record: RunRecord) -> None:
    """Per-round metrics (step = round) and the final figures of one run."""
    cum = 0  # collected online, like RunRecord.collections (round 0 is the offline dataset)
    for p in record.rounds:
        cum += p.trajectories if p.round > 0 else 0
        metrics = {
            "eval/success_rate": p.success,
            "rollout/trajectories_cum": cum,
            "perf/wall_s": p.finished_s,
        }
        run.log_metrics(metrics, step=p.round)
    run.log_metrics(
        {
            "eval/final_test_success": record.final["test"],
            "eval/final_train_success": record.final["train"],
            "eval/final_round": record.final_round,
            "perf/rounds_in_budget": record.rounds_in_budget,
            "perf/rounds_wall_s": record.wall_s,
            "rollout/trajectories_total": sum(n for _, n in record.collections),
        }
    )


def _log_outputs(parent: Any, section: str, records: Sequence[RunRecord], plots: list) -> None:
    with tempfile.TemporaryDirectory(prefix="learning-bench-") as tmp:
        out = Path(tmp)
        (out / "learning_benchmark.md").write_text(section)
        data = [r.to_dict() for r in records]
        (out / "records.json").write_text(json.dumps(data, indent=2) + "\n")
        for p in plots:
            shutil.copy(p, out / Path(p).name)
        try:
            parent.log_artifacts(out, "learning_benchmark")
        except ValueError as exc:  # the secret filter refused a file: keep the results anyway
            parent.set_tags({"artifacts_error": str(exc)[:500]})
