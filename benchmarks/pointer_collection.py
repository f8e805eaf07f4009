"""Collection speed with and without the tap-target pointer (issue 51's speed target: >= 0.8x).

Usage::

    python benchmarks/pointer_collection.py [--checkpoint DIR] [--rounds 3] [--episodes 2]

Each round runs the collect stage (:func:`distrl_tasks.stages.collect.run`) twice on the same
goals (same round number): once with ``agent.pointer: false`` (coordinates only, today's
default) and once with ``agent.pointer: true`` (the same weights plus a pointer head, each
observation offering ``agent.pointer_elements`` elements), in alternating order so that a
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
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import torch

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.agents.shipped_base import SHIPPED_DIR
from distrl_tasks.config import load_config
from distrl_tasks.stages import collect


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
    arms = {
        "coordinates": dataclasses.replace(
            cfg, agent=dataclasses.replace(cfg.agent, pointer=False)
        ),
        "pointer": dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, pointer=True)),
    }
    rates: dict[str, list[float]] = {name: [] for name in arms}
    prompts: dict[str, list[float]] = {name: [] for name in arms}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = list(arms) if r % 2 == 0 else list(reversed(arms))
            for name in order:
                arm = arms[name]
                policy = build_policy(arm.agent, checkpoint_dir=args.checkpoint)
                policy.model.eval()
                out = collect.run(
                    arm,
                    collect.CollectRequest(
                        round=r + 1,
                        policy=policy,
                        out_dir=Path(tmp) / f"{name}-{r}",
                        episodes_per_device=args.episodes,
                        progress=False,
                    ),
                    workdir=tmp,
                )
                rates[name].append(float(out["steps_per_s"]))
                prompts[name].append(_prompt_chars(list(out["shards"])))
                print(
                    f"round {r + 1} {name:11s}: {out['steps']} steps, {out['trajectories']} "
                    f"trajectories, {out['steps_per_s']:.2f} steps/s, success "
                    f"{out['success_rate']:.2f}, prompt {prompts[name][-1]:.0f} chars",
                    flush=True,
                )
    for name, values in rates.items():
        print(
            f"{name:11s}: mean {statistics.mean(values):.2f} steps/s over {len(values)} runs, "
            f"prompt {statistics.mean(prompts[name]):.0f} chars"
        )
    ratio = statistics.mean(rates["pointer"]) / statistics.mean(rates["coordinates"])
    print(f"pointer / coordinates: {ratio:.2f}x steps/s")


if __name__ == "__main__":
    main()
