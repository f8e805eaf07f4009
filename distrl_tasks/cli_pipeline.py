"""`distrl` subcommands of the pipeline: one per stage, `round`, and `registry compare`.

Every stage command prints its manifest as one JSON line on stdout (what `dvc repro` and scripts
consume) and writes nothing else there; progress bars go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from distrl_tasks.config import Config, ConfigError, load_config

STAGES = ("bootstrap", "collect", "label", "version", "train", "evaluate", "register")


def add_pipeline_commands(
    sub: argparse._SubParsersAction, add_config_flags: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Register the stage commands, `round` and `registry` on the top-level parser."""
    for name in STAGES:
        p = sub.add_parser(name, help=f"run the {name} stage (prints its manifest as JSON)")
        p.add_argument("--workdir", default=".", help="project working directory (runs/, data/)")
        if name != "bootstrap":
            p.add_argument("--round", type=int, required=True, help="round number (>= 1)")
        if name == "collect":
            p.add_argument("--worker", type=int, default=0, help="worker index")
            p.add_argument("--workers", type=int, default=1, help="number of workers")
            p.add_argument("--adb-host", help="ADB server of a running farm (default: own farm)")
            p.add_argument("--adb-port", type=int, help="its port")
        if name in ("evaluate", "register"):
            p.add_argument("--checkpoint", help="checkpoint dir (default: the round's train)")
        add_config_flags(p)
        p.set_defaults(func=_stage_command(name))

    rnd = sub.add_parser("round", help="bootstrap if needed, then run rounds end to end")
    rnd.add_argument("--workdir", default=".", help="project working directory")
    rnd.add_argument("--rounds", type=int, help="how many rounds (default orchestration.rounds)")
    rnd.add_argument("--first-round", type=int, default=1, help="number of the first round")
    add_config_flags(rnd)
    rnd.set_defaults(func=_cmd_round)

    reg = sub.add_parser("registry", help="the MLflow model registry")
    regsub = reg.add_subparsers(dest="registry_command", required=True, metavar="{compare}")
    cmp_ = regsub.add_parser("compare", help="registered versions side by side")
    cmp_.add_argument("--workdir", default=".", help="project working directory")
    cmp_.add_argument("--load", metavar="ALIAS", help="also download the version ALIAS names")
    add_config_flags(cmp_)
    cmp_.set_defaults(func=_cmd_registry_compare)


def _config(args: argparse.Namespace) -> Config:
    path = args.config or ("params.yaml" if Path("params.yaml").is_file() else None)
    return load_config(path, list(args.overrides or []))


def _previous(workdir: str, round_: int, stage: str, key: str) -> Any:
    from distrl_tasks.stages.common import read_manifest

    manifest = read_manifest(workdir, round_, stage)
    if manifest is None:
        raise ConfigError(f"round {round_} has no {stage} manifest yet: run `distrl {stage}` first")
    return manifest[key]


def _stage_command(name: str) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        cfg = _config(args)
        workdir = args.workdir
        rnd = getattr(args, "round", None)
        if rnd is not None and rnd < 1:
            raise ConfigError(f"--round: must be >= 1, got {rnd}")
        if name == "bootstrap":
            from distrl_tasks.stages import bootstrap

            out = bootstrap.run(cfg, workdir=workdir)
        elif name == "collect":
            from distrl_tasks.stages import collect

            out = collect.run(
                cfg,
                round=rnd,
                worker=args.worker,
                workers=args.workers,
                workdir=workdir,
                adb_host=args.adb_host,
                adb_port=args.adb_port,
            )
        elif name == "label":
            from distrl_tasks.stages import label

            out = label.run(cfg, round=rnd, workdir=workdir)
        elif name == "version":
            from distrl_tasks.stages import version

            out = version.run(cfg, round=rnd, workdir=workdir)
        elif name == "train":
            from distrl_tasks.stages import train

            data_version = _previous(workdir, rnd, "version", "data_version")
            out = train.run(cfg, round=rnd, data_version=data_version, workdir=workdir)
        elif name == "evaluate":
            from distrl_tasks.stages import evaluate

            ckpt = args.checkpoint or _previous(workdir, rnd, "train", "checkpoint_dir")
            out = evaluate.run(cfg, round=rnd, checkpoint_dir=ckpt, workdir=workdir)
        else:
            from distrl_tasks.stages import register

            ckpt = args.checkpoint or _previous(workdir, rnd, "train", "checkpoint_dir")
            evaluation = {
                "success_rate": _previous(workdir, rnd, "evaluate", "success_rate"),
                "tasks_key": _previous(workdir, rnd, "evaluate", "tasks_key"),
            }
            out = register.run(
                cfg,
                round=rnd,
                checkpoint_dir=ckpt,
                data_version=_previous(workdir, rnd, "version", "data_version"),
                evaluation=evaluation,
                workdir=workdir,
            )
        print(json.dumps(out, default=str), flush=True)
        return 0

    return command


def _cmd_round(args: argparse.Namespace) -> int:
    from distrl_tasks.pipeline import format_rounds, run_rounds

    cfg = _config(args)
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
    from distrl_tasks.stages.common import learner_dir, registry
    from distrl_tasks.tracking.registry import format_compare_table

    reg = registry(_config(args), args.workdir)
    rows = reg.compare_versions()
    if not rows:
        print("no registered versions yet: run `distrl bootstrap` or `distrl round`")
        return 0
    print(format_compare_table(rows))
    if args.load:
        path = reg.load_by_alias(args.load, learner_dir(args.workdir) / "registry")
        print(f"\n{args.load}: {path}")
    return 0
