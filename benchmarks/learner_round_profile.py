"""Where a learner round's time goes, per algorithm: pre-fit, re-scoring, updates, calibration.

Usage::

    python benchmarks/learner_round_profile.py --trajectories 200 --rounds 2
    python benchmarks/learner_round_profile.py --methods distrl --profile  # + cProfile's top 25

Each method trains ``--rounds`` learner rounds on one synthetic replay (real AutoUI action
strings, random frame features; the tiny policy), with the step counts of the online rounds
(``algorithm.actor_epochs`` full steps after ``algorithm.critic_epochs`` critic-only steps), the
first round starting from a fresh critic as a run's first online round does. It prints, per round,
the learner's own phase timers (``perf/*``: the fresh critic's pre-fit and the warm-up, DPER
re-scoring in ``prepare_round``, the full steps, the calibration) and the seconds per full
update, so the cost of one DistRL update can be set against DigiRL's on the same data.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
import time

import torch
from learner import synthetic_replay

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.algorithms.factory import build_algorithm
from distrl_tasks.algorithms.learner import Learner
from distrl_tasks.bench.describe import machine_info
from distrl_tasks.config import config_from_dict
from distrl_tasks.config.algorithm_specs import ALGORITHMS

PHASES = ("perf/critic_s", "perf/prepare_s", "perf/actor_s", "perf/calibration_s")


def profile_method(method: str, trajectories: int, rounds: int, steps: int) -> list[dict]:
    """One row per learner round: its phases' seconds, steps and seconds per full update."""
    cfg = config_from_dict({"algorithm": {"name": method}})
    torch.manual_seed(0)
    policy = build_policy(cfg.agent, seed=0)
    algorithm = build_algorithm(cfg, policy)
    replay = synthetic_replay(n_traj=trajectories, steps=steps)
    rows = []
    with tempfile.TemporaryDirectory() as out:
        learner = Learner(cfg, algorithm, out_dir=out)
        for r in range(rounds):
            prefit = cfg.algorithm.critic_prefit if r == 0 else None  # a fresh critic, once
            started = time.perf_counter()
            metrics = learner.train_round(
                replay,
                cfg.algorithm.actor_epochs,
                critic_steps=cfg.algorithm.critic_epochs,
                prefit=prefit,
            )
            wall = time.perf_counter() - started
            row = {"method": method, "round": r + 1, "wall_s": wall}
            row.update({p: float(metrics.get(p, 0.0)) for p in PHASES})
            row["full_steps"] = cfg.algorithm.actor_epochs
            row["s_per_update"] = row["perf/actor_s"] / cfg.algorithm.actor_epochs
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(ALGORITHMS))
    parser.add_argument("--trajectories", type=int, default=200, help="replay size")
    parser.add_argument("--steps", type=int, default=8, help="steps per trajectory")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="cProfile's top 25 per method")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    machine = machine_info()
    print(
        f"# {machine['cpu']} ({machine['cpu_family']}, {machine['nproc']} CPUs), "
        f"{torch.get_num_threads()} thread(s), "
        f"replay {args.trajectories} x {args.steps} steps, tiny policy, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    print("| method | round | wall s | pre-fit + warm-up s | re-scoring s | full steps s | "
          "calibration s | full steps | s / update |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for method in args.methods.split(","):
        profiler = cProfile.Profile() if args.profile else None
        if profiler is not None:
            profiler.enable()
        rows = profile_method(method, args.trajectories, args.rounds, args.steps)
        if profiler is not None:
            profiler.disable()
        for row in rows:
            cells = [f"{row[p]:.1f}" for p in ("wall_s", *PHASES)]
            print(
                f"| {method} | {row['round']} | {' | '.join(cells)} | {row['full_steps']} | "
                f"{row['s_per_update']:.3f} |",
                flush=True,
            )
        if profiler is not None:
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(25)
            print(f"\n<details><summary>{method}: cProfile</summary>\n\n```\n{text.getvalue()}```"
                  "\n</details>\n")  # fmt: skip


if __name__ == "__main__":
    main()
