"""Typing from the goal (``agent.goal_typing``) on and off: success and typed = query, greedy.

Usage::

    python benchmarks/goal_typing.py [--policy DIR ...] [--heldout GOALS_DIR] [--test 96] \
        [--worlds static live] [--json OUT]

For each policy (default: the shipped base), each evaluation (the held-out generated goals of
both task sets under ``static`` when ``--heldout`` names the directory ``distrl pretrain`` wrote
them to, ``runs/pretrain/goals``, or is ``auto``: the same goals written afresh from the shipped
base's card seed and ``params.yaml``; the first ``--test`` AitW test goals of each task set a
policy is for, under each of ``--worlds``), the policy is evaluated greedy twice, with the rule
off and on; nothing else changes (same farm seed, same goals, same config from ``params.yaml``).
A policy directory whose name starts with ``sft-general`` or ``sft-webshop`` (the learning
benchmark's starts) is evaluated on its own task set only. Prints one markdown row per
evaluation: success, the share of searching TYPE steps that typed exactly the goal's query, and
each evaluation's wall time (what the rule's per-step masks cost), then, for the held-out
evaluations, success per task family off and on (the base card's per-family table).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import torch

from distrl_tasks.config import Config, load_config
from distrl_tasks.stages import eval_any, pretrain
from distrl_tasks.tasks.task import TASK_SETS
from distrl_tasks.tasks.taskset import load_goals

SHIPPED_BASE = Path(__file__).parents[1] / "distrl_tasks" / "agents" / "base"


def _with_rule(cfg: Config, on: bool) -> Config:
    return dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, goal_typing=on))


def _task_sets(policy: str) -> tuple[str, ...]:
    for task_set in TASK_SETS:
        if f"sft-{task_set}" in policy:
            return (task_set,)
    return tuple(TASK_SETS)


def evaluations(policy: str, heldout: str | None, test: int, worlds: list[str]) -> list[dict]:
    """What to evaluate ``policy`` on: ``{name, task_set, data_dir, limit, world}`` rows."""
    rows = []
    for task_set in _task_sets(policy):
        if heldout:
            n = len(load_goals(task_set, "test", heldout))
            rows.append({"name": f"{task_set} held-out ({n})", "task_set": task_set,
                         "data_dir": heldout, "limit": n, "world": "static"})  # fmt: skip
        for world in worlds if test else []:
            rows.append({"name": f"{task_set} test[:{test}] {world}", "task_set": task_set,
                         "data_dir": "", "limit": test, "world": world})  # fmt: skip
    return rows


def measure(cfg: Config, policy: str, row: dict, on: bool) -> dict:
    cfg = _with_rule(cfg, on)
    cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, data_dir=row["data_dir"]))
    began = time.perf_counter()
    res = eval_any.run(cfg.in_world(row["world"]), policy=policy, task_set=row["task_set"],
                       split="test", limit=row["limit"])  # fmt: skip
    return {
        "success": res["success_rate"],
        "typed_query_match": res["typed_query_match"],
        "type_steps": res["type_steps"],
        "invalid": res["invalid_rate"],
        "wall_s": time.perf_counter() - began,
        "per_family": {f: [v["success_rate"], v["episodes"]] for f, v in res["per_family"].items()},
    }


def heldout_goals(cfg: Config, heldout: str | None, scratch: Path) -> str | None:
    """The held-out goals' directory: ``heldout`` itself, or with ``auto`` the goal files
    ``distrl pretrain`` writes, regenerated under ``scratch`` from the shipped base's card seed
    (the goal generators are seeded, so these are the goals its card was measured on)."""
    if heldout != "auto":
        return heldout
    seed = int(json.loads((SHIPPED_BASE / "model_card.json").read_text())["seed"])
    pretrain.write_goal_files(cfg, scratch, seed)
    return str(scratch / "goals")


def _label(policy: str) -> str:
    """A policy's name in the table: the learning benchmark's start directory (``sft-...``) for
    its ``runs/bootstrap/policy``, else the directory's own name."""
    parts = Path(policy).parts
    return next((p for p in reversed(parts) if p.startswith("sft-")), Path(policy).name)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", nargs="+", default=[str(SHIPPED_BASE)],
                    help="checkpoint directories (default: the shipped base)")  # fmt: skip
    ap.add_argument("--heldout", help="directory of <task set>_test.txt held-out goals, or auto")
    ap.add_argument("--test", type=int, default=96, help="first N AitW test goals (0: none)")
    ap.add_argument("--worlds", nargs="+", default=["static", "live"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = load_config("params.yaml" if Path("params.yaml").is_file() else None)
    scratch = tempfile.TemporaryDirectory(prefix="goal-typing-")
    heldout = heldout_goals(cfg, args.heldout, Path(scratch.name))
    out = []
    print("| policy | evaluation | success off | success on | typed = query off | on | "
          "TYPE steps off / on | wall s off / on |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for policy in args.policy:
        for row in evaluations(policy, heldout, args.test, args.worlds):
            off, on = measure(cfg, policy, row, False), measure(cfg, policy, row, True)
            out.append({"policy": policy, **row, "off": off, "on": on})
            print(f"| {_label(policy)} | {row['name']} | {_pct(off['success'])} | "
                  f"{_pct(on['success'])} | {_pct(off['typed_query_match'])} | "
                  f"{_pct(on['typed_query_match'])} | {off['type_steps']} / {on['type_steps']} | "
                  f"{off['wall_s']:.0f} / {on['wall_s']:.0f} |",
                  flush=True)  # fmt: skip
    for row in (r for r in out if "held-out" in r["name"]):
        print(f"\n| {_label(row['policy'])}, {row['name']}: family | goals | success off | on |")
        print("|---|---|---|---|")
        for family, (off, n) in sorted(row["off"]["per_family"].items()):
            on = row["on"]["per_family"][family][0]
            print(f"| {family} | {n} | {_pct(off)} | {_pct(on)} |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    scratch.cleanup()


if __name__ == "__main__":
    main()
