"""Why a policy's episodes fail in the live world: blocked by a dialog, or looping on a page.

Plays the first N test goals of a task set greedily, one simulated device under a dynamics
profile (default ``live``), and after every step asks the simulator what is on screen
(``simctl state``). A failed episode is put down to the first interruption (a modal dialog:
permission, sign-in, cookie consent, interstitial, ANR, ...) that stayed up for ``--blocked``
consecutive steps while the policy acted: the policy acts behind it. Any other failure is put
down to the page it ended on (a loop: it retypes, re-taps or never selects). Prints one line per
failed episode with ``--verbose`` and a JSON summary.

    PYTHONPATH=. .venv/bin/python benchmarks/live_failures.py \
        --checkpoint RUN/runs/bootstrap/policy --task-set webshop --goals 48

Sequential on one device on purpose: it measures a policy, not throughput. About 3 s an
episode on one CPU core.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
from collections.abc import Iterator

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import torch

from distrl_tasks.agents.image_encoders import build_image_encoder
from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import Config, load_config, parse_override
from distrl_tasks.envs.adb_device import AdbDevice
from distrl_tasks.envs.android_env import AndroidEnv
from distrl_tasks.sim.dynamics.catalog import PERTURBATIONS
from distrl_tasks.stages.evaluate import decode_budget
from distrl_tasks.tasks.goal_farms import running_farm
from distrl_tasks.tasks.taskset import load_goals

# Modal interruptions only: a heads-up notification goes away by itself and blocks nothing.
BLOCKERS = frozenset(
    p.name for p in PERTURBATIONS if p.family == "interruption" and p.name != "heads_up"
)


@contextlib.contextmanager
def one_device(
    cfg: Config, task_set: str, dynamics: str, seed: int
) -> Iterator[tuple[AdbDevice, AndroidEnv]]:
    """One simulated device under ``dynamics`` and the environment a policy acts through on it
    (offering the screen's elements, for agent.pointer)."""
    with running_farm(devices=1, seed=seed, sim_cfg=cfg.sim, dynamics=dynamics) as farm:
        device = AdbDevice(farm.serials[0], farm.host, farm.port, timeout_s=20)
        encoder = build_image_encoder(cfg.agent)
        elements = cfg.agent.tap_elements
        env = AndroidEnv(device, encoder, cfg.env, task_set=task_set, pointer_elements=elements)
        yield device, env


def failure_cause(screens: list[tuple[tuple[str, ...], str]], blocked: int) -> str:
    """``screens``: per step, the perturbations on screen and the page, before the action."""
    for i in range(len(screens) - blocked + 1):
        for name in sorted(set(screens[i][0]) & BLOCKERS):
            if all(name in s[0] for s in screens[i : i + blocked]):
                return f"blocked by {name}"
    return f"loop on page {screens[-1][1]}" if screens else "no step"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, help="policy checkpoint directory")
    ap.add_argument("--task-set", default="webshop", choices=("general", "webshop"))
    ap.add_argument("--goals", type=int, default=48, help="first N test goals")
    ap.add_argument("--dynamics", default="live", help="static | live | hostile")
    ap.add_argument("--blocked", type=int, default=3, help="steps a dialog stays up to block")
    ap.add_argument("--seed", type=int, default=0, help="farm seed")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override, e.g. env.prompt_history=2 (repeatable)",
    )
    ap.add_argument("--verbose", action="store_true", help="one line per failed episode")
    args = ap.parse_args()

    torch.set_num_threads(1)
    overrides = dict(parse_override(kv) for kv in args.set)
    cfg = load_config(None, {"sim.render_scale": 0.25, **overrides})
    policy = build_policy(cfg.agent, checkpoint_dir=args.checkpoint)
    policy.max_new_tokens = decode_budget(policy)
    goals = load_goals(args.task_set, "test")[: args.goals]
    causes: collections.Counter[str] = collections.Counter()
    with one_device(cfg, args.task_set, args.dynamics, args.seed) as (device, env):
        for goal in goals:
            obs, screens, done, success = env.reset(goal), [], False, False
            while not done:
                state = json.loads(device.shell("simctl state"))
                screens.append((tuple(state["dynamics"]["on_screen"]), str(state.get("page"))))
                res = env.step(policy.act([obs.policy_input()], greedy=True)[0][0])
                obs, done, success = res.observation, res.done, res.success
            cause = "success" if success else failure_cause(screens, args.blocked)
            causes[cause] += 1
            if args.verbose and not success:
                print(f"{cause:40s} {goal}", flush=True)
    print(
        json.dumps(
            {
                "checkpoint": args.checkpoint,
                "task_set": args.task_set,
                "goals": len(goals),
                "dynamics": args.dynamics,
                "overrides": overrides,
                "causes": dict(causes.most_common()),
            }
        )
    )


if __name__ == "__main__":
    main()
