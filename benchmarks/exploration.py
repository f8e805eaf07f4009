"""How often exploration reaches a reward, per family: temperatures per part and element taps.

Usage::

    python benchmarks/exploration.py --checkpoint DIR [--goals 96] [--attempts 4] [--json OUT]

The first ``--goals`` General test goals, each attempted ``--attempts`` times under the ``live``
world (8 simulated devices, the collector and inference server of a training round) by the
policy in ``--checkpoint`` sampling, in these arms:

- ``T``: one temperature (``agent.temperature``), as collection samples today;
- ``parts``: per-part temperatures (plan/type 1.0, coordinates 0.2, text 0.3);
- ``parts+e0.1`` and ``parts+e0.25``: the same plus element exploration with epsilon 0.1 and
  0.25 (a tap on a uniformly drawn element of the screen's UI dump);
- ``parts+g0.1`` and ``parts+g0.25``: the same epsilons, goal-aware (an element's weight is
  1 + 4 x the goal's words in its label: ``agent.exploration.element_goal_weight`` 4);
- ``pointer1`` and ``pointer2``: ``agent.temperature`` for everything but where a tap goes
  (the pointer's choice, or written digits), drawn at 1.0 and 2.0
  (``agent.exploration.coord_temperature``);
- ``text1`` and ``type1``: the same for typed text (which span of the goal is typed) and for
  the plan and action type, drawn at 1.0.

Per family it prints the success rate of all sampled episodes and of the episodes that explored
(an element tap at least once), the figures the learner's exploration target reads
(``rollout/explore_success/<family>``). Same goals, seeds and farm seed in every arm.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import torch

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import Config, ExplorationConfig, load_config
from distrl_tasks.evaluators.oracle import OracleEvaluator
from distrl_tasks.runners.collector import collect_async
from distrl_tasks.runners.exploration import (
    ElementExploration,
    episode_outcomes,
    exploration_metrics,
)
from distrl_tasks.runners.inference import InferenceServer
from distrl_tasks.runners.policies import ModelPolicy
from distrl_tasks.stages import collect
from distrl_tasks.tasks.goal_farms import running_farm
from distrl_tasks.tasks.taskset import load_goals

PARTS = {"type_temperature": 1.0, "coord_temperature": 0.2, "text_temperature": 0.3}
GOAL_WEIGHT = 4.0
ARMS: dict[str, tuple[ExplorationConfig | None, float]] = {
    "T": (None, 0.0),
    "parts": (ExplorationConfig(type_temperature=1.0, coord_temperature=0.2,
                                text_temperature=0.3), 0.0),
    "parts+e0.1": (ExplorationConfig(type_temperature=1.0, coord_temperature=0.2,
                                     text_temperature=0.3), 0.1),
    "parts+e0.25": (ExplorationConfig(type_temperature=1.0, coord_temperature=0.2,
                                      text_temperature=0.3), 0.25),
    "parts+g0.1": (ExplorationConfig(**PARTS, element_goal_weight=GOAL_WEIGHT), 0.1),
    "parts+g0.25": (ExplorationConfig(**PARTS, element_goal_weight=GOAL_WEIGHT), 0.25),
    "pointer1": (ExplorationConfig(coord_temperature=1.0), 0.0),
    "pointer2": (ExplorationConfig(coord_temperature=2.0), 0.0),
    "text1": (ExplorationConfig(text_temperature=1.0), 0.0),
    "type1": (ExplorationConfig(type_temperature=1.0), 0.0),
}  # fmt: skip


def run_arm(cfg: Config, name: str, checkpoint: str, goals: list[str], attempts: int) -> dict:
    parts, eps = ARMS[name]
    agent = cfg.agent if parts is None else dataclasses.replace(cfg.agent, exploration=parts)
    cfg = dataclasses.replace(cfg, agent=agent)
    policy = build_policy(cfg.agent, checkpoint_dir=checkpoint, seed=cfg.sim.seed)
    policy.model.eval()
    goal_weight = parts.element_goal_weight if parts is not None else 0.0
    exploration = ElementExploration(eps, seed=cfg.sim.seed, goal_weight=goal_weight)
    devices = cfg.orchestration.devices_per_worker
    with running_farm(devices, seed=cfg.sim.seed, sim_cfg=cfg.sim, dynamics="live") as farm:
        envs = collect.open_envs(cfg, farm.host, farm.port, farm.serials)
        order = [g for g in goals for _ in range(attempts)]
        plan = {s: order[i::devices] for i, s in enumerate(farm.serials)}
        with InferenceServer(ModelPolicy(policy, seed=cfg.sim.seed), 0,
                             wrap=exploration.wrap if eps else None) as server:  # fmt: skip
            result = collect_async(envs, server, plan, round_=1, split="test",
                                   oracle=OracleEvaluator(), gamma=0.5,
                                   progress=f"explore[{name}]")  # fmt: skip
    episodes = [ep for eps_ in result.episodes.values() for ep in eps_ if ep is not None]
    outcomes = episode_outcomes(episodes)
    families = sorted({f for _, f, _ in outcomes})
    per_family = {}
    for family in families:
        oks = [bool(ok) for _, f, ok in outcomes if f == family and ok is not None]
        per_family[family] = {"episodes": len(oks), "success": sum(oks) / max(1, len(oks))}
    metrics = exploration_metrics(outcomes, exploration.explored_episodes) if eps else {}
    for family in families:
        key = f"rollout/explore_success/{family}"
        if key in metrics:
            per_family[family]["explored_success"] = metrics[key]
    return {
        "arm": name,
        "episodes": len(outcomes),
        "success": sum(bool(ok) for _, _, ok in outcomes) / max(1, len(outcomes)),
        "explored_share": metrics.get("rollout/explore_episode_share", 0.0),
        "steps_per_s": result.stats.as_dict().get("steps_per_s"),
        "per_family": per_family,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="params.yaml")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--goals", type=int, default=96)
    parser.add_argument("--attempts", type=int, default=4)
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = load_config(args.config)
    goals = load_goals("general", "test")[: args.goals]
    rows = []
    for name in args.arms:
        rows.append(run_arm(cfg, name, args.checkpoint, goals, args.attempts))
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "per_family"}), flush=True)
    families = sorted({f for r in rows for f in r["per_family"]})
    print(f"\n{'family':<20}" + "".join(f"{r['arm']:>22}" for r in rows))
    for family in families:
        cells = []
        for r in rows:
            f = r["per_family"].get(family, {})
            explored = f.get("explored_success")
            tail = f" / {explored:.0%}" if explored is not None else ""
            cells.append(f"{f.get('success', 0):.0%}{tail} (n={f.get('episodes', 0)})")
        print(f"{family:<20}" + "".join(f"{c:>22}" for c in cells))
    print("cells: success of all sampled episodes / of the episodes that explored (n episodes)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
