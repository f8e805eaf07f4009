"""The bootstrap stage: the first ``behavior`` policy, cloned from scripted-expert demonstrations.

When the registry (``cfg.tracking``) holds no policy yet, :func:`run`

1. collects demonstrations with the scripted expert on the simulator, with its mistake rate on
   (the collect stage with ``policy="scripted"``), into ``<workdir>/runs/bootstrap/demos``;
2. turns them into supervised examples (:func:`demos_from_rows`) and trains the configured
   policy on them with a plain supervised loop (:func:`train_sft`);
3. evaluates it with the evaluate stage, saves it, registers it as round 0 / algorithm ``sft``
   and points ``behavior`` and ``champion`` at it.

Once a policy is registered, :func:`run` does nothing and returns the stored manifest.

Why a direct supervised loop rather than Learner + FilteredBC: training from scratch needs a
learning rate ~10x ``algorithm.lm_lr`` with warmup and decay, step-level batches drawn by epoch
(FilteredBC draws whole trajectories with replacement) and none of the RL machinery (gradient
clipping at 0.01, policy versions, importance weights).

The supervised pieces (demonstrations, the SFT loop, the vocabulary) live in
:mod:`distrl_tasks.algorithms.sft`, with why the demonstrations are rewritten and why the
default vocabulary is SentencePiece.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from distrl_tasks.agents.autoui import AutoUIModel, tiny_t5_config
from distrl_tasks.agents.image_encoders import image_feature_dim
from distrl_tasks.agents.policy import AutoUIPolicy, build_policy
from distrl_tasks.agents.shipped_base import REBUILD, BaseCheckpointError, load_base
from distrl_tasks.agents.tokenizer import SentencePieceTokenizer
from distrl_tasks.algorithms.sft import (
    DEMO_COLUMNS,
    Demo,
    SFTSettings,
    demos_from_rows,
    train_sft,
    train_tokenizer,
)
from distrl_tasks.config import Config
from distrl_tasks.data.shards import read_shards
from distrl_tasks.protocol.files import atomic_directory, atomic_write_json
from distrl_tasks.protocol.progress import progress_bar
from distrl_tasks.stages import collect, evaluate
from distrl_tasks.stages.common import torch_threads
from distrl_tasks.tasks.taskset import load_goals
from distrl_tasks.tracking.registry import ModelRegistry

BOOTSTRAP_DIR = Path("runs") / "bootstrap"
# Who labels the expert's demonstrations on the simulator, whatever ``evaluator.kind`` says: the
# oracle, which reads the simulator's own state. The labels only pick which demonstrations are
# cloned (the expert's successes); asking Gemini about a scripted expert on a simulator whose
# truth is known would cost requests and add nothing. The RL rounds' labels come from the
# configured evaluator. The manifest records it as ``demo_labels``.
DEMO_LABELS = "oracle"


def initial_policy(
    cfg: Config, demos: Sequence[Demo], tokenizer: str, work: Path, seed: int
) -> AutoUIPolicy:
    """The policy SFT starts from: a local AutoUI-Base style checkpoint (``agent.checkpoint_dir``),
    else the base ``agent.base_checkpoint`` names (the shipped one by default, built by
    ``distrl pretrain``), else a fresh model: the configured one (``byte``), or the same tiny T5
    with a SentencePiece vocabulary fitted to the demonstrations and the train goals."""
    if cfg.agent.checkpoint_dir or cfg.agent.model != "tiny":
        return build_policy(cfg.agent, seed=seed)
    base = load_base(cfg.agent.base_checkpoint)
    if base is not None:
        model, tok, _card = base
        if model.image_dim != image_feature_dim(cfg.agent):
            raise BaseCheckpointError(
                f"base checkpoint {cfg.agent.base_checkpoint!r} expects {model.image_dim}-d image "
                f"features but agent.image_encoder {cfg.agent.image_encoder!r} produces "
                f"{image_feature_dim(cfg.agent)}-d; rebuild it with: {REBUILD}"
            )
        if cfg.agent.points:
            model.add_pointer(seed)  # a base built without the head gains a new one
        return AutoUIPolicy(
            model,
            tok,
            temperature=cfg.agent.temperature,
            max_new_tokens=cfg.agent.max_new_tokens,
            max_prompt_tokens=cfg.agent.max_prompt_tokens,
        )
    if tokenizer == "byte":
        return build_policy(cfg.agent, seed=seed)
    if tokenizer != "sentencepiece" or cfg.agent.model != "tiny":
        raise ValueError(
            f"sft tokenizer must be 'byte' or 'sentencepiece' (the latter for agent.model "
            f"'tiny' only), got {tokenizer!r} with model {cfg.agent.model!r}"
        )
    texts = [d.prompt for d in demos] + [d.target for d in demos]
    texts += load_goals(cfg.env.task_set, "train", cfg.env.data_dir)
    tok = SentencePieceTokenizer(
        train_tokenizer(texts, work / "tokenizer", vocab_size=cfg.agent.sft.vocab_size)
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoUIModel(tiny_t5_config(tok.size), image_feature_dim(cfg.agent))
    if cfg.agent.points:
        model.add_pointer(seed)
    return AutoUIPolicy(
        model,
        tok,
        temperature=cfg.agent.temperature,
        max_new_tokens=cfg.agent.max_new_tokens,
        max_prompt_tokens=cfg.agent.max_prompt_tokens,
    )


def _stage_dir(workdir: str | os.PathLike) -> Path:
    return Path(workdir) / BOOTSTRAP_DIR


def _existing(registry: ModelRegistry, manifest: Path) -> dict[str, Any] | None:
    """The stored result when any policy is registered already (None: bootstrap is needed)."""
    versions = registry.compare_versions()
    if not versions:
        return None
    if manifest.exists():
        return {**json.loads(manifest.read_text()), "skipped": True}
    behavior = registry.alias_version("behavior")
    chosen = behavior or versions[-1]
    return {"version": chosen.version, "policy_dir": "", "skipped": True, "sft_success": {}}


def run(
    cfg: Config,
    *,
    workdir: str | os.PathLike = ".",
    episodes_per_device: int | None = None,
    mistake_rate: float | None = None,
    sft: SFTSettings | None = None,
    eval_splits: Sequence[str] = ("test",),
    eval_tasks: int | None = None,
    threads: int | None = None,
    tokenizer: str | None = None,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, Any]:
    """Bootstrap the first policy unless one is registered; returns a small manifest.

    Args:
        cfg: configuration (sim farm, task set, agent, tracking, orchestration.eval_tasks).
        workdir: project directory (demos, checkpoint and manifest under ``runs/bootstrap``;
            relative tracking URIs resolve against it).
        episodes_per_device: demonstrations per simulated device
            (``orchestration.devices_per_worker`` devices; default
            ``agent.sft.episodes_per_device``).
        mistake_rate: the expert's mistake rate (default ``agent.sft.mistake_rate``).
        sft: training settings (default: ``agent.sft.steps``, ``batch_size``, ``lr``).
        eval_splits: splits the SFT policy is evaluated on (the first is registered).
        eval_tasks: tasks per evaluation (default ``orchestration.eval_tasks``).
        threads: torch threads while training (default: the CPUs this process may use).
        tokenizer: ``sentencepiece`` (a BPE vocabulary fitted to the demos, see
            :func:`initial_policy`) or ``byte``; default ``agent.sft.tokenizer``.
        seed: seeds the model initialisation and the batch order.
        progress: show progress bars.

    Returns:
        ``version`` (registry version), ``policy_dir``, ``skipped``, ``sft_success``
        ({split: success rate}) and details (``demos``, ``sft_steps``, ``sft_wall_s``, ...).
    """
    if not eval_splits:
        raise ValueError("eval_splits must name at least one split")
    out = _stage_dir(workdir)
    manifest_file = out / "manifest.json"
    registry = ModelRegistry.from_config(cfg, root=workdir)
    done = _existing(registry, manifest_file)
    if done is not None:
        return done
    if not (cfg.agent.checkpoint_dir or cfg.agent.model != "tiny"):
        load_base(cfg.agent.base_checkpoint)  # a bad base fails here, before any demo is recorded
    started = time.perf_counter()
    rate = mistake_rate if mistake_rate is not None else cfg.agent.sft.mistake_rate
    ag = cfg.agent
    settings = sft or SFTSettings(steps=ag.sft.steps, batch_size=ag.sft.batch_size, lr=ag.sft.lr)
    episodes_per_device = episodes_per_device or ag.sft.episodes_per_device
    tokenizer = tokenizer or ag.sft.tokenizer
    demo_cfg = cfg.in_world(cfg.sim.dynamics.bootstrap_profile)  # the demonstrations' world
    demo_cfg = dataclasses.replace(
        demo_cfg, sim=dataclasses.replace(demo_cfg.sim, expert_mistake_rate=rate)
    )
    if cfg.env.device_kind == "sim":  # the demos' labels: see DEMO_LABELS
        demo_cfg = dataclasses.replace(
            demo_cfg, evaluator=dataclasses.replace(cfg.evaluator, kind="oracle")
        )
    collected = collect.run(
        demo_cfg,
        collect.CollectRequest(
            round=0,
            policy="scripted",
            out_dir=out / "demos",
            mode="async",
            episodes_per_device=episodes_per_device,
            split="train",
            progress=progress,
            goal_mix=ag.sft.goal_mix,
        ),
    )
    columns = [*DEMO_COLUMNS, *(["screenshot_png"] if cfg.agent.model == "vlm" else [])]
    table = read_shards(out / "demos").select(columns)  # a VLM clones from the pixels
    demos = demos_from_rows(
        table.to_pylist(), history=cfg.env.prompt_history, unfinished=ag.sft.unfinished_demos
    )
    if not demos:
        raise RuntimeError("bootstrap: the expert produced no successful demonstration to clone")

    with torch_threads(threads) as used_threads:
        policy = initial_policy(cfg, demos, tokenizer, out, seed)
        policy.max_new_tokens = evaluate.decode_budget(policy)
        with progress_bar(
            total=settings.steps, desc="sft", unit="step", enabled=progress, dynamic_ncols=True
        ) as bar:

            def show(step: int, loss: float, _elapsed_s: float) -> None:
                bar.update(step - bar.n)
                bar.set_postfix(loss=f"{loss:.3f}", refresh=False)

            result = train_sft(policy, demos, settings, seed=seed, callback=show)
        policy_dir = _save(policy, out / "policy", result.steps)
        success, evals = {}, {}
        for split in eval_splits:
            evals[split] = evaluate.run(
                cfg,
                round=0,
                checkpoint_dir=policy_dir,
                workdir=workdir,
                split=split,
                n_tasks=eval_tasks,
                progress=progress,
            )
            success[split] = evals[split]["success_rate"]

    first = evals[eval_splits[0]]
    version = registry.register_checkpoint(
        policy_dir,
        round=0,
        algorithm="sft",
        policy_version=0,
        data_version="",
        eval_success_rate=first["success_rate"],
        eval_tasks_key=first["tasks_key"],
        steps=result.steps,
        tags={"demos": len(demos), "mistake_rate": rate},
    )
    registry.set_behavior(version)
    registry.promote_if_better(version, first["success_rate"], first["tasks_key"])
    manifest = {
        "version": version,
        "policy_dir": str(policy_dir),
        "skipped": False,
        "sft_success": success,
        "sft_mean_steps": {s: e["mean_steps"] for s, e in evals.items()},
        "tasks_key": {s: e["tasks_key"] for s, e in evals.items()},
        "task_set": cfg.env.task_set,
        "demo_trajectories": collected["trajectories"],
        "demo_success_rate": collected["success_rate"],
        "demos": len(demos),
        "mistake_rate": rate,
        "goal_mix": ag.sft.goal_mix,
        "unfinished_demos": ag.sft.unfinished_demos,
        "tokenizer": getattr(policy.tokenizer, "kind", "vlm"),
        "base_checkpoint": "" if cfg.agent.checkpoint_dir else cfg.agent.base_checkpoint,
        "sft_steps": result.steps,
        "sft_examples": result.examples,
        "sft_final_loss": result.losses[-1] if result.losses else None,
        "sft_wall_s": result.wall_s,
        "demo_wall_s": collected["wall_s"],
        "demo_labels": DEMO_LABELS if cfg.env.device_kind == "sim" else cfg.evaluator.kind,
        "eval_wall_s": {s: e["wall_s"] for s, e in evals.items()},
        "wall_s": time.perf_counter() - started,
        "threads": used_threads,
    }
    atomic_write_json(manifest_file, manifest)
    return manifest


def _save(policy: AutoUIPolicy, final: Path, steps: int) -> Path:
    """Write the checkpoint through a temporary directory, so a crash leaves no half policy."""
    with atomic_directory(final) as tmp:
        policy.save(tmp, metadata={"algorithm": "sft", "round": 0, "sft_steps": steps})
    return final
