"""What fine-tuning a base keeps: held-out success of both task sets before and after the bootstrap.

Usage::

    python benchmarks/finetune_retention.py --base DIR --heldout GOALS_DIR \
        [--lrs 1e-3 3e-4 1e-4] [--json OUT]

``GOALS_DIR`` holds the base's held-out goals (``<task set>_test.txt``, as ``distrl pretrain``
writes them under ``runs/pretrain/goals``: generated goals of every family that neither the
corpus nor the AitW test files hold). For the base, then for the bootstrap started from it at
each SFT learning rate (the bootstrap stage as a round runs it: General expert demonstrations,
``agent.sft_steps`` steps; everything else from ``params.yaml``), the policy is evaluated greedy
in the static world on every held-out goal of both task sets. The bootstrap trains on General
only, so WebShop's column measures what it erases.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch

from distrl_tasks.config import load_config
from distrl_tasks.stages import bootstrap, eval_any
from distrl_tasks.tasks.base import TASK_SETS
from distrl_tasks.tasks.taskset import load_goals


def heldout(cfg, policy: str, goals_dir: str) -> dict[str, float]:
    out = {}
    for task_set in TASK_SETS:
        n = len(load_goals(task_set, "test", goals_dir))
        res = eval_any.run(cfg, policy=policy, task_set=task_set, split="test", limit=n)
        out[task_set] = res["success_rate"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="base checkpoint directory")
    ap.add_argument("--heldout", required=True, help="directory of <task set>_test.txt goals")
    ap.add_argument("--lrs", type=float, nargs="+", default=[1e-3, 3e-4, 1e-4])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    overrides = [f"agent.base_checkpoint={args.base}", "sim.dynamics.profile=static",
                 f"env.data_dir={args.heldout}"]  # fmt: skip
    cfg = load_config("params.yaml", overrides)
    rows = [{"policy": "base", **heldout(cfg, args.base, args.heldout)}]
    print(json.dumps(rows[-1]), flush=True)
    root = Path(tempfile.mkdtemp(prefix="retention-"))
    for lr in args.lrs:
        # the bootstrap's demonstrations come from the AitW train goals, as in a round
        boot_cfg = load_config("params.yaml", [*overrides[:2], f"agent.sft_lr={lr}"])
        boot = bootstrap.run(boot_cfg, workdir=root / f"lr{lr:g}", eval_tasks=8,
                             threads=args.threads)  # fmt: skip
        rows.append({"policy": f"bootstrap lr={lr:g}",
                     **heldout(cfg, boot["policy_dir"], args.heldout)})  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    print("\n| policy | General held-out | WebShop held-out |\n|---|---|---|")
    for r in rows:
        print(f"| {r['policy']} | {r['general']:.1%} | {r['webshop']:.1%} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
