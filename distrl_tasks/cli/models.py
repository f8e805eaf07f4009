"""`distrl pretrain` (build the base policy) and `distrl eval` (evaluate any policy).

`pretrain` prints the model card as one JSON line on stdout, like the stage commands; progress
bars go to stderr. `eval` prints its table on stdout (docs/architecture.md, "Contracts").
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from distrl_tasks.cli.common import add_config_flags, config_path
from distrl_tasks.config import Config, load_config


def add_model_commands(sub: argparse._SubParsersAction) -> None:
    """Register `pretrain` and `eval` on the top-level parser."""
    p = sub.add_parser(
        "pretrain",
        help="build the base policy: expert demonstrations over generated goals, then cloning",
    )
    p.add_argument("--workdir", default=".", help="project working directory (runs/pretrain)")
    p.add_argument(
        "--out", help="checkpoint directory to write (default <workdir>/runs/pretrain/base)"
    )
    p.add_argument("--seed", type=int, default=0, help="seeds goals, initialisation and batches")
    p.add_argument(
        "--onto",
        metavar="BASE",
        help="fit only the tap-target pointer onto this base (a directory or 'shipped'; its "
        "weights unchanged, a head it carries replaced; needs agent.pointer, the default)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_config_flags(p)
    p.set_defaults(func=_cmd_pretrain)

    e = sub.add_parser("eval", help="evaluate any policy on any goals (prints a table)")
    e.add_argument(
        "--policy",
        required=True,
        metavar="REF",
        help="a checkpoint directory, 'expert', 'random', or a registry alias or version",
    )
    src = e.add_mutually_exclusive_group(required=True)
    src.add_argument("--goals", metavar="FILE", help="goal file, one goal per line")
    src.add_argument("--task-set", choices=("general", "webshop"), help="an AitW task set")
    e.add_argument("--split", choices=("train", "test"), default="test", help="with --task-set")
    e.add_argument("--limit", type=int, help="only the first N goals")
    e.add_argument(
        "--dynamics",
        help="dynamics profile of the simulated devices: static, live, hostile "
        "(default sim.dynamics.profile)",
    )
    e.add_argument("--devices", type=int, help="simulated devices (default eval_devices)")
    e.add_argument("--json", dest="json_out", metavar="OUT", help="write the results as JSON")
    e.add_argument("--workdir", default=".", help="project working directory (registry)")
    e.add_argument("--seed", type=int, default=0, help="seeds random/expert policies")
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_config_flags(e)
    e.set_defaults(func=_cmd_eval)


def config_from(args: argparse.Namespace) -> Config:
    return load_config(config_path(args), list(args.overrides or []))


def _cmd_pretrain(args: argparse.Namespace) -> int:
    from distrl_tasks.stages import pretrain  # lazy: torch + pyarrow

    cfg = config_from(args)
    command = "distrl " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    where = {
        "workdir": args.workdir,
        "out": args.out,
        "seed": args.seed,
        "command": command,
        "progress": not args.no_progress,
    }
    if args.onto is None:
        card = pretrain.run(cfg, **where)
    else:
        card = pretrain.run_onto(cfg, args.onto, **where)
    print(json.dumps(card, sort_keys=True, default=str))
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from distrl_tasks.stages import eval_any  # lazy: torch + pyarrow

    cfg = config_from(args)
    if args.dynamics is not None:  # resolved here, once: the stage reads sim.dynamics.profile
        cfg = cfg.in_world(args.dynamics)
    result = eval_any.run(
        cfg,
        policy=args.policy,
        goals_file=args.goals,
        task_set=args.task_set,
        split=args.split,
        limit=args.limit,
        devices=args.devices,
        workdir=args.workdir,
        seed=args.seed,
        progress=not args.no_progress,
    )
    print(eval_any.table(result))
    if args.json_out:
        eval_any.write_json(result, args.json_out)
    return 0
