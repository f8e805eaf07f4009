"""Base policy benchmark (issue 19): the base alone and base + bootstrap, per task set.

For each task set: the base checkpoint evaluated on the first N test goals (``distrl eval``'s
code path, greedy, static dynamics), then the bootstrap stage (expert demos on the train goals,
SFT) started from that base in a fresh project directory, and its policy evaluated on the same
goals. Prints one JSON line per run and a table: success, mean steps, invalid rate and
typed-query match (share of TYPE steps on goals naming a query that typed exactly it).

    PYTHONPATH=. .venv/bin/python benchmarks/base_policy.py --base distrl_tasks/agents/base
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import torch

from distrl_tasks.config import load_config
from distrl_tasks.stages import bootstrap, eval_any, evaluate


def _row(name: str, res: dict) -> str:
    q = res.get("typed_query_match")
    qs = "-" if q is None else f"{100 * q:.1f}%"
    return (
        f"| {name} | {100 * res['success_rate']:.1f}% | {res['mean_steps']:.2f} | "
        f"{100 * res['invalid_rate']:.1f}% | {qs} ({res.get('type_steps', 0)} TYPE steps) |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="shipped", help="base checkpoint (agent.base_checkpoint)")
    ap.add_argument("--task-sets", default="general,webshop")
    ap.add_argument("--eval-tasks", type=int, default=96)
    ap.add_argument("--workdir", default="", help="project dirs (default: a temp dir)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dynamics", default="static", help="profile of the evaluations")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    root = Path(args.workdir or tempfile.mkdtemp(prefix="base-bench-"))
    base_dir = "distrl_tasks/agents/base" if args.base == "shipped" else args.base
    rows = []
    for task_set in args.task_sets.split(","):
        cfg = load_config(
            "params.yaml",
            [
                f"env.task_set={task_set}",
                f"agent.base_checkpoint={args.base}",
                f"sim.dynamics.profile={args.dynamics}",
            ],
        )
        base = eval_any.run(
            cfg, policy=base_dir, task_set=task_set, split="test", limit=args.eval_tasks
        )
        base.pop("episodes")
        print(json.dumps({"run": f"base/{task_set}", **base}, default=str), flush=True)
        rows.append(_row(f"base, {task_set} test[:{args.eval_tasks}]", base))
        work = root / task_set
        boot = bootstrap.run(cfg, workdir=work, eval_tasks=args.eval_tasks, threads=args.threads)
        # the bootstrap already evaluated its policy on these goals: this returns that manifest
        res = evaluate.run(
            cfg,
            round=0,
            checkpoint_dir=boot["policy_dir"],
            workdir=work,
            split="test",
            n_tasks=args.eval_tasks,
        )
        keep = ("sft_steps", "sft_wall_s", "demos", "demo_wall_s", "wall_s")
        summary = {k: res[k] for k in res if k not in ("per_family",)}
        print(
            json.dumps(
                {"run": f"base+bootstrap/{task_set}", **summary, **{k: boot[k] for k in keep}},
                default=str,
            ),
            flush=True,
        )
        rows.append(_row(f"base + bootstrap, {task_set} test[:{args.eval_tasks}]", res))
    print("| policy, goals | success | mean steps | invalid | typed = query |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
