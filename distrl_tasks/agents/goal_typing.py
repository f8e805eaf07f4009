"""Typing from the goal (``agent.goal_typing``): the policy types the goal's words, each no more
often than the goal holds it.

Why: the base's wrong queries were mostly words its output head had memorised instead of a copy
of the goal (benchmarks/results/2026-11-27-base-span-scores-copy-starts-stops.md). In the
scripted expert's demonstrations of both task sets every typed text is made of
the goal's words, apart from the typos it injects to teach recovery. So a decoding rule, applied
alike when sampling (both loops) and when the learner scores, so that behaviour and learner
log-probs stay one distribution:

    inside the ``typed_text`` field, an id may be written only if, appended to the text typed
    so far, every finished word (a run of letters and digits, case-folded) is a word of the goal,
    no word is finished more often than the goal holds it, and the unfinished last word is the
    start of a goal word not used up yet.

The count is what stops a copy that runs on past the query's closing quote and types the query
again up to the grammar's cap (every word of such a text is a goal word). It forbids nothing the
expert types: no goal of either task set has a parameter made of its words that repeats one more
often than the goal does (tests/unit/test_goal_typing.py).

Characters between words (spaces, punctuation) are free; the rest of the action (type, points,
the fixed format) is untouched. Where the rule would leave a grammar state no id (a JSON escape,
a goal whose words the vocabulary cannot spell), that state keeps the grammar's ids, so the rule
never empties a distribution. A piece that a trained policy spelled out and the tokenizer
re-segments is scored on the tokenizer's ids; those stay allowed at teacher forcing
(:func:`restrict`'s ``written``).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from functools import lru_cache

import torch

from distrl_tasks.protocol.observation import goal_of_prompt

# (goal, unfinished word, finished words) keys remembered with their masks (an episode repeats
# its goal and its query)
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


def typing_state(typed: str) -> tuple[str, tuple[str, ...]]:
    """What the rule reads of the text typed so far: the unfinished word (:func:`unfinished_word`)
    and the finished words, sorted (their order does not matter to the count)."""
    partial = unfinished_word(typed)
    done = words(typed)
    if partial:
        done.pop()
    return partial, tuple(sorted(done))


@lru_cache(maxsize=1024)
def _goal_counts(goal: str) -> Mapping[str, int]:
    """How often each word occurs in the goal (read only: the cache shares it)."""
    return Counter(words(goal))


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
        self._lowered = [t.lower() for t in self.texts]
        self._cache: OrderedDict[tuple[str, str, tuple[str, ...]], torch.Tensor] = OrderedDict()

    @property
    def vocab_size(self) -> int:
        return len(self.texts)

    def mask(self, goal: str, typed: str = "") -> torch.Tensor:
        """``[V]`` bool: the ids the typed text for ``goal`` may take next, when ``typed`` is the
        text typed so far in the field."""
        partial, done = typing_state(typed)
        key = (goal, partial, done)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        left = Counter(_goal_counts(goal))
        left.subtract(done)

        def fits(piece: str) -> bool:
            text = partial + piece
            runs = words(text)
            # the last run is unfinished: the start of a goal word still left once the others
            # are counted
            start = runs.pop() if text and text[-1].isalnum() else None
            if len(runs) == 1:  # the common case, without a Counter
                if left[runs[0]] < 1:
                    return False
            elif runs and any(left[w] < c for w, c in Counter(runs).items()):
                return False
            if start is None:
                return True
            return any(w.startswith(start) and n > runs.count(w) for w, n in left.items())

        out = torch.tensor([fits(t) for t in self._lowered])
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
                    out[row, pos] = self.mask(goal, typed)
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
        return torch.stack([self.rule.mask(g, t) for g, t in pairs]).to(device)

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
