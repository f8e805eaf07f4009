"""Grammar-constrained decoding: the language, the token automaton, sampling and scoring."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from distrl_tasks.agents.autoui import build_tiny_model
from distrl_tasks.agents.grammar import (
    ACTION_PATTERN,
    MAX_TYPED_CHARS,
    PARTS,
    ActionGrammar,
    part_of_prefix,
)
from distrl_tasks.agents.policy import AutoUIPolicy, Observation, format_prompt
from distrl_tasks.agents.tokenizer import ByteTokenizer, SentencePieceTokenizer
from distrl_tasks.algorithms.sft import train_tokenizer
from distrl_tasks.protocol.actions import (
    ActionType,
    format_action,
    key,
    parse_action,
    swipe,
    tap,
    type_text,
)

BYTE = ByteTokenizer()
KEYS = (ActionType.PRESS_BACK, ActionType.PRESS_HOME)
GRAMMAR = ActionGrammar(BYTE, BYTE.VOCAB_SIZE)
coords = st.floats(0.0, 1.0, allow_nan=False)
ascii_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=MAX_TYPED_CHARS
)
actions = st.one_of(
    st.builds(tap, coords, coords),
    st.builds(swipe, coords, coords, coords, coords),
    st.builds(type_text, ascii_text),
    st.sampled_from(
        [t for t in ActionType if t not in (ActionType.DUAL_POINT, ActionType.TYPE)]
    ).map(key),
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@settings(max_examples=150, deadline=None)
@given(actions)
def test_every_canonical_action_is_in_the_language(action) -> None:
    text = format_action(action, plan="")
    assert re.fullmatch(ACTION_PATTERN, text)
    ids = [*BYTE.encode(text), BYTE.eos_id]
    assert GRAMMAR.matches(ids)
    *_, last = GRAMMAR.states_along([ids])[0]
    assert bool(GRAMMAR.accepting[last])  # eos was read in an accepting state


@pytest.mark.parametrize(
    "text",
    [
        # a point outside [0, 1], a point with 2 decimals, an empty TYPE text, a key with a
        # point, a type that does not exist, a field repeated (the looping output)
        'Action Plan: [DUAL_POINT] ; Action Decision: "action_type": "DUAL_POINT", '
        '"touch_point": "[1.5000, 0.2000]"',
        'Action Plan: [DUAL_POINT] ; Action Decision: "action_type": "DUAL_POINT", '
        '"touch_point": "[0.50, 0.2000]"',
        'Action Plan: [TYPE] ; Action Decision: "action_type": "TYPE", "touch_point": '
        '"[-1.0000, -1.0000]", "lift_point": "[-1.0000, -1.0000]", "typed_text": ""',
        'Action Plan: [PRESS_BACK] ; Action Decision: "action_type": "PRESS_BACK", '
        '"touch_point": "[0.5000',
        "Action Plan: [SCROLL]",
        'Action Plan: [DUAL_POINT] ; Action Decision: "action_type": "DUAL_POINT", '
        '"touch_point": "[0.5000, 0.2000]", "lift_point": "[0.5000, 0.2000]", "lift_point"',
    ],
)
def test_malformed_text_leaves_the_grammar(text: str) -> None:
    assert not GRAMMAR.matches(BYTE.encode(text))
    with pytest.raises(ValueError, match=r"action 0: token .* leaves the AutoUI action grammar"):
        GRAMMAR.states_along([BYTE.encode(text)])


def test_typed_text_is_capped() -> None:
    longest = format_action(type_text("x" * MAX_TYPED_CHARS), plan="")
    assert GRAMMAR.accepts(BYTE.encode(longest))
    assert not GRAMMAR.matches(BYTE.encode(longest.replace('x"', 'xx"')))


def test_eos_only_after_a_whole_action() -> None:
    whole = BYTE.encode(format_action(tap(0.5, 0.5), plan=""))
    assert GRAMMAR.matches(whole[:40])  # a prefix is fine (a cut-off sample)
    assert not GRAMMAR.matches([*whole[:40], BYTE.eos_id])  # but cannot end there
    assert GRAMMAR.matches([*whole, BYTE.eos_id])
    assert GRAMMAR.accepts(whole) and not GRAMMAR.accepts(whole[:40])


def _observations(n: int, seed: int = 0) -> list[Observation]:
    rng = np.random.default_rng(seed)
    goals = ["Open the clock", "Search for hotels in Paris", "What's on the calendar?"]
    return [
        Observation(format_prompt(goals[i % 3]), rng.standard_normal(1408).astype(np.float16))
        for i in range(n)
    ]


def _policy(grammar: ActionGrammar | None, budget: int = 256) -> AutoUIPolicy:
    return AutoUIPolicy(
        build_tiny_model(seed=0).eval(), BYTE, max_new_tokens=budget, grammar=grammar
    )


def test_an_untrained_policy_only_writes_actions() -> None:
    """A random network sampled hot: every finished output parses; free decoding none does."""
    obs = _observations(12)
    gen = torch.Generator().manual_seed(0)
    out = _policy(GRAMMAR).sample(obs, temperature=1.0, generator=gen)
    finished = [t for t, ids in zip(out.texts, out.token_ids, strict=True) if ids[-1] == 1]
    assert len(finished) >= 6  # the rest typed text until the budget ran out (still a prefix)
    assert all(not parse_action(t).invalid for t in finished)
    assert all(GRAMMAR.matches(ids) for ids in out.token_ids)
    free = _policy(None).sample(obs, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert all(parse_action(t).invalid for t in free.texts)


def test_constrained_scores_match_sampling_and_forced_tokens_are_free() -> None:
    policy = _policy(GRAMMAR)
    obs = _observations(6, seed=1)
    out = policy.sample(obs, temperature=1.3, generator=torch.Generator().manual_seed(3))
    scores = policy.score(obs, out.texts, temperature=1.3)
    torch.testing.assert_close(scores.log_prob.detach(), out.log_probs, rtol=0, atol=1e-4)
    # the format is forced: "Action Plan: [" (14 bytes) costs nothing and has no entropy
    head = scores.token_log_probs[:, :14].detach()
    assert torch.equal(head, torch.zeros_like(head))
    # the action's own choices do cost something
    assert bool((scores.log_prob < 0).all())


def test_constraint_renormalises_each_step_upward() -> None:
    """Under the constraint a canonical action is more likely than under free decoding."""
    texts = [format_action(a, plan="") for a in (tap(0.25, 0.75), key(ActionType.PRESS_HOME))]
    obs = _observations(2, seed=2)
    constrained = _policy(GRAMMAR).score(obs, texts)
    free = _policy(GRAMMAR).score(obs, texts, constrained=False)
    unconstrained = _policy(None).score(obs, texts)
    torch.testing.assert_close(free.log_prob, unconstrained.log_prob)
    assert bool((constrained.log_prob > free.log_prob).all())
    assert bool((constrained.entropy < free.entropy).all())


def test_scoring_text_outside_the_grammar_is_a_clear_error() -> None:
    looping = 'Action Plan: [DUAL_POINT] ; Action Decision: "lift_point": "lift_point"'
    policy = _policy(GRAMMAR)
    with pytest.raises(ValueError, match=r"agent\.constrained_decoding"):
        policy.score(_observations(1), [looping])
    assert torch.isfinite(policy.score(_observations(1), [looping], constrained=False).log_prob)
    # free scoring is exactly the grammar-less policy's, eos included (SFT on a long text)
    too_long = format_action(type_text("x" * (MAX_TYPED_CHARS + 1)), plan="")
    free = policy.score(_observations(1), [too_long], constrained=False)
    plain = _policy(None).score(_observations(1), [too_long])
    assert int(free.lengths[0]) == len(too_long) + 1  # the eos
    torch.testing.assert_close(free.log_prob, plain.log_prob)


def test_sentencepiece_vocabulary(tmp_path: Path) -> None:
    """The bootstrap's BPE vocabulary: multi-character pieces and byte fallback still spell it."""
    texts = [format_action(tap(i / 97, 1 - i / 97), plan="") for i in range(97)]
    texts += [format_action(type_text(w), plan="") for w in ("hotels", "Paris", "clock")]
    texts += [format_action(key(t), plan="") for t in KEYS]
    tok = SentencePieceTokenizer(train_tokenizer(texts, tmp_path / "sp", vocab_size=400))
    grammar = ActionGrammar(tok, tok.size + 20)
    unseen = (tap(0.1234, 0.9), type_text("unseen words, {braces}"), key(ActionType.PRESS_ENTER))
    for action in unseen:
        ids = [*tok.encode(format_action(action, plan="")), tok.eos_id]
        assert len(ids) < len(format_action(action, plan=""))  # real multi-character pieces
        assert grammar.matches(ids)
    assert not grammar.allowed[:, tok.size :].any()  # ids past the text vocabulary never


def test_each_state_knows_which_part_of_the_action_it_writes() -> None:
    """Walk canonical actions: the digits of a point are "coords", typed characters "text",
    the rest (plan, action type, the fixed format) "type"."""
    parts = dict(enumerate(PARTS))
    for action, chosen, part in (
        (tap(0.1234, 0.5678), "1234", "coords"),
        (type_text("hotels"), "hotels", "text"),
    ):
        text = format_action(action, plan="")
        ids = BYTE.encode(text)
        (walk,) = GRAMMAR.states_along([ids])
        written = [parts[int(GRAMMAR.part[s])] for s in walk]
        at = text.index(chosen)
        assert written[at : at + len(chosen)] == [part] * len(chosen)
        assert written[: text.index('"touch_point"')] == ["type"] * text.index('"touch_point"')
    assert part_of_prefix('"typed_text": "say \\"hi') == 2  # an escaped quote does not close
    assert part_of_prefix('"typed_text": "hi", x') == 0


def test_per_part_temperatures_sample_and_score_one_distribution() -> None:
    """Per-part temperatures: the behaviour log-prob of a sample is its teacher-forced score
    under the same per-part temperatures (both decoders), and the coordinates' temperature
    changes only what the coordinates cost."""
    obs = _observations(8, seed=4)
    for decoder in ("fast", "reference"):
        policy = _policy(GRAMMAR)
        policy.decoder = decoder
        policy.part_temperatures = {"type": 1.0, "coords": 0.3, "text": 1.5}
        out = policy.sample(obs, generator=torch.Generator().manual_seed(2))
        scores = policy.score(obs, out.texts)
        torch.testing.assert_close(scores.log_prob.detach(), out.log_probs, rtol=0, atol=1e-4)
    key_action = [format_action(key(ActionType.PRESS_HOME), plan="")] * 8
    a_tap = [format_action(tap(0.5, 0.5), plan="")] * 8
    policy = _policy(GRAMMAR)
    policy.part_temperatures = {"type": 1.0, "coords": 0.3, "text": 1.0}
    plain = _policy(GRAMMAR)
    plain.temperature = 1.0
    torch.testing.assert_close(policy.score(obs, key_action).log_prob,
                               plain.score(obs, key_action).log_prob)  # fmt: skip
    assert not torch.allclose(policy.score(obs, a_tap).log_prob, plain.score(obs, a_tap).log_prob)
