"""Online collection with the demo's policy: steps/s with the reference and the fast decoder.

Usage::

    python benchmarks/policy_collection.py --checkpoint DIR [--rounds 2] [--episodes 2]

What a demo round's collection does, with ``params.yaml`` as the demo runs it: the collect
stage (:func:`distrl_tasks.stages.collect.run`, ``orchestration.devices_per_worker`` simulated
devices, the configured mode, latency model as configured, ``--episodes`` episodes per device
on train goals) driven by the SFT policy in ``--checkpoint`` (e.g. ``runs/bootstrap/policy``
of a demo, or what ``benchmarks/inference.py`` bootstraps) sampling at ``agent.temperature``.
Each round runs the reference decoder, then the fast one (same round number, so the same
goals), each into a fresh shard directory; the stage's own ``steps_per_s`` (steps over the
collection's wall time) is printed per run, with the mean per decoder. Wall time, since the
devices run beside the policy: on a shared machine the neighbours are in the figure.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import Config, load_config
from distrl_tasks.stages import collect

# an arm: the config its collect stage runs with and how to build its policy
Arm = tuple[Config, Callable[[], Any]]


def collect_arms(
    arms: Mapping[str, Arm], rounds: int, episodes: int | None, alternate: bool = False
) -> dict[str, list[dict[str, Any]]]:
    """Run the collect stage once per arm per round on the same goals (the round number
    decides them), each into a fresh shard directory, and return each arm's stage outputs.

    ``alternate`` reverses the arms' order every other round, so a neighbour's load falls on
    all of them. One line per run is printed as it ends.
    """
    outs: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            order = list(arms)
            if alternate and r % 2:
                order.reverse()
            for name in order:
                cfg, make_policy = arms[name]
                policy = make_policy()
                policy.model.eval()
                out = collect.run(
                    cfg,
                    collect.CollectRequest(
                        round=r + 1,
                        policy=policy,
                        out_dir=Path(tmp) / f"{name}-{r}",
                        episodes_per_device=episodes,
                        progress=False,
                    ),
                    workdir=tmp,
                )
                outs[name].append(out)
                print(
                    f"round {r + 1} {name:11s}: {out['steps']} steps, {out['trajectories']} "
                    f"trajectories, {out['steps_per_s']:.2f} steps/s, success "
                    f"{out['success_rate']:.2f}",
                    flush=True,
                )
    return outs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="params.yaml")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--episodes", type=int, default=None, help="per device (default: cfg)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = load_config(args.config)
    arms = {
        decoder: (
            cfg,
            lambda d=decoder: build_policy(cfg.agent, checkpoint_dir=args.checkpoint, decoder=d),
        )
        for decoder in ("reference", "fast")
    }
    for decoder, outs in collect_arms(arms, args.rounds, args.episodes).items():
        values = [float(o["steps_per_s"]) for o in outs]
        print(f"{decoder:9s}: mean {statistics.mean(values):.2f} steps/s over {len(values)} runs")


if __name__ == "__main__":
    main()
