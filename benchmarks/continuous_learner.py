"""What one continuous-learner update costs, on a finished benchmark run's replay.

The continuous round's actors wait at the staleness gate when the learner is slow
(benchmarks/results/2026-11-25-ablation.md, the ``continuous`` arms). This times the learner's parts
on the replay such a run collected, with the benchmark's DistRL config: a full
``prepare_round`` (re-scores every stored trajectory), the cheap ``refresh_filter``, and
``--updates`` optimizer steps (``algorithm.batch_size`` windows each, with gradient
accumulation as configured), at ``--threads`` torch threads. Prints one JSON line.

    PYTHONPATH=. .venv/bin/python benchmarks/continuous_learner.py \
        --run RUN_DIR --task-set webshop --updates 5 --threads 1

``RUN_DIR`` is a benchmark run's workdir (its ``data/trajectories/labeled`` shards and the
policy it exported last, the newest ``runs/checkpoints/r*``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import numpy as np
import torch

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.algorithms.factory import build_algorithm
from distrl_tasks.algorithms.learner import Learner
from distrl_tasks.bench.describe import machine_info
from distrl_tasks.bench.setup import LearningBenchSettings, run_config
from distrl_tasks.config import parse_override
from distrl_tasks.data.replay import ReplayBuffer


def newest_policy(run: Path) -> Path:
    """The run's newest exported policy directory."""
    rounds = sorted((run / "runs" / "checkpoints").glob("r[0-9]*"))
    if not rounds:
        raise SystemExit(f"{run}: no exported policy under runs/checkpoints/r*")
    return rounds[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, type=Path, help="a benchmark run's workdir")
    ap.add_argument("--task-set", default="webshop")
    ap.add_argument("--updates", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--no-prepare",
        action="store_true",
        help="skip the full re-score (priorities stay as stored); only refresh the filter",
    )
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    overrides = dict(parse_override(o) for o in args.set)
    cfg = run_config(
        LearningBenchSettings(overrides=overrides), args.task_set, method="distrl", seed=0
    )
    labeled = args.run / "data" / "trajectories" / "labeled"
    replay = ReplayBuffer.from_shards(
        labeled,
        10**6,  # every round the run labeled
        capacity=cfg.data.replay_capacity,
        alpha=cfg.algorithm.distrl.priority_alpha,
        beta=cfg.algorithm.distrl.priority_beta,
        seed=0,
    )
    policy = build_policy(cfg.agent, checkpoint_dir=newest_policy(args.run), seed=0)
    a = cfg.algorithm
    with tempfile.TemporaryDirectory() as out:
        learner = Learner(
            cfg,
            build_algorithm(cfg, policy),
            out_dir=out,
            seed=0,
            grad_accum_steps=a.grad_accum_steps,
            mixed_precision=a.mixed_precision,
            warmup_steps=a.warmup_steps,
            weight_decay=a.weight_decay,
        )
        algo = learner.algorithm
        t = time.perf_counter()
        if not args.no_prepare:
            algo.prepare_round(replay)
        prepare_s = None if args.no_prepare else round(time.perf_counter() - t, 2)
        t = time.perf_counter()
        refresh = getattr(algo, "refresh_filter", None)
        if refresh is not None:
            refresh(replay)
        refresh_s = time.perf_counter() - t
        times = []
        for _ in range(args.updates):
            t = time.perf_counter()
            learner.update(replay)
            times.append(time.perf_counter() - t)
    print(
        json.dumps(
            {
                "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "machine": machine_info(),
                "threads": args.threads,
                "trajectories": replay.num_trajectories,
                "transitions": len(replay),
                "windows_per_update": a.batch_size,
                "grad_accum_steps": a.grad_accum_steps,
                "prepare_round_s": prepare_s,
                "refresh_filter_s": round(refresh_s, 3),
                "update_s_mean": round(float(np.mean(times)), 2),
                "update_s_each": [round(x, 2) for x in times],
            }
        )
    )


if __name__ == "__main__":
    main()
