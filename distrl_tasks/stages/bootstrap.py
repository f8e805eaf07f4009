"""The bootstrap stage: the first ``behavior`` policy, cloned from scripted-expert demonstrations.

When the registry (``cfg.tracking``) holds no policy yet, :func:`run`

1. collects demonstrations with the scripted expert on the simulator, with its mistake rate on
   (the collect stage with ``policy="scripted"``), into ``<workdir>/runs/bootstrap/demos``;
2. turns them into supervised examples (:func:`demos_from_rows`) and trains the configured
   policy on them with a plain supervised loop (:func:`train_sft`);
3. evaluates it with the evaluate stage, saves it, registers it as round 0 / algorithm ``sft``
   and points ``behavior`` and ``champion`` at it.

Once a policy is registered, :func:`run` does nothing and returns the stored manifest.

Why the demonstrations are rewritten:

* The expert's "Action Plan" is a sentence ("[open Chrome]", "[mistake: wrong tap]"); the policy
  is taught the short plan ``[<action type>]`` instead. It keeps the AutoUI format, costs ~20
  fewer decoder tokens per action, and the prompt of the next step (which shows the previous
  action) then looks like what the environment will show the policy at test time.
* Prompts are rebuilt from the rewritten previous action for the same reason.
* Steps the expert marked as mistakes are kept as *states* (the next steps start from the
  perturbed screen, DART-style: the policy learns to recover) but are not imitated.
* By default only successful demonstrations are cloned (Filtered BC with the oracle's reward).

Why a direct supervised loop rather than Learner + FilteredBC: training from scratch needs a
learning rate ~10x ``algorithm.lm_lr`` with warmup and decay, step-level batches drawn by epoch
(FilteredBC draws whole trajectories with replacement) and none of the RL machinery (gradient
clipping at 0.01, policy versions, importance weights).

Why a SentencePiece vocabulary by default (measured, benchmarks/RESULTS.md): with the byte
tokenizer an action is ~155 decoder tokens and the from-scratch model, which has only relative
position buckets, cannot count repeated byte patterns in budget: after 4,800 examples greedy
decoding still loops ("Action Decisisisis...", 0% parseable actions). A BPE vocabulary fitted to
the demos cuts an action to ~40-70 tokens and the same model emits parseable actions early.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from distrl_tasks.agents.actions import format_action, parse_action
from distrl_tasks.agents.autoui import AutoUIModel, tiny_t5_config
from distrl_tasks.agents.image_encoders import image_feature_dim
from distrl_tasks.agents.policy import AutoUIPolicy, Observation, build_policy, format_prompt
from distrl_tasks.agents.tokenizer import SentencePieceTokenizer
from distrl_tasks.config import Config
from distrl_tasks.data.shards import read_shards
from distrl_tasks.stages import collect, evaluate
from distrl_tasks.tasks.taskset import load_goals
from distrl_tasks.tracking.registry import ModelRegistry

BOOTSTRAP_DIR = Path("runs") / "bootstrap"
MISTAKE_PLAN = "mistake"  # the expert's plan text marks its injected mistakes with this prefix
_COLUMNS = ("trajectory_id", "step", "task", "action", "reward", "image_features")


def canonical_action(text: str) -> str:
    """The AutoUI string of ``text`` with the short plan ``[<action type>]``."""
    return format_action(parse_action(text), plan="")


def demos_from_rows(
    rows: Iterable[Mapping[str, Any]],
    *,
    drop_mistakes: bool = True,
    successes_only: bool = True,
    history: int = 1,
) -> list[Demo]:
    """Supervised examples from trajectory rows (shard columns ``_COLUMNS``).

    Args:
        rows: steps of any number of trajectories, in any order.
        drop_mistakes: do not imitate steps whose plan starts with "mistake".
        successes_only: skip trajectories without a positive reward.
        history: previous actions in the rebuilt prompt (the environment's default is 1).

    Raises:
        ValueError: a row lacks one of the needed columns.
    """
    by_traj: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for i, row in enumerate(rows):
        missing = [c for c in _COLUMNS if c not in row]
        if missing:
            raise ValueError(f"row {i}: missing columns {missing}")
        by_traj[str(row["trajectory_id"])].append(row)
    out = []
    for tid in sorted(by_traj):
        steps = sorted(by_traj[tid], key=lambda r: int(r["step"]))
        if successes_only and not any((r["reward"] or 0.0) > 0 for r in steps):
            continue
        previous: list[str] = []
        for row in steps:
            action = parse_action(str(row["action"]))
            target = format_action(action, plan="")
            mistake = action.plan.strip("[] ").lower().startswith(MISTAKE_PLAN)
            if not action.invalid and not (drop_mistakes and mistake):
                prompt = format_prompt(str(row["task"]), previous, history=history)
                feats = np.asarray(row["image_features"], dtype=np.float16)
                out.append(Demo(prompt, feats, target, action.action_type.value))
            previous.append(target)
    return out


@dataclass(frozen=True)
class Demo:
    """One supervised example: what the policy sees and the action it should write."""

    prompt: str
    image_features: np.ndarray  # [D] float16
    target: str  # canonical AutoUI action string
    action_type: str

    def observation(self) -> Observation:
        return Observation(self.prompt, self.image_features)


@dataclass(frozen=True)
class SFTSettings:
    """Supervised fine-tuning hyperparameters (proposed config section ``agent.sft_*``).

    Training from scratch wants a far larger step size than RL fine-tuning (``algorithm.lm_lr``
    is 1e-4 with gradients clipped to 0.01): the defaults were measured in benchmarks/sft.py.
    """

    steps: int = 300  # optimizer steps
    batch_size: int = 8  # examples per step
    lr: float = 1e-3  # peak AdamW learning rate
    warmup_steps: int = 20  # linear warmup, then cosine decay to ``lr_floor * lr``
    lr_floor: float = 0.1
    max_grad_norm: float = 1.0
    time_budget_s: float | None = None  # stop early once training took this long

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.warmup_steps < 0:
            raise ValueError(
                f"SFT needs steps >= 1, batch_size >= 1, warmup_steps >= 0; got {self.steps}, "
                f"{self.batch_size}, {self.warmup_steps}"
            )
        if not (self.lr > 0 and 0 <= self.lr_floor <= 1 and self.max_grad_norm > 0):
            raise ValueError("SFT needs lr > 0, lr_floor in [0, 1] and max_grad_norm > 0")


@dataclass
class SFTResult:
    """What :func:`train_sft` did."""

    steps: int = 0
    examples: int = 0
    wall_s: float = 0.0
    losses: list[float] = field(default_factory=list)  # mean token NLL per logged interval


def lr_scale(step: int, total: int, warmup: int, floor: float) -> float:
    """Linear warmup over ``warmup`` steps, then cosine from 1 down to ``floor``."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def train_sft(
    policy: AutoUIPolicy,
    demos: Sequence[Demo],
    settings: SFTSettings,
    *,
    seed: int = 0,
    log_every: int = 25,
    callback: Callable[[int, float, float], None] | None = None,
) -> SFTResult:
    """Teacher-forced maximum likelihood of the demo actions (mean NLL per target token).

    Batches walk through seeded random permutations of ``demos`` (every example once per
    epoch). ``callback(step, mean_loss, elapsed_s)`` is called every ``log_every`` steps.
    """
    if not demos:
        raise ValueError("train_sft needs at least one demonstration")
    rng = np.random.default_rng(seed)
    params = [p for p in policy.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.lr, weight_decay=0.0)
    result, order, window = SFTResult(), [], []
    start = time.perf_counter()
    policy.model.train()
    for step in range(settings.steps):
        if (
            settings.time_budget_s is not None
            and time.perf_counter() - start > settings.time_budget_s
        ):
            break
        while len(order) < settings.batch_size:
            order.extend(rng.permutation(len(demos)).tolist())
        batch, order = (
            [demos[i] for i in order[: settings.batch_size]],
            order[settings.batch_size :],
        )
        scale = lr_scale(step, settings.steps, settings.warmup_steps, settings.lr_floor)
        for group in optimizer.param_groups:
            group["lr"] = settings.lr * scale
        scores = policy.score([d.observation() for d in batch], [d.target for d in batch])
        loss = -scores.token_log_probs.sum() / scores.lengths.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, settings.max_grad_norm)
        optimizer.step()
        window.append(loss.item())
        result.steps += 1
        result.examples += len(batch)
        if result.steps % log_every == 0 or step == settings.steps - 1:
            result.losses.append(float(np.mean(window)))
            window = []
            if callback is not None:
                callback(result.steps, result.losses[-1], time.perf_counter() - start)
    policy.model.eval()
    result.wall_s = time.perf_counter() - start
    return result


def train_tokenizer(texts: Iterable[str], directory: Path, vocab_size: int = 1024) -> Path:
    """Fit a T5-compatible SentencePiece model (BPE) on ``texts``; returns ``spiece.model``.

    Byte fallback makes every string encodable (so typed text the model never saw still has a
    spelling); identity normalisation and no dummy prefix make ``decode(encode(t)) == t``, which
    the action strings need. Ids follow T5: pad 0, eos 1, unk 2, no bos.
    """
    import sentencepiece as spm

    directory.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(texts)),
        model_prefix=str(directory / "spiece"),
        vocab_size=vocab_size,
        model_type="bpe",
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        byte_fallback=True,
        character_coverage=1.0,
        normalization_rule_name="identity",
        add_dummy_prefix=False,
        remove_extra_whitespaces=False,
        split_digits=False,  # frequent coordinates become single pieces
        # "word▁" pieces: a word segments the same in the goal and in typed_text (which starts
        # after a quote, not a space), so the copy head can point at it (93% vs 74% of pieces).
        treat_whitespace_as_suffix=True,
        minloglevel=2,
    )
    return directory / "spiece.model"


def initial_policy(
    cfg: Config, demos: Sequence[Demo], tokenizer: str, work: Path, seed: int
) -> AutoUIPolicy:
    """The untrained policy: the configured one (``byte``), or the same tiny T5 with a
    SentencePiece vocabulary fitted to the demonstrations and the train goals."""
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
        train_tokenizer(texts, work / "tokenizer", vocab_size=cfg.agent.sft_vocab_size)
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoUIModel(tiny_t5_config(tok.size), image_feature_dim(cfg.agent))
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
            ``agent.sft_episodes_per_device``).
        mistake_rate: the expert's mistake rate (default ``agent.sft_mistake_rate``).
        sft: training settings (default: ``agent.sft_steps``, ``sft_batch_size``, ``sft_lr``).
        eval_splits: splits the SFT policy is evaluated on (the first is registered).
        eval_tasks: tasks per evaluation (default ``orchestration.eval_tasks``).
        threads: torch threads while training (default: the CPUs this process may use).
        tokenizer: ``sentencepiece`` (a BPE vocabulary fitted to the demos, see
            :func:`initial_policy`) or ``byte``; default ``agent.sft_tokenizer``.
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
    started = time.perf_counter()
    rate = mistake_rate if mistake_rate is not None else cfg.agent.sft_mistake_rate
    ag = cfg.agent
    settings = sft or SFTSettings(steps=ag.sft_steps, batch_size=ag.sft_batch_size, lr=ag.sft_lr)
    episodes_per_device = episodes_per_device or ag.sft_episodes_per_device
    tokenizer = tokenizer or ag.sft_tokenizer
    demo_cfg = dataclasses.replace(cfg, sim=dataclasses.replace(cfg.sim, expert_mistake_rate=rate))
    collected = collect.run(
        demo_cfg,
        round=0,
        policy="scripted",
        out_dir=out / "demos",
        mode="async",
        episodes_per_device=episodes_per_device,
        split="train",
        progress=progress,
    )
    table = read_shards(out / "demos").select(list(_COLUMNS))
    demos = demos_from_rows(table.to_pylist())
    if not demos:
        raise RuntimeError("bootstrap: the expert produced no successful demonstration to clone")

    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads or len(os.sched_getaffinity(0)))
    try:
        policy = initial_policy(cfg, demos, tokenizer, out, seed)
        policy.max_new_tokens = max(policy.max_new_tokens, evaluate.MIN_ACTION_TOKENS)
        result = train_sft(policy, demos, settings, seed=seed)
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
    finally:
        torch.set_num_threads(previous_threads)

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
        "tokenizer": policy.tokenizer.kind,
        "sft_steps": result.steps,
        "sft_examples": result.examples,
        "sft_final_loss": result.losses[-1] if result.losses else None,
        "sft_wall_s": result.wall_s,
        "demo_wall_s": collected["wall_s"],
        "eval_wall_s": {s: e["wall_s"] for s, e in evals.items()},
        "wall_s": time.perf_counter() - started,
        "threads": threads or len(os.sched_getaffinity(0)),
    }
    tmp = manifest_file.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, manifest_file)
    return manifest


def _save(policy: AutoUIPolicy, final: Path, steps: int) -> Path:
    """Write the checkpoint through a temporary directory, so a crash leaves no half policy."""
    tmp = final.with_name(final.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    policy.save(tmp, metadata={"algorithm": "sft", "round": 0, "sft_steps": steps})
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final
