"""`distrl bench learning`: the learning benchmark from the command line.

``benchmarks/learning.py`` takes the same flags (it builds its parser with
:func:`add_learning_arguments` and runs :func:`run_learning`).
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from distrl_tasks.cli.common import add_config_flags, config_path
from distrl_tasks.config import ConfigError, parse_override


def _csv(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _seeds(text: str) -> tuple[int, ...]:
    """``--seeds``: a count N (seeds 0..N-1) or a comma-separated list of the seeds to run
    (``1,2``; one chosen seed: ``2,``).

    Raises:
        argparse.ArgumentTypeError: not a positive count, or a list that is not of distinct
            non-negative integers.
    """
    expected = "a seed count N (seeds 0..N-1) or comma-separated seeds such as 1,2 (one: 2,)"
    if "," not in text:
        try:
            count = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if count < 1:
            raise argparse.ArgumentTypeError(f"a seed count must be >= 1, got {count}")
        return tuple(range(count))
    parts = [part.strip() for part in text.split(",")]
    if parts[-1] == "":  # "2,": one chosen seed
        parts.pop()
    if not parts or not all(part.isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    seeds = tuple(int(part) for part in parts)
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"a seed is listed twice in {text!r}")
    return seeds


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The flags that say which runs to make and how (defaults: the full preset, or the smoke
    preset with --smoke); the learning benchmark and the ablation share them."""
    p.add_argument(
        "--smoke", action="store_true", help="tiny settings that check the machinery (minutes)"
    )
    p.add_argument("--budget-s", type=float, help="wall-clock budget per run, seconds")
    p.add_argument(
        "--seeds",
        type=_seeds,
        help="N: seeds 0..N-1; or the seeds to run, comma-separated: 1,2 (one seed: 2,)",
    )
    p.add_argument("--task-sets", type=_csv, help="comma-separated: general,webshop")
    p.add_argument(
        "--methods", type=_csv, help="comma-separated: distrl,digirl,filtered_bc,grpo,gigpo"
    )
    p.add_argument("--devices", type=int, help="simulated devices per run")
    p.add_argument("--time-scale", type=float, help="latency model time scale (e.g. 0.1)")
    p.add_argument("--eval-test", type=int, help="final evaluation: first N test tasks")
    p.add_argument("--eval-train", type=int, help="final evaluation: N sampled train tasks")
    p.add_argument("--threads", type=int, help="torch threads (default 1, the same for all)")
    p.add_argument(
        "--workdir", default="runs/learning-bench", help="where runs, caches and MLflow live"
    )
    p.add_argument(
        "--results-file",
        default="record",
        help="markdown record to write (default: benchmarks/results/<today>-<benchmark>.md; "
        "then replace the target's row in benchmarks/RESULTS.md with its figure and link)",
    )
    p.add_argument(
        "--no-results",
        action="store_true",
        help="do not write the results file, nor plots into the tree (they go to the workdir)",
    )
    p.add_argument(
        "--reference-profiles",
        type=_csv,
        help="also evaluate the final policies under these world profiles (default static,hostile;"
        " 'none' for no reference evaluation)",
    )
    p.add_argument(
        "--fresh", action="store_true", help="discard cached runs in --workdir and start over"
    )
    add_config_flags(p)  # --config, --set: applied to every run


def add_learning_arguments(p: argparse.ArgumentParser) -> None:
    """The learning benchmark's flags: the run flags, plus its plots, exports and the modes that
    read or build the cache alone (the ablation has none of these)."""
    add_run_arguments(p)
    p.add_argument(
        "--plots-dir",
        help="where the PNGs go (default benchmarks/plots; with --no-results <workdir>/plots)",
    )
    only = p.add_mutually_exclusive_group()  # one reads the cache, the other builds into it
    only.add_argument(
        "--finished-only",
        action="store_true",
        help="print the table of the runs finished so far in --workdir; starts no run",
    )
    only.add_argument(
        "--starts-only",
        action="store_true",
        help="build, evaluate and export each task set's SFT start in --workdir; runs no method",
    )
    p.add_argument(
        "--with-reference",
        action="store_true",
        help="with --finished-only: add the reference-profile table (evaluates what is not cached)",
    )
    p.add_argument(
        "--export-dir",
        help="where each finished run's portable result is written and read, to commit: a run "
        "exported there is not run again, on any machine (default benchmarks/learning_runs; "
        "none with --smoke)",
    )
    p.add_argument("--no-export", action="store_true", help="neither read nor write run exports")


def settings_from_args(args: argparse.Namespace):
    """The preset (full, or smoke with --smoke) with the flags given applied."""
    from distrl_tasks.bench.setup import (
        LearningBenchSettings,
    )  # lazy: the simulator, PIL (CLI start-up)

    base = LearningBenchSettings.smoke() if args.smoke else LearningBenchSettings.full()
    changes: dict = {}
    for flag, name in (
        ("budget_s", "budget_s"),
        ("task_sets", "task_sets"),
        ("methods", "methods"),
        ("devices", "devices"),
        ("time_scale", "time_scale"),
        ("eval_test", "eval_test"),
        ("eval_train", "eval_train"),
        ("threads", "threads"),
    ):
        value = getattr(args, flag)
        if value is not None:
            changes[name] = value
    if args.reference_profiles is not None:
        changes["reference_profiles"] = tuple(p for p in args.reference_profiles if p != "none")
    if args.seeds is not None:
        seeds = args.seeds  # the parser's tuple; a count where a caller built the namespace
        if isinstance(seeds, int):
            if seeds < 1:
                raise ConfigError(f"--seeds: must be >= 1, got {seeds}")
            seeds = tuple(range(seeds))
        changes["seeds"] = tuple(seeds)
    if args.overrides:
        changes["overrides"] = {**base.overrides, **dict(map(parse_override, args.overrides))}
    if changes:
        changes["preset"] = f"{base.preset}+flags"
    changes["config"] = config_path(args)
    try:
        return dataclasses.replace(base, **changes)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def export_dir_from_args(args: argparse.Namespace) -> str | None:
    """Where run exports go: ``--export-dir``, else the default one, except with
    ``--no-export`` or (unless named) ``--smoke``, whose numbers mean nothing."""
    from distrl_tasks.bench.export import DEFAULT_EXPORT_DIR  # lazy: numpy (CLI start-up)

    if args.no_export:
        return None
    return args.export_dir or (None if args.smoke else DEFAULT_EXPORT_DIR)


def plots_dir_from_args(args: argparse.Namespace) -> str:
    """``--plots-dir``, else the tree's plots folder, except with ``--no-results``: a partial
    run's curves then stay in its workdir, so the committed plots keep matching the record."""
    if args.plots_dir:
        return args.plots_dir
    return str(Path(args.workdir) / "plots") if args.no_results else "benchmarks/plots"


def run_learning(args: argparse.Namespace, command: str | None = None) -> int:
    """Run the benchmark the parsed flags describe; prints progress and the table."""
    from distrl_tasks.bench.learning import (
        build_starts,
        report_finished,
        run_benchmark,
    )  # lazy: numpy + the simulator (CLI start-up)

    settings = settings_from_args(args)
    export_dir = export_dir_from_args(args)
    if args.starts_only:
        build_starts(
            settings,
            args.workdir,
            export_dir=export_dir,
            log=lambda line: print(line, flush=True),
        )
        return 0
    if args.finished_only:
        report_finished(
            settings,
            args.workdir,
            reference=args.with_reference,
            export_dir=export_dir,
            log=lambda line: print(line, flush=True),
        )
        return 0
    run_benchmark(
        settings,
        workdir=args.workdir,
        export_dir=export_dir,
        results_file=None if args.no_results else args.results_file,
        plots_dir=plots_dir_from_args(args),
        command=command or shlex.join(["distrl", *sys.argv[1:]]),
        fresh=args.fresh,
        log=lambda line: print(line, flush=True),
    )
    return 0


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in _csv(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers: {text!r}") from exc


def run_ablation_command(args: argparse.Namespace) -> int:
    """``distrl bench ablation``: the factorial and the A-RIDE variants (issue 21)."""
    from distrl_tasks.bench.ablation import (
        DEFAULT_LRS,
        arms,
        run_ablation,
    )  # lazy: numpy + the simulator (CLI start-up)

    settings = settings_from_args(args)
    try:
        arms(args.parts, args.arms)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    run_ablation(
        settings,
        parts=args.parts,
        arm_names=args.arms,
        lrs=args.lrs or DEFAULT_LRS,
        workdir=args.workdir,
        results_file=None if args.no_results else args.results_file,
        command=shlex.join(["distrl", *sys.argv[1:]]),
        fresh=args.fresh,
        log=lambda line: print(line, flush=True),
    )
    return 0


def add_bench_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``distrl bench learning`` and ``distrl bench ablation`` on the parser."""
    bench = sub.add_parser("bench", help="benchmarks measured end to end on the pipeline")
    benchsub = bench.add_subparsers(
        dest="bench_command", required=True, metavar="{learning,ablation}"
    )
    learning = benchsub.add_parser(
        "learning",
        help="Table 1 on the simulator: DistRL (async) vs DigiRL and Filtered BC (sync)",
        description="SFT bootstrap per task set, then every method and seed for the same "
        "wall-clock budget; writes the table, plots, MLflow runs and a RESULTS.md section.",
    )
    add_learning_arguments(learning)
    learning.set_defaults(func=lambda args: run_learning(args))
    ablation = benchsub.add_parser(
        "ablation",
        help="issue 21's ablation: async/sync x DistRL/DigiRL/Filtered BC, and A-RIDE variants",
        description="Every arm of the 2x3 factorial and the A-RIDE variants, each at every "
        "learning rate of --lrs (the same search for all; the rate is chosen by train success), "
        "with the learning benchmark's settings, run flags and run cache (not its export, plot or "
        "start flags).",
    )
    add_run_arguments(ablation)
    ablation.add_argument(
        "--parts", type=_csv, default=("factorial", "variants"), help="factorial,variants"
    )
    ablation.add_argument(
        "--arms",
        type=_csv,
        help="only these arms, e.g. distrl-configured,distrl-windows_32 (default: every arm of "
        "--parts); the run cache joins invocations",
    )
    ablation.add_argument(
        "--lrs", type=_floats, help="algorithm.lm_lr grid, comma-separated (default 3e-6,1e-5,3e-5)"
    )
    ablation.set_defaults(func=run_ablation_command)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``benchmarks/learning.py``."""
    parser = argparse.ArgumentParser(
        prog="benchmarks/learning.py", description="The learning benchmark (Table 1)."
    )
    add_learning_arguments(parser)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    try:
        return run_learning(args, shlex.join(["python", "benchmarks/learning.py", *argv]))
    except ConfigError as exc:
        print(f"learning benchmark: config error: {exc}", file=sys.stderr)
        return 2
