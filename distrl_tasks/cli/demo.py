"""``distrl demo``: the main job on the embedded default (simulator farm, expert, RL rounds)."""

from __future__ import annotations

import argparse
import json

from distrl_tasks.cli.common import add_config_flags, config_path
from distrl_tasks.config import ConfigError, load_config


def add_demo_command(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="the main job on the embedded default (simulator + RL)")
    demo.add_argument(
        "--rounds",
        type=int,
        help="at most this many online RL rounds (default: as many as --budget-s allows; "
        "3 without a budget); off2on runs the offline round 0 first",
    )
    demo.add_argument(
        "--budget-s",
        type=float,
        help="wall-clock seconds of the RL phase, its last check included (default 750, what "
        "the 15-minute demo leaves after the bootstrap; 0: no bound)",
    )
    demo.add_argument("--workdir", default="runs/demo", help="the demo's own project directory")
    demo.add_argument(
        "--tasks-per-split", type=int, default=8, help="expert showcase goals per AitW split"
    )
    demo.add_argument("--devices", type=int, help="devices of the farm (default 8)")
    demo.add_argument(
        "--showcase-only", action="store_true", help="only the farm + expert part (seconds)"
    )
    add_config_flags(demo)
    demo.set_defaults(func=_cmd_demo)


def _cmd_demo(args: argparse.Namespace) -> int:
    from distrl_tasks.orchestration.demo import (
        DEMO_BUDGET_S,
        DEMO_OVERRIDES,
        run_demo,
        run_expert_showcase,
    )  # lazy: adbutils + numpy (CLI start-up)

    overrides: list[str] = [f"{k}={json.dumps(v)}" for k, v in DEMO_OVERRIDES.items()]
    if args.devices is not None:
        overrides += [
            f"sim.devices={args.devices}",
            f"orchestration.devices_per_worker={args.devices}",
        ]
    overrides += list(args.overrides or [])
    if args.tasks_per_split < 1:
        raise ConfigError(f"--tasks-per-split: must be >= 1, got {args.tasks_per_split}")
    if args.rounds is not None and args.rounds < 1:
        raise ConfigError(f"--rounds: must be >= 1, got {args.rounds}")
    if args.budget_s is not None and not args.budget_s >= 0:
        raise ConfigError(f"--budget-s: must be >= 0, got {args.budget_s}")
    budget_s = DEMO_BUDGET_S if args.budget_s is None else args.budget_s
    cfg = load_config(config_path(args), overrides)
    if args.showcase_only:
        return run_expert_showcase(
            cfg, tasks_per_split=args.tasks_per_split, mistake_rate=cfg.sim.expert_mistake_rate
        )
    return run_demo(
        cfg,
        workdir=args.workdir,
        tasks_per_split=args.tasks_per_split,
        rounds=args.rounds,
        budget_s=budget_s,
    )
