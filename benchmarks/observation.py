"""A/B of the policy's observation: AutoUI's screenshot-only prompt vs the screen's elements.

Usage::

    python benchmarks/observation.py [--episodes 40] [--steps 300] [--seeds 0] [--json OUT]

For each seed and each ``agent.observation`` (``screenshot``, ``elements``), the same recipe:

1. family-balanced generated General goals (:func:`~distrl_tasks.tasks.generators.
   balanced_corpus`, web searches 20%) and held-out goals of every family;
2. scripted-expert demonstrations on them (static world, mistake rate 0.2; ``--episodes`` per
   device on 8 simulated devices) recorded by the collect stage in that observation mode
   (its ``steps_per_s`` is the collection-speed figure, UI dumps included);
3. ``--steps`` SFT steps (batch 8, lr 1e-3) from the shipped base on those demonstrations,
   timed per step;
4. greedy success on every held-out goal, static world, overall and per family, and the
   sampled policy's collection speed (``steps_per_s`` of one collect round at
   ``agent.temperature``).

The prompt's cost is reported as its mean length in the base's tokens. "Content-dependent"
families are those whose targets move with what is on the screen (installed apps, channels,
search results): app_settings, app_notifications, install_app, open_app, youtube_video,
directions, maps_search, shop_search. Both arms get the same data, steps and seeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from distrl_tasks.agents.policy import AutoUIPolicy, build_policy
from distrl_tasks.agents.shipped_base import SHIPPED_DIR, load_base
from distrl_tasks.algorithms.sft import DEMO_COLUMNS, SFTSettings, demos_from_rows, train_sft
from distrl_tasks.config import Config, load_config
from distrl_tasks.data.shards import read_shards
from distrl_tasks.stages import collect, evaluate
from distrl_tasks.tasks.generators import balanced_corpus
from distrl_tasks.tasks.taskset import load_goals

CONTENT = ("app_settings", "app_notifications", "install_app", "open_app", "youtube_video",
           "directions", "maps_search", "shop_search")  # fmt: skip
MODES = ("screenshot", "elements")


def arm(cfg: Config, mode: str, seed: int, work: Path, episodes: int, steps: int) -> dict:
    goals = work / "goals"
    goals.mkdir(parents=True, exist_ok=True)
    corpus = balanced_corpus("general", 1500, 6, seed=seed, extra=load_goals("general", "train"))
    (goals / "general_train.txt").write_text("\n".join(corpus.train) + "\n")
    (goals / "general_test.txt").write_text("\n".join(corpus.heldout) + "\n")
    static = dataclasses.replace(cfg.sim.dynamics, profile="static", bootstrap_profile="static")
    cfg = dataclasses.replace(
        cfg,
        agent=dataclasses.replace(cfg.agent, observation=mode),
        env=dataclasses.replace(cfg.env, task_set="general", data_dir=str(goals)),
        sim=dataclasses.replace(cfg.sim, dynamics=static, expert_mistake_rate=0.2, seed=seed),
    )
    demo_dir = work / f"demos-{mode}"
    collected = collect.run(
        cfg,
        collect.CollectRequest(
            round=0,
            policy="scripted",
            out_dir=demo_dir,
            episodes_per_device=episodes,
            progress=False,
        ),
    )
    table = read_shards(demo_dir).select(list(DEMO_COLUMNS))
    demos = demos_from_rows(table.to_pylist(), history=cfg.env.prompt_history)
    model, tok, _ = load_base(str(SHIPPED_DIR))  # type: ignore[misc]
    policy = AutoUIPolicy(model, tok, temperature=cfg.agent.temperature,
                          max_prompt_tokens=cfg.agent.max_prompt_tokens)  # fmt: skip
    tokens = statistics.mean(len(tok.encode(d.prompt)) for d in demos)
    torch.manual_seed(seed)
    settings = SFTSettings(steps=steps, batch_size=8, lr=1e-3, warmup_steps=20)
    result = train_sft(policy, demos, settings, seed=seed)
    ckpt = work / f"policy-{mode}"
    policy.save(ckpt, metadata={"algorithm": "sft", "round": 0})
    held = len(load_goals("general", "test", str(goals)))
    res = evaluate.run(cfg, round=0, checkpoint_dir=ckpt, workdir=work, split="test",
                       n_tasks=held, task_set="general")  # fmt: skip
    per = {f: v["success_rate"] for f, v in res["per_family"].items()}
    eps = {f: v["episodes"] for f, v in res["per_family"].items()}
    content = [per[f] * eps[f] for f in CONTENT if f in per]
    n_content = sum(eps[f] for f in CONTENT if f in per)
    started = time.perf_counter()
    sampled = collect.run(
        cfg,
        collect.CollectRequest(
            round=1,
            policy=ckpt_policy(cfg, ckpt),
            out_dir=work / f"col-{mode}",
            episodes_per_device=2,
            progress=False,
        ),
    )
    return {
        "mode": mode,
        "seed": seed,
        "demo_steps_per_s": collected["steps_per_s"],
        "examples": len(demos),
        "prompt_tokens": tokens,
        "sft_s_per_step": result.wall_s / max(1, result.steps),
        "success": res["success_rate"],
        "content_success": sum(content) / max(1, n_content),
        "content_episodes": n_content,
        "per_family": per,
        "policy_steps_per_s": sampled["steps_per_s"],
        "policy_collect_wall_s": time.perf_counter() - started,
    }


def ckpt_policy(cfg: Config, ckpt: Path) -> AutoUIPolicy:
    policy = build_policy(cfg.agent, checkpoint_dir=ckpt)
    policy.model.eval()
    return policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="params.yaml")
    parser.add_argument("--episodes", type=int, default=40, help="expert episodes per device")
    parser.add_argument("--steps", type=int, default=300, help="SFT steps per arm")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = load_config(args.config)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for mode in MODES:
                row = arm(cfg, mode, seed, Path(tmp) / f"s{seed}-{mode}", args.episodes,
                          args.steps)  # fmt: skip
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "per_family"}), flush=True)
    print(f"\n{'mode':<12}{'seed':>5}{'tokens':>8}{'s/step':>8}{'success':>9}{'content':>9}"
          f"{'demo st/s':>11}{'policy st/s':>12}")  # fmt: skip
    for r in rows:
        print(f"{r['mode']:<12}{r['seed']:>5}{r['prompt_tokens']:>8.1f}{r['sft_s_per_step']:>8.2f}"
              f"{r['success']:>9.1%}{r['content_success']:>9.1%}{r['demo_steps_per_s']:>11.1f}"
              f"{r['policy_steps_per_s']:>12.1f}")  # fmt: skip
    families = sorted({f for r in rows for f in r["per_family"]})
    print("\nper family (success):")
    for f in families:
        cells = "  ".join(f"{r['mode'][:5]}/{r['seed']}={r['per_family'].get(f, 0):.0%}"
                          for r in rows)  # fmt: skip
        print(f"  {f:<20}{cells}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
