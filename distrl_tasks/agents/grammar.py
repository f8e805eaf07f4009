"""Grammar-constrained decoding: the policy can only write well-formed AutoUI actions.

A free decoder spends most of its tokens re-writing the fixed format (field names, quotes,
brackets) and can leave it: the RL-trained tiny policies of benchmarks/RESULTS.md loop on
``"lift_point"`` until the token budget runs out. Constrained, every token the format fixes is
forced (probability 1, no gradient, no entropy) and the policy only chooses what carries
meaning: the action type, the coordinates' digits and the typed text. The same constraint is
applied when sampling and when the learner re-scores the stored text, so behaviour and learner
log-probs stay one distribution.

The language (:data:`ACTION_PATTERN`) is the set of strings :func:`format_action` writes: a plan
of 1 to :data:`MAX_PLAN_STEPS` action types, then the decision whose fields follow from the type
(DUAL_POINT: two points in [0, 1] with 4 decimals and no text; TYPE: no points and a JSON-escaped
text of 1 to :data:`MAX_TYPED_CHARS` characters; the other types: no points, no text). Any
accepted string therefore parses to a valid action. The regex is compiled against the
tokenizer's vocabulary by ``outlines-core`` into a token-level automaton, kept here as a
dense mask of allowed ids per state (one lookup per decoding step) and sparse transitions.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from distrl_tasks.agents.actions import ActionType
from distrl_tasks.agents.tokenizer import Tokenizer

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
        from outlines_core import Index, Vocabulary

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

    @property
    def num_states(self) -> int:
        return len(self._moves)

    def to(self, device: torch.device | str) -> ActionGrammar:
        """Move the mask (in place) to ``device``; returns self."""
        self.allowed = self.allowed.to(device)
        self.accepting = self.accepting.to(device)
        return self

    def step(self, states: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """``[B]`` states after ``tokens`` (``[B]``) in ``states``; -1 where not allowed."""
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
