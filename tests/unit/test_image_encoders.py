"""Image encoders: the weight-free small encoder on sim screens, and BLIP-2 from local dirs."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import Blip2Config, Blip2Model, Blip2VisionConfig, Blip2VisionModel

from distrl_tasks.agents.checkpoint import CheckpointError
from distrl_tasks.agents.image_encoders import (
    CLIP_MEAN,
    CLIP_STD,
    Blip2ImageEncoder,
    SmallImageEncoder,
    build_image_encoder,
    image_feature_dim,
)
from distrl_tasks.config import AgentConfig
from distrl_tasks.sim.phone import Phone


def app_screens(render_scale: float = 0.25) -> dict[str, bytes]:
    """The first screen of every launchable simulated app (distinct screens only)."""
    phone = Phone(render_scale=render_scale)
    screens: dict[bytes, str] = {}
    for package in list(phone.apps):
        phone.reset()
        if phone.launch(package):
            screens.setdefault(phone.screenshot_png(), package)
    return {name: png for png, name in screens.items()}


def dist(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a.astype(np.float32) - b.astype(np.float32)))


# ----- small encoder --------------------------------------------------------------------------
def test_small_encoder_shape_dtype_and_identical_screens() -> None:
    enc = SmallImageEncoder()
    home_a, home_b = Phone().screenshot_png(), Phone(seed=0).screenshot_png()
    feats = enc.encode([home_a, home_b, home_a])
    assert feats.shape == (3, 1408) and feats.dtype == np.float16 and enc.dim == 1408
    assert np.array_equal(feats[0], feats[1]) and np.array_equal(feats[0], feats[2])
    assert np.isfinite(feats).all() and np.abs(feats).max() <= 1.0
    assert enc.encode([]).shape == (0, 1408)


def test_small_encoder_separates_simulator_screens() -> None:
    screens = app_screens()
    assert len(screens) >= 10
    feats = SmallImageEncoder().encode(list(screens.values()))
    names = list(screens)
    closest = min(
        (dist(feats[i], feats[j]), names[i], names[j])
        for i in range(len(names))
        for j in range(i + 1, len(names))
    )
    # Typical feature norms are ~30; every pair of different apps is far apart.
    assert closest[0] > 2.0, closest


def test_small_encoder_sees_one_typed_character() -> None:
    phone = Phone()
    phone.launch("com.android.chrome")
    field = next(line for line in phone.ui_xml().splitlines() if "EditText" in line)
    x1, y1, x2, y2 = map(int, re.search(r"bounds=\"\[(\d+),(\d+)\]\[(\d+),(\d+)\]", field).groups())
    phone.tap((x1 + x2) / 2, (y1 + y2) / 2)
    before = phone.screenshot_png()
    phone.input_text("a")
    after = phone.screenshot_png()
    feats = SmallImageEncoder().encode([before, after])
    assert dist(feats[0], feats[1]) > 0.05


def test_small_encoder_is_resolution_robust() -> None:
    low, high = app_screens(0.25), app_screens(0.5)
    enc = SmallImageEncoder()
    same = dist(*enc.encode([low["com.android.settings"], high["com.android.settings"]]))
    other = dist(*enc.encode([low["com.android.settings"], low["com.android.chrome"]]))
    assert same < 2.0 < other


def test_small_encoder_rejects_bad_input() -> None:
    enc = SmallImageEncoder()
    with pytest.raises(ValueError, match="screenshot 1: not a decodable image"):
        enc.encode([Phone().screenshot_png(), b"\x89PNG garbage"])
    with pytest.raises(TypeError, match="screenshot 0: expected PNG bytes"):
        enc.encode(["home.png"])  # type: ignore[list-item]


# ----- BLIP-2 ---------------------------------------------------------------------------------
VISION = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=2,
    image_size=28,
    patch_size=14,
)


def randomize(model: torch.nn.Module, seed: int) -> None:
    """Fresh inits leave the pooled output near zero; random weights make comparisons telling."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)


def reference_pixels(png: bytes, size: int) -> torch.Tensor:
    """BLIP-2 preprocessing written out: bicubic resize, [0, 1], CLIP mean/std, CHW."""
    img = Image.open(io.BytesIO(png)).convert("RGB").resize((size, size), Image.Resampling.BICUBIC)
    arr = (np.asarray(img, np.float32) / 255.0 - np.array(CLIP_MEAN)) / np.array(CLIP_STD)
    return torch.from_numpy(arr.transpose(2, 0, 1)[None].astype(np.float32))


def test_blip2_vision_checkpoint(tmp_path: Path) -> None:
    model = Blip2VisionModel(Blip2VisionConfig(**VISION)).eval()
    randomize(model, 0)
    model.save_pretrained(tmp_path / "vision")
    enc = Blip2ImageEncoder(tmp_path / "vision", batch_size=2)
    screens = list(app_screens().values())[:3]
    feats = enc.encode(screens)
    assert feats.shape == (3, 32) and feats.dtype == np.float16 and enc.dim == 32
    with torch.no_grad():
        want = model(pixel_values=reference_pixels(screens[2], 28)).pooler_output[0]
    assert np.abs(want.numpy()).max() > 0.5
    np.testing.assert_allclose(feats[2].astype(np.float32), want.numpy(), rtol=2e-3, atol=2e-3)
    assert dist(feats[0], feats[1]) > 0.1


def test_full_blip2_checkpoint_reads_only_the_vision_tower(tmp_path: Path) -> None:
    config = Blip2Config(
        vision_config=VISION,
        qformer_config=dict(
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            encoder_hidden_size=32,
        ),
        text_config=dict(
            model_type="opt",
            vocab_size=50,
            hidden_size=16,
            num_hidden_layers=1,
            ffn_dim=32,
            num_attention_heads=2,
            word_embed_proj_dim=16,
        ),
        num_query_tokens=4,
    )
    full = Blip2Model(config).eval()
    randomize(full, 1)
    full.save_pretrained(tmp_path / "blip2")
    (tmp_path / "blip2" / "preprocessor_config.json").write_text(
        json.dumps({"size": {"height": 28, "width": 28}, "image_mean": CLIP_MEAN})
    )
    cfg = AgentConfig(image_encoder="blip2", image_encoder_path=str(tmp_path / "blip2"))
    assert image_feature_dim(cfg) == 32
    enc = build_image_encoder(cfg)
    assert isinstance(enc, Blip2ImageEncoder)
    png = Phone().screenshot_png()
    with torch.no_grad():
        want = full.vision_model(pixel_values=reference_pixels(png, 28)).pooler_output[0]
    assert want.abs().max() > 0.5
    got = enc.encode([png])[0].astype(np.float32)
    np.testing.assert_allclose(got, want.numpy(), rtol=2e-3, atol=2e-3)


def test_blip2_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=r"config\.json"):
        Blip2ImageEncoder(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "t5"}))
    with pytest.raises(CheckpointError, match="neither 'blip-2'"):
        Blip2ImageEncoder(tmp_path)
    Blip2VisionConfig(**VISION).to_json_file(tmp_path / "config.json")
    (tmp_path / "pytorch_model.bin").write_bytes(b"pickle")
    with pytest.raises(CheckpointError, match="Pickled weights are not loaded"):
        Blip2ImageEncoder(tmp_path)


def test_build_small_encoder_from_config() -> None:
    cfg = AgentConfig()
    assert image_feature_dim(cfg) == 1408
    assert isinstance(build_image_encoder(cfg), SmallImageEncoder)
