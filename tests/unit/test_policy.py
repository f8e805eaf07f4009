"""Policy API: sampling with behaviour log-probs, teacher-forced scoring, batching, building."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
from pathlib import Path

import numpy as np
import pytest
import sentencepiece as spm
import torch
from safetensors.torch import save_file
from transformers import T5Config

from distrl_tasks.agents.autoui import AutoUIModel, build_tiny_model
from distrl_tasks.agents.policy import AutoUIPolicy, Observation, build_policy, format_prompt
from distrl_tasks.agents.tokenizer import ByteTokenizer
from distrl_tasks.config import AgentConfig, load_config
from distrl_tasks.protocol.actions import ActionType, format_action, key, tap, type_text

GOALS = Path(__file__).parents[2] / "distrl_tasks" / "tasks" / "aitw" / "general_train.txt"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def observations(n: int, dim: int = 1408, seed: int = 0) -> list[Observation]:
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


def tiny_policy(**kwargs) -> AutoUIPolicy:
    kwargs.setdefault("max_new_tokens", 24)
    return AutoUIPolicy(build_tiny_model(seed=0).eval(), ByteTokenizer(), **kwargs)


def test_format_prompt() -> None:
    assert format_prompt("Open the clock") == "Previous Actions:  Goal: Open the clock"
    assert format_prompt("g", ["a", "b"]) == "Previous Actions: b Goal: g"
    assert format_prompt("g", ["a", "b"], history=2) == "Previous Actions: a b Goal: g"
    assert format_prompt("g", ["a"], history=0) == "Previous Actions:  Goal: g"


@pytest.mark.parametrize("temperature", [1.0, 1.5])
def test_log_prob_of_sampled_actions_equals_behaviour_log_prob(temperature: float) -> None:
    policy = tiny_policy(temperature=temperature)
    obs = observations(5)
    gen = torch.Generator().manual_seed(11)
    sample = policy.sample(obs, generator=gen)
    assert all(sample.canonical)
    assert [policy.tokenizer.decode(ids) for ids in sample.token_ids] == sample.texts
    # Some rows stop early with eos, some run into the budget: both cases are covered.
    lengths = {len(ids) for ids in sample.token_ids}
    assert len(lengths) > 1 and max(lengths) <= 24
    recomputed = policy.log_prob(obs, sample.texts)
    torch.testing.assert_close(recomputed.detach(), sample.log_probs, rtol=0, atol=1e-4)
    assert torch.all(sample.log_probs < 0)
    other = policy.log_prob(obs, sample.texts, temperature=temperature * 2)
    assert (other.detach() - sample.log_probs).abs().max() > 1e-2


def test_sampling_is_reproducible_with_a_generator() -> None:
    policy = tiny_policy(temperature=1.5)
    obs = observations(3)
    a = policy.act(obs, generator=torch.Generator().manual_seed(5))
    b = policy.act(obs, generator=torch.Generator().manual_seed(5))
    c = policy.act(obs, generator=torch.Generator().manual_seed(6))
    assert a[0] == b[0] and torch.equal(a[1], b[1])
    assert a[0] != c[0]


def test_greedy_is_deterministic_and_batching_pads_correctly() -> None:
    policy = tiny_policy()
    obs = observations(4)  # prompts of different lengths: the batch is padded
    texts, logp = policy.act(obs, greedy=True)
    again, logp2 = policy.act(obs, greedy=True)
    assert texts == again and torch.equal(logp, logp2)
    singles = [policy.act([o], greedy=True) for o in obs]
    assert [s[0][0] for s in singles] == texts
    torch.testing.assert_close(torch.cat([s[1] for s in singles]), logp, rtol=0, atol=1e-4)
    # Teacher forcing with padded targets of different lengths equals one-by-one scoring.
    actions = ["a", format_action(tap(0.1, 0.9))[:30], "", "PRESS_BACK"]
    batch = policy.log_prob(obs, actions).detach()
    one = torch.cat([policy.log_prob([o], [a]).detach() for o, a in zip(obs, actions, strict=True)])
    torch.testing.assert_close(batch, one, rtol=0, atol=1e-4)


def test_features_as_numpy_or_tensor_agree() -> None:
    policy = tiny_policy()
    obs = observations(2)
    as_tensor = [Observation(o.prompt, torch.from_numpy(o.image_features)) for o in obs]
    lp_np = policy.log_prob(obs, ["PRESS_HOME", "PRESS_BACK"]).detach()
    lp_t = policy.log_prob(as_tensor, ["PRESS_HOME", "PRESS_BACK"]).detach()
    assert torch.equal(lp_np, lp_t)


def test_one_token_budget_gives_a_normalised_distribution() -> None:
    # With max_new_tokens=1 the possible outputs are "" (eos) and each printable character,
    # so their probabilities must sum to 1 under the temperature-adjusted, masked softmax.
    policy = tiny_policy(max_new_tokens=1, temperature=0.8)
    obs = observations(1)
    actions = [""] + [chr(c) for c in range(0x20, 0x7F)]
    logp = policy.log_prob(obs * len(actions), actions).detach()
    assert float(logp.exp().sum()) == pytest.approx(1.0, abs=1e-4)
    texts, sampled = policy.act(obs * 4, generator=torch.Generator().manual_seed(0))
    for text, lp in zip(texts, sampled, strict=True):
        assert float(lp) == pytest.approx(float(logp[actions.index(text)]), abs=1e-5)


def test_prompts_are_left_truncated() -> None:
    policy = tiny_policy(max_prompt_tokens=40)
    feats = observations(1)[0].image_features
    goal = "Goal: Open the clock app now"
    long = Observation("Previous Actions: " + "x" * 300 + " " + goal, feats)
    kept = Observation(long.prompt[-39:], feats)  # 39 bytes + eos = 40 tokens
    other = Observation(long.prompt[-38:], feats)
    lp = policy.log_prob([long, kept, other], ["PRESS_HOME"] * 3).detach()
    assert float(lp[0]) == pytest.approx(float(lp[1]), abs=1e-6)
    assert abs(float(lp[0]) - float(lp[2])) > 1e-6


def test_log_prob_has_gradient_and_entropy() -> None:
    policy = tiny_policy()
    obs = observations(2)
    scores = policy.score(obs, ["PRESS_HOME", "abc"])
    assert scores.lengths.tolist() == [11, 4]
    assert torch.all(scores.entropy > 0)
    assert torch.all(scores.entropy <= scores.lengths * np.log(96) + 1e-4)
    (-scores.log_prob.sum()).backward()
    grads = [p.grad for p in policy.model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert policy.model.image_dense.weight.grad.abs().sum() > 0


def test_supervised_steps_teach_image_dependent_actions() -> None:
    # A few Adam steps on log_prob make greedy decoding reproduce the target for each screen,
    # which needs the image pathway (the prompts are identical).
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=384,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_heads=4,
        dropout_rate=0.0,
        decoder_start_token_id=0,
    )
    policy = AutoUIPolicy(AutoUIModel(config, image_dim=8), ByteTokenizer(), max_new_tokens=16)
    eye = np.eye(8, dtype=np.float16)
    obs = [Observation("Goal: go", eye[0]), Observation("Goal: go", eye[1])]
    targets = ["PRESS_HOME", "PRESS_BACK"]
    opt = torch.optim.Adam(policy.model.parameters(), lr=3e-3)
    for _ in range(150):
        opt.zero_grad()
        loss = -policy.log_prob(obs, targets).mean()
        loss.backward()
        opt.step()
    texts, _ = policy.act(obs, greedy=True)
    assert texts == targets


def test_bad_inputs_are_named() -> None:
    policy = tiny_policy()
    obs = observations(2)
    with pytest.raises(
        ValueError, match=r"observation 1: image_features must have shape \(1408,\)"
    ):
        policy.act([obs[0], Observation("p", np.zeros(10, np.float16))])
    with pytest.raises(ValueError, match="2 observations but 1 actions"):
        policy.log_prob(obs, ["a"])
    with pytest.raises(ValueError, match="action 1 contains tokens the policy cannot generate"):
        policy.log_prob(obs, ["ok", "café"])
    with pytest.raises(ValueError, match="must not be empty"):
        policy.act([])
    with pytest.raises(TypeError, match="expected Observation"):
        policy.act(["prompt"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="temperature must be > 0"):
        policy.act(obs, temperature=0.0)


# ----- build_policy ---------------------------------------------------------------------------
def test_build_policy_tiny_and_checkpoint_roundtrip(tmp_path: Path) -> None:
    cfg = AgentConfig(temperature=0.9, max_new_tokens=20, max_prompt_tokens=64)
    policy = build_policy(cfg, seed=3)
    assert (policy.temperature, policy.max_new_tokens, policy.max_prompt_tokens) == (0.9, 20, 64)
    assert policy.model.image_dim == 1408
    obs = observations(2)
    policy.save(tmp_path / "ck", {"round": 1})
    loaded = build_policy(dataclasses.replace(cfg, checkpoint_dir=str(tmp_path / "ck")))
    want = policy.act(obs, greedy=True)
    got = loaded.act(obs, greedy=True)
    assert got[0] == want[0]
    torch.testing.assert_close(got[1], want[1])


def test_build_policy_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="autoui-base' needs a local Auto-UI-Base"):
        build_policy(AgentConfig(model="autoui-base"))
    # A checkpoint made for 16-d features cannot take the small encoder's 1408-d ones.
    AutoUIPolicy(build_tiny_model(image_dim=16), ByteTokenizer()).save(tmp_path / "ck16")
    with pytest.raises(ValueError, match="expects 16-d image features"):
        build_policy(AgentConfig(checkpoint_dir=str(tmp_path / "ck16")))


def test_a_truncated_weights_file_is_named_in_the_error(tmp_path: Path) -> None:
    policy = build_policy(AgentConfig(), seed=0)
    policy.save(tmp_path / "ck")
    weights = tmp_path / "ck" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # a copy cut short
    with pytest.raises(ValueError, match="unreadable safetensors file") as err:
        build_policy(AgentConfig(checkpoint_dir=str(tmp_path / "ck")))
    assert str(weights) in str(err.value)


def test_build_policy_warns_when_a_tap_does_not_fit_the_budget(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A byte-level tap is 160 tokens with eos: a smaller budget only ever writes cut-off taps."""
    free = {"constrained_decoding": False}
    with caplog.at_level("WARNING", logger="distrl_tasks.agents.policy"):
        build_policy(AgentConfig(max_new_tokens=159, **free))
    assert "agent.max_new_tokens=159 is below the 160 byte tokens" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="distrl_tasks.agents.policy"):
        build_policy(AgentConfig(max_new_tokens=160, **free))
    assert caplog.text == ""


def test_goal_typing_and_the_pointer_are_on_by_default_and_ride_on_the_grammar() -> None:
    """agent.goal_typing and agent.pointer (default true) live on the grammar; free decoding and
    the VLM have none, so the same defaults load for them without either."""
    default = build_policy(AgentConfig(), seed=0)
    assert default.goal_typing is not None and default.pointer
    assert AgentConfig().tap_elements == AgentConfig().pointer_elements
    assert build_policy(AgentConfig(goal_typing=False), seed=0).goal_typing is None
    assert not build_policy(AgentConfig(pointer=False), seed=0).pointer
    free = build_policy(AgentConfig(constrained_decoding=False), seed=0)
    assert free.grammar is None and free.goal_typing is None and not free.pointer
    assert AgentConfig(constrained_decoding=False).tap_elements == 0  # no elements dumped
    vlm = load_config(None, {"agent.model": "vlm", "agent.vlm_base_dir": "/x"})
    assert vlm.agent.goal_typing and vlm.agent.pointer  # validates, nothing to narrow or point
    assert vlm.agent.model == "vlm" and not vlm.agent.points and vlm.agent.tap_elements == 0


def test_autoui_base_checkpoint_with_sentencepiece(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """End to end through the Auto-UI-Base layout: config.json, model.safetensors, spiece.model."""
    root = tmp_path / "Auto-UI-Base"
    root.mkdir()
    lines = GOALS.read_text().splitlines()[:150]
    lines += [format_action(tap(i / 150, 1 - i / 150)) for i in range(150)]
    # every character the action format uses, as a real T5 vocabulary has them
    lines += [format_action(key(t)) for t in ActionType if t.value.startswith(("PRESS", "ST"))]
    lines += [format_action(key(ActionType.TASK_IMPOSSIBLE)), format_action(type_text("a"))]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buf,
        vocab_size=250,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        minloglevel=2,
    )
    (root / "spiece.model").write_bytes(buf.getvalue())
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=350,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        dropout_rate=0.0,
        decoder_start_token_id=0,
    )
    model = AutoUIModel(config, image_dim=1408)
    raw = model.config.to_dict()
    raw.update(tie_word_embeddings=False)
    (root / "config.json").write_text(json.dumps(raw))
    save_file(
        {k: v.clone() for k, v in model.state_dict().items()}, str(root / "model.safetensors")
    )
    cfg = AgentConfig(model="autoui-base", checkpoint_dir=str(root), max_new_tokens=12)
    with caplog.at_level(logging.WARNING, logger="distrl_tasks.agents.policy"):
        policy = build_policy(cfg)
    # the pointer (on by default) acts only where one grammar state marks a tap's touch point;
    # a vocabulary whose pieces cross it still loads, writing taps as coordinates, and says so
    crossed = policy.grammar is not None and policy.grammar.touch_crossed
    assert policy.pointer is not crossed
    assert ("no single place to point" in caplog.text) is crossed
    obs = observations(6)
    sample = policy.sample(obs, temperature=2.0, generator=torch.Generator().manual_seed(1))
    pairs = zip(sample.texts, sample.token_ids, strict=True)
    assert all(text == policy.tokenizer.decode(ids) for text, ids in pairs)
    recomputed = policy.log_prob(obs, sample.texts, temperature=2.0).detach()
    torch.testing.assert_close(recomputed, sample.log_probs, rtol=0, atol=1e-4)
    assert all(i < 250 for ids in sample.token_ids for i in ids)  # no sentinel ids
    # Hot sampling from an untrained model yields segmentations sentencepiece would not choose;
    # those rows are scored on the canonical ids, which is what keeps the equality above.
    assert not all(sample.canonical)
