"""The SFT policy under the live world (issue 18): test success under static, live, hostile.

Usage: ``.venv/bin/python benchmarks/dynamics_sft.py [--task-sets general webshop]
[--tasks 24] [--root /tmp/dyn-sft]``. Per task set: the learning benchmark's SFT recipe
(:func:`distrl_tasks.bench.setup.run_config`, latency off; bootstrap demonstrations recorded on
``static`` as the config says), then greedy evaluation of that one policy on the first N test
goals with the farm under each profile, and the scripted expert on the same goals in process.
Results are recorded by hand in a dated record (last:
benchmarks/results/2026-11-23-live-world-dynamics.md) and a row of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import torch

from distrl_tasks.bench.setup import LearningBenchSettings, new_project, run_config
from distrl_tasks.sim.dynamics import Dynamics
from distrl_tasks.sim.phone import Phone
from distrl_tasks.stages import bootstrap, evaluate
from distrl_tasks.stages.evaluate import select_goals
from distrl_tasks.tasks import load_goals, parse_goal
from distrl_tasks.tasks.expert import solve

PROFILES = ("static", "live", "hostile")


def expert_on(goals: list[str], profile: str, seed: int) -> float:
    phone = Phone(seed=seed, dynamics=Dynamics(profile, seed=seed))
    wins = 0
    for goal in goals:
        task = parse_goal(goal)
        phone.set_task(task)
        solve(phone, task)
        wins += bool(phone.check_task()["success"])
    return wins / len(goals)


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task-sets", nargs="+", default=["general", "webshop"])
    parser.add_argument("--tasks", type=int, default=24, help="first N test goals")
    parser.add_argument("--root", default="/tmp/dyn-sft")
    args = parser.parse_args()
    settings = LearningBenchSettings(round_eval_tasks=args.tasks)
    rows = []
    for task_set in args.task_sets:
        t0 = time.perf_counter()
        cfg = run_config(settings, task_set, latency=False)
        workdir = Path(args.root) / f"sft-{task_set}"
        new_project(workdir)
        boot = bootstrap.run(
            cfg,
            workdir=workdir,
            eval_splits=("test",),
            eval_tasks=args.tasks,
            threads=1,
            progress=False,
        )
        policy_dir = workdir / bootstrap.BOOTSTRAP_DIR / "policy"
        print(
            f"[{task_set}] bootstrap {time.perf_counter() - t0:.0f} s: {boot.get('sft_steps')}"
            f" SFT steps on {boot.get('demos')} demo steps",
            flush=True,
        )
        goals = select_goals(load_goals(task_set, "test"), "test", args.tasks, 0)
        for profile in PROFILES:
            sim = dataclasses.replace(
                cfg.sim, dynamics=dataclasses.replace(cfg.sim.dynamics, profile=profile)
            )
            m = evaluate.run(
                dataclasses.replace(cfg, sim=sim),
                round=0,
                checkpoint_dir=policy_dir,
                workdir=workdir,
                split="test",
                n_tasks=args.tasks,
            )
            expert = expert_on(goals, profile, cfg.sim.seed)
            rows.append((task_set, profile, m["success_rate"], m["mean_steps"], expert))
            print(
                f"| {task_set} | {profile} | {100 * m['success_rate']:.1f}% "
                f"({m['mean_steps']:.1f} steps) | {100 * expert:.1f}% |",
                flush=True,
            )
    print("\n| task set (first N test goals) | profile | SFT greedy | expert |")
    print("|---|---|---|---|")
    for task_set, profile, sft, steps, expert in rows:
        print(
            f"| {task_set} (N={args.tasks}) | {profile} | {100 * sft:.1f}% ({steps:.1f} steps)"
            f" | {100 * expert:.1f}% |"
        )


if __name__ == "__main__":
    main()
