"""The tap-target pointer: its log-prob algebra, where it acts in the grammar, and a policy that
points and scores what it pointed at as the learner will (both decoders, both vocabularies)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from distrl_tasks.agents.autoui import build_tiny_model
from distrl_tasks.agents.checkpoint import load_checkpoint, save_checkpoint
from distrl_tasks.agents.grammar import TOUCH_MARK, grammar_for
from distrl_tasks.agents.pointer import (
    FEATURES,
    choice_targets,
    completion,
    goal_named_share,
    pointer_inputs,
    tap_entropy,
    tap_log_prob,
)
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.agents.shipped_base import SHIPPED_DIR
from distrl_tasks.agents.tokenizer import ByteTokenizer
from distrl_tasks.protocol.actions import ActionType, format_action, key, parse_action, swipe, tap
from distrl_tasks.protocol.observation import Observation, format_prompt, goal_of_prompt
from distrl_tasks.protocol.ui_dump import Element

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SEARCH = Element("Search", (0.1234, 0.5), True, (0.05, 0.8))
SETTINGS = Element("Settings", (0.7, 0.3), False, (0.06, 0.2))
ELEMENTS = (SEARCH, SETTINGS)


def test_tap_log_prob_is_the_marginal_over_pointing_and_writing() -> None:
    before = torch.tensor([-1.0, -1.0, -2.0])
    after = torch.tensor([-3.0, -3.0, -0.5])
    choice = torch.log(torch.tensor([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5], [0.2, 0.3, 0.5]]))
    matches = torch.tensor([[False, True], [False, False], [True, False]])
    at_touch = torch.tensor([True, True, False])
    got = tap_log_prob(before, after, choice, matches, at_touch)
    # row 0: p = e^-1 (0.5 e^-3 + 0.3); row 1: e^-1 * 0.5 e^-3; row 2 never reaches the point
    want = [
        -1.0 + math.log(0.5 * math.exp(-3.0) + 0.3),
        -1.0 + math.log(0.5) - 3.0,
        -2.5,
    ]
    assert got.tolist() == pytest.approx(want, abs=1e-6)


def test_tap_entropy_adds_the_choice_and_the_written_digits() -> None:
    choice = torch.log(torch.tensor([[0.25, 0.25, 0.5], [0.25, 0.25, 0.5]]))
    got = tap_entropy(
        torch.tensor([1.0, 1.0]), torch.tensor([2.0, 2.0]), choice, torch.tensor([True, False])
    )
    h = -(2 * 0.25 * math.log(0.25) + 0.5 * math.log(0.5))
    assert got.tolist() == pytest.approx([1.0 + h + 0.5 * 2.0, 3.0], abs=1e-6)


def test_choice_targets_smallest_box_holding_the_touch() -> None:
    big = Element("", (0.5, 0.5), False, (1.0, 1.0))
    assert choice_targets((big, SETTINGS), (0.71, 0.35)) == 1  # inside both: the smaller
    assert choice_targets((big, SETTINGS), (0.2, 0.2)) == 0
    assert choice_targets(ELEMENTS, (0.95, 0.95)) == 2  # no box: write
    assert choice_targets(ELEMENTS, None) is None


def test_completion_finishes_a_tap_on_the_centre() -> None:
    text = format_action(tap(0.1234, 0.5))
    assert text.endswith(TOUCH_MARK + completion(SEARCH))
    assert parse_action(text[: text.index(TOUCH_MARK)] + TOUCH_MARK + completion(SEARCH)) == (
        parse_action(text)
    )


@pytest.fixture(scope="module")
def shipped() -> tuple:
    return load_checkpoint(SHIPPED_DIR)


def _tiny() -> tuple:
    return build_tiny_model(64, seed=3), ByteTokenizer()


def test_grammar_marks_one_touch_state_that_no_piece_jumps(shipped: tuple) -> None:
    for model, tokenizer in (shipped, _tiny()):
        grammar = grammar_for(tokenizer, model.vocab_size)
        assert int(grammar.touch.sum()) == 1
        assert not grammar.touch_crossed
        prefix = format_action(tap(0.5, 0.5))
        head = prefix[: prefix.index(TOUCH_MARK) + len(TOUCH_MARK)]
        states = grammar.states_along([tokenizer.encode(head + '"')])[0]
        assert bool(grammar.touch[states[-1]])  # the state before the quote


def _observations(n: int, dim: int, which: str = "some") -> list[Observation]:
    """``which`` rows list the elements: "some" (two in three), "all" or "none"."""
    rng = np.random.default_rng(0)
    goals = ["open settings", "search for hotels", "turn on wifi"]
    return [
        Observation(
            format_prompt(goals[i % 3]),
            rng.standard_normal(dim).astype(np.float32),
            None,
            ELEMENTS if which == "all" or (which == "some" and i % 3) else (),
        )
        for i in range(n)
    ]


def _pointing_policy(model, tokenizer, decoder: str) -> AutoUIPolicy:
    model.add_pointer(0)
    torch.nn.init.zeros_(model.pointer_head.write.bias)  # point often, so both branches occur
    grammar = grammar_for(tokenizer, model.vocab_size)
    return AutoUIPolicy(
        model,
        tokenizer,
        temperature=1.0,
        max_new_tokens=400,
        grammar=grammar,
        decoder=decoder,
        goal_typing=True,  # the pointer works beside the typing rule
    )


@pytest.mark.parametrize("decoder", ["fast", "reference"])
@pytest.mark.parametrize("vocabulary", ["sentencepiece", "byte"])
def test_behaviour_log_probs_equal_the_learners_with_the_pointer(
    shipped: tuple, decoder: str, vocabulary: str
) -> None:
    model, tokenizer = load_checkpoint(SHIPPED_DIR) if vocabulary == "sentencepiece" else _tiny()
    policy = _pointing_policy(model, tokenizer, decoder)
    obs = _observations(48, model.image_dim)
    t = 1.0 if vocabulary == "sentencepiece" else 4.0  # a fresh tiny model rarely taps at 1
    out = policy.sample(obs, generator=torch.Generator().manual_seed(1), temperature=t)
    learner = policy.log_prob(obs, out.texts, temperature=t)
    torch.testing.assert_close(out.log_probs, learner, atol=1e-4, rtol=0)
    pointed = [
        t for t, o in zip(out.texts, obs, strict=True)
        if o.elements and any(t.endswith(TOUCH_MARK + completion(e)) for e in o.elements)
    ]  # fmt: skip
    if vocabulary == "sentencepiece":  # a fresh tiny model writes no taps at all
        assert pointed, "with an even prior some taps point at an element"
    assert all(parse_action(t).action_type is ActionType.DUAL_POINT for t in pointed)


def test_no_elements_leaves_the_policy_as_it_was(shipped: tuple) -> None:
    model, tokenizer = load_checkpoint(SHIPPED_DIR)
    grammar = grammar_for(tokenizer, model.vocab_size)
    plain = AutoUIPolicy(model, tokenizer, max_new_tokens=160, grammar=grammar)
    obs = _observations(6, model.image_dim, "none")
    before = plain.sample(obs, greedy=True)
    model.add_pointer(0)
    pointing = AutoUIPolicy(model, tokenizer, max_new_tokens=160, grammar=grammar)
    assert pointing.pointer
    after = pointing.sample(obs, greedy=True)
    assert after.texts == before.texts
    torch.testing.assert_close(after.log_probs, before.log_probs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("decoder", ["fast", "reference"])
def test_greedy_pointing_taps_the_best_element_centre(shipped: tuple, decoder: str) -> None:
    model, tokenizer = load_checkpoint(SHIPPED_DIR)
    policy = _pointing_policy(model, tokenizer, decoder)
    head = model.pointer_head
    torch.nn.init.constant_(head.write.bias, -50.0)  # never write coordinates
    torch.nn.init.zeros_(head.score.weight)
    torch.nn.init.zeros_(head.score.bias)  # equal scores: the argmax is the first element
    obs = _observations(6, model.image_dim, "all")
    taps = [parse_action(t) for t in policy.sample(obs, greedy=True).texts]
    taps = [a for a in taps if a.action_type is ActionType.DUAL_POINT]
    assert taps, "the shipped base taps on some of these goals"
    assert all(a.touch_point == SEARCH.point == a.lift_point for a in taps)


def test_a_saved_pointer_loads_with_the_checkpoint(tmp_path: Path) -> None:
    model, tokenizer = _tiny()
    model.add_pointer(7)
    save_checkpoint(model, tokenizer, tmp_path / "ckpt")
    loaded, _ = load_checkpoint(tmp_path / "ckpt")
    assert loaded.pointer_head is not None
    for a, b in zip(model.pointer_head.parameters(), loaded.pointer_head.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_pointer_loss_teaches_the_tapped_element_and_write_for_swipes() -> None:
    model, tokenizer = _tiny()
    policy = _pointing_policy(model, tokenizer, "fast")
    obs = _observations(3, model.image_dim, "all")
    actions = [
        format_action(tap(0.71, 0.31)),  # inside Settings: element 1
        format_action(swipe(0.8, 0.5, 0.2, 0.5)),  # a swipe: write
        format_action(tap(0.95, 0.95)),  # on no element: write
    ]
    loss = policy.pointer_loss(obs, actions)
    assert loss is not None
    ids, mask, feats = policy._encoder_inputs(obs)
    goals = [goal_of_prompt(o.prompt) for o in obs]
    inputs = pointer_inputs(tokenizer.encode, [o.elements for o in obs], goals, "cpu")
    logp = torch.log_softmax(
        model.choice_logits(model.encode(ids, mask, feats), mask, inputs).float(), -1
    )
    want = -(logp[0, 1] + logp[1, 2] + logp[2, 2]) / 3
    torch.testing.assert_close(loss, want)
    assert policy.pointer_loss(obs, [format_action(key(ActionType.PRESS_HOME))] * 3) is None


def test_supervised_terms_are_the_free_scores_and_the_pointer_loss_from_one_pass() -> None:
    model, tokenizer = _tiny()
    policy = _pointing_policy(model, tokenizer, "fast")
    obs = _observations(4, model.image_dim)
    actions = [format_action(tap(0.71, 0.31)), format_action(key(ActionType.PRESS_HOME))] * 2
    scores, pointing = policy.supervised_terms(obs, actions)
    free = policy.score(obs, actions, constrained=False)
    torch.testing.assert_close(scores.token_log_probs, free.token_log_probs)
    torch.testing.assert_close(pointing, policy.pointer_loss(obs, actions))


def test_supervised_training_teaches_the_head_and_leaves_the_token_model_as_without_it() -> None:
    """The pointer's loss reaches the head alone and its gradient is clipped on its own, so SFT
    with a head moves every other weight exactly as SFT without one (same seed and batches)."""
    from distrl_tasks.algorithms.sft import Demo, SFTSettings, train_sft

    rng = np.random.default_rng(1)
    demos = [
        Demo(
            format_prompt(["open settings", "turn on wifi"][i % 2]),
            rng.standard_normal(64).astype(np.float32),
            format_action(tap(0.71, 0.31) if i % 2 else key(ActionType.PRESS_HOME)),
            "x",
            elements=ELEMENTS,
        )
        for i in range(8)
    ]
    settings = SFTSettings(steps=6, batch_size=4, lr=3e-3, warmup_steps=1)
    plain, tokenizer = _tiny()
    pointing, _ = _tiny()
    pointing.add_pointer(0)
    head_before = [p.detach().clone() for p in pointing.pointer_head.parameters()]
    for model in (plain, pointing):
        train_sft(AutoUIPolicy(model, tokenizer, max_new_tokens=24), demos, settings, seed=2)
    shared = pointing.state_dict()
    for name, value in plain.state_dict().items():
        torch.testing.assert_close(shared[name], value, msg=name)
    moved = [
        not torch.equal(a, b)
        for a, b in zip(head_before, pointing.pointer_head.parameters(), strict=True)
    ]
    assert all(moved)


def test_fitting_the_pointer_alone_moves_the_head_only_and_lowers_its_held_out_loss() -> None:
    from distrl_tasks.algorithms.sft import Demo, SFTSettings, heldout_pointer_loss, train_sft

    rng = np.random.default_rng(1)
    goals = ["open settings", "search for hotels"]
    demos = [
        Demo(
            format_prompt(goals[i % 2]),
            rng.standard_normal(64).astype(np.float32),
            # "open settings" taps Settings, the search goal taps the search box
            format_action(tap(0.7, 0.3) if i % 2 == 0 else tap(0.1234, 0.5)),
            "x",
            elements=ELEMENTS,
        )
        for i in range(16)
    ] + [Demo(format_prompt("go home"), np.zeros(64, np.float32),
              format_action(key(ActionType.PRESS_HOME)), "x", elements=ELEMENTS)]  # fmt: skip
    model, tokenizer = _tiny()
    model.add_pointer(0)
    policy = AutoUIPolicy(model, tokenizer, max_new_tokens=24)
    others = {k: v.clone() for k, v in model.state_dict().items() if "pointer_head" not in k}
    before = heldout_pointer_loss(policy, demos)
    settings = SFTSettings(steps=60, batch_size=8, lr=3e-3, warmup_steps=1, eval_every=20)
    result = train_sft(policy, demos, settings, seed=0, heldout=demos, pointer_only=True)
    after = heldout_pointer_loss(policy, demos)
    assert [s for s, _ in result.heldout] == [20, 40, 60]
    assert after < 0.5 * before  # from the "write" prior towards the tapped elements
    for name, value in model.state_dict().items():
        if name in others:
            torch.testing.assert_close(value, others[name], msg=name)
    with pytest.raises(ValueError, match="pointer head"):
        plain, _ = _tiny()
        train_sft(AutoUIPolicy(plain, tokenizer), demos, settings, pointer_only=True)


def test_a_head_without_elements_samples_and_scores_as_a_model_without_it() -> None:
    """``agent.pointer: false`` with a base that carries the head: no row offers an element, so
    the draws and log-probs are those of the same weights without the head."""
    plain, tokenizer = _tiny()
    pointing, _ = _tiny()
    pointing.add_pointer(0)
    obs = _observations(12, plain.image_dim, "none")
    outs = []
    for model in (plain, pointing):
        policy = AutoUIPolicy(
            model, tokenizer, temperature=1.0, max_new_tokens=400,
            grammar=grammar_for(tokenizer, model.vocab_size),
        )  # fmt: skip
        sampled = policy.sample(obs, generator=torch.Generator().manual_seed(5))
        taps = [format_action(tap(0.1 * (i % 9), 0.5)) for i in range(len(obs))]
        outs.append((sampled.texts, sampled.log_probs, policy.log_prob(obs, taps)))
    assert outs[0][0] == outs[1][0]
    torch.testing.assert_close(outs[0][1], outs[1][1])
    torch.testing.assert_close(outs[0][2], outs[1][2])  # taps scored through the touch point


def test_goal_named_share_counts_the_labels_words_the_goal_holds() -> None:
    assert goal_named_share("Snapchat app", "Download the Snapchat app") == 1.0
    assert goal_named_share("WhatsApp", "Download the Snapchat app") == 0.0
    assert goal_named_share("PM", "Set alarm at 10pm") == 1.0  # letters and digits apart
    assert goal_named_share("AM", "Set an alarm for 10pm") == 0.0  # not inside "alarm"
    assert goal_named_share("Booking.com app", "Get Booking.com") == 2 / 3
    assert goal_named_share("+", "Set an alarm for 9am") == 0.0  # a label without words
    assert goal_named_share("", "anything") == 0.0


def test_pointer_inputs_carry_the_goal_named_share_and_reject_missing_goals() -> None:
    rows = [(Element("Snapchat", (0.2, 0.5), False), Element("WhatsApp", (0.3, 0.5), False)), ()]
    inputs = pointer_inputs(lambda s: [ord(c) % 50 for c in s], rows, ["Get Snapchat", "x"], "cpu")
    assert inputs.features.shape == (2, 2, FEATURES)
    assert inputs.features[0, :, -1].tolist() == [1.0, 0.0]
    assert inputs.present.tolist() == [[True, True], [False, False]]
    with pytest.raises(ValueError, match="1 goals for 2 rows"):
        pointer_inputs(lambda s: [1], rows, ["Get Snapchat"], "cpu")


def test_a_head_saved_before_the_goal_named_feature_loads_and_scores_as_before(
    tmp_path: Path,
) -> None:
    model, tokenizer = _tiny()
    policy = _pointing_policy(model, tokenizer, "fast")
    with torch.no_grad():
        model.pointer_head.features.weight[:, -1] = 0.0  # what the old head could not read
    save_checkpoint(model, tokenizer, tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    state["pointer_head.geometry.weight"] = state.pop("pointer_head.features.weight")[:, :5]
    state["pointer_head.geometry.bias"] = state.pop("pointer_head.features.bias")
    save_file({k: v.contiguous() for k, v in state.items()}, tmp_path / "model.safetensors")
    loaded, _ = load_checkpoint(tmp_path)
    assert loaded.pointer_head is not None
    torch.testing.assert_close(
        loaded.pointer_head.features.weight, model.pointer_head.features.weight
    )
    obs = _observations(3, model.image_dim, "all")  # "open settings" names an element
    actions = [format_action(tap(0.71, 0.31))] * 3
    again = AutoUIPolicy(loaded, tokenizer, grammar=policy.grammar, decoder="fast")
    torch.testing.assert_close(again.pointer_loss(obs, actions), policy.pointer_loss(obs, actions))
