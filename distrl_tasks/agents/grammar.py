"""Grammar-constrained decoding: the policy can only write well-formed AutoUI actions.

A free decoder spends most of its tokens re-writing the fixed format (field names, quotes,
brackets) and can leave it: RL-trained tiny policies looped on ``"lift_point"`` until the token
budget ran out
(benchmarks/results/2026-11-22-offline-phase-off2on-earlier-rl-gains-were-not-real.md).
Constrained, every token the format fixes is forced (probability 1, no gradient, no entropy) and
the policy only chooses what carries meaning: the action type, the coordinates' digits and the
typed text. The same constraint is applied when sampling and when the learner re-scores the
stored text, so behaviour and learner log-probs stay one distribution.

The language (:data:`ACTION_PATTERN`) is the set of strings :func:`format_action` writes: a plan
of 1 to :data:`MAX_PLAN_STEPS` action types, then the decision whose fields follow from the type
(DUAL_POINT: two points in [0, 1] with 4 decimals and no text; TYPE: no points and a JSON-escaped
text of 1 to :data:`MAX_TYPED_CHARS` characters; the other types: no points, no text). Any
accepted string therefore parses to a valid action. The regex is compiled against the
tokenizer's vocabulary by ``outlines-core`` into a token-level automaton, kept here as a
dense mask of allowed ids per state (one lookup per decoding step), sparse transitions, a dense
transition table over the ids the automaton uses (one gather per step for the fast decoder) and
per-state drafts of the text the format fixes (:meth:`ActionGrammar._build_drafts`). Building
it takes a second or more, so :func:`grammar_for` keeps one per vocabulary and process.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import deque
from collections.abc import Sequence

import torch
from outlines_core import Index, Vocabulary

from distrl_tasks.agents.tokenizer import Tokenizer
from distrl_tasks.protocol.actions import ActionType

_TYPES = "|".join(t.value for t in ActionType)
_COORD = r"(0\.[0-9]{4}|1\.0000)"
_POINT = rf"\[{_COORD}, {_COORD}\]"
_NO_POINT = r"\[-1\.0000, -1\.0000\]"
# Most action types an "Action Plan: [...]" may list (AutoUI plans list the remaining steps;
# the General horizon is 10). Unbounded, an untrained policy can list types until the budget.
MAX_PLAN_STEPS = 10
# Longest text a TYPE action may write: the longest AITW goal is 80 characters. Without a cap a
# policy can type until the token budget runs out, which leaves a cut-off (invalid) action.
MAX_TYPED_CHARS = 80
# JSON string content as json.dumps(ensure_ascii=False) writes it, 1..MAX_TYPED_CHARS characters
_TEXT = rf'([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{{4}}){{1,{MAX_TYPED_CHARS}}}'
# the action types without arguments (keys, done, impossible)
_KEYS = [t.value for t in ActionType if t not in (ActionType.DUAL_POINT, ActionType.TYPE)]


def _decision(kinds: str, point: str, text: str) -> str:
    return (
        f'"action_type": "({kinds})", "touch_point": "{point}", '
        f'"lift_point": "{point}", "typed_text": "{text}"'
    )


ACTION_PATTERN = (
    rf"Action Plan: \[({_TYPES})(,({_TYPES})){{0,{MAX_PLAN_STEPS - 1}}}\] ; Action Decision: ("
    + "|".join(
        (
            _decision("DUAL_POINT", _POINT, ""),
            _decision("TYPE", _NO_POINT, _TEXT),
            _decision("|".join(_KEYS), _NO_POINT, ""),
        )
    )
    + ")"
)


# The parts of an action the policy chooses, for per-part temperatures: the plan and the action
# type (with the fixed format around them), a tap's coordinate digits, the typed text.
PARTS = ("type", "coords", "text")
_POINT_FIELDS = ('"touch_point": "', '"lift_point": "')
# What a tap's action text has written when its touch point starts (before the point's opening
# quote: no vocabulary of ours has a piece across that place, while T5's pieces run on into
# the digits after the quote)
TOUCH_MARK = '"action_type": "DUAL_POINT", "touch_point": '

_TEXT_FIELD = '"typed_text": "'
_CLOSING_QUOTE = re.compile(r'(?:^|[^\\])(?:\\\\)*"')


def part_of_prefix(prefix: str) -> int:
    """Index in :data:`PARTS` of what the next id writes after the action text ``prefix``."""
    starts = {f: prefix.rfind(f) for f in (*_POINT_FIELDS, _TEXT_FIELD)}
    field, at = max(starts.items(), key=lambda kv: kv[1])
    if at < 0:
        return 0
    value = prefix[at + len(field) :]
    if _CLOSING_QUOTE.search(value):  # the field is closed: the fixed format between fields
        return 0
    return 2 if field == _TEXT_FIELD else 1


# Largest dense transition table (states x used ids) kept; beyond it (a 32k T5 vocabulary)
# :meth:`ActionGrammar.step` falls back to the sparse per-state dictionaries.
DENSE_TABLE_LIMIT = 16_000_000
# Longest forced text a draft covers (the longest fixed run of the format is ~80 characters).
MAX_DRAFT_CHARS = 128


class ActionGrammar:
    """Token-level automaton of :data:`ACTION_PATTERN` for one tokenizer and model vocabulary.

    States are dense indices ``0..S-1``. ``allowed[s, v]`` says whether id ``v`` may follow in
    state ``s`` (eos exactly in the accepting states); :meth:`step` gives the next states.

    Args:
        tokenizer: supplies each generable id's text (:meth:`Tokenizer.token_texts`).
        vocab_size: the model's vocabulary size (the tables' width).

    Raises:
        ValueError: the vocabulary cannot spell the action format.
    """

    def __init__(self, tokenizer: Tokenizer, vocab_size: int) -> None:
        texts = tokenizer.token_texts(vocab_size)
        # T5's own vocabulary encodes a text's start with a space piece ("▁Action"); allow it
        first = tokenizer.encode("Action")[:1]
        lead = bool(first) and tokenizer.token_text(first[0]).startswith(" ")
        self.pattern = (" ?" if lead else "") + ACTION_PATTERN
        try:
            index = Index(self.pattern, Vocabulary(tokenizer.eos_id, texts))
        except Exception as exc:  # outlines-core raises its own error types
            raise ValueError(
                f"the {tokenizer.kind} vocabulary cannot spell AutoUI actions: {exc}"
            ) from exc
        transitions = index.get_transitions()
        raw_states = sorted(set(transitions) | {index.get_initial_state()})
        dense = {s: i for i, s in enumerate(raw_states)}
        # transitions stay sparse (T5's 32k ids x ~1500 states would be ~190 MB as an int32
        # table); the allowed-ids mask is dense, one byte per (state, id) pair
        self._moves: list[dict[int, int]] = [{} for _ in raw_states]
        allowed = torch.zeros((len(raw_states), vocab_size), dtype=torch.bool)
        for state, moves in transitions.items():
            row = self._moves[dense[state]]
            for token, target in moves.items():
                row[int(token)] = dense[target]
            allowed[dense[state], list(row)] = True
        self.initial = dense[index.get_initial_state()]
        self.eos_id = tokenizer.eos_id
        self.allowed = allowed
        self.accepting = allowed[:, self.eos_id].clone()
        self._build_tables(tokenizer, vocab_size)
        prefixes = self._state_prefixes(tokenizer, vocab_size)
        self.part = torch.tensor([part_of_prefix(p) for p in prefixes], dtype=torch.long)
        self.touch, self.touch_crossed = self._touch_states(prefixes)

    def _build_tables(self, tokenizer: Tokenizer, vocab_size: int) -> None:
        """Dense transitions, for batched tensor decoding (``table[s, column[v]]`` is the state
        after id ``v`` in ``s``, -1 where not allowed; columns exist only for ids some
        transition uses, plus one all ``-1`` column for the rest), and the drafts."""
        used = sorted({t for row in self._moves for t in row})
        column = torch.full((vocab_size,), len(used), dtype=torch.long)
        column[used] = torch.arange(len(used))
        self.dense = self.num_states * (len(used) + 1) <= DENSE_TABLE_LIMIT
        if self.dense:
            where = {t: i for i, t in enumerate(used)}
            table = torch.full((self.num_states, len(used) + 1), -1, dtype=torch.long)
            for s, row in enumerate(self._moves):
                if row:
                    table[s, [where[t] for t in row]] = torch.tensor(list(row.values()))
            self.table, self.column = table, column
        self._build_drafts(tokenizer, vocab_size)

    def _forced_texts(self, tokenizer: Tokenizer, vocab_size: int) -> list[str]:
        """Per state, the text every continuation starts with (the format the grammar fixes
        from there: ``", "touch_point": "[`` after an action type), up to the next choice."""
        first = torch.full((vocab_size,), -1, dtype=torch.long)
        single: dict[str, int] = {}  # a one-character id per character, to walk the text
        for text, ids in tokenizer.token_texts(vocab_size).items():
            first[ids] = ord(text[0]) if ord(text[0]) < 128 else 128
            if len(text) == 1:
                single.setdefault(text, ids[0])
        onehot = torch.zeros((vocab_size, 130), dtype=torch.float32)
        onehot[torch.arange(vocab_size), first.clamp(min=-1) % 130] = 1.0
        onehot[first < 0] = 0.0
        counts = self.allowed.float() @ onehot  # [S, 130] allowed ids per first character
        only = ((counts > 0).sum(-1) == 1) & ~self.accepting
        char = counts.argmax(-1)
        step: list[tuple[str, int] | None] = [None] * self.num_states
        for s in torch.nonzero(only).flatten().tolist():
            c = chr(int(char[s])) if int(char[s]) < 128 else ""
            nxt = self._moves[s].get(single.get(c, -1), -1)
            if c and nxt >= 0:
                step[s] = (c, nxt)
        texts: list[str] = []
        for s in range(self.num_states):
            out, state = [], s
            while (move := step[state]) is not None and len(out) < MAX_DRAFT_CHARS:
                out.append(move[0])
                state = move[1]
            texts.append("".join(out))
        return texts

    def _build_drafts(self, tokenizer: Tokenizer, vocab_size: int) -> None:
        """``draft_tokens[s, :draft_len[s]]``: the tokenizer's own encoding of the text forced
        from state ``s`` (cut where it would leave the grammar), and ``draft_states[s, j]`` the
        state before draft token ``j`` (``draft_states[s, draft_len[s]]`` after the last).

        A draft is a guess, not a constraint: the sampler feeds it with the next decoder call
        and keeps the prefix the policy itself would have produced (speculative decoding with
        the grammar as the draft model), so it changes cost only. With the byte tokenizer every
        draft token is the only allowed one; a SentencePiece vocabulary spells the format in
        several ways, and the draft is the spelling its own encoder (and SFT) uses.
        """
        drafts: list[list[int]] = []
        walks: list[list[int]] = []
        for s, text in enumerate(self._forced_texts(tokenizer, vocab_size)):
            ids = tokenizer.encode(text) if text else []
            walk, state = [s], s
            for token in ids:
                state = self._moves[state].get(token, -1)
                if state < 0:
                    break
                walk.append(state)
            drafts.append(ids[: len(walk) - 1])
            walks.append(walk)
        width = max(1, max(len(d) for d in drafts))
        self.draft_tokens = torch.zeros((self.num_states, width), dtype=torch.long)
        self.draft_states = torch.zeros((self.num_states, width + 1), dtype=torch.long)
        for s, (draft, walk) in enumerate(zip(drafts, walks, strict=True)):
            self.draft_tokens[s, : len(draft)] = torch.tensor(draft, dtype=torch.long)
            self.draft_states[s, : len(walk)] = torch.tensor(walk, dtype=torch.long)
            self.draft_states[s, len(walk) :] = walk[-1]
        self.draft_len = torch.tensor([len(d) for d in drafts], dtype=torch.long)

    def _state_prefixes(self, tokenizer: Tokenizer, vocab_size: int) -> list[str]:
        """A text that leads to each state (breadth first from the start; every path to a state
        stops at the same place of the pattern, so any one says where the state is)."""
        text_of = [""] * vocab_size
        for text, ids in tokenizer.token_texts(vocab_size).items():
            for i in ids:
                text_of[i] = text
        prefix: list[str | None] = [None] * self.num_states
        prefix[self.initial] = ""
        queue = deque([self.initial])
        while queue:
            state = queue.popleft()
            for token, nxt in self._moves[state].items():
                if prefix[nxt] is None:
                    prefix[nxt] = prefix[state] + text_of[token]  # type: ignore[operator]
                    queue.append(nxt)
        return [p or "" for p in prefix]

    def _touch_states(self, prefixes: list[str]) -> tuple[torch.Tensor, bool]:
        """``[S]`` bool, the states where a tap's touch point starts (:data:`TOUCH_MARK` just
        written: where the pointer chooses), and whether some id jumps over such a state (writes
        the end of the mark and the point's first characters at once), which leaves no single
        place to choose."""
        at = [p.endswith(TOUCH_MARK) for p in prefixes]
        past = [TOUCH_MARK in p and not a for p, a in zip(prefixes, at, strict=True)]
        crossed = any(
            past[nxt] and TOUCH_MARK not in prefixes[state]
            for state, moves in enumerate(self._moves)
            for nxt in moves.values()
        )
        return torch.tensor(at, dtype=torch.bool), crossed

    @property
    def num_states(self) -> int:
        return len(self._moves)

    def to(self, device: torch.device | str) -> ActionGrammar:
        """Move the tables (in place) to ``device``; returns self."""
        self.allowed = self.allowed.to(device)
        self.accepting = self.accepting.to(device)
        self.draft_tokens = self.draft_tokens.to(device)
        self.draft_states = self.draft_states.to(device)
        self.draft_len = self.draft_len.to(device)
        self.part = self.part.to(device)
        self.touch = self.touch.to(device)
        if self.dense:
            self.table, self.column = self.table.to(device), self.column.to(device)
        return self

    @property
    def in_text(self) -> torch.Tensor:
        """``[S]`` bool: the states inside the typed text (where the next id writes text)."""
        return self.part == PARTS.index("text")

    def step(self, states: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """``[B]`` states after ``tokens`` (``[B]``) in ``states``; -1 where not allowed."""
        if self.dense:  # one gather; state -1 reads the last row, so mask it back to -1
            nxt = self.table[states, self.column[tokens]]
            return torch.where(states >= 0, nxt, torch.full_like(nxt, -1))
        return self.step_sparse(states, tokens)

    def step_sparse(self, states: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """:meth:`step` through the per-state dictionaries (the reference decoder's way)."""
        pairs = zip(states.tolist(), tokens.tolist(), strict=True)
        nxt = [self._moves[s].get(t, -1) if s >= 0 else -1 for s, t in pairs]
        return torch.tensor(nxt, dtype=torch.long, device=states.device)

    def _walk(self, ids: Sequence[int]) -> tuple[list[int], int, int]:
        """States before each id, the state after the last one, and the first bad position."""
        state, states = self.initial, []
        for pos, token in enumerate(ids):
            states.append(state)
            state = self._moves[state].get(int(token), -1)
            if state < 0:
                return states, -1, pos
        return states, state, -1

    def states_along(self, targets: Sequence[Sequence[int]]) -> list[list[int]]:
        """For each id list, the state *before* each of its ids.

        Raises:
            ValueError: a list leaves the grammar (its text is not a well-formed action or a
                prefix of one); the message names the row and position.
        """
        out = []
        for row, ids in enumerate(targets):
            states, _, bad = self._walk(ids)
            if bad >= 0:
                raise ValueError(
                    f"action {row}: token {bad} (id {int(ids[bad])}) leaves the AutoUI action "
                    "grammar; with agent.constrained_decoding the policy can only score "
                    "actions its constrained decoder could have written"
                )
            out.append(states)
        return out

    def accepts(self, ids: Sequence[int]) -> bool:
        """Whether ``ids`` (no eos) spell a whole action: eos may follow."""
        _, state, _ = self._walk(ids)
        return state >= 0 and self.eos_id in self._moves[state]

    def matches(self, ids: Sequence[int]) -> bool:
        """Whether ``ids`` (eos included or not) spell a whole action or a prefix of one."""
        try:
            self.states_along([ids])
        except ValueError:
            return False
        return True


_CACHE: dict[tuple[str, str, int], ActionGrammar] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 4


def _vocabulary_key(tokenizer: Tokenizer) -> str:
    """What identifies a vocabulary: the SentencePiece model's bytes, or the tokenizer kind."""
    path = getattr(tokenizer, "path", None)
    if path is None:
        return tokenizer.kind
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def grammar_for(tokenizer: Tokenizer, vocab_size: int) -> ActionGrammar:
    """The :class:`ActionGrammar` of a vocabulary, built once per process (compiling the
    automaton takes about a second, and every policy load of a round needs the same one).

    The object is shared: :meth:`ActionGrammar.to` moves it for every holder.
    """
    key = (tokenizer.kind, _vocabulary_key(tokenizer), int(vocab_size))
    with _CACHE_LOCK:
        grammar = _CACHE.get(key)
    if grammar is None:
        grammar = ActionGrammar(tokenizer, vocab_size)
        with _CACHE_LOCK:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            grammar = _CACHE.setdefault(key, grammar)
    return grammar
