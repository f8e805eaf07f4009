"""Collection speed with and without the tap-target pointer (issue 51's speed target: >= 0.8x).

Usage::

    python benchmarks/pointer_collection.py [--checkpoint DIR] [--rounds 3] [--episodes 2]

Each round runs the collect stage (:func:`distrl_tasks.stages.collect.run`) twice on the same
goals (same round number): once with ``agent.pointer: false`` (coordinates only, the
default before the pointer) and once with ``agent.pointer: true`` (the default: the same
weights plus a pointer head, each observation offering ``agent.pointer_elements`` elements),
in alternating order so that a
neighbour's load falls on both. The checkpoint defaults to the shipped base; a base trained
without the head gets a fresh one (it writes coordinates nearly always, so both arms write the
same kinds of actions and the figure is the pointer's cost). Printed: steps/s per run, the
mean per arm and the ratio, and the mean prompt length in characters per arm (the pointer adds
nothing to the prompt). Wall time: run it alone on the machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

import pyarrow.parquet as pq
import torch
from policy_collection import collect_arms

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.agents.shipped_base import SHIPPED_DIR
from distrl_tasks.config import load_config


def _prompt_chars(shards: list[str]) -> float:
    lengths = [
        len(p) for s in shards for p in pq.read_table(s, columns=["prompt"])["prompt"].to_pylist()
    ]
    return statistics.mean(lengths) if lengths else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="params.yaml")
    parser.add_argument("--checkpoint", default=str(SHIPPED_DIR))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=None, help="per device (default: cfg)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = load_config(args.config)
    arms = {}
    for name, pointer in (("coordinates", False), ("pointer", True)):
        arm = dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, pointer=pointer))
        arms[name] = (arm, lambda a=arm: build_policy(a.agent, checkpoint_dir=args.checkpoint))
    outs = collect_arms(arms, args.rounds, args.episodes, alternate=True)
    rates = {name: [float(o["steps_per_s"]) for o in runs] for name, runs in outs.items()}
    for name, runs in outs.items():
        prompt = statistics.mean(_prompt_chars(list(o["shards"])) for o in runs)
        print(
            f"{name:11s}: mean {statistics.mean(rates[name]):.2f} steps/s over "
            f"{len(runs)} runs, prompt {prompt:.0f} chars"
        )
    ratio = statistics.mean(rates["pointer"]) / statistics.mean(rates["coordinates"])
    print(f"pointer / coordinates: {ratio:.2f}x steps/s")


if __name__ == "__main__":
    main()
