"""AutoUI model, tokenizers and checkpoints (tiny configs; nothing is downloaded)."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import pytest
import sentencepiece as spm
import torch
from safetensors.torch import save_file
from transformers import ByT5Tokenizer, T5Config

from distrl_tasks.agents.autoui import AutoUIModel, build_tiny_model, tiny_t5_config
from distrl_tasks.agents.checkpoint import (
    CheckpointError,
    load_checkpoint,
    read_metadata,
    save_checkpoint,
)
from distrl_tasks.agents.tokenizer import ByteTokenizer, SentencePieceTokenizer
from distrl_tasks.protocol.actions import format_action, tap, type_text

GOALS = Path(__file__).parents[2] / "distrl_tasks" / "tasks" / "aitw" / "general_train.txt"


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def train_spiece(path: Path, vocab_size: int = 300) -> Path:
    """A tiny T5-style SentencePiece model (pad 0, eos 1, unk 2) trained on goals and actions."""
    lines = []
    for i, goal in enumerate(GOALS.read_text().splitlines()[:200]):
        lines += [goal, format_action(tap((i % 97) / 97, (i % 89) / 89))]
        lines.append(format_action(type_text(goal.split()[-1])))
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buf,
        vocab_size=vocab_size,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        model_type="unigram",
        minloglevel=2,
    )
    path.write_bytes(buf.getvalue())
    return path


def small_v11_config(vocab_size: int) -> T5Config:
    """T5 v1.1 shape (gated-gelu, untied head) like Auto-UI-Base, but tiny."""
    return T5Config(
        vocab_size=vocab_size,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        dropout_rate=0.0,
        decoder_start_token_id=0,
    )


def write_autoui_base_dir(root: Path, image_dim: int = 24, seed: int = 3) -> AutoUIModel:
    """Write a checkpoint the way Auto-UI-Base ships: config.json, model.safetensors with every
    tensor stored separately (embeddings repeated, as a converted pytorch_model.bin has them),
    spiece.model. Returns the model whose weights were written."""
    root.mkdir(parents=True, exist_ok=True)
    train_spiece(root / "spiece.model")
    torch.manual_seed(seed)
    model = AutoUIModel(small_v11_config(300 + 100), image_dim)
    config = model.config.to_dict()
    config.pop("scale_decoder_outputs", None)
    config.update(tie_word_embeddings=False, architectures=["T5ForMultimodalGeneration"])
    (root / "config.json").write_text(json.dumps(config))
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(root / "model.safetensors"))
    return model


def _inputs(batch: int = 2, image_dim: int = 1408, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, 200, (batch, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[1:, 6:] = 0  # a padded second row
    feats = torch.randn(batch, image_dim, generator=g)
    labels = torch.randint(3, 200, (batch, 5), generator=g)
    return ids, mask, feats, labels


# ----- tokenizers ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text", ["Open the clock", "Previous Actions:  Goal: x", "café ✓ 東京", ""]
)
def test_byte_tokenizer_matches_byt5(text: str) -> None:
    ours = ByteTokenizer()
    theirs = ByT5Tokenizer()  # needs no files: verifies the scheme offline
    assert [*ours.encode(text), ours.eos_id] == theirs(text).input_ids
    assert ours.decode(ours.encode(text)) == text


def test_byte_tokenizer_hand_values_and_truncation() -> None:
    tok = ByteTokenizer()
    assert tok.encode("Hi") == [72 + 3, 105 + 3]
    # Left truncation keeps the end (the goal) and always ends in eos.
    assert tok.encode_prompt("abcdef", 4) == [ord("d") + 3, ord("e") + 3, ord("f") + 3, 1]
    assert tok.encode_prompt("ab", 4) == [ord("a") + 3, ord("b") + 3, 1]
    # Action targets: eos when under budget, cut without eos when the text fills it.
    assert tok.encode_action("abc", 4) == [100, 101, 102, 1]
    assert tok.encode_action("abcd", 4) == [100, 101, 102, 103]
    assert tok.encode_action("abcdef", 4) == [100, 101, 102, 103]
    mask = tok.output_mask(384)
    assert int(mask.sum()) == 95 + 1  # printable ASCII + eos
    assert mask[1] and not mask[0] and not mask[2] and not mask[ord("\n") + 3]
    with pytest.raises(ValueError, match="smaller than"):
        tok.output_mask(100)


def test_sentencepiece_tokenizer(tmp_path: Path) -> None:
    tok = SentencePieceTokenizer(train_spiece(tmp_path / "spiece.model"))
    assert (tok.pad_id, tok.eos_id, tok.unk_id, tok.size) == (0, 1, 2, 300)
    ids = tok.encode("Open the clock")
    assert all(3 <= i < 300 for i in ids)
    assert tok.decode([*ids, 1, 0]) == "Open the clock"
    mask = tok.output_mask(400)
    assert mask[1] and not mask[0] and not mask[2]
    assert not mask[300:].any()  # sentinel ids are never generated
    assert int(mask.sum()) == 300 - 2  # everything but pad and unk


def test_sentencepiece_rejects_non_t5_ids(tmp_path: Path) -> None:
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(GOALS.read_text().splitlines()[:100]),
        model_writer=buf,
        vocab_size=120,
        minloglevel=2,
    )  # sentencepiece defaults: unk 0, bos 1, eos 2, no pad
    (tmp_path / "sp.model").write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="pad id is -1"):
        SentencePieceTokenizer(tmp_path / "sp.model")


# ----- model ----------------------------------------------------------------------------------
def test_tiny_model_size_and_determinism() -> None:
    a, b = build_tiny_model(seed=1), build_tiny_model(seed=1)
    assert 1_000_000 < a.num_parameters() < 20_000_000
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.image_dense.weight, build_tiny_model(seed=2).image_dense.weight)
    assert a.lm_head.weight is a.shared.weight  # original-T5 tying in the tiny config


def test_fusion_matches_hand_computation() -> None:
    model = build_tiny_model(image_dim=16).eval()
    ids, mask, feats, _ = _inputs(image_dim=16)
    with torch.no_grad():
        fused = model.encode(ids, mask, feats)
        text = model.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        img = model.image_dense(feats)  # [B, d]
        # One image token: attention weights are all 1, so every position gets out(V img).
        d = model.config.d_model
        w_v, b_v = model.mha_layer.in_proj_weight[2 * d :], model.mha_layer.in_proj_bias[2 * d :]
        value = img @ w_v.T + b_v
        attended = model.mha_layer.out_proj(value)[:, None, :].expand_as(text)
        gate = torch.sigmoid(model.gate_dense(torch.cat([text, attended], -1)))
        expected = (1 - gate) * text + gate * attended
    torch.testing.assert_close(fused, expected, rtol=1e-5, atol=1e-5)


def test_image_changes_output_and_bad_shape_is_rejected() -> None:
    model = build_tiny_model().eval()
    ids, mask, feats, labels = _inputs()
    with torch.no_grad():
        base = model(ids, mask, feats, labels)
        other = model(ids, mask, feats + 1.0, labels)
        multi = model(ids, mask, feats[:, None, :], labels)  # [B, N=1, D] is accepted too
    assert base.shape == (2, 5, 384)
    assert (base - other).abs().max() > 1e-3
    torch.testing.assert_close(base, multi)
    with pytest.raises(ValueError, match=r"\[B, 1408\]"):
        model(ids, mask, feats[:, :100], labels)


def test_cached_decoding_equals_full_pass() -> None:
    """Step-by-step decoding with the cache gives the full pass's logits, and passes the cache
    under the installed transformers' own argument name (the renamed one warns every call)."""
    model = build_tiny_model().eval()
    ids, mask, feats, labels = _inputs()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        full = model(ids, mask, feats, labels)
        states = model.encode(ids, mask, feats)
        inputs, cache, steps = model.shift_right(labels), None, []
        for t in range(inputs.shape[1]):
            logits, cache = model.decode(
                inputs[:, t : t + 1], states, mask, cache, use_cache=True, source_ids=ids
            )
            steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, 1), full, rtol=1e-4, atol=1e-4)


def test_copy_head_matches_hand_computation() -> None:
    model = build_tiny_model(image_dim=16).eval()
    assert model.copy
    ids, mask, feats, labels = _inputs(image_dim=16)
    with torch.no_grad():
        out = model(ids, mask, feats, labels)  # [B, T, V] log-probs of the mixture
        states = model.encode(ids, mask, feats)
        hidden = model.decoder(
            input_ids=model.shift_right(labels),
            encoder_hidden_states=states,
            encoder_attention_mask=mask,
        ).last_hidden_state
        vocab = torch.softmax(model.lm_head(hidden * model.config.d_model**-0.5), -1)
    b, t = 1, 2  # one (example, position) by hand, with plain loops
    d = model.config.d_model
    q = model.copy_query(hidden[b, t])
    raw = [float((q @ states[b, i]).detach()) / d**0.5 for i in range(ids.shape[1])]
    raw = [r if mask[b, i] else float("-inf") for i, r in enumerate(raw)]
    attn = torch.softmax(torch.tensor(raw), 0)
    context = sum(attn[i] * states[b, i] for i in range(ids.shape[1]))
    gate = torch.sigmoid(model.copy_gate(torch.cat([hidden[b, t], context]))).item()
    expected = (1 - gate) * vocab[b, t].clone()
    for i in range(ids.shape[1]):
        expected[ids[b, i]] += gate * attn[i]
    torch.testing.assert_close(out[b, t].exp(), expected, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(out.exp().sum(-1), torch.ones(out.shape[:2]), rtol=1e-4, atol=1e-4)


def test_copy_head_gives_mass_to_prompt_ids_and_finite_gradients() -> None:
    model = build_tiny_model(image_dim=16)
    ids, mask, feats, labels = _inputs(image_dim=16)
    out = model(ids, mask, feats, labels)
    present = torch.zeros(out.shape[-1], dtype=torch.bool)
    present[ids[0][mask[0].bool()]] = True
    # Prompt ids carry the copied mass on top of the vocabulary share: on average higher.
    assert out[0, :, present].exp().mean() > out[0, :, ~present].exp().mean()
    loss = -out.gather(-1, labels.unsqueeze(-1)).mean()
    loss.backward()
    grads = [p.grad for p in (model.copy_query.weight, model.copy_gate.weight)]
    assert all(g is not None and torch.isfinite(g).all() and g.abs().sum() > 0 for g in grads)
    with pytest.raises(ValueError, match="source_ids"):
        model.decode(model.shift_right(labels), model.encode(ids, mask, feats), mask)


def test_copy_head_is_off_for_autoui_configs() -> None:
    model = AutoUIModel(tiny_t5_config(copy=False), image_dim=16)
    assert not model.copy and not hasattr(model, "copy_gate")


# ----- checkpoints ----------------------------------------------------------------------------
def test_save_load_roundtrip(tmp_path: Path) -> None:
    model = build_tiny_model(image_dim=32, seed=5).eval()
    save_checkpoint(model, ByteTokenizer(), tmp_path / "ck", {"round": 3, "algorithm": "distrl"})
    loaded, tok = load_checkpoint(tmp_path / "ck")
    assert isinstance(tok, ByteTokenizer) and loaded.image_dim == 32 and loaded.tied
    assert loaded.lm_head.weight is loaded.shared.weight
    ids, mask, feats, labels = _inputs(image_dim=32)
    with torch.no_grad():
        torch.testing.assert_close(
            loaded(ids, mask, feats, labels), model(ids, mask, feats, labels)
        )
    assert read_metadata(tmp_path / "ck") == {"round": 3, "algorithm": "distrl"}
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == [
        "config.json",
        "model.safetensors",
    ]


def test_loads_autoui_base_layout(tmp_path: Path) -> None:
    original = write_autoui_base_dir(tmp_path / "Auto-UI-Base").eval()
    model, tok = load_checkpoint(tmp_path / "Auto-UI-Base")
    assert isinstance(tok, SentencePieceTokenizer)
    assert not model.tied and model.lm_head.weight is not model.shared.weight
    assert model.image_dim == 24 and model.vocab_size == 400
    ids, mask, feats, labels = _inputs(image_dim=24)
    with torch.no_grad():
        torch.testing.assert_close(
            model(ids, mask, feats, labels), original(ids, mask, feats, labels)
        )
    # Our save of a SentencePiece model keeps the tokenizer file and reloads identically.
    save_checkpoint(model, tok, tmp_path / "again")
    again, tok2 = load_checkpoint(tmp_path / "again")
    assert isinstance(tok2, SentencePieceTokenizer) and not again.tied
    assert tok2.encode("Open the clock") == tok.encode("Open the clock")
    with torch.no_grad():
        torch.testing.assert_close(again(ids, mask, feats, labels), model(ids, mask, feats, labels))


def test_sharded_weights_load(tmp_path: Path) -> None:
    model = build_tiny_model(image_dim=8, seed=2).eval()
    ck = save_checkpoint(model, ByteTokenizer(), tmp_path / "ck")
    state = load_checkpoint(ck)[0].state_dict()
    names = ["shared.weight", *[k for k in state if not k.endswith("embed_tokens.weight")]]
    names = [n for n in dict.fromkeys(names) if n != "lm_head.weight"]
    half = len(names) // 2
    (ck / "model.safetensors").unlink()
    weight_map = {}
    for shard, part in (("a.safetensors", names[:half]), ("b.safetensors", names[half:])):
        save_file({n: state[n].clone() for n in part}, str(ck / shard))
        weight_map.update(dict.fromkeys(part, shard))
    (ck / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    loaded, _ = load_checkpoint(ck)
    ids, mask, feats, labels = _inputs(image_dim=8)
    with torch.no_grad():
        torch.testing.assert_close(
            loaded(ids, mask, feats, labels), model(ids, mask, feats, labels)
        )


def test_pickle_checkpoint_is_refused_with_conversion_hint(tmp_path: Path) -> None:
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "config.json").write_text(json.dumps(tiny_t5_config().to_dict()))
    (ck / "pytorch_model.bin").write_bytes(b"not even a pickle")  # never opened
    with pytest.raises(CheckpointError, match=r"pytorch_model\.bin") as err:
        load_checkpoint(ck)
    assert "save_file" in str(err.value) and "weights_only=True" in str(err.value)


def test_bad_checkpoints_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not found"):
        load_checkpoint(tmp_path / "nowhere")
    ck = save_checkpoint(build_tiny_model(image_dim=8), ByteTokenizer(), tmp_path / "ck")
    from safetensors.torch import load_file

    state = load_file(str(ck / "model.safetensors"))
    del state["gate_dense.bias"]
    save_file(state, str(ck / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"gate_dense\.bias"):
        load_checkpoint(ck)
    state["gate_dense.bias"] = torch.zeros(7)
    save_file(state, str(ck / "model.safetensors"))
    with pytest.raises(CheckpointError, match="shapes do not match"):
        load_checkpoint(ck)
    config = json.loads((ck / "config.json").read_text())
    del config["distrl"]
    (ck / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"spiece\.model"):
        load_checkpoint(ck)
