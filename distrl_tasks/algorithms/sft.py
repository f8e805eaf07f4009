"""Supervised fine-tuning on demonstrations: the examples, the training loop, the vocabulary.

What the bootstrap stage (:mod:`distrl_tasks.stages.bootstrap`) uses to clone the scripted
expert: :func:`demos_from_rows` turns trajectory rows into examples, :func:`train_sft` runs
teacher-forced maximum likelihood on them, :func:`train_tokenizer` fits the default vocabulary.

Why the demonstrations are rewritten:

* The expert's "Action Plan" is a sentence ("[open Chrome]", "[mistake: wrong tap]"); the policy
  is taught the short plan ``[<action type>]`` instead. It keeps the AutoUI format, costs ~20
  fewer decoder tokens per action, and the prompt of the next step (which shows the previous
  action) then looks like what the environment will show the policy at test time.
* Prompts are rebuilt from the rewritten previous action for the same reason.
* Steps the expert marked as mistakes are kept as *states* (the next steps start from the
  perturbed screen, DART-style: the policy learns to recover) but are not imitated.
* By default only successful demonstrations are cloned (Filtered BC with the oracle's reward).

Why a SentencePiece vocabulary by default: a byte-level action is too long for a from-scratch
model with only relative position buckets to learn in budget (it loops), while a BPE vocabulary
fitted to the demos cuts it to under half and the same model emits parseable actions early
(benchmarks/results/2026-11-21-sft-bootstrap-scripted-expert-demos-tiny-autoui-policy.md).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import sentencepiece as spm
import torch

from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.algorithms import train_state as ts
from distrl_tasks.protocol.actions import ActionType, format_action, parse_action
from distrl_tasks.protocol.files import atomic_directory
from distrl_tasks.protocol.observation import Observation, format_prompt
from distrl_tasks.protocol.ui_dump import Element, elements_from_rows

MISTAKE_PLAN = "mistake"  # the expert's plan text marks its injected mistakes with this prefix
DEMO_COLUMNS = ("trajectory_id", "step", "task", "action", "reward", "image_features")
DEMO_COLUMNS += ("elements",)  # the pointer's elements (agent.pointer); null before schema 3


def canonical_action(text: str) -> str:
    """The AutoUI string of ``text`` with the short plan ``[<action type>]``."""
    return format_action(parse_action(text), plan="")


def demos_from_rows(
    rows: Iterable[Mapping[str, Any]],
    *,
    drop_mistakes: bool = True,
    successes_only: bool = True,
    unfinished: bool = False,
    history: int = 1,
) -> list[Demo]:
    """Supervised examples from trajectory rows (shard columns ``DEMO_COLUMNS``).

    Args:
        rows: steps of any number of trajectories, in any order.
        drop_mistakes: do not imitate steps whose plan starts with "mistake".
        successes_only: skip trajectories without a positive reward.
        unfinished: with ``successes_only``, keep those that ran out of steps too (no reward,
            and their last action does not end the episode): a scripted expert's steps there
            are right, its mistakes aside, while one that declared success without a reward
            went wrong somewhere and stays out.
        history: previous actions in the rebuilt prompt (the environment's default is 1).

    Raises:
        ValueError: a row lacks one of the needed columns.
    """
    by_traj: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for i, row in enumerate(rows):
        missing = [c for c in DEMO_COLUMNS if c not in row and c != "elements"]
        if missing:
            raise ValueError(f"row {i}: missing columns {missing}")
        by_traj[str(row["trajectory_id"])].append(row)
    out = []
    for tid in sorted(by_traj):
        steps = sorted(by_traj[tid], key=lambda r: int(r["step"]))
        if successes_only and not any((r["reward"] or 0.0) > 0 for r in steps):
            if not unfinished or parse_action(str(steps[-1]["action"])).ends_episode:
                continue
        previous: list[str] = []
        for row in steps:
            action = parse_action(str(row["action"]))
            target = format_action(action, plan="")
            mistake = action.plan.strip("[] ").lower().startswith(MISTAKE_PLAN)
            if not action.invalid and not (drop_mistakes and mistake):
                prompt = format_prompt(str(row["task"]), previous, history=history)
                feats = np.asarray(row["image_features"], dtype=np.float16)
                png = row.get("screenshot_png")  # kept when selected (the VLM reads pixels)
                elements = elements_from_rows(row.get("elements"))
                out.append(Demo(prompt, feats, target, action.action_type.value, png, elements))
            previous.append(target)
    return out


@dataclass(frozen=True)
class Demo:
    """One supervised example: what the policy sees and the action it should write."""

    prompt: str
    image_features: np.ndarray  # [D] float16
    target: str  # canonical AutoUI action string
    action_type: str
    screenshot_png: bytes | None = None  # the frame, when the rows carried it (VLM cloning)
    elements: tuple[Element, ...] = ()  # the screen's elements, when the pointer was on

    def observation(self) -> Observation:
        return Observation(self.prompt, self.image_features, self.screenshot_png, self.elements)


def has_pointer(policy: Any) -> bool:
    """Whether ``policy``'s model has the tap-target pointer (the VLM has none)."""
    return getattr(getattr(policy, "model", None), "pointer_head", None) is not None


@dataclass(frozen=True)
class SFTSettings:
    """Supervised fine-tuning hyperparameters (the config section ``agent.sft``).

    Training from scratch wants a far larger step size than RL fine-tuning (``algorithm.lm_lr``
    is 1e-4 with gradients clipped to 0.01): the defaults were measured with benchmarks/sft.py
    (benchmarks/results/2026-11-21-sft-bootstrap-scripted-expert-demos-tiny-autoui-policy.md).
    """

    steps: int = 300  # optimizer steps
    batch_size: int = 8  # examples per step
    lr: float = 1e-3  # peak AdamW learning rate
    warmup_steps: int = 20  # linear warmup, then cosine decay to ``lr_floor * lr``
    lr_floor: float = 0.1
    max_grad_norm: float = 1.0
    time_budget_s: float | None = None  # stop early once training took this long (this part)
    # Plateau training (with held-out demonstrations): ``steps`` is then the ceiling. The
    # held-out loss is measured every ``eval_every`` steps; when it has not fallen by
    # ``min_improvement`` (relative) for ``patience`` measurements in a row, training goes back
    # to the best measured weights and multiplies the rate by ``decay_factor`` (at most
    # ``lr_decays`` times; a noisy plateau at a high rate is not the model's best), and after
    # that it stops with the best weights. No schedule tied to the ceiling: the data decide.
    eval_every: int = 0  # 0 = no held-out measurement, train ``steps`` on a cosine schedule
    patience: int = 4
    min_improvement: float = 0.01
    lr_decays: int = 2
    decay_factor: float = 0.3
    heldout_examples: int = 512  # held-out examples measured (a fixed, seeded subset)

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.warmup_steps < 0:
            raise ValueError(
                f"SFT needs steps >= 1, batch_size >= 1, warmup_steps >= 0; got {self.steps}, "
                f"{self.batch_size}, {self.warmup_steps}"
            )
        if not (self.lr > 0 and 0 <= self.lr_floor <= 1 and self.max_grad_norm > 0):
            raise ValueError("SFT needs lr > 0, lr_floor in [0, 1] and max_grad_norm > 0")
        if self.lr_decays < 0 or not 0 < self.decay_factor < 1:
            raise ValueError(
                f"SFT needs lr_decays >= 0 and decay_factor in (0, 1); got {self.lr_decays}, "
                f"{self.decay_factor}"
            )
        if self.eval_every < 0 or self.patience < 1 or not 0 <= self.min_improvement < 1:
            raise ValueError(
                "SFT needs eval_every >= 0, patience >= 1 and min_improvement in [0, 1); got "
                f"{self.eval_every}, {self.patience}, {self.min_improvement}"
            )


@dataclass
class SFTResult:
    """What :func:`train_sft` did."""

    steps: int = 0
    examples: int = 0
    wall_s: float = 0.0  # over every part of a resumed run
    losses: list[float] = field(default_factory=list)  # mean token NLL per logged interval
    heldout: list[tuple[int, float]] = field(default_factory=list)  # (step, held-out NLL)
    best_step: int | None = None  # step whose weights were kept (plateau stopping)
    stopped: str = "steps"  # "steps", "plateau", or "time_budget" (a part ended; resumable)
    parts: int = 1  # invocations that trained this result (resume adds one)
    decays: list[int] = field(default_factory=list)  # steps at which the rate was cut


def lr_scale(step: int, total: int, warmup: int, floor: float) -> float:
    """Linear warmup over ``warmup`` steps, then cosine from 1 down to ``floor``."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def heldout_loss(policy: AutoUIPolicy, demos: Sequence[Demo], batch_size: int = 32) -> float:
    """Mean teacher-forced NLL per target token of ``demos`` (no gradient, eval mode)."""
    if not demos:
        raise ValueError("heldout_loss needs at least one demonstration")
    was_training = policy.model.training
    policy.model.eval()
    total = tokens = 0.0
    with torch.no_grad():
        for i in range(0, len(demos), batch_size):
            batch = demos[i : i + batch_size]
            scores = policy.score(
                [d.observation() for d in batch], [d.target for d in batch], constrained=False
            )
            total -= float(scores.token_log_probs.sum())
            tokens += float(scores.lengths.sum())
    policy.model.train(was_training)
    return total / max(tokens, 1.0)


def teaches_pointer(demo: Demo) -> bool:
    """Whether ``demo`` teaches the pointer: a DUAL_POINT action on a screen with elements."""
    return bool(demo.elements) and parse_action(demo.target).action_type is ActionType.DUAL_POINT


def heldout_pointer_loss(
    policy: AutoUIPolicy, demos: Sequence[Demo], batch_size: int = 32
) -> float:
    """Mean cross-entropy of the pointer's choice over ``demos`` that teach it (no gradient)."""
    taught = [d for d in demos if teaches_pointer(d)]
    if not taught:
        raise ValueError("heldout_pointer_loss needs a demonstrated tap or swipe with elements")
    was_training = policy.model.training
    policy.model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, len(taught), batch_size):
            batch = taught[i : i + batch_size]
            loss = policy.pointer_loss([d.observation() for d in batch], [d.target for d in batch])
            total += float(loss) * len(batch)  # type: ignore[arg-type]  # every row teaches
    policy.model.train(was_training)
    return total / len(taught)


STATE_JSON = "sft_state.json"


def _save_state(
    directory: Path,
    policy: AutoUIPolicy,
    optimizer: torch.optim.Optimizer,
    best: dict[str, torch.Tensor] | None,
    state: dict[str, Any],
) -> None:
    """The loop's whole state, atomically (weights, best weights, optimizer, counters, RNG)."""
    with atomic_directory(directory) as tmp:
        ts.save_module(policy.model, tmp / "model.safetensors")
        if best is not None:
            ts.save_tensors(best, tmp / "best.safetensors")
        tensors, meta = ts.optimizer_to_files(optimizer)
        ts.save_tensors(tensors, tmp / "optimizer.safetensors")
        ts.write_json(tmp / STATE_JSON, {**state, "optimizer": meta})


def _load_state(
    directory: Path, policy: AutoUIPolicy, optimizer: torch.optim.Optimizer
) -> tuple[dict[str, Any], dict[str, torch.Tensor] | None]:
    state = ts.read_json(directory / STATE_JSON)
    ts.load_module(policy.model, directory / "model.safetensors")
    ts.optimizer_from_files(optimizer, ts.load_tensors(directory / "optimizer.safetensors"),
                            state.pop("optimizer"))  # fmt: skip
    best_file = directory / "best.safetensors"
    return state, (ts.load_tensors(best_file) if best_file.is_file() else None)


def train_sft(
    policy: AutoUIPolicy,
    demos: Sequence[Demo],
    settings: SFTSettings,
    *,
    seed: int = 0,
    log_every: int = 25,
    callback: Callable[[int, float, float], None] | None = None,
    heldout: Sequence[Demo] = (),
    state_dir: str | Path | None = None,
    pointer_only: bool = False,
) -> SFTResult:
    """Teacher-forced maximum likelihood of the demo actions (mean NLL per target token).

    Batches walk through seeded random permutations of ``demos`` (every example once per
    epoch). ``callback(step, mean_loss, elapsed_s)`` is called every ``log_every`` steps.

    With ``heldout`` demonstrations and ``settings.eval_every``, training stops when the
    held-out loss plateaus (see :class:`SFTSettings`) and the best measured weights are kept.
    With ``state_dir``, the loop's state is saved at every held-out measurement and when a part
    ends (``settings.time_budget_s``); calling again with the same arguments resumes from it,
    so a run of hours can go in parts (a run that reached its step ceiling goes on when called
    with a higher one). ``result.stopped`` says why this call ended.

    ``pointer_only`` fits the pointer head alone onto the frozen model (a base gaining the head):
    only the demos that teach it train it, its cross-entropy is the loss, the held-out one
    decides the plateau, and every other weight stays as it was.
    """
    if pointer_only:
        if not has_pointer(policy):
            raise ValueError("train_sft(pointer_only=True) needs a model with a pointer head")
        demos = [d for d in demos if teaches_pointer(d)]
        heldout = [d for d in heldout if teaches_pointer(d)]
    if not demos:
        raise ValueError("train_sft needs at least one demonstration")
    plateau = settings.eval_every > 0 and len(heldout) > 0
    rng = np.random.default_rng(seed)
    if plateau and len(heldout) > settings.heldout_examples:
        pick = np.random.default_rng(seed + 1).choice(
            len(heldout), settings.heldout_examples, replace=False
        )
        heldout = [heldout[i] for i in sorted(pick.tolist())]
    params = [p for p in policy.model.parameters() if p.requires_grad]
    if pointer_only:
        params = [p for p in policy.model.pointer_head.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.lr, weight_decay=0.0)
    # the pointer head's gradient is clipped on its own: its loss reaches nothing else
    # (AutoUIPolicy.supervised_terms), and a shared clip would let it scale the tokens' steps
    head = policy.model.pointer_head if has_pointer(policy) else None
    in_head = {id(p) for p in head.parameters()} if head is not None else set()
    clip_groups = [g for g in (
        [p for p in params if id(p) not in in_head], [p for p in params if id(p) in in_head]
    ) if g]  # fmt: skip
    result, order, window = SFTResult(), [], []
    best: dict[str, torch.Tensor] | None = None
    # best_loss: the lowest measured (its weights are kept); ref_loss: the last measurement that
    # improved by min_improvement (patience counts from it), so a small late gain is still kept
    best_loss = ref_loss = math.inf
    stale, wall_before, rate = 0, 0.0, 1.0
    state_path = Path(state_dir) if state_dir is not None else None
    if state_path is not None and (state_path / STATE_JSON).is_file():
        saved, best = _load_state(state_path, policy, optimizer)
        order, rng = list(saved["order"]), ts.numpy_rng_from_json(saved["rng"])
        result = SFTResult(
            steps=saved["steps"], examples=saved["examples"], losses=list(saved["losses"]),
            heldout=[(int(s), float(v)) for s, v in saved["heldout"]],
            best_step=saved["best_step"], parts=saved["parts"] + 1,
        )  # fmt: skip
        best_loss, stale, wall_before = saved["best_loss"], saved["stale"], saved["wall_s"]
        ref_loss = float(saved.get("ref_loss", best_loss))
        result.decays, rate = list(saved.get("decays", [])), float(saved.get("rate", 1.0))
        plateaued = saved["stopped"] == "plateau" and len(result.decays) >= settings.lr_decays
        finished = plateaued or (saved["stopped"] == "steps" and saved["steps"] >= settings.steps)
        # a part cut short, a ceiling raised since, or more rate cuts allowed since goes on
        if saved["stopped"] == "plateau" and not finished:
            stale = settings.patience  # the plateau it stopped on: cut the rate, go on
        if finished:
            result.stopped = saved["stopped"]
            if best is not None:
                policy.model.load_state_dict(best)
            policy.model.eval()
            result.wall_s = wall_before
            return result

    def snapshot(stopped: str) -> None:
        if state_path is None:
            return
        _save_state(state_path, policy, optimizer, best, {
            "steps": result.steps, "examples": result.examples, "losses": result.losses,
            "heldout": result.heldout, "best_step": result.best_step, "best_loss": best_loss,
            "ref_loss": ref_loss,
            "stale": stale, "order": order, "rng": rng.bit_generator.state, "parts": result.parts,
            "wall_s": wall_before + time.perf_counter() - start, "stopped": stopped,
            "decays": result.decays, "rate": rate,
        })  # fmt: skip

    start = time.perf_counter()
    policy.model.train(not pointer_only)  # a frozen model runs as it acts (no dropout)
    result.stopped = "steps"
    for step in range(result.steps, settings.steps):
        if plateau and stale >= settings.patience:  # resumed on a plateau with cuts left
            rate, stale = _cut_rate(policy, best, rate, settings, result)
        if (
            settings.time_budget_s is not None
            and time.perf_counter() - start > settings.time_budget_s
        ):
            result.stopped = "time_budget"
            break
        while len(order) < settings.batch_size:
            order.extend(rng.permutation(len(demos)).tolist())
        batch, order = (
            [demos[i] for i in order[: settings.batch_size]],
            order[settings.batch_size :],
        )
        if plateau:
            scale = min(1.0, (step + 1) / settings.warmup_steps) if settings.warmup_steps else 1.0
        else:
            scale = lr_scale(step, settings.steps, settings.warmup_steps, settings.lr_floor)
        for group in optimizer.param_groups:
            group["lr"] = settings.lr * scale * rate
        observations, targets = [d.observation() for d in batch], [d.target for d in batch]
        if pointer_only:
            loss = policy.pointer_loss(observations, targets, detach_base=True)
        elif has_pointer(policy):  # the pointer learns which element the demonstration tapped
            scores, pointing = policy.supervised_terms(observations, targets)
            loss = -scores.token_log_probs.sum() / scores.lengths.sum()
            loss = loss + pointing if pointing is not None else loss
        else:
            scores = policy.score(observations, targets, constrained=False)
            loss = -scores.token_log_probs.sum() / scores.lengths.sum()
        assert loss is not None  # pointer_only keeps only demos that teach the pointer
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        for group in clip_groups:
            torch.nn.utils.clip_grad_norm_(group, settings.max_grad_norm)
        optimizer.step()
        window.append(loss.item())
        result.steps += 1
        result.examples += len(batch)
        if result.steps % log_every == 0 or step == settings.steps - 1:
            result.losses.append(float(np.mean(window)))
            window = []
            if callback is not None:
                callback(result.steps, result.losses[-1], time.perf_counter() - start)
        if plateau and result.steps % settings.eval_every == 0:
            measure = heldout_pointer_loss if pointer_only else heldout_loss
            value = measure(policy, heldout)
            result.heldout.append((result.steps, value))
            if value < best_loss:
                best_loss, result.best_step = value, result.steps
                best = {k: v.detach().clone() for k, v in policy.model.state_dict().items()}
            if value < ref_loss * (1.0 - settings.min_improvement):
                ref_loss, stale = value, 0
            else:
                stale += 1
            if stale >= settings.patience:
                if len(result.decays) >= settings.lr_decays:
                    result.stopped = "plateau"
                    break
                rate, stale = _cut_rate(policy, best, rate, settings, result)
            snapshot("time_budget")  # a crash or a kill resumes from here
    snapshot(result.stopped)  # the last weights, so that a raised ceiling goes on from them
    if result.stopped != "time_budget" and best is not None:
        policy.model.load_state_dict(best)
    policy.model.eval()
    result.wall_s = wall_before + time.perf_counter() - start
    return result


def _cut_rate(
    policy: AutoUIPolicy,
    best: dict[str, torch.Tensor] | None,
    rate: float,
    settings: SFTSettings,
    result: SFTResult,
) -> tuple[float, int]:
    """Back to the best measured weights with the rate cut by ``decay_factor``; the new rate
    multiplier and a fresh patience count."""
    if best is not None:
        policy.model.load_state_dict(best)
    result.decays.append(result.steps)
    return rate * settings.decay_factor, 0


def train_tokenizer(texts: Iterable[str], directory: Path, vocab_size: int = 1024) -> Path:
    """Fit a T5-compatible SentencePiece model (BPE) on ``texts``; returns ``spiece.model``.

    Byte fallback makes every string encodable (so typed text the model never saw still has a
    spelling); identity normalisation and no dummy prefix make ``decode(encode(t)) == t``, which
    the action strings need. Ids follow T5: pad 0, eos 1, unk 2, no bos.
    """
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
        # after a quote, not a space), so the copy head can point at it
        # (benchmarks/results/2026-11-22-sft-copy-head.md)
        treat_whitespace_as_suffix=True,
        minloglevel=2,
    )
    return directory / "spiece.model"
