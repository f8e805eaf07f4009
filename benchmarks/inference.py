"""Policy inference throughput: actions/s of ``AutoUIPolicy.act`` for batch 1, 8 and 32 on CPU.

Usage::

    python benchmarks/inference.py [--threads 1] [--repeats 3] [--max-new-tokens 128]
        [--decoding constrained free]

A random-init policy usually decodes to the budget, but a sample can end early, so time and
tokens are summed over the same ``--repeats`` calls and tokens/action is printed beside each
rate. Rates are per second of this process's CPU time (``time.process_time``; on a shared
machine wall time mostly measures the neighbours) and per wall-clock second. ``--decoding``
compares grammar-constrained decoding (the default policy) with free decoding; the tokens/s
column is the per-token cost, which is what the grammar's mask lookup adds to.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from distrl_tasks.agents.policy import Observation, build_policy, format_prompt
from distrl_tasks.config import AgentConfig

GOALS = [
    "Open the clock app",
    "Search for laptops on bestbuy.com",
    "What's the weather like in New York?",
    "Set an alarm for 7am",
]


def observations(n: int, dim: int) -> list[Observation]:
    rng = np.random.default_rng(0)
    return [
        Observation(
            format_prompt(GOALS[i % len(GOALS)]), rng.standard_normal(dim).astype(np.float16)
        )
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument(
        "--decoding", nargs="+", choices=["constrained", "free"], default=["constrained", "free"]
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for decoding in args.decoding:
        agent = AgentConfig(
            max_new_tokens=args.max_new_tokens, constrained_decoding=decoding == "constrained"
        )
        run(build_policy(agent, seed=0), decoding, args)


def run(policy, decoding: str, args: argparse.Namespace) -> None:
    policy.model.eval()
    dim = policy.model.image_dim
    gen = torch.Generator().manual_seed(0)
    policy.act(observations(2, dim), generator=gen)  # warm-up
    base = None
    for batch in args.batches:
        obs = observations(batch, dim)
        cpu_s, wall_s, tokens = 0.0, 0.0, 0
        for _ in range(args.repeats):
            cpu, wall = time.process_time(), time.perf_counter()
            out = policy.sample(obs, generator=gen)
            cpu_s += time.process_time() - cpu
            wall_s += time.perf_counter() - wall
            tokens += sum(len(ids) for ids in out.token_ids)
        actions = batch * args.repeats
        rate = actions / cpu_s
        base = base or rate
        print(
            f"{decoding:11s} batch={batch:3d} threads={args.threads} | {rate:8.2f} actions/s-cpu "
            f"({actions / wall_s:.2f}/s wall), {tokens / cpu_s:7.0f} tokens/s-cpu, "
            f"{cpu_s / args.repeats * 1000:7.1f} ms cpu/call, {tokens / actions:.0f} "
            f"tokens/action | x{rate / base:.1f} vs batch 1"
        )


if __name__ == "__main__":
    main()
