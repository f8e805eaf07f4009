"""Learner throughput and peak memory: DistRL updates through the accelerate learner on CPU.

Usage::

    python benchmarks/learner.py --model tiny --steps 10
    python benchmarks/learner.py --model base --steps 2   # T5-base-sized AutoUI, random init

One configuration per process, so the peak RSS printed is that configuration's. Samples are
sampled windows (``algorithm.batch_size`` per step) of ``sequence_length`` steps each; the
transitions/s figure counts every step of every window.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import resource
import tempfile
import time

import numpy as np
import torch
from PIL import Image
from transformers import T5Config

from distrl_tasks.agents.autoui import AutoUIModel
from distrl_tasks.agents.policy import AutoUIPolicy, build_policy, format_prompt
from distrl_tasks.agents.tokenizer import ByteTokenizer
from distrl_tasks.algorithms.factory import build_algorithm
from distrl_tasks.algorithms.learner import Learner
from distrl_tasks.config import config_from_dict
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.schema import table_from_rows
from distrl_tasks.protocol.actions import ActionType, format_action, key, tap, type_text

DIM = 1408


def base_sized_policy() -> AutoUIPolicy:
    """AutoUI-Base dimensions (T5-base v1.1 style: untied head, gated-gelu), random weights."""
    config = T5Config(
        vocab_size=32128,
        d_model=768,
        d_kv=64,
        d_ff=2048,
        num_layers=12,
        num_decoder_layers=12,
        num_heads=12,
        dropout_rate=0.0,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    torch.manual_seed(0)
    return AutoUIPolicy(AutoUIModel(config, DIM), ByteTokenizer(), max_new_tokens=128)


def synthetic_replay(n_traj: int = 16, steps: int = 6) -> ReplayBuffer:
    """Labeled trajectories with real AutoUI action strings and random frame features."""
    png = io.BytesIO()
    Image.new("RGB", (2, 2)).save(png, "PNG")
    rng = np.random.default_rng(0)
    t0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    pool = [
        format_action(tap(0.31, 0.52)),
        format_action(type_text("best buy laptop deals")),
        format_action(key(ActionType.PRESS_ENTER)),
        format_action(key(ActionType.STATUS_TASK_COMPLETE)),
    ]
    rows = []
    for i in range(n_traj):
        goal = f"Search for laptops on bestbuy.com, item {i}"
        acts = [pool[(i + t) % len(pool)] for t in range(steps)]
        for t in range(steps):
            last = t == steps - 1
            rows.append(
                {
                    "trajectory_id": f"traj-{i}",
                    "step": t,
                    "round": 0,
                    "task": goal,
                    "task_set": "general",
                    "split": "train",
                    "device": "emulator-5554",
                    "policy_version": 0,
                    "prompt": format_prompt(goal, acts[:t]),
                    "action": acts[t],
                    "action_type": "DUAL_POINT",
                    "invalid": False,
                    "screenshot_png": png.getvalue(),
                    "final_screenshot_png": png.getvalue() if last else None,
                    "image_features": rng.normal(size=DIM),
                    "final_image_features": rng.normal(size=DIM) if last else None,
                    "behavior_log_prob": -50.0,
                    "reward": float(last and i % 2 == 0),
                    "penalty": 0.0,
                    "done": last,
                    "mc_return": 0.0,
                    "trajectory_reward": float(i % 2 == 0),
                    "evaluator": "oracle",
                    "label_status": "labeled",
                    "started_at": t0,
                    "ended_at": t0,
                }
            )
    replay = ReplayBuffer(10_000, seed=0)
    replay.extend(table_from_rows(rows, DIM))
    return replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("tiny", "base"), default="tiny")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--mixed-precision", choices=("no", "bf16"), default="no")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    cfg = config_from_dict({})  # paper defaults: batch 4 windows x 3 steps, DistRL
    policy = build_policy(cfg.agent, seed=0) if args.model == "tiny" else base_sized_policy()
    algorithm = build_algorithm(cfg, policy)
    replay = synthetic_replay()
    with tempfile.TemporaryDirectory() as out:
        learner = Learner(cfg, algorithm, out_dir=out, mixed_precision=args.mixed_precision)
        learner.train_round(replay, steps=1)  # warm-up: allocator, optimizer state
        started = time.perf_counter()
        metrics = learner.train_round(replay, steps=args.steps)
        elapsed = time.perf_counter() - started
    windows = cfg.algorithm.batch_size * args.steps
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    params = sum(p.numel() for p in learner.params) / 1e6
    print(
        f"model={args.model} params={params:.1f}M threads={args.threads} "
        f"precision={args.mixed_precision} steps={args.steps} "
        f"batch={cfg.algorithm.batch_size}x{cfg.algorithm.sequence_length} | "
        f"{args.steps / elapsed:.3f} steps/s, {windows / elapsed:.2f} windows/s, "
        f"{windows * cfg.algorithm.sequence_length / elapsed:.2f} transitions/s "
        f"(loop-reported samples/s {metrics['train/samples_per_s']:.2f}) | "
        f"peak RSS {peak_mib:.0f} MiB"
    )


if __name__ == "__main__":
    main()
