"""The fast decoding path equals the reference one: logits, greedy outputs, behaviour log-probs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import T5Config

from distrl_tasks.agents.autoui import AutoUIModel, build_tiny_model, tiny_t5_config
from distrl_tasks.agents.fast_decoder import DecoderRun
from distrl_tasks.agents.goal_typing import GoalTyping
from distrl_tasks.agents.grammar import ActionGrammar, grammar_for
from distrl_tasks.agents.policy import AutoUIPolicy, Observation, format_prompt
from distrl_tasks.agents.tokenizer import ByteTokenizer, SentencePieceTokenizer
from distrl_tasks.algorithms.sft import train_tokenizer
from distrl_tasks.protocol.actions import ActionType, format_action, key, swipe, tap, type_text

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GOALS = Path(__file__).parents[2] / "distrl_tasks" / "tasks" / "aitw" / "general_train.txt"
BYTE = ByteTokenizer()


def _observations(n: int, dim: int = 1408, seed: int = 0) -> list[Observation]:
    rng = np.random.default_rng(seed)
    goals = GOALS.read_text().splitlines()
    prev = ["", format_action(key(ActionType.PRESS_HOME)), format_action(tap(0.5, 0.25))]
    return [
        Observation(
            format_prompt(goals[i], [prev[i % 3]] if prev[i % 3] else []),
            rng.standard_normal(dim).astype(np.float16),
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def sentencepiece(tmp_path_factory: pytest.TempPathFactory) -> SentencePieceTokenizer:
    """A bootstrap-style BPE vocabulary (the demo's tokenizer kind) fitted to actions and goals."""
    texts = [format_action(tap(i / 97, 1 - i / 97)) for i in range(97)]
    texts += [format_action(swipe(0.8, 0.5, 0.2, 0.5)), format_action(type_text("hotels"))]
    texts += [format_action(key(t)) for t in ActionType if t.value.startswith(("PRESS", "ST"))]
    texts += [format_action(key(ActionType.TASK_IMPOSSIBLE))]
    texts += GOALS.read_text().splitlines()[:200]
    path = train_tokenizer(texts, tmp_path_factory.mktemp("sp"), vocab_size=400)
    return SentencePieceTokenizer(path)


def _pair(model: AutoUIModel, tokenizer, grammar: bool, budget: int) -> dict[str, AutoUIPolicy]:
    g = grammar_for(tokenizer, model.vocab_size) if grammar else None
    return {
        d: AutoUIPolicy(model, tokenizer, max_new_tokens=budget, grammar=g, decoder=d)
        for d in ("reference", "fast")
    }


@pytest.mark.parametrize("copy", ["span", True, False])
def test_ragged_calls_give_the_teacher_forced_logits(copy: bool | str) -> None:
    """Rows fed 1..4 tokens per call, at their own positions, read the full-sequence logits."""
    torch.manual_seed(0)
    low = 3
    if copy == "span":
        model = AutoUIModel(tiny_t5_config(384, copy_span=True), image_dim=16).eval()
        model.set_piece_kinds(torch.randint(0, 3, (384,)))
        with torch.no_grad():  # away from the priors, so a wrong feature shows in the logits
            model.copy_start_bias.copy_(torch.tensor([-1.5, 0.7, -0.4]))
            model.copy_cover_bias.fill_(-3.0)
        low = 370  # few distinct ids: runs, repeats and covered positions are common
    elif copy:
        model = AutoUIModel(tiny_t5_config(384, copy=True), image_dim=16).eval()
    else:  # the Auto-UI-Base layout: gated-GELU, untied head, no copy head
        config = T5Config(
            vocab_size=384,
            d_model=64,
            d_kv=16,
            d_ff=96,
            num_layers=2,
            num_heads=4,
            feed_forward_proj="gated-gelu",
            tie_word_embeddings=False,
            dropout_rate=0.0,
            decoder_start_token_id=0,
        )
        model = AutoUIModel(config, image_dim=16).eval()
    batch, length, steps = 4, 20, 12
    source = torch.randint(low, 384, (batch, length))
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[1, 15:] = 0
    mask[2, 9:] = 0
    with torch.inference_mode():
        states = model.encode(source, mask, torch.randn(batch, 16))
        labels = torch.randint(low, 384, (batch, steps))
        inputs = model.shift_right(labels)
        want, _ = model.decode(inputs, states, mask, source_ids=source)
        run = DecoderRun(model, states, mask, source, steps)
        fed = torch.zeros(batch, dtype=torch.long)
        schedule = [[3, 1, 2, 4], [1, 4, 2, 0], [4, 3, 4, 4], [4, 4, 4, 4]]
        for sizes in schedule:
            lengths = torch.tensor(sizes).clamp(max=steps - fed)
            width = int(lengths.max())
            cols = (fed[:, None] + torch.arange(width)).clamp(max=steps - 1)
            got = run.step(inputs.gather(1, cols), fed, lengths)
            for b in range(batch):
                n = int(lengths[b])
                torch.testing.assert_close(
                    got[b, :n], want[b, fed[b] : fed[b] + n], rtol=0, atol=2e-5
                )
            fed += lengths
        assert fed.tolist() == [steps] * batch


@pytest.mark.parametrize("vocabulary", ["byte", "sentencepiece"])
@pytest.mark.parametrize("grammar", [True, False])
def test_greedy_outputs_are_the_reference_ones(
    vocabulary: str, grammar: bool, sentencepiece: SentencePieceTokenizer
) -> None:
    tokenizer = BYTE if vocabulary == "byte" else sentencepiece
    model = build_tiny_model(vocab_size=max(384, tokenizer.size), seed=1).eval()
    # whole actions under the grammar; free text (rarely ends) with a short budget
    budget = (200 if vocabulary == "byte" else 80) if grammar else 40
    policies = _pair(model, tokenizer, grammar, budget)
    obs = _observations(6)
    ref = policies["reference"].sample(obs, greedy=True, temperature=0.7)
    fast = policies["fast"].sample(obs, greedy=True, temperature=0.7)
    assert fast.texts == ref.texts
    assert fast.token_ids == ref.token_ids
    # free text: tens of nats per action, so float32 rounding is relative (see below)
    rtol = 0 if grammar else 1e-6
    torch.testing.assert_close(fast.log_probs, ref.log_probs, rtol=rtol, atol=1e-5)


@pytest.mark.parametrize("vocabulary", ["byte", "sentencepiece"])
@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_behaviour_log_probs_equal_teacher_forced_ones(
    vocabulary: str, temperature: float, sentencepiece: SentencePieceTokenizer
) -> None:
    """The fast path's behaviour log-probs (from the sampling loop for canonical rows) are what
    the learner recomputes from the action text, to 1e-5, grammar on."""
    tokenizer = BYTE if vocabulary == "byte" else sentencepiece
    model = build_tiny_model(vocab_size=max(384, tokenizer.size), seed=2).eval()
    policy = _pair(model, tokenizer, True, 200 if vocabulary == "byte" else 80)["fast"]
    obs = _observations(9, seed=3)
    out = policy.sample(obs, temperature=temperature, generator=torch.Generator().manual_seed(4))
    assert [tokenizer.decode(ids) for ids in out.token_ids] == out.texts
    assert all(policy.grammar.matches(ids) for ids in out.token_ids)
    again = policy.log_prob(obs, out.texts, temperature=temperature).detach()
    # sums reach ~-130 nats with the copy head's match bias, where one float32 ulp is 1.5e-5
    torch.testing.assert_close(out.log_probs, again, rtol=1e-6, atol=1e-5)
    assert bool((out.log_probs < 0).all())


def test_span_scores_keep_the_fast_path_equal(sentencepiece: SentencePieceTokenizer) -> None:
    """A copy_span model, its start kinds from the tokenizer: greedy outputs are the reference
    loop's, and sampled behaviour log-probs are what the learner recomputes."""
    model = build_tiny_model(vocab_size=max(384, sentencepiece.size), seed=3, copy_span=True)
    with torch.no_grad():
        model.copy_start_bias.copy_(torch.tensor([-1.5, 0.7, -0.4]))
    policies = _pair(model.eval(), sentencepiece, True, 80)
    assert int(model.copy_piece_kinds.min()) == 0 and int(model.copy_piece_kinds.max()) == 2
    obs = _observations(6, seed=5)
    ref = policies["reference"].sample(obs, greedy=True)
    fast = policies["fast"].sample(obs, greedy=True)
    assert fast.token_ids == ref.token_ids
    out = policies["fast"].sample(obs, temperature=1.0, generator=torch.Generator().manual_seed(1))
    again = policies["fast"].log_prob(obs, out.texts, temperature=1.0).detach()
    torch.testing.assert_close(out.log_probs, again, rtol=1e-6, atol=1e-5)


def test_free_decoding_log_probs_and_budget() -> None:
    model = build_tiny_model(seed=0).eval()
    policy = _pair(model, BYTE, False, 24)["fast"]
    obs = _observations(6)
    out = policy.sample(obs, temperature=1.5, generator=torch.Generator().manual_seed(0))
    assert max(len(ids) for ids in out.token_ids) <= 24
    assert len({len(ids) for ids in out.token_ids}) > 1  # some end with eos, some at the budget
    again = policy.log_prob(obs, out.texts, temperature=1.5).detach()
    # free text sums 24 costly tokens (about -100 nats, where one float32 ulp is 7.6e-6): the
    # two kernels agree to float32 rounding, i.e. relatively
    torch.testing.assert_close(out.log_probs, again, rtol=1e-6, atol=1e-5)


def test_speculative_drafts_keep_the_sampling_distribution(
    sentencepiece: SentencePieceTokenizer,
) -> None:
    """Where the draft competes with other spellings, its acceptance (probability p(draft)) and
    the residual draw keep every id's probability: the fast and reference loops' frequencies of
    the decoded prefix agree on 400 draws each (4 standard errors)."""
    model = build_tiny_model(vocab_size=max(384, sentencepiece.size), seed=5).eval()
    policies = _pair(model, sentencepiece, True, 4)
    obs = _observations(1) * 400
    counts = {}
    for name, policy in policies.items():
        out = policy.sample(obs, temperature=3.0, generator=torch.Generator().manual_seed(7))
        first = [tuple(ids[:2]) for ids in out.token_ids]
        counts[name] = {k: first.count(k) / len(first) for k in set(first)}
    keys = set(counts["fast"]) | set(counts["reference"])
    assert len(keys) > 3  # a real choice among spellings
    for k in keys:
        p, q = counts["fast"].get(k, 0.0), counts["reference"].get(k, 0.0)
        se = max(np.sqrt(max(p, q) * (1 - max(p, q)) / 400), 1 / 400)
        assert abs(p - q) <= 4 * np.sqrt(2) * se, (k, p, q)


def test_grammar_tables_agree_with_the_automaton(sentencepiece: SentencePieceTokenizer) -> None:
    for tokenizer in (BYTE, sentencepiece):
        grammar = ActionGrammar(tokenizer, max(384, tokenizer.size))
        assert grammar.dense
        gen = torch.Generator().manual_seed(0)
        states = torch.randint(0, grammar.num_states, (2000,), generator=gen)
        tokens = torch.randint(0, grammar.allowed.shape[1], (2000,), generator=gen)
        torch.testing.assert_close(
            grammar.step(states, tokens), grammar.step_sparse(states, tokens)
        )
        for s in range(grammar.num_states):  # every draft walks inside the grammar
            n = int(grammar.draft_len[s])
            walk = grammar.draft_states[s, : n + 1].tolist()
            for j, token in enumerate(grammar.draft_tokens[s, :n].tolist()):
                assert bool(grammar.allowed[walk[j], token])
        start = grammar.draft_tokens[grammar.initial, : grammar.draft_len[grammar.initial]]
        assert tokenizer.decode(start.tolist()).endswith("Action Plan: [")
    # byte drafts are exactly the forced bytes: each the only id its state allows
    byte = ActionGrammar(BYTE, 384)
    forced = byte.allowed.sum(-1) == 1
    for s in torch.nonzero(byte.draft_len > 0).flatten().tolist()[:200]:
        assert bool(forced[s])
    assert grammar_for(BYTE, 384) is grammar_for(ByteTokenizer(), 384)
    assert grammar_for(sentencepiece, 420) is not grammar_for(sentencepiece, 400)


def test_bad_decoder_name() -> None:
    with pytest.raises(ValueError, match="decoder must be one of"):
        AutoUIPolicy(build_tiny_model(seed=0), BYTE, decoder="turbo")


def _rule_breaks(policy: AutoUIPolicy, rows: list[list[int]], goals: list[str]) -> int:
    """Typed-text ids outside what both the grammar and the goal-typing rule allow, where the
    two allow something (where they do not, the rule gives way to the grammar: a full field)."""
    grammar, rule = (
        policy.grammar,
        GoalTyping(policy.tokenizer.piece_texts(policy.model.vocab_size)),
    )
    breaks = 0
    for ids, walk, goal in zip(rows, grammar.states_along(rows), goals, strict=True):
        typed = ""
        for token, state in zip(ids, walk, strict=True):
            if grammar.in_text[state]:
                both = grammar.allowed[state] & rule.mask(goal, typed)
                breaks += bool(both.any()) and not bool(both[token])
                typed += rule.texts[token]
    return breaks


def test_goal_typing_keeps_the_fast_path_equal_and_types_goal_words(
    sentencepiece: SentencePieceTokenizer,
) -> None:
    """With agent.goal_typing the two loops still agree (greedy ids, behaviour log-probs = the
    learner's teacher-forced ones), and neither loop writes a typed-text id the rule forbids;
    without the rule the same draws do."""
    model = build_tiny_model(vocab_size=max(384, sentencepiece.size), seed=6).eval()
    grammar = grammar_for(sentencepiece, model.vocab_size)
    ruled = {
        d: AutoUIPolicy(
            model, sentencepiece, max_new_tokens=200, grammar=grammar, decoder=d, goal_typing=True
        )
        for d in ("reference", "fast")
    }
    free = AutoUIPolicy(model, sentencepiece, max_new_tokens=200, grammar=grammar)
    obs = _observations(8, seed=7) * 4
    goals = [o.prompt.rpartition(" Goal: ")[2] for o in obs]
    ref = ruled["reference"].sample(obs[:8], greedy=True)
    fast = ruled["fast"].sample(obs[:8], greedy=True)
    assert fast.token_ids == ref.token_ids
    torch.testing.assert_close(fast.log_probs, ref.log_probs, rtol=0, atol=1e-5)

    broken = {}
    for name, policy in (
        ("fast", ruled["fast"]),
        ("reference", ruled["reference"]),
        ("free", free),
    ):
        # a hot action type, so that an untrained model types often (per-part temperatures,
        # which the learner's re-scoring uses too)
        policy.part_temperatures = {"type": 30.0, "coords": 1.0, "text": 2.0}
        out = policy.sample(obs, generator=torch.Generator().manual_seed(2))
        typed = sum('"action_type": "TYPE"' in t for t in out.texts)
        assert typed >= 2  # enough typed text to judge the rule by
        broken[name] = _rule_breaks(policy, out.token_ids, goals)
        again = policy.log_prob(obs, out.texts).detach()
        torch.testing.assert_close(out.log_probs, again, rtol=1e-6, atol=1e-5)
        if name == "fast":  # the learner scores the typed text under the rule, too
            free.part_temperatures = policy.part_temperatures
            unruled = free.log_prob(obs, out.texts).detach()
            typing_rows = torch.tensor(['"action_type": "TYPE"' in t for t in out.texts])
            assert bool((again[typing_rows] > unruled[typing_rows] + 0.1).all())
            torch.testing.assert_close(again[~typing_rows], unruled[~typing_rows])
    assert broken["fast"] == broken["reference"] == 0 and broken["free"] > 0, broken


def test_goal_typing_needs_the_grammar(sentencepiece: SentencePieceTokenizer) -> None:
    with pytest.raises(ValueError, match="goal_typing needs the grammar"):
        AutoUIPolicy(build_tiny_model(seed=0), BYTE, goal_typing=True)
