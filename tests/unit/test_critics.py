"""Critics (double step critic, instruction critic) and their frozen, cached text encoders."""

from __future__ import annotations

import json
import math

import pytest
import torch

from distrl_tasks.agents.critics import (
    InstructionCritic,
    StepCritic,
    trainable_parameters,
    weighted_bce,
)
from distrl_tasks.agents.text_encoders import HashedTextEncoder, build_text_encoder

torch.set_num_threads(1)


# --- text encoders --------------------------------------------------------------------------


def test_hashed_encoder_is_deterministic_normalised_and_cached():
    enc = build_text_encoder("hashed", dim=64)
    goals = ["Set an alarm for 6pm", "Set an alarm for 7pm", "Open the clock"]
    a = enc.encode(goals)
    assert a.shape == (3, 64) and torch.allclose(a.norm(dim=1), torch.ones(3))
    assert torch.equal(a, HashedTextEncoder(64).encode(goals))  # same in a fresh encoder
    assert a[0] @ a[1] > a[0] @ a[2]  # near-identical goals are closer
    assert len(enc._cache) == 3
    enc.encode(["Open the clock"])
    assert len(enc._cache) == 3  # served from the cache
    assert enc.encode([]).shape == (0, 64)
    with pytest.raises(TypeError, match="text 0"):
        enc.encode([3])
    with pytest.raises(ValueError, match="unknown text encoder"):
        build_text_encoder("bert")  # type: ignore[arg-type]


def test_minilm_loads_offline_from_the_package():
    enc = build_text_encoder("minilm")
    assert enc.dim == 384 and not trainable_parameters(enc)  # frozen
    v = enc.encode(["Set an alarm for 6pm", "Set an alarm for 7pm", "What's the news in India?"])
    assert torch.allclose(v.norm(dim=1), torch.ones(3), atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2


def test_roberta_from_a_local_directory(tmp_path):
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    # Byte-level BPE shows each byte as a printable character: printable Latin-1 bytes as
    # themselves, the rest shifted past 255. With no merges every character is one token.
    keep = [*range(33, 127), *range(161, 173), *range(174, 256)]
    shifted = [b for b in range(256) if b not in keep]
    chars = [chr(b) for b in keep] + [chr(256 + i) for i in range(len(shifted))]
    vocab = {t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", "<mask>", *chars])}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    tok = RobertaTokenizerFast(
        vocab_file=str(tmp_path / "vocab.json"), merges_file=str(tmp_path / "merges.txt")
    )
    cfg = RobertaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=140,
    )
    torch.manual_seed(0)
    RobertaModel(cfg).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    enc = build_text_encoder("roberta", path=str(tmp_path))
    out = enc.encode(["Open the clock", "Open Chrome"])
    assert out.shape == (2, 16) and torch.isfinite(out).all()
    assert torch.equal(out, enc.encode(["Open the clock", "Open Chrome"]))
    with pytest.raises(ValueError, match=r"no config\.json"):
        build_text_encoder("roberta", path=str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="local model directory"):
        build_text_encoder("roberta")


# --- critics --------------------------------------------------------------------------------


def test_weighted_bce_hand_computed():
    logits = torch.tensor([0.0, math.log(3.0)])  # p = 0.5, 0.75
    targets = torch.tensor([1.0, 0.0])
    # BCE = [ln 2, -ln(1 - 0.75)] = [ln 2, ln 4]
    assert weighted_bce(logits, targets).item() == pytest.approx((math.log(2) + math.log(4)) / 2)
    w = torch.tensor([2.0, 0.5])
    want = (2 * math.log(2) + 0.5 * math.log(4)) / 2
    assert weighted_bce(logits, targets, w).item() == pytest.approx(want)
    two_heads = torch.tensor([[0.0, 0.0], [math.log(3.0), 0.0]])
    want = (math.log(2) + (math.log(4) + math.log(2)) / 2) / 2  # heads averaged, then rows
    assert weighted_bce(two_heads, targets).item() == pytest.approx(want)
    assert weighted_bce(torch.zeros(0, 2), torch.zeros(0)).item() == 0.0


def test_step_critic_value_is_min_of_heads_and_input_is_text_plus_two_frames():
    torch.manual_seed(0)
    critic = StepCritic(HashedTextEncoder(8), image_dim=4, hidden=16)
    assert critic.heads[0][0].normalized_shape == (8 + 2 * 4,)
    prev, cur = torch.randn(3, 4), torch.randn(3, 4)
    prompts = ["a", "b", "c"]
    logits = critic(prompts, prev, cur)
    assert logits.shape == (3, 2)
    assert torch.allclose(
        critic.values(prompts, prev, cur), torch.sigmoid(logits).min(dim=1).values
    )
    # the previous frame matters (two stacked frames, not just the current one)
    assert not torch.allclose(critic(prompts, torch.zeros(3, 4), cur), logits)
    with pytest.raises(ValueError, match=r"features must have shape \(3, 4\)"):
        critic(prompts, prev, torch.randn(3, 5))
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 1\]"):
        critic.bce(prompts, prev, cur, torch.tensor([0.0, 2.0, 1.0]))


def test_critics_learn_binary_targets_and_leave_the_frozen_encoder_alone():
    torch.manual_seed(0)
    text = HashedTextEncoder(16)
    step = StepCritic(text, image_dim=4, hidden=16)
    instr = InstructionCritic(text, hidden=16)
    assert trainable_parameters(step, instr) == list(step.heads.parameters()) + list(
        instr.head.parameters()
    )
    goals = ["Open the clock", "Open Chrome", "Set an alarm", "What's the news"]
    success = torch.tensor([1.0, 0.0, 1.0, 0.0])
    feats = torch.randn(4, 4)
    opt = torch.optim.Adam(trainable_parameters(step, instr), lr=1e-2)
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss = step.bce(goals, feats, feats, success) + instr.bce(goals, success)
        loss.backward()
        first = loss.item() if first is None else first
        opt.step()
    assert loss.item() < 0.2 * first
    assert (instr.values(goals).round() == success).all()
    assert (step.values(goals, feats, feats).round() == success).all()
