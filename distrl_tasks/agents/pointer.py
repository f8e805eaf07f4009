"""The tap-target pointer (``agent.pointer``): a tap may point at one of the screen's elements.

Why: a tap written as coordinates, digit by digit, from one small screenshot feature cannot find
a target that moved, and exploring over digits rarely lands on a dialog's two buttons; a choice
among the screen's actionable elements can (LiMAC, GUI-Actor; issue 51).

Where it acts: the action grammar writes a tap as ``..."action_type": "DUAL_POINT",
"touch_point": `` and then the point (:data:`~.grammar.TOUCH_MARK`). At that state the policy
draws one of ``K + 1`` choices: element ``k`` of the observation (:attr:`Observation.elements`)
or "write coordinates" (index ``K``). Choosing element ``k`` writes the rest of the action as a
tap on its centre (:func:`completion`), so the action string, the shards, the parsers and the
devices stay as they were; "write" lets the decoder write the digits as before. An observation
without elements offers "write" alone (probability 1): the fallback for a dump that failed.

Probability of an action string (what sampling stores and the learner recomputes), with
``b`` = the log-prob of its ids before the touch point, ``a`` = the log-prob of its ids from the
touch point on (digits and the rest, under the decoder) and ``c`` = the pointer's log-probs::

    log p(action) = b + log( exp(c_K + a) + sum_{k: completion(k) = the action's rest} exp(c_k) )

A written point that happens to spell an element's centre is the same string as pointing at
it, so both ways count (the marginal over how the string was made). Actions that never reach
the touch point (other types) have ``log p = b + a`` as before.

The head scores elements from what it is given apart from the prompt (each element's label ids
through the model's token embeddings, its centre, size, whether it is a text field, and how much
of its label the goal names: :func:`goal_named_share`), each element attending once over the
fused prompt states; "write" is scored from the mean prompt
state. So the copy path through the prompt is untouched, and a base without the head gains one
that starts writing coordinates nearly always (:data:`WRITE_PRIOR`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from distrl_tasks.agents.grammar import TOUCH_MARK
from distrl_tasks.protocol.actions import format_action, tap
from distrl_tasks.protocol.ui_dump import Element

FEATURES = 6  # centre y, x; height, width; text field; share of the label the goal names
LABEL_TOKENS = 16  # label ids the head reads per element
# logit of "write coordinates" for a new head (elements start near 0): with 16 elements
# p(write) ~ 0.995, so turning the pointer on for a base trained without it changes little
WRITE_PRIOR = 8.0


@dataclass
class PointerInputs:
    """The observations' elements as tensors (``K`` = most elements of a row in the batch).

    Attributes:
        label_ids: ``[B, K, N]`` long, each element's label ids (padded).
        label_mask: ``[B, K, N]`` bool, real label ids.
        features: ``[B, K, 6]`` float, centre ``(y, x)``, size ``(h, w)``, text field flag,
            share of the label's words the goal names (:func:`goal_named_share`).
        present: ``[B, K]`` bool, real elements (rows have ``0..K``).
    """

    label_ids: torch.Tensor
    label_mask: torch.Tensor
    features: torch.Tensor
    present: torch.Tensor

    @property
    def width(self) -> int:
        return int(self.present.shape[1])


def _pieces(text: str) -> list[str]:
    # letters and digits apart, so "10pm" names the "PM" button and "Booking.com" is two words
    return re.findall(r"[a-z]+|[0-9]+", text.lower())


def goal_named_share(label: str, goal: str) -> float:
    """Share of ``label``'s words (runs of letters or of digits, any case) that ``goal`` holds.

    Why: the head reads a label through token embeddings, which cannot tell two app names it
    never saw apart; whether the goal names the element is a feature that needs no training
    to carry over to new names (``"Snapchat app"`` in "Download the Snapchat app" is 1.0,
    ``"WhatsApp"`` 0.0, ``"PM"`` in "Set alarm at 10pm" 1.0). 0.0 for a label without words.
    """
    label_words = _pieces(label)
    if not label_words:
        return 0.0
    goal_words = set(_pieces(goal))
    return sum(w in goal_words for w in label_words) / len(label_words)


def pointer_inputs(
    encode: Callable[[str], Sequence[int]],
    rows: Sequence[Sequence[Element]],
    goals: Sequence[str],
    device: torch.device | str,
) -> PointerInputs:
    """Tensors of each row's elements; ``encode`` maps a label to ids (the tokenizer's) and
    ``goals[b]`` is row ``b``'s goal (for :func:`goal_named_share`)."""
    if len(goals) != len(rows):
        raise ValueError(f"{len(goals)} goals for {len(rows)} rows of elements")
    k = max((len(r) for r in rows), default=0)
    ids = torch.zeros((len(rows), k, LABEL_TOKENS), dtype=torch.long)
    mask = torch.zeros((len(rows), k, LABEL_TOKENS), dtype=torch.bool)
    features = torch.zeros((len(rows), k, FEATURES), dtype=torch.float32)
    present = torch.zeros((len(rows), k), dtype=torch.bool)
    for b, (elements, goal) in enumerate(zip(rows, goals, strict=True)):
        for j, e in enumerate(elements):
            label = list(encode(e.label))[:LABEL_TOKENS] if e.label else []
            if label:
                ids[b, j, : len(label)] = torch.tensor(label, dtype=torch.long)
                mask[b, j, : len(label)] = True
            named = goal_named_share(e.label, goal)
            features[b, j] = torch.tensor([*e.point, *e.size, float(e.editable), named])
            present[b, j] = True
    return PointerInputs(ids.to(device), mask.to(device), features.to(device), present.to(device))


class PointerHead(nn.Module):
    """Logits ``[B, K + 1]`` over the elements and "write coordinates" (last).

    Args:
        d_model: width of the model's states and token embeddings.
    """

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.features = nn.Linear(FEATURES, d_model)
        self.element_norm = nn.LayerNorm(d_model)
        self.query = nn.Linear(d_model, d_model, bias=False)
        self.mix = nn.Linear(2 * d_model, d_model)
        self.score = nn.Linear(d_model, 1)
        self.write = nn.Linear(d_model, 1)
        nn.init.zeros_(self.write.weight)
        nn.init.constant_(self.write.bias, WRITE_PRIOR)

    def forward(
        self,
        embed: nn.Embedding,
        states: torch.Tensor,
        attention_mask: torch.Tensor,
        inputs: PointerInputs,
        *,
        detach_base: bool = False,
    ) -> torch.Tensor:
        """Logits of each row's choices; absent elements get ``-inf``.

        Args:
            embed: the model's token embeddings (labels are read through them).
            states: ``[B, L, d]`` fused prompt states.
            attention_mask: ``[B, L]`` prompt mask.
            inputs: the rows' elements (:func:`pointer_inputs`).
            detach_base: read ``states`` and the label embeddings without their gradient, so a
                loss on these logits trains the head alone (supervised training).
        """
        if detach_base:
            states = states.detach()
        prompt = attention_mask.to(states.dtype)
        pooled = (states * prompt[..., None]).sum(1) / prompt.sum(1, keepdim=True).clamp(min=1)
        write = self.write(pooled)  # [B, 1]
        if inputs.width == 0:
            return write
        labels = embed(inputs.label_ids)
        if detach_base:
            labels = labels.detach()
        labels = labels * inputs.label_mask[..., None].to(states.dtype)
        count = inputs.label_mask.sum(-1, keepdim=True).clamp(min=1).to(states.dtype)
        elements = self.element_norm(labels.sum(2) / count + self.features(inputs.features))
        att = self.query(elements) @ states.transpose(1, 2) / math.sqrt(self.d_model)  # [B,K,L]
        att = att.masked_fill(~attention_mask.bool()[:, None, :], float("-inf"))
        context = torch.softmax(att, dim=-1) @ states  # [B, K, d]
        hidden = torch.tanh(self.mix(torch.cat([elements, context], dim=-1)))
        scores = self.score(hidden).squeeze(-1).masked_fill(~inputs.present, float("-inf"))
        return torch.cat([scores, write], dim=-1)


def upgrade_head_state(state: dict[str, torch.Tensor], prefix: str = "pointer_head.") -> None:
    """In place: a head saved before the goal-named feature (``geometry``, 5 inputs) becomes
    this one with that feature's weights at 0, so it scores every element exactly as it did."""
    old = state.pop(prefix + "geometry.weight", None)
    if old is not None:
        pad = old.new_zeros((old.shape[0], FEATURES - old.shape[1]))
        state[prefix + "features.weight"] = torch.cat([old, pad], dim=1)
        state[prefix + "features.bias"] = state.pop(prefix + "geometry.bias")


def completion(element: Element) -> str:
    """The action text after :data:`~.grammar.TOUCH_MARK` of a tap on ``element``'s centre."""
    text = format_action(tap(*element.point), plan="")
    return text[text.index(TOUCH_MARK) + len(TOUCH_MARK) :]


def tap_log_prob(
    before: torch.Tensor,
    after: torch.Tensor,
    choice_log_probs: torch.Tensor,
    matches: torch.Tensor,
    at_touch: torch.Tensor,
) -> torch.Tensor:
    """Log-probability of action strings under the pointer (module docstring)::

        log p = b + logsumexp(c_K + a, {c_k : matches_k})   where at_touch
        log p = b + a                                        elsewhere

    Args:
        before: ``[B]`` log-prob of the ids before the touch point (all ids where not at_touch).
        after: ``[B]`` log-prob of the ids from the touch point on (0 where not at_touch).
        choice_log_probs: ``[B, K + 1]`` the pointer's log-probs, "write" last (-inf: absent).
        matches: ``[B, K]`` bool, element ``k``'s tap spells the action's rest.
        at_touch: ``[B]`` bool, the action reaches the touch point.

    Returns:
        ``[B]`` log-probs (differentiable in every input tensor).
    """
    pointed = choice_log_probs[:, :-1].masked_fill(~matches, float("-inf"))
    written = (choice_log_probs[:, -1] + after)[:, None]
    mixed = torch.logsumexp(torch.cat([pointed, written], dim=1), dim=1)
    return before + torch.where(at_touch, mixed, after)


def tap_entropy(
    before: torch.Tensor,
    after: torch.Tensor,
    choice_log_probs: torch.Tensor,
    at_touch: torch.Tensor,
) -> torch.Tensor:
    """Entropy bonus of action strings under the pointer: ``H_b + H(c) + p_K H_a`` where the
    action reaches the touch point (the choice's entropy plus the digits' when written), else
    ``H_b + H_a``; ``before``/``after`` are the token entropies summed on each side (``[B]``)."""
    p = choice_log_probs.exp()
    h_choice = -(p * choice_log_probs.masked_fill(p == 0, 0.0)).sum(-1)
    return before + torch.where(at_touch, h_choice + p[:, -1] * after, after)


def choice_targets(elements: Sequence[Element], touch: tuple[float, float] | None) -> int | None:
    """The choice a demonstration's tap teaches: the smallest element whose box holds the touch
    point, else "write" (``len(elements)``); None for an action that is not a tap."""
    if touch is None:
        return None
    y, x = touch
    inside = [
        (e.size[0] * e.size[1], k)
        for k, e in enumerate(elements)
        if abs(y - e.point[0]) <= e.size[0] / 2 + 1e-4
        and abs(x - e.point[1]) <= e.size[1] / 2 + 1e-4
    ]
    return min(inside)[1] if inside else len(elements)


class PointerRun:
    """The pointer's choices for one decoding call: drawn where a row reaches the touch point.

    Args:
        log_probs: ``[B, K + 1]`` the rows' choice log-probs (temperature applied).
        completions: per row, the ids of each element's :func:`completion` (eos included).
        greedy: take the most likely choice instead of drawing.
        generator: random source of the draws.
    """

    def __init__(
        self,
        log_probs: torch.Tensor,
        completions: Sequence[Sequence[Sequence[int]]],
        *,
        greedy: bool,
        generator: torch.Generator | None,
    ) -> None:
        self.log_probs = log_probs
        self.completions = completions
        self.greedy = greedy
        self.generator = generator

    def choose(self, rows: torch.Tensor) -> dict[int, list[int]]:
        """For the rows flagged in ``rows`` (``[B]`` bool), draw a choice; returns the rows that
        pointed at an element, each with the ids that finish its action."""
        picked = torch.nonzero(rows, as_tuple=False).squeeze(1)
        if picked.numel() == 0:
            return {}
        lp = self.log_probs[picked]
        if self.greedy:
            chosen = lp.argmax(-1)
        else:
            chosen = torch.multinomial(lp.exp(), 1, generator=self.generator).squeeze(-1)
        out = {}
        for row, k in zip(picked.tolist(), chosen.tolist(), strict=True):
            if k < len(self.completions[row]):
                out[row] = list(self.completions[row][k])
        return out
