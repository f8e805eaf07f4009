"""Typing from the goal (``agent.goal_typing``): the typed text's words come from the goal.

Measured on the span base (benchmarks/RESULTS.md, "The base with span scores"): on 31 of the 61
held-out searching TYPE steps the base typed text that is no span of the goal, mostly memorised
words from the output head instead of a copy: the site's name in a shop's search box
(``target.com`` for a search on Walmart), ``restaurants`` for "food", ``.com`` after a YouTube
channel. In the scripted expert's
demonstrations of both task sets every typed text is made of the goal's words, apart from the
typos it injects to teach recovery. So a decoding rule, applied alike when sampling and when the
learner scores (the behaviour and learner log-probs stay one distribution):

    inside the ``typed_text`` field, an id whose text holds two or more letters or digits may be
    written only if that text (case-folded, SentencePiece's word-start marker read as a space)
    occurs in " " + goal (case-folded).

Single characters and symbols stay free, so any text remains writable piece by piece, and the
rest of the action (type, points, the fixed format) is untouched. Where the rule would leave a
grammar state no id, that state keeps the grammar's ids, so the rule never empties a
distribution. A byte tokenizer's ids are single characters: the rule changes nothing there.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import torch

# the goal starts after this in format_prompt's text, and a listed screen follows it
_GOAL_MARK, _SCREEN_MARK = " Goal: ", " Screen: "
# goals remembered with their masks (an episode repeats its goal at every step)
_CACHE_SIZE = 4096


def goal_of(prompt: str) -> str:
    """The goal inside an AutoUI prompt (:func:`~distrl_tasks.protocol.observation.format_prompt`):
    what follows the last ``" Goal: "`` before the ``" Screen: "`` part; the whole prompt when it
    has no goal mark (a caller's own prompt)."""
    head = prompt.split(_SCREEN_MARK, 1)[0]
    _, mark, goal = head.rpartition(_GOAL_MARK)
    return goal if mark else prompt


def restrict(
    keep: torch.Tensor,
    states: torch.Tensor,
    text_ok: torch.Tensor,
    in_text: torch.Tensor,
    written: torch.Tensor | None = None,
) -> torch.Tensor:
    """The grammar's allowed ids narrowed by the rule inside the typed text.

    Args:
        keep: ``[B, *, V]`` bool, the grammar's allowed ids at each position.
        states: ``[B, *]`` long, the grammar state at each position.
        text_ok: ``[B, V]`` bool, the ids each row's typed text may use (:meth:`GoalTyping.masks`).
        in_text: ``[S]`` bool, the grammar states inside the typed text.
        written: ``[B, *]`` long, teacher forcing only: the id each position scores. It stays
            allowed where the grammar allows it: a word the policy spelled piece by piece (legal
            under the rule) is scored on the tokenizer's own ids, which may be one whole piece
            the rule removes. A sampled id always passed the rule, so on the sampled ids this
            changes no mask and the behaviour log-probs stay the teacher-forced ones.

    Returns:
        ``keep`` where the state is outside the text, ``keep & text_ok`` inside it, and ``keep``
        again wherever that would allow no id.
    """
    rows = text_ok.reshape(text_ok.shape[0], *([1] * (keep.dim() - 2)), text_ok.shape[-1])
    narrowed = keep & (rows | ~in_text[states].unsqueeze(-1))
    narrowed = torch.where(narrowed.any(-1, keepdim=True), narrowed, keep)
    if written is not None:
        target = torch.zeros_like(keep).scatter_(-1, written.unsqueeze(-1), True)
        narrowed = narrowed | (keep & target)
    return narrowed


class GoalTyping:
    """The per-goal id masks of the rule (module docstring) for one vocabulary.

    Args:
        piece_texts: the text each id writes (:meth:`Tokenizer.piece_texts`; "" for ids that
            write nothing).
    """

    def __init__(self, piece_texts: Sequence[str]) -> None:
        self._texts = [t.lower() for t in piece_texts]
        # ids the rule leaves free: fewer than two letters or digits
        self._free = torch.tensor([sum(c.isalnum() for c in t) < 2 for t in self._texts])
        self._cache: OrderedDict[str, torch.Tensor] = OrderedDict()

    @property
    def vocab_size(self) -> int:
        return len(self._texts)

    def mask(self, goal: str) -> torch.Tensor:
        """``[V]`` bool: the ids a typed text for ``goal`` may use."""
        hit = self._cache.get(goal)
        if hit is not None:
            self._cache.move_to_end(goal)
            return hit
        source = " " + goal.lower()
        found = torch.tensor([bool(t) and t in source for t in self._texts])
        out = self._free | found
        self._cache[goal] = out
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return out

    def masks(self, prompts: Sequence[str], device: torch.device | str = "cpu") -> torch.Tensor:
        """``[B, V]`` bool: :meth:`mask` of each prompt's goal (:func:`goal_of`)."""
        return torch.stack([self.mask(goal_of(p)) for p in prompts]).to(device)
