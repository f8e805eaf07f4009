"""`distrl` subcommands of the pipeline: one per stage, `round`, and `registry compare`.

Every stage command prints its manifest as one JSON line on stdout (what `dvc repro` and scripts
consume) and writes nothing else there; progress bars go to stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from distrl_tasks.cli.common import add_config_flags, config_path
from distrl_tasks.config import Config, ConfigError, load_config, modes
from distrl_tasks.orchestration.pipeline import format_rounds, run_rounds
from distrl_tasks.stages import register, train, version
from distrl_tasks.stages.common import learner_dir, read_manifest, registry, write_manifest
from distrl_tasks.stages.config_slices import declared_params, experiment_columns, write_slices
from distrl_tasks.stages.dvc_metrics import labeled_data_version, write_metrics
from distrl_tasks.tracking.versions import format_compare_table

STAGES = ("bootstrap", "collect", "label", "version", "train", "evaluate", "register")


def add_pipeline_commands(sub: argparse._SubParsersAction) -> None:
    """Register the stage commands, `round` and `registry` on the top-level parser."""
    for name in STAGES:
        p = sub.add_parser(name, help=f"run the {name} stage (prints its manifest as JSON)")
        p.add_argument("--workdir", default=".", help="project working directory (runs/, data/)")
        p.add_argument("--no-progress", action="store_true", help="no progress bars (stderr)")
        if name != "bootstrap":
            p.add_argument(
                "--round",
                type=int,
                required=True,
                help="round number (0 = the offline phase of algorithm.mode off2on/offline)",
            )
        if name == "collect":
            p.add_argument("--worker", type=int, default=0, help="worker index")
            p.add_argument("--workers", type=int, default=1, help="number of workers")
            p.add_argument("--adb-host", help="ADB server of a running farm (default: own farm)")
            p.add_argument("--adb-port", type=int, help="its port")
            p.add_argument(
                "--policy",
                choices=("behavior", "scripted", "random"),
                default="behavior",
                help="who acts: the registry's behavior policy (default), the scripted expert "
                "(sim.expert_mistake_rate) or a uniformly random policy",
            )
        if name in ("evaluate", "register"):
            p.add_argument("--checkpoint", help="checkpoint dir (default: the round's train)")
        if name in ("train", "register"):
            p.add_argument(
                "--data-version",
                type=_data_version_arg,
                help="lineage hash: 'auto' = DVC's hash of the labeled shards (under `dvc repro`, "
                "where no version stage runs) or a DVC hash (default: the version manifest)",
            )
        add_config_flags(p)
        p.set_defaults(func=_stage_command(name))

    met = sub.add_parser("metrics", help="write metrics.json and per-round plot data (DVC)")
    met.add_argument("--workdir", default=".", help="project working directory")
    met.add_argument("--metrics", default="metrics.json", help="metrics file to write")
    met.add_argument(
        "--plots", default="plots/success_per_round.csv", help="per-round plot CSV to write"
    )
    add_config_flags(met)
    met.set_defaults(func=_cmd_metrics)

    sl = sub.add_parser(
        "config-slices", help="write what each DVC stage reads of the config (dvc.yaml's config)"
    )
    sl.add_argument("--workdir", default=".", help="project working directory")
    add_config_flags(sl)
    sl.set_defaults(func=_cmd_config_slices)

    exp = sub.add_parser(
        "experiments",
        help="`dvc exp show` on the keys that define a run (dvc.yaml's params) and the metrics",
    )
    for flag, text in (
        ("--csv", "print CSV"),
        ("--md", "print a Markdown table"),
        ("--json", "print JSON"),
        ("--only-changed", "only the columns that differ between the rows shown"),
        ("--all-commits", "experiments of every commit, not only the workspace's"),
    ):
        exp.add_argument(flag, action="store_true", help=text)
    exp.set_defaults(func=_cmd_experiments)

    rnd = sub.add_parser("round", help="bootstrap if needed, then run rounds end to end")
    rnd.add_argument("--workdir", default=".", help="project working directory")
    rnd.add_argument(
        "--rounds", type=int, help="how many online rounds (default orchestration.rounds)"
    )
    rnd.add_argument(
        "--first-round",
        type=int,
        help="number of the first round (default: 0, the offline phase, when algorithm.mode is "
        "off2on or offline; else 1)",
    )
    add_config_flags(rnd)
    rnd.set_defaults(func=_cmd_round)

    reg = sub.add_parser("registry", help="the MLflow model registry")
    regsub = reg.add_subparsers(dest="registry_command", required=True, metavar="{compare}")
    cmp_ = regsub.add_parser("compare", help="registered versions side by side")
    cmp_.add_argument("--workdir", default=".", help="project working directory")
    cmp_.add_argument(
        "--load",
        metavar="ALIAS|VERSION",
        help="also download a version: an alias (champion, behavior) or a number (3 or v3)",
    )
    add_config_flags(cmp_)
    cmp_.set_defaults(func=_cmd_registry_compare)


def _config(args: argparse.Namespace) -> Config:
    path = config_path(args)
    return load_config(path, list(args.overrides or []))


def _data_version_arg(text: str) -> str:
    if text == "auto" or re.fullmatch(r"[0-9a-f]{32}(\.dir)?", text):
        return text
    raise argparse.ArgumentTypeError(
        f"expected 'auto' or a DVC hash (32 hex digits, optional .dir), got {text!r}"
    )


def _data_version(cfg: Config, args: argparse.Namespace, round_: int) -> str:
    """The ``--data-version`` given, DVC's hash of the labeled data for 'auto', else the
    version stage's hash."""
    chosen = getattr(args, "data_version", None)
    if chosen == "auto":
        return labeled_data_version(cfg, args.workdir)
    if chosen:
        return chosen
    return _previous(args.workdir, round_, "version", "data_version")


def _checkpoint(cfg: Config, args: argparse.Namespace, round_: int) -> str:
    """``--checkpoint`` or the round's trained checkpoint, made absolute.

    Both are paths as seen from the current directory (train records its output that way), while
    the stages resolve relative paths against ``--workdir``: absolute, they mean the same to both.

    Raises:
        ConfigError: the round's local policy is gone (``tracking.keep_checkpoints`` deleted it
            once newer rounds registered, or it was removed by hand); the message says how to get
            it back.
    """
    if args.checkpoint:
        return str(Path(args.checkpoint).resolve())
    path = Path(_previous(args.workdir, round_, "train", "checkpoint_dir")).resolve()
    if path.is_dir():
        return str(path)

    registered = read_manifest(args.workdir, round_, "register")
    if registered is None:
        raise ConfigError(
            f"round {round_}'s trained policy {path} is missing: "
            f"retrain it with `distrl train --round {round_}`"
        )
    version = registered["version"]
    raise ConfigError(
        f"round {round_}'s local policy {path} was deleted after it was registered as version "
        f"{version} (tracking.keep_checkpoints = {cfg.tracking.keep_checkpoints} keeps the newest "
        f"rounds' only): download it with `distrl registry compare --load {version}` and pass "
        "the path it prints as --checkpoint"
    )


def _previous(workdir: str, round_: int, stage: str, key: str) -> Any:
    manifest = read_manifest(workdir, round_, stage)
    if manifest is None:
        raise ConfigError(f"round {round_} has no {stage} manifest yet: run `distrl {stage}` first")
    return manifest[key]


def _stage_command(name: str) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        cfg = _config(args)
        workdir = args.workdir
        progress = not args.no_progress
        rnd = getattr(args, "round", None)
        if rnd is not None:
            try:
                modes.check_round(cfg, rnd)
            except ValueError as exc:
                raise ConfigError(f"--round: {exc}") from exc
        if name == "bootstrap":
            from distrl_tasks.stages import bootstrap  # lazy: torch + mlflow

            out = bootstrap.run(cfg, workdir=workdir, progress=progress)
        elif name == "collect":
            from distrl_tasks.stages import collect  # lazy: torch + pyarrow

            out = collect.run(
                cfg,
                collect.CollectRequest(
                    round=rnd,
                    worker=args.worker,
                    workers=args.workers,
                    policy=None if args.policy == "behavior" else args.policy,
                    adb_address=(args.adb_host, args.adb_port)
                    if args.adb_host is not None and args.adb_port is not None
                    else None,
                    progress=progress,
                ),
                workdir=workdir,
            )
        elif name == "label":
            from distrl_tasks.stages import label  # lazy: pyarrow + pandas

            out = label.run(cfg, round=rnd, workdir=workdir, progress=progress)
        elif name == "version":
            out = version.run(cfg, round=rnd, workdir=workdir)
        elif name == "train":
            data_version = _data_version(cfg, args, rnd)
            out = train.run(
                cfg, round=rnd, data_version=data_version, workdir=workdir, progress=progress
            )
        elif name == "evaluate":
            from distrl_tasks.stages import evaluate  # lazy: torch + pyarrow

            ckpt = _checkpoint(cfg, args, rnd)

            out = evaluate.run(
                cfg,
                round=rnd,
                checkpoint_dir=ckpt,
                workdir=workdir,
                progress=progress,
                track=True,
            )
            # the round's record, which `distrl register` and `distrl metrics` read
            record = {k: v for k, v in out.items() if k != "reused"}
            write_manifest(workdir, rnd, "evaluate", record)
        else:
            ckpt = _checkpoint(cfg, args, rnd)
            evaluation = {
                "success_rate": _previous(workdir, rnd, "evaluate", "success_rate"),
                "tasks_key": _previous(workdir, rnd, "evaluate", "tasks_key"),
            }
            out = register.run(
                cfg,
                round=rnd,
                checkpoint_dir=ckpt,
                data_version=_data_version(cfg, args, rnd),
                evaluation=evaluation,
                workdir=workdir,
            )
        print(json.dumps(out, default=str), flush=True)
        return 0

    return command


def _cmd_metrics(args: argparse.Namespace) -> int:
    out = write_metrics(
        _config(args), workdir=args.workdir, metrics_path=args.metrics, plots_path=args.plots
    )
    print(json.dumps(out), flush=True)
    return 0


def _cmd_config_slices(args: argparse.Namespace) -> int:
    print(json.dumps(write_slices(_config(args), args.workdir)), flush=True)
    return 0


def _cmd_experiments(args: argparse.Namespace) -> int:
    files = [f for f in ("dvc.yaml", "pretrain/dvc.yaml") if Path(f).is_file()]
    if not files:
        raise ConfigError("no dvc.yaml here: run `distrl experiments` in the project's root")
    dvc = shutil.which("dvc") or str(Path(sys.executable).with_name("dvc"))
    columns = experiment_columns(declared_params(*files))
    flags = [f"--{n}" for n in ("csv", "md", "json", "only-changed", "all-commits")]
    chosen = [f for f in flags if getattr(args, f[2:].replace("-", "_"))]
    return subprocess.run([dvc, "exp", "show", *columns, *chosen], check=False).returncode


def _cmd_round(args: argparse.Namespace) -> int:
    cfg = _config(args)
    if args.first_round is not None:
        try:
            modes.check_round(cfg, args.first_round)
        except ValueError as exc:
            raise ConfigError(f"--first-round: {exc}") from exc
    if args.rounds is not None and args.rounds < 1:
        raise ConfigError(f"--rounds: must be >= 1, got {args.rounds}")
    results = run_rounds(
        cfg,
        workdir=args.workdir,
        rounds=args.rounds,
        first_round=args.first_round,
        on_round=lambda r: print(
            f"round {r.round}: test success {r.evaluate.get('success_rate', 0):.1%}",
            file=sys.stderr,
            flush=True,
        ),
    )
    print(format_rounds(results))
    return 0


def _cmd_registry_compare(args: argparse.Namespace) -> int:
    reg = registry(_config(args), args.workdir)
    rows = reg.compare_versions()
    if not rows:
        print("no registered versions yet: run `distrl bootstrap` or `distrl round`")
        return 0
    print(format_compare_table(rows))
    if args.load:
        dest = learner_dir(args.workdir) / "registry"
        number = args.load.removeprefix("v")
        if number.isdigit():
            known = {v.version for v in rows}
            if int(number) not in known:
                raise ConfigError(
                    f"--load {args.load}: no such version; registered: "
                    + ", ".join(str(v) for v in sorted(known))
                )
            path = reg.download_version(int(number), dest)
        else:
            try:
                path = reg.load_by_alias(args.load, dest)
            except ValueError as exc:
                raise ConfigError(f"--load {args.load}: {exc}") from exc
        print(f"\n{args.load}: {path}")
    return 0
