"""What fine-tuning a base keeps: held-out success of both task sets before and after the bootstrap.

Usage::

    python benchmarks/finetune_retention.py --base DIR --heldout GOALS_DIR \
        [--lrs 1e-3 3e-4 1e-4] [--mixes balanced file] [--test 96] [--json OUT]

``GOALS_DIR`` holds the base's held-out goals (``<task set>_test.txt``, as ``distrl pretrain``
writes them under ``runs/pretrain/goals``: generated goals of every family that neither the
corpus nor the AitW test files hold). For the base, then for the bootstrap started from it at
each SFT learning rate (the bootstrap stage as a round runs it: General expert demonstrations,
``agent.sft.steps`` steps; everything else from ``params.yaml``) at each learning rate and
each goal mix (``agent.sft.goal_mix``: every family alike, or the train file's lines), the
policy is evaluated greedy in the static world on every held-out goal of both task sets and,
with ``--test N``, on the first N AitW General test goals in the live world (where the RL rounds
start from it). The bootstrap trains on General only, so WebShop's column measures what it
erases.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import tempfile
from pathlib import Path

import torch

from distrl_tasks.config import load_config
from distrl_tasks.stages import bootstrap, eval_any
from distrl_tasks.tasks.task import TASK_SETS
from distrl_tasks.tasks.taskset import load_goals


def heldout(cfg, policy: str, goals_dir: str, test: int) -> dict[str, float]:
    out = {}
    for task_set in TASK_SETS:
        n = len(load_goals(task_set, "test", goals_dir))
        res = eval_any.run(cfg, policy=policy, task_set=task_set, split="test", limit=n)
        out[task_set] = res["success_rate"]
    if test:  # the AitW files (the default data_dir), in the world the RL rounds collect in
        aitw = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, data_dir=""))
        res = eval_any.run(aitw.in_world("live"), policy=policy, task_set="general",
                           split="test", limit=test)  # fmt: skip
        out["general_test_live"] = res["success_rate"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="base checkpoint directory")
    ap.add_argument("--heldout", required=True, help="directory of <task set>_test.txt goals")
    ap.add_argument("--lrs", type=float, nargs="+", default=[1e-3, 3e-4, 1e-4])
    ap.add_argument("--mixes", nargs="+", default=["balanced", "file"],
                    choices=["balanced", "file"], help="bootstrap goal mixes")  # fmt: skip
    ap.add_argument("--test", type=int, default=0, help="also the first N General test goals")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    overrides = [f"agent.base_checkpoint={args.base}", "sim.dynamics.profile=static",
                 f"env.data_dir={args.heldout}"]  # fmt: skip
    cfg = load_config("params.yaml", overrides)
    rows = [{"policy": "base", **heldout(cfg, args.base, args.heldout, args.test)}]
    print(json.dumps(rows[-1]), flush=True)
    root = Path(tempfile.mkdtemp(prefix="retention-"))
    for lr, mix in itertools.product(args.lrs, args.mixes):
        # the bootstrap's demonstrations come from the AitW train goals, as in a round
        boot_cfg = load_config(
            "params.yaml", [*overrides[:2], f"agent.sft.lr={lr}", f"agent.sft.goal_mix={mix}"]
        )
        boot = bootstrap.run(boot_cfg, workdir=root / f"lr{lr:g}-{mix}", eval_tasks=8,
                             threads=args.threads)  # fmt: skip
        rows.append({"policy": f"bootstrap lr={lr:g} mix={mix}",
                     **heldout(cfg, boot["policy_dir"], args.heldout, args.test)})  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    extra = f" General test[:{args.test}] live |" if args.test else ""
    print(f"\n| policy | General held-out | WebShop held-out |{extra}\n|---|---|---|"
          + ("---|" if args.test else ""))  # fmt: skip
    for r in rows:
        cell = f" {r['general_test_live']:.1%} |" if args.test else ""
        print(f"| {r['policy']} | {r['general']:.1%} | {r['webshop']:.1%} |{cell}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
