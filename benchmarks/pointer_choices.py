"""What the pointer chooses, step by step: a policy's greedy episodes with its top choices.

Plays each goal greedily on one simulated device (``--dynamics``, default ``static``) and prints,
per step, the action and the pointer's most likely choices on that screen (element labels, or
WRITE for "write coordinates") with their probabilities, then whether the episode succeeded.
For tracing a family that never succeeds: which element the policy prefers where it goes wrong,
and how much probability the right one has left for exploration. ``--json`` writes the same per
step.

    PYTHONPATH=. .venv/bin/python benchmarks/pointer_choices.py \
        --checkpoint distrl_tasks/agents/base "Open a new tab in Chrome" "Open a new Chrome window"

Goals come from the arguments, or with ``--family F`` from a task set's test file (``--task-set``)
filtered by family. One CPU thread; a few seconds per episode.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import torch
from live_failures import one_device

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import load_config, parse_override
from distrl_tasks.protocol.files import atomic_write_text
from distrl_tasks.stages.evaluate import decode_budget
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.taskset import load_goals


def top_choices(log_probs: torch.Tensor, labels: list[str], top: int) -> list[tuple[str, float]]:
    """The ``top`` most likely choices of one row (``[K + 1]`` log-probs, "write" last)."""
    probs = log_probs.exp()
    order = torch.argsort(probs, descending=True)[:top].tolist()
    return [(labels[i] if i < len(labels) else "WRITE", float(probs[i])) for i in order]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("goals", nargs="*", help="goals to play (or --family)")
    ap.add_argument("--checkpoint", required=True, help="policy checkpoint directory")
    ap.add_argument("--task-set", default="general", choices=("general", "webshop"))
    ap.add_argument("--family", help="play the task set's test goals of this family")
    ap.add_argument("--dynamics", default="static", help="static | live | hostile")
    ap.add_argument("--max-steps", type=int, default=0, help="stop an episode early (0: never)")
    ap.add_argument("--top", type=int, default=3, help="choices printed per step")
    ap.add_argument("--seed", type=int, default=0, help="farm seed")
    ap.add_argument("--json", help="write the steps here")
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="config override"
    )
    args = ap.parse_args()
    goals = list(args.goals)
    if args.family:
        goals += [
            g for g in load_goals(args.task_set, "test") if parse_goal(g).family == args.family
        ]
    if not goals:
        ap.error("no goals: give some, or --family with a family that has test goals")

    torch.set_num_threads(1)
    cfg = load_config(None, {"sim.render_scale": 0.25, **dict(map(parse_override, args.set))})
    policy = build_policy(cfg.agent, checkpoint_dir=args.checkpoint)
    policy.max_new_tokens = decode_budget(policy)
    seen: list[torch.Tensor | None] = []
    choice_log_probs = policy._choice_log_probs

    def recording(*a: object) -> torch.Tensor | None:
        out = choice_log_probs(*a)  # type: ignore[arg-type]
        seen.append(out)
        return out

    policy._choice_log_probs = recording  # type: ignore[method-assign]
    episodes = []
    with one_device(cfg, args.task_set, args.dynamics, args.seed) as (_device, env):
        for goal in goals:
            obs, done, success, steps = env.reset(goal), False, False, []
            print(f"== {goal}", flush=True)
            while not done and not (args.max_steps and len(steps) >= args.max_steps):
                seen.clear()
                action = policy.act([obs.policy_input()], greedy=True)[0][0]
                labels = [e.label for e in obs.elements]
                lp = seen[0] if seen else None
                choices = top_choices(lp[0], labels, args.top) if lp is not None else []
                steps.append({"action": action, "choices": choices})
                shown = ", ".join(f"{name!r} {p:.3f}" for name, p in choices) or "-"
                print(f"  {action.split('Action Decision: ')[-1][:90]} | {shown}", flush=True)
                res = env.step(action)
                obs, done, success = res.observation, res.done, res.success
            print(f"  success: {success}", flush=True)
            episodes.append({"goal": goal, "success": success, "steps": steps})
    if args.json:
        record = {"checkpoint": args.checkpoint, "episodes": episodes}
        atomic_write_text(args.json, json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
