"""The policy API: batched action sampling with behaviour log-probs, and teacher-forced scoring.

Log-prob convention (used by both :meth:`AutoUIPolicy.act` and :meth:`AutoUIPolicy.log_prob`):
the log-probability of an action is the sum, over its decoder tokens including the final eos (no
eos when the text filled the ``max_new_tokens`` budget), of ``log softmax(logits / T)`` restricted
to the tokens the policy may generate (:meth:`Tokenizer.output_mask`). ``T`` is the sampling
temperature; greedy decoding reports the same temperature-adjusted quantity for its argmax tokens.

With a :class:`~distrl_tasks.agents.grammar.ActionGrammar` (``agent.constrained_decoding``), the
restriction is per position: only the tokens that keep the text a well-formed AutoUI action (or a
prefix of one) are allowed, in sampling and in scoring alike, so forced format tokens have
log-probability 0 and no entropy.

Two decoding loops draw from the same distribution (``decoder`` argument):

- ``fast`` (default): :mod:`.fast_sampling`, a lean incremental decoder that checks the
  grammar's draft of the fixed format in one call (speculative decoding with an exact accept /
  residual rule, so greedy outputs are the reference's and samples follow the same law). It
  sums the log-probs of the ids it emits as it goes: for a row whose ids are the tokenizer's own
  encoding of its text (``canonical``), that sum *is* the teacher-forced log-prob of the text
  (same ids, same per-position masks), computed by another kernel, so it equals what
  ``log_prob`` recomputes to float32 rounding (1e-5 for actions under the grammar; relative
  1e-6 for long free text, tests/unit/test_fast_decoder.py). The drafts are canonical
  spellings, so a trained policy's samples are canonical almost always.
- ``reference``: the original loop, one Hugging Face decoder call per token, then one
  teacher-forced pass through the same code as ``log_prob``.

With the byte tokenizer the sampled ids are always the canonical encoding of the returned text.
A SentencePiece sample can be a non-canonical segmentation; such a row is scored (both loops) on
the canonical ids of its text with the teacher-forced pass (what the learner will see) and
flagged in :class:`Sample.canonical`. The drafts change no probability, only which spellings
cost one decoder call: scoring is unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from distrl_tasks.agents.autoui import AutoUIModel, build_tiny_model
from distrl_tasks.agents.checkpoint import load_checkpoint, save_checkpoint
from distrl_tasks.agents.copy_match import piece_kinds
from distrl_tasks.agents.fast_sampling import decode_fast
from distrl_tasks.agents.goal_typing import GoalTyping, restrict
from distrl_tasks.agents.grammar import PARTS, TOUCH_MARK, ActionGrammar, grammar_for
from distrl_tasks.agents.image_encoders import image_feature_dim
from distrl_tasks.agents.pointer import (
    PointerRun,
    choice_targets,
    completion,
    pointer_inputs,
    tap_entropy,
    tap_log_prob,
)
from distrl_tasks.agents.policy_types import Sample, Scores
from distrl_tasks.agents.reference_sampling import decode_reference
from distrl_tasks.agents.tokenizer import ByteTokenizer, Tokenizer
from distrl_tasks.agents.vlm import VLMPolicy, is_vlm_checkpoint, load_vlm_policy, new_vlm_policy
from distrl_tasks.config import AgentConfig
from distrl_tasks.protocol.actions import ActionType, format_action, parse_action, tap
from distrl_tasks.protocol.observation import Observation, format_prompt, goal_of_prompt
from distrl_tasks.protocol.ui_dump import Element

logger = logging.getLogger(__name__)

DECODERS = ("fast", "reference")
__all__ = [
    "DECODERS",
    "AutoUIPolicy",
    "Observation",
    "Sample",
    "Scores",
    "build_policy",
    "format_prompt",
]


class AutoUIPolicy:
    """Batched inference and scoring around an :class:`AutoUIModel` and its tokenizer.

    The caller owns train/eval mode (the tiny model has no dropout; for checkpoints with dropout,
    call ``policy.model.eval()`` before collecting so behaviour log-probs are reproducible).

    Args:
        model: the network.
        tokenizer: its tokenizer.
        temperature: default sampling temperature (> 0).
        max_new_tokens: decoding budget per action.
        max_prompt_tokens: prompts are left-truncated to this many tokens (eos included).
        grammar: decode (and score) only well-formed AutoUI actions; None = free text.
        decoder: ``fast`` (default: :mod:`.fast_sampling`) or ``reference`` (the original
            per-token loop, kept for the equivalence tests and benchmarks/inference.py); both
            draw from the same distribution and score the same way.
    """

    def __init__(
        self,
        model: AutoUIModel,
        tokenizer: Tokenizer,
        *,
        temperature: float = 1.0,
        max_new_tokens: int = 128,
        max_prompt_tokens: int = 512,
        grammar: ActionGrammar | None = None,
        decoder: str = "fast",
        goal_typing: bool = False,
    ) -> None:
        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, got {decoder!r}")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if max_new_tokens < 1 or max_prompt_tokens < 2:
            raise ValueError("max_new_tokens must be >= 1 and max_prompt_tokens >= 2")
        self.model = model
        self.tokenizer = tokenizer
        if getattr(model, "copy_span", False):  # its start kinds come from this tokenizer
            model.set_piece_kinds(piece_kinds(tokenizer.piece_texts(model.vocab_size)))
        self.temperature = float(temperature)
        self.max_new_tokens = int(max_new_tokens)
        self.max_prompt_tokens = int(max_prompt_tokens)
        self._allowed_cpu = tokenizer.output_mask(model.vocab_size)
        self.grammar = grammar
        self.decoder = decoder
        if goal_typing and grammar is None:
            raise ValueError("goal_typing needs the grammar (agent.constrained_decoding: true)")
        # the typed text's words come from the goal (agent.goal_typing, :mod:`.goal_typing`)
        self.goal_typing = (
            GoalTyping(tokenizer.piece_texts(model.vocab_size)) if goal_typing else None
        )
        # per-part sampling temperatures ({"type"|"coords"|"text": t}; agent.exploration), used
        # when no temperature is passed and decoding is constrained; None = one temperature
        self.part_temperatures: dict[str, float] | None = None
        # the tap-target pointer (:mod:`.pointer`): acts where the model has the head and the
        # grammar marks the touch point
        self.pointer = model.pointer_head is not None and grammar is not None
        if self.pointer and grammar is not None and grammar.touch_crossed:
            # a user's checkpoint still loads and acts: it writes every tap as coordinates
            logger.warning(
                "agent.pointer: this vocabulary has pieces that run across a tap's touch point "
                "(e.g. T5's own), so there is no single place to point and taps are written as "
                "coordinates; the byte tokenizer or a SentencePiece vocabulary fitted by the "
                "bootstrap can point"
            )
            self.pointer = False
        self._completions: dict[tuple[float, float], list[int]] = {}

    @property
    def device(self) -> torch.device:
        return self.model.shared.weight.device

    def _allowed(self) -> torch.Tensor:
        return self._allowed_cpu.to(self.device)

    def _temperature(self, temperature: float | None) -> float | torch.Tensor:
        """The sampling temperature: ``temperature`` if given, else the per-part temperatures
        as a ``[S]`` per-grammar-state tensor when set (and decoding is constrained), else
        :attr:`temperature`."""
        if temperature is None and self.part_temperatures and self._grammar() is not None:
            grammar = self._grammar()
            assert grammar is not None
            values = [float(self.part_temperatures.get(p, self.temperature)) for p in PARTS]
            return torch.tensor(values, device=self.device)[grammar.part]
        t = self.temperature if temperature is None else float(temperature)
        if t <= 0:
            raise ValueError(f"temperature must be > 0, got {t}")
        return t

    def _pointer_temperature(self, temperature: float | None) -> float:
        """The pointer's temperature: ``temperature`` if given, else the coordinates' part
        temperature (the pointer chooses where a tap goes), else :attr:`temperature`."""
        if temperature is not None:
            return float(temperature)
        if self.part_temperatures:
            return float(self.part_temperatures.get("coords", self.temperature))
        return self.temperature

    def _choice_log_probs(
        self,
        states: torch.Tensor,
        mask: torch.Tensor,
        observations: Sequence[Observation],
        temperature: float | None,
    ) -> torch.Tensor | None:
        """``[B, K + 1]`` the pointer's log-probs ("write" last), or None without the pointer
        or when no row offers an element ("write" alone is certain: the same scores and draws as
        a model without the head, e.g. a base with a head under ``agent.pointer: false``)."""
        if not self.pointer or not any(o.elements for o in observations):
            return None
        inputs = pointer_inputs(
            self.tokenizer.encode,
            [o.elements for o in observations],
            [goal_of_prompt(o.prompt) for o in observations],
            self.device,
        )
        logits = self.model.choice_logits(states, mask, inputs).float()
        return torch.log_softmax(logits / self._pointer_temperature(temperature), dim=-1)

    def _completion_ids(self, element: Element) -> list[int]:
        """Ids that finish a tap on ``element`` from the touch point (eos included)."""
        hit = self._completions.get(element.point)
        if hit is None:
            hit = [*self.tokenizer.encode(completion(element)), self.tokenizer.eos_id]
            self._completions[element.point] = hit
        return hit

    def _pointer_run(
        self,
        choice_lp: torch.Tensor | None,
        observations: Sequence[Observation],
        greedy: bool,
        generator: torch.Generator | None,
    ) -> PointerRun | None:
        if choice_lp is None:
            return None
        completions = [[self._completion_ids(e) for e in o.elements] for o in observations]
        return PointerRun(choice_lp, completions, greedy=greedy, generator=generator)

    def _prompts(
        self, observations: Sequence[Observation], constrained: bool = True
    ) -> list[str] | None:
        """The rows' prompts where ``goal_typing`` reads them (constrained), else None."""
        if self.goal_typing is None or not constrained:
            return None
        return [o.prompt for o in observations]

    def _encoder_inputs(
        self, observations: Sequence[Observation]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if len(observations) == 0:
            raise ValueError("observations must not be empty")
        prompts, feats = [], []
        for i, obs in enumerate(observations):
            if not isinstance(obs, Observation):
                raise TypeError(f"observation {i}: expected Observation, got {type(obs).__name__}")
            raw = obs.image_features
            if isinstance(raw, torch.Tensor):
                f = raw.detach().to("cpu", torch.float32)
            else:
                f = torch.from_numpy(np.asarray(raw, dtype=np.float32))
            if f.shape != (self.model.image_dim,):
                raise ValueError(
                    f"observation {i}: image_features must have shape ({self.model.image_dim},), "
                    f"got {tuple(f.shape)}"
                )
            prompts.append(self.tokenizer.encode_prompt(obs.prompt, self.max_prompt_tokens))
            feats.append(f)
        ids, mask = _pad(prompts, self.tokenizer.pad_id)
        return ids.to(self.device), mask.to(self.device), torch.stack(feats).to(self.device)

    def _action_ids(self, text: str, constrained: bool = True) -> list[int]:
        """Decoder targets of ``text`` (:meth:`Tokenizer.encode_action`). Under a grammar, eos
        can only follow a whole action, so an incomplete one was cut off by the budget even
        when its canonical ids are fewer (a SentencePiece re-segmentation): no eos then."""
        ids = self.tokenizer.encode_action(text, self.max_new_tokens)
        grammar = self.grammar if constrained else None
        if grammar is not None and ids and ids[-1] == self.tokenizer.eos_id:
            if not grammar.accepts(ids[:-1]):
                ids = ids[:-1]
        return ids

    def _grammar(self) -> ActionGrammar | None:
        if self.grammar is not None and self.grammar.allowed.device != self.device:
            self.grammar.to(self.device)
        return self.grammar

    def _log_softmax(
        self,
        logits: torch.Tensor,
        temperature: float | torch.Tensor,
        allowed: torch.Tensor | None = None,
        states: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Log-softmax over the generable ids, or over ``allowed`` (same shape as ``logits``);
        a per-state ``temperature`` (``[S]``) is read at ``states`` (``logits.shape[:-1]``)."""
        if isinstance(temperature, torch.Tensor):
            if states is None:
                raise ValueError("per-part temperatures need the grammar states")
            scaled = logits.float() / temperature[states][..., None]
        else:
            scaled = logits.float() / temperature
        keep = self._allowed() if allowed is None else allowed
        return torch.log_softmax(scaled.masked_fill(~keep, float("-inf")), dim=-1)

    def _score_ids(
        self,
        ids: torch.Tensor,
        states: torch.Tensor,
        mask: torch.Tensor,
        targets: Sequence[Sequence[int]],
        temperature: float | torch.Tensor,
        constrained: bool = True,
        prompts: Sequence[str] | None = None,
        choice_lp: torch.Tensor | None = None,
        texts: Sequence[str] | None = None,
        elements: Sequence[Sequence[Element]] | None = None,
    ) -> Scores:
        """Teacher-forced scores of ``targets``; with ``choice_lp`` (the pointer's log-probs,
        which needs the rows' action ``texts`` and ``elements``) a tap's log-prob is the
        marginal over pointing and writing (:func:`.pointer.tap_log_prob`)."""
        labels, label_mask = _pad(targets, self.tokenizer.pad_id)
        labels, label_mask = labels.to(self.device), label_mask.to(self.device).bool()
        logits, _ = self.model.decode(self.model.shift_right(labels), states, mask, source_ids=ids)
        grammar = self._grammar() if constrained else None
        allowed = walk_states = None
        if grammar is not None:
            # padding positions take the initial state: any state with allowed ids avoids NaNs
            width = labels.shape[1]
            along = grammar.states_along(targets)
            walk = [[*w, *[grammar.initial] * (width - len(w))] for w in along]
            walk_states = torch.tensor(walk, dtype=torch.long, device=self.device)
            allowed = grammar.allowed[walk_states]
            if prompts is not None and self.goal_typing is not None:
                text_ok = self.goal_typing.position_masks(
                    prompts, targets, along, grammar.in_text.tolist(), width
                ).to(self.device)
                allowed = restrict(allowed, walk_states, text_ok, grammar.in_text, labels)
        if isinstance(temperature, torch.Tensor) and walk_states is None:
            temperature = self.temperature  # free text (SFT scoring): no parts to tell apart
        logp = self._log_softmax(logits, temperature, allowed, walk_states)
        picked = logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        token_lp = torch.where(label_mask, picked, torch.zeros_like(picked))
        safe = logp.masked_fill(~torch.isfinite(logp), 0.0)
        entropy_t = -(safe.exp() * safe).sum(-1)
        entropy_t = torch.where(label_mask, entropy_t, torch.zeros_like(entropy_t))
        if choice_lp is None or walk_states is None or grammar is None:
            return Scores(token_lp.sum(-1), entropy_t.sum(-1), token_lp, label_mask.sum(-1))
        assert texts is not None and elements is not None
        # split each row at its touch point: the ids before it, and from it on
        touch = grammar.touch[walk_states] & label_mask
        at_touch = touch.any(1)
        first = torch.where(at_touch, touch.long().argmax(1), label_mask.sum(1))
        later = torch.arange(labels.shape[1], device=self.device)[None, :] >= first[:, None]
        zero = torch.zeros_like(token_lp)
        k = choice_lp.shape[1] - 1
        matches = torch.zeros((len(targets), k), dtype=torch.bool)
        for row, (text, row_elements) in enumerate(zip(texts, elements, strict=True)):
            for j, e in enumerate(row_elements):
                matches[row, j] = text.endswith(TOUCH_MARK + completion(e))
        matches = matches.to(self.device) & at_touch[:, None]
        log_prob = tap_log_prob(
            torch.where(later, zero, token_lp).sum(-1),
            torch.where(later, token_lp, zero).sum(-1),
            choice_lp,
            matches,
            at_touch,
        )
        entropy = tap_entropy(
            torch.where(later, zero, entropy_t).sum(-1),
            torch.where(later, entropy_t, zero).sum(-1),
            choice_lp,
            at_touch,
        )
        return Scores(log_prob, entropy, token_lp, label_mask.sum(-1))

    def score(
        self,
        observations: Sequence[Observation],
        actions: Sequence[str],
        *,
        temperature: float | None = None,
        constrained: bool = True,
    ) -> Scores:
        """Teacher-forced log-probs and entropies of ``actions`` (with gradient, for training).

        ``constrained=False`` scores under the free distribution even when the policy has a
        grammar (supervised fine-tuning teaches the whole string, format included, so its
        checkpoints decode well with or without the constraint).

        Raises:
            ValueError: on a length mismatch, an action containing a token the policy can never
                generate (its log-prob would be -inf), or, constrained, an action outside the
                grammar.
        """
        t = self._temperature(temperature)
        targets = self._scored_targets(observations, actions, constrained)
        ids, mask, feats = self._encoder_inputs(observations)
        states = self.model.encode(ids, mask, feats)
        prompts = self._prompts(observations, constrained)
        choice_lp = self._choice_log_probs(states, mask, observations, temperature)
        if not constrained:
            choice_lp = None  # free scoring (SFT) teaches the string; the pointer has its loss
        return self._score_ids(
            ids, states, mask, targets, t, constrained, prompts,
            choice_lp=choice_lp, texts=actions, elements=[o.elements for o in observations],
        )  # fmt: skip

    def _scored_targets(
        self, observations: Sequence[Observation], actions: Sequence[str], constrained: bool
    ) -> list[list[int]]:
        """The decoder targets :meth:`score` teacher-forces (checked: see its Raises)."""
        if len(actions) != len(observations):
            raise ValueError(f"{len(observations)} observations but {len(actions)} actions")
        targets = []
        for i, text in enumerate(actions):
            ids = self._action_ids(text, constrained)
            bad = [j for j in ids if j >= self.model.vocab_size or not self._allowed_cpu[j]]
            if bad:
                raise ValueError(
                    f"action {i} contains tokens the policy cannot generate ({bad[:3]}, e.g. "
                    f"non-ASCII text for the byte tokenizer): {text[:80]!r}"
                )
            targets.append(ids)
        return targets

    def supervised_terms(
        self, observations: Sequence[Observation], actions: Sequence[str]
    ) -> tuple[Scores, torch.Tensor | None]:
        """What supervised training minimises, from one encoder pass: the free (unconstrained)
        teacher-forced scores of ``actions`` and the pointer's loss (:meth:`pointer_loss`),
        whose gradient reaches the pointer head alone: the token model learns as it would
        without the head (sharing it, the pointer's gradient outweighed the tokens' and
        slowed them; benchmarks/results/2026-11-29-pointer-head-apart.md)."""
        targets = self._scored_targets(observations, actions, constrained=False)
        ids, mask, feats = self._encoder_inputs(observations)
        states = self.model.encode(ids, mask, feats)
        scores = self._score_ids(ids, states, mask, targets, self.temperature, False)
        pointing = self.pointer_loss(
            observations, actions, encoded=(states, mask), detach_base=True
        )
        return scores, pointing

    def pointer_loss(
        self,
        observations: Sequence[Observation],
        actions: Sequence[str],
        *,
        encoded: tuple[torch.Tensor, torch.Tensor] | None = None,
        detach_base: bool = False,
    ) -> torch.Tensor | None:
        """Mean cross-entropy of the pointer's choice on demonstrated taps (supervised training;
        the string's own loss does not reach the pointer).

        A tap teaches the smallest element whose box holds its touch point, else "write"; a
        swipe teaches "write". Rows without elements, or whose action is not DUAL_POINT, teach
        nothing; None when no row does (or the model has no pointer head). ``encoded``: the
        rows' encoder states and prompt mask, when the caller has them. ``detach_base``: the
        loss trains the head alone, not the encoder or the token embeddings it reads.
        """
        if self.model.pointer_head is None:
            return None
        targets = []
        for obs, text in zip(observations, actions, strict=True):
            action = parse_action(text)
            if action.action_type is not ActionType.DUAL_POINT or not obs.elements:
                targets.append(None)
            elif action.is_tap:
                targets.append(choice_targets(obs.elements, action.touch_point))
            else:
                targets.append(len(obs.elements))
        if all(t is None for t in targets):
            return None
        if encoded is None:
            ids, mask, feats = self._encoder_inputs(observations)
            with torch.set_grad_enabled(torch.is_grad_enabled() and not detach_base):
                encoded = (self.model.encode(ids, mask, feats), mask)
        states, mask = encoded
        inputs = pointer_inputs(
            self.tokenizer.encode,
            [o.elements for o in observations],
            [goal_of_prompt(o.prompt) for o in observations],
            self.device,
        )
        logits = self.model.choice_logits(states, mask, inputs, detach_base=detach_base)
        logp = torch.log_softmax(logits.float(), -1)
        write = logp.shape[1] - 1
        rows, picks = [], []
        for row, (obs, target) in enumerate(zip(observations, targets, strict=True)):
            if target is not None:
                rows.append(row)
                picks.append(write if target == len(obs.elements) else target)
        at = torch.tensor(rows, device=self.device)
        return -logp[at, torch.tensor(picks, device=self.device)].mean()

    def log_prob(
        self,
        observations: Sequence[Observation],
        actions: Sequence[str],
        *,
        temperature: float | None = None,
    ) -> torch.Tensor:
        """``[B]`` log-probs of ``actions`` (text) given ``observations``; differentiable."""
        return self.score(observations, actions, temperature=temperature).log_prob

    @torch.no_grad()
    def sample(
        self,
        observations: Sequence[Observation],
        *,
        greedy: bool = False,
        temperature: float | None = None,
        generator: torch.Generator | None = None,
    ) -> Sample:
        """Decode one action per observation (sampled, or argmax when ``greedy``).

        ``generator`` (optional, for reproducible sampling) must live on the policy's device.
        The ids come from :attr:`decoder`'s loop; either way the behaviour log-probs are the
        teacher-forced scores of the returned texts (the module docstring).
        """
        t = self._temperature(temperature)
        ids, mask, feats = self._encoder_inputs(observations)
        states = self.model.encode(ids, mask, feats)
        prompts = self._prompts(observations)
        grammar = self._grammar()
        typing = None
        if prompts is not None and self.goal_typing is not None and grammar is not None:
            typing = self.goal_typing.start(prompts)
        choice_lp = self._choice_log_probs(states, mask, observations, temperature)
        pointer = self._pointer_run(choice_lp, observations, greedy, generator)
        elements = [o.elements for o in observations]
        fast = self.decoder == "fast" and self.model.shared.weight.dtype == torch.float32
        if fast:
            sampled, loop_log_probs = decode_fast(
                self.model,
                states,
                mask,
                ids,
                allowed=self._allowed(),
                grammar=grammar,
                budget=self.max_new_tokens,
                temperature=t,
                greedy=greedy,
                eos_id=self.tokenizer.eos_id,
                generator=generator,
                typing=typing,
                pointer=pointer,
            )
        else:
            sampled = decode_reference(
                self.model,
                ids,
                states,
                mask,
                allowed=self._allowed(),
                grammar=grammar,
                budget=self.max_new_tokens,
                temperature=t,
                greedy=greedy,
                eos_id=self.tokenizer.eos_id,
                pad_id=self.tokenizer.pad_id,
                generator=generator,
                typing=typing,
                pointer=pointer,
            )
        texts = [self.tokenizer.decode(row) for row in sampled]
        targets, canonical = [], []
        for row, text in zip(sampled, texts, strict=True):
            canon = self._action_ids(text)
            canonical.append(canon == row)
            targets.append(canon)
        if not fast:
            scores = self._score_ids(
                ids, states, mask, targets, t, prompts=prompts,
                choice_lp=choice_lp, texts=texts, elements=elements,
            )  # fmt: skip
            return Sample(texts, sampled, scores.log_prob, canonical)
        # canonical rows: the loop's log-prob is the teacher-forced one (same ids, same masks);
        # the others are scored on their canonical ids, as the learner will score them, and so
        # are the rows with elements (a tap's log-prob is the marginal, module pointer)
        log_probs = loop_log_probs.clone()
        redo = [i for i, ok in enumerate(canonical) if not ok or elements[i]]
        if redo:
            pick = torch.tensor(redo, device=self.device)
            scores = self._score_ids(
                ids[pick],
                states[pick],
                mask[pick],
                [targets[i] for i in redo],
                t,
                prompts=None if prompts is None else [prompts[i] for i in redo],
                choice_lp=None if choice_lp is None else choice_lp[pick],
                texts=[texts[i] for i in redo],
                elements=[elements[i] for i in redo],
            )
            log_probs[pick] = scores.log_prob
        return Sample(texts, sampled, log_probs, canonical)

    def act(
        self,
        observations: Sequence[Observation],
        *,
        greedy: bool = False,
        temperature: float | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[list[str], torch.Tensor]:
        """Actions (AutoUI strings) and their ``[B]`` behaviour log-probs (no gradient)."""
        out = self.sample(observations, greedy=greedy, temperature=temperature, generator=generator)
        return out.texts, out.log_probs

    def save(self, directory: str | Path, metadata: Mapping[str, Any] | None = None) -> Path:
        """Write a checkpoint that :func:`build_policy` / :func:`load_checkpoint` can read."""
        return save_checkpoint(self.model, self.tokenizer, directory, metadata)


def _pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id lists to ``[B, max_len]``; returns ids and a 0/1 mask of real tokens."""
    width = max(1, max(len(r) for r in rows))
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.as_tensor(list(row), dtype=torch.long)
        mask[i, : len(row)] = 1
    return ids, mask


def build_vlm_policy(cfg: AgentConfig, checkpoint_dir: str, seed: int = 0) -> VLMPolicy:
    """The VLM policy: the adapters in ``checkpoint_dir`` on their base (``agent.vlm_base_dir``
    when set, else the one the checkpoint names), or fresh adapters on ``agent.vlm_base_dir``."""
    if checkpoint_dir:
        return load_vlm_policy(
            checkpoint_dir,
            base_dir=cfg.vlm_base_dir or None,
            temperature=cfg.temperature,
            max_new_tokens=cfg.max_new_tokens,
        )
    return new_vlm_policy(cfg.vlm_base_dir, rank=cfg.vlm_lora_rank, alpha=cfg.vlm_lora_alpha,
                          temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens,
                          seed=seed)  # fmt: skip


def build_policy(
    cfg: AgentConfig,
    *,
    device: str | torch.device = "cpu",
    seed: int = 0,
    checkpoint_dir: str | Path | None = None,
    decoder: str = "fast",
) -> AutoUIPolicy | VLMPolicy:
    """The policy the configuration describes.

    ``model: vlm``, or a checkpoint holding VLM adapters, gives a :class:`~.vlm.VLMPolicy`
    (:func:`build_vlm_policy`).

    ``model: tiny`` without a checkpoint is a freshly initialised embedded model (seeded) with the
    byte tokenizer; with ``checkpoint_dir`` (argument or ``agent.checkpoint_dir``) the weights and
    tokenizer are loaded from it. ``model: autoui-base`` always needs a checkpoint directory.
    ``decoder`` picks the sampling loop (:class:`AutoUIPolicy`); the grammar is built once per
    vocabulary and process (:func:`grammar_for`).

    Raises:
        ValueError: a missing checkpoint directory for autoui-base, or a checkpoint whose image
            feature size differs from what the configured image encoder produces.
    """
    path = str(checkpoint_dir) if checkpoint_dir is not None else cfg.checkpoint_dir
    if cfg.model == "vlm" or (path and is_vlm_checkpoint(path)):
        return build_vlm_policy(cfg, path, seed)
    feature_dim = image_feature_dim(cfg)
    if path:
        model, tokenizer = load_checkpoint(path, device=device)
    elif cfg.model == "autoui-base":
        raise ValueError(
            "agent.checkpoint_dir: model 'autoui-base' needs a local Auto-UI-Base checkpoint "
            "directory (config.json, model.safetensors, spiece.model)"
        )
    else:
        model, tokenizer = build_tiny_model(feature_dim, seed=seed).to(device), ByteTokenizer()
    if model.image_dim != feature_dim:
        raise ValueError(
            f"checkpoint expects {model.image_dim}-d image features but agent.image_encoder "
            f"'{cfg.image_encoder}' produces {feature_dim}-d features"
        )
    tap_tokens = len(tokenizer.encode_action(format_action(tap(0.5, 0.5)), 1 << 16))
    if cfg.max_new_tokens < tap_tokens:
        # evaluation and SFT raise their own budget; collection and training use this one
        logger.warning(
            "agent.max_new_tokens=%d is below the %d %s tokens one tap action takes: actions "
            "the policy writes are cut off and count as invalid (raise agent.max_new_tokens)",
            cfg.max_new_tokens,
            tap_tokens,
            tokenizer.kind,
        )
    if cfg.points:
        model.add_pointer(seed)
    policy = AutoUIPolicy(
        model,
        tokenizer,
        temperature=cfg.temperature,
        max_new_tokens=cfg.max_new_tokens,
        max_prompt_tokens=cfg.max_prompt_tokens,
        grammar=grammar_for(tokenizer, model.vocab_size) if cfg.constrained_decoding else None,
        decoder=decoder,
        # the rule lives on the grammar's text field: free decoding has nothing to narrow
        goal_typing=cfg.goal_typing and cfg.constrained_decoding,
    )
    parts = cfg.exploration.temperatures(cfg.temperature)
    if any(t != cfg.temperature for t in parts.values()):
        # the learner scores with the same per-part temperatures, so that behaviour and learner
        # log-probs stay one distribution (only element exploration is a separate mixture)
        policy.part_temperatures = parts
    return policy
