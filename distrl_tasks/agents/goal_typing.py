"""Typing from the goal (``agent.goal_typing``): every word the policy types is a goal word.

Why: the base's wrong queries were mostly words its output head had memorised instead of a copy
of the goal (benchmarks/results/2026-11-27-base-span-scores-copy-starts-stops.md). In the
scripted expert's demonstrations of both task sets every typed text is made of
the goal's words, apart from the typos it injects to teach recovery. So a decoding rule, applied
alike when sampling (both loops) and when the learner scores, so that behaviour and learner
log-probs stay one distribution:

    inside the ``typed_text`` field, an id may be written only if, appended to the text typed
    so far, every finished word (a run of letters and digits, case-folded) is a word of the goal
    and the unfinished last word is the start of one.

Characters between words (spaces, punctuation) are free; the rest of the action (type, points,
the fixed format) is untouched. Where the rule would leave a grammar state no id (a JSON escape,
a goal whose words the vocabulary cannot spell), that state keeps the grammar's ids, so the rule
never empties a distribution. A piece that a trained policy spelled out and the tokenizer
re-segments is scored on the tokenizer's ids; those stay allowed at teacher forcing
(:func:`restrict`'s ``written``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache

import torch

from distrl_tasks.protocol.observation import goal_of_prompt

# (goal, unfinished word) pairs remembered with their masks (an episode repeats its goal)
_CACHE_SIZE = 8192


def words(text: str) -> list[str]:
    """The runs of letters and digits in ``text``, case-folded: ``"Lowe's 2"`` -> lowe, s, 2."""
    out, word = [], []
    for c in text.lower():
        if c.isalnum():
            word.append(c)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return out


def unfinished_word(typed: str) -> str:
    """The word ``typed`` ends inside (case-folded), or "" when it ends between words."""
    if not typed or not typed[-1].isalnum():
        return ""
    return words(typed)[-1]


@lru_cache(maxsize=1024)
def _vocabulary(goal: str) -> tuple[frozenset[str], frozenset[str]]:
    """The goal's words and every start of one (the empty start included)."""
    ws = frozenset(words(goal))
    return ws, frozenset(w[:i] for w in ws for i in range(len(w) + 1))


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
        text_ok: ``[B, V]`` (one mask per row, for every position) or ``[B, *, V]`` bool, the ids
            the typed text may take next (:class:`GoalTyping`).
        in_text: ``[S]`` bool, the grammar states inside the typed text.
        written: ``[B, *]`` long, teacher forcing only: the id each position scores, which stays
            allowed where the grammar allows it (the module docstring). A sampled id passed the
            rule, so on sampled ids this changes no mask and the behaviour log-probs stay the
            teacher-forced ones.

    Returns:
        ``keep`` where the state is outside the text, ``keep & text_ok`` inside it, and ``keep``
        again wherever that would allow no id.
    """
    if text_ok.dim() != keep.dim():
        text_ok = text_ok.reshape(text_ok.shape[0], *([1] * (keep.dim() - 2)), text_ok.shape[-1])
    narrowed = keep & (text_ok | ~in_text[states].unsqueeze(-1))
    narrowed = torch.where(narrowed.any(-1, keepdim=True), narrowed, keep)
    if written is not None:
        target = torch.zeros_like(keep).scatter_(-1, written.unsqueeze(-1), True)
        narrowed = narrowed | (keep & target)
    return narrowed


class GoalTyping:
    """The rule's id masks (module docstring) for one vocabulary.

    Args:
        piece_texts: the text each id writes (:meth:`Tokenizer.piece_texts`; "" for ids that
            write nothing).
    """

    def __init__(self, piece_texts: Sequence[str]) -> None:
        self.texts = list(piece_texts)
        self._cache: OrderedDict[tuple[str, str], torch.Tensor] = OrderedDict()

    @property
    def vocab_size(self) -> int:
        return len(self.texts)

    def mask(self, goal: str, partial: str = "") -> torch.Tensor:
        """``[V]`` bool: the ids the typed text for ``goal`` may take next, when it ends inside
        the word ``partial`` (:func:`unfinished_word`; "" between words)."""
        key = (goal, partial)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        whole, starts = _vocabulary(goal)

        def fits(piece: str) -> bool:
            text = partial + piece.lower()
            runs = words(text)
            if text and text[-1].isalnum():  # the last run is unfinished: a start of a word
                return runs[-1] in starts and all(w in whole for w in runs[:-1])
            return all(w in whole for w in runs)

        out = torch.tensor([fits(t) for t in self.texts])
        self._cache[key] = out
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return out

    def start(self, prompts: Sequence[str]) -> GoalTypingRun:
        """A decoding loop's tracker for these rows (:class:`GoalTypingRun`)."""
        return GoalTypingRun(self, [goal_of_prompt(p) for p in prompts])

    def position_masks(
        self,
        prompts: Sequence[str],
        targets: Sequence[Sequence[int]],
        walks: Sequence[Sequence[int]],
        in_text: Sequence[bool],
        width: int,
    ) -> torch.Tensor:
        """``[B, width, V]`` bool, teacher forcing: each position's mask given the text the row's
        earlier ids typed (all ids where the state is outside the text).

        Args:
            prompts: the rows' prompts.
            targets: the ids each row scores.
            walks: the grammar state before each of those ids.
            in_text: per grammar state, whether it is inside the typed text.
            width: the padded length of the targets.
        """
        out = torch.ones((len(prompts), width, self.vocab_size), dtype=torch.bool)
        for row, (prompt, ids, walk) in enumerate(zip(prompts, targets, walks, strict=True)):
            goal, typed = goal_of_prompt(prompt), ""
            for pos, (token, state) in enumerate(zip(ids, walk, strict=False)):
                if in_text[state]:
                    out[row, pos] = self.mask(goal, unfinished_word(typed))
                    typed += self.texts[token]
        return out


class GoalTypingRun:
    """The text each row of one decoding call has typed so far, and the masks that follow."""

    def __init__(self, rule: GoalTyping, goals: list[str]) -> None:
        self.rule, self.goals = rule, goals
        self.typed = [""] * len(goals)

    def masks(self, device: torch.device | str) -> torch.Tensor:
        """``[B, V]``: each row's mask for its next id (used where its state is in the text)."""
        pairs = zip(self.goals, self.typed, strict=True)
        return torch.stack([self.rule.mask(g, unfinished_word(t)) for g, t in pairs]).to(device)

    def advance(
        self,
        before: torch.Tensor,
        chosen: torch.Tensor,
        in_text: torch.Tensor,
        live: torch.Tensor | None = None,
    ) -> None:
        """Rows whose state ``before`` (``[B]``) is inside the text typed ``chosen`` (``[B]``);
        rows where ``live`` (``[B]`` bool) is False wrote nothing."""
        typing = in_text[before]
        if live is not None:
            typing = typing & live
        for row, (is_text, token) in enumerate(zip(typing.tolist(), chosen.tolist(), strict=True)):
            if is_text:
                self.typed[row] += self.rule.texts[token]
