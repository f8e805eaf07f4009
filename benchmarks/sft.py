"""SFT bootstrap benchmark: demos, SFT steps, wall time and success per task set and split.

For each task set, runs the bootstrap stage in a fresh project directory (its own MLflow store):
scripted-expert demos with mistakes on the simulator, supervised training of the tiny AutoUI
policy, then the evaluate stage's protocol on the test split (first N goals in file order) and
the train split (seeded random N), greedy decoding. Prints one JSON line per task set and a
summary table.

    .venv/bin/python benchmarks/sft.py --eval-tasks 48 --steps 300
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

from distrl_tasks.algorithms.sft import SFTSettings
from distrl_tasks.config import Config
from distrl_tasks.stages import bootstrap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task-sets", default="general,webshop")
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--episodes-per-device", type=int, default=24)
    ap.add_argument("--mistake-rate", type=float, default=0.2)
    ap.add_argument("--steps", type=int, default=SFTSettings.steps)
    ap.add_argument("--batch-size", type=int, default=SFTSettings.batch_size)
    ap.add_argument("--lr", type=float, default=SFTSettings.lr)
    ap.add_argument("--time-budget-s", type=float, default=None)
    ap.add_argument("--eval-tasks", type=int, default=96)
    ap.add_argument("--splits", default="test,train")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workdir", default="")
    args = ap.parse_args()

    base = Config()
    settings = SFTSettings(
        steps=args.steps,
        batch_size=args.batch_size,
        lr=args.lr,
        time_budget_s=args.time_budget_s,
    )
    root = args.workdir or tempfile.mkdtemp(prefix="sft-bench-")
    rows = []
    for task_set in args.task_sets.split(","):
        cfg = dataclasses.replace(
            base,
            env=dataclasses.replace(base.env, task_set=task_set),
            orchestration=dataclasses.replace(base.orchestration, devices_per_worker=args.devices),
        )
        started = time.perf_counter()
        m = bootstrap.run(
            cfg,
            workdir=os.path.join(root, task_set),
            episodes_per_device=args.episodes_per_device,
            mistake_rate=args.mistake_rate,
            sft=settings,
            eval_splits=tuple(args.splits.split(",")),
            eval_tasks=args.eval_tasks,
            threads=args.threads,
        )
        m["bench_wall_s"] = time.perf_counter() - started
        print(json.dumps({"task_set": task_set, **m}), flush=True)
        rows.append((task_set, m))

    print(f"\nthreads={args.threads} eval_tasks={args.eval_tasks} settings={settings}")
    print("task_set  demo_traj  demos  sft_steps  demo_s  sft_s  eval_s  total_s  success")
    for task_set, m in rows:
        evals = sum(m["eval_wall_s"].values())
        success = " ".join(f"{s}={100 * r:.1f}%" for s, r in m["sft_success"].items())
        print(
            f"{task_set:8}  {m['demo_trajectories']:9}  {m['demos']:5}  {m['sft_steps']:9}  "
            f"{m['demo_wall_s']:6.0f}  {m['sft_wall_s']:5.0f}  {evals:6.0f}  "
            f"{m['wall_s']:7.0f}  {success}"
        )


if __name__ == "__main__":
    main()
