"""Learner memory and speed on a CUDA device: AutoUI-Base size and a Qwen2.5-VL-3B-sized VLM.

What it measures (random weights serve: memory and speed do not depend on their values):

* ``autoui``: the project's own learner (:class:`~distrl_tasks.algorithms.learner.Learner`)
  running DistRL and DigiRL updates on an AutoUI-Base-sized policy (T5-base v1.1 dimensions plus
  the image fusion, as ``benchmarks/learner.py --model base`` builds it) with bf16 autocast:
  peak GPU memory and optimizer steps/s; then greedy inference actions/s at batch 8 and 32
  through the policy's own ``sample``.
* ``vlm``: a ``Qwen2_5_VLForConditionalGeneration`` built from a config of Qwen2.5-VL-3B's
  dimensions (transformers' own class, bf16 weights), LoRA adapters (peft, rank 16 on every
  linear layer of the language model) and AdamW: peak memory and optimizer steps/s on a batch of
  screenshot + prompt + action sequences (a 280x588 screenshot is 210 image tokens after the
  2x2 merge), then generation actions/s (32 new tokens, KV cache) at batch 8 and 32.
* ``vlm-policy``: the same model driven through the project's own
  :class:`~distrl_tasks.agents.vlm.VLMPolicy` (``agent.model: vlm``): real 600x270 PNG
  screenshots through Qwen's image processor, the policy's input layout, its teacher-forced
  ``score`` (what every learner calls) with a LoRA optimizer step at batch 8 (peak memory,
  steps/s), and its ``sample`` (generate, then the behaviour log-probs scored) at batch 8 and 32
  (actions/s, ``agent.max_new_tokens`` = 32). The tokenizer is a small byte-level one with Qwen's
  special tokens (``agents/vlm_tiny.py``): no model hub is reachable, and the model's vocabulary
  is Qwen's size either way.

Usage::

    python benchmarks/gpu.py                    # both, on CUDA; prints one JSON line each
    python benchmarks/gpu.py --tiny --device cpu  # the same code on tiny configs (the test)

On a machine without CUDA and without ``--device cpu`` it says so and exits 2: its figures
are only meaningful on the device they name.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import torch

TASKS = ("autoui", "vlm", "vlm-policy")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def _peak_gib(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**30, 2)


def _timed(fn, device: torch.device, repeats: int) -> float:
    """Seconds per call of ``fn`` over ``repeats`` calls, after one warm-up call."""
    fn()
    _sync(device)
    started = time.perf_counter()
    for _ in range(repeats):
        fn()
    _sync(device)
    return (time.perf_counter() - started) / repeats


# --------------------------------------------------------------------------------- AutoUI


def autoui(device: torch.device, *, tiny: bool, steps: int) -> list[dict[str, Any]]:
    """The project's learner on an AutoUI-Base-sized policy: DistRL and DigiRL updates."""
    sys.path.insert(0, "benchmarks")
    from learner import base_sized_policy, synthetic_replay

    from distrl_tasks.agents.policy import build_policy
    from distrl_tasks.algorithms.factory import build_algorithm
    from distrl_tasks.algorithms.learner import Learner
    from distrl_tasks.config import config_from_dict
    from distrl_tasks.protocol.observation import Observation, format_prompt

    results = []
    for name in ("distrl", "digirl"):
        cfg = config_from_dict({"algorithm": {"name": name}})
        policy = build_policy(cfg.agent, seed=0) if tiny else base_sized_policy()
        replay = synthetic_replay()
        _reset_peak(device)
        import tempfile

        with tempfile.TemporaryDirectory() as out:
            learner = Learner(
                cfg,
                build_algorithm(cfg, policy, device=str(device)),
                out_dir=out,
                mixed_precision="bf16" if device.type == "cuda" else "no",
            )
            learner.train_round(replay, steps=1)  # warm-up: allocator, optimizer state
            _sync(device)
            started = time.perf_counter()
            learner.train_round(replay, steps=steps)
            _sync(device)
            elapsed = time.perf_counter() - started
            params = sum(p.numel() for p in learner.params)
        results.append(
            {
                "model": "autoui-tiny" if tiny else "autoui-base",
                "algorithm": name,
                "trainable_params_m": round(params / 1e6, 1),
                "batch": f"{cfg.algorithm.batch_size}x{cfg.algorithm.sequence_length}",
                "precision": "bf16" if device.type == "cuda" else "fp32",
                "optimizer_steps_per_s": round(steps / elapsed, 3),
                "peak_gib": _peak_gib(device),
            }
        )
    policy = build_policy(cfg.agent, seed=0) if tiny else base_sized_policy()
    policy.model.to(device).eval()
    dim = policy.model.image_dim
    for batch in (8, 32):
        obs = [
            Observation(
                format_prompt(f"Search for laptops on bestbuy.com, item {i}"),
                torch.randn(dim, device=device),
            )
            for i in range(batch)
        ]
        with torch.no_grad():
            per_call = _timed(lambda obs=obs: policy.sample(obs, greedy=True), device, 3)
        results.append(
            {
                "model": "autoui-tiny" if tiny else "autoui-base",
                "inference_batch": batch,
                "precision": "fp32",
                "actions_per_s": round(batch / per_call, 1),
            }
        )
    return results


# ------------------------------------------------------------------------------------ VLM


def qwen25_vl_config(tiny: bool):
    """Qwen2.5-VL-3B-Instruct's dimensions (or a few-MB model of the same class)."""
    from transformers import Qwen2_5_VLConfig

    if tiny:
        text = dict(
            vocab_size=1024,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=2048,
            bos_token_id=1,
            eos_token_id=2,
            rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
        )
        vision = dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            fullatt_block_indexes=[1],
            window_size=56,
        )
    else:
        text = dict(
            vocab_size=151936,
            hidden_size=2048,
            intermediate_size=11008,
            num_hidden_layers=36,
            num_attention_heads=16,
            num_key_value_heads=2,
            max_position_embeddings=128000,
            rope_theta=1000000.0,
            tie_word_embeddings=True,
            rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]},
        )
        vision = dict(
            depth=32,
            hidden_size=1280,
            intermediate_size=3420,
            num_heads=16,
            out_hidden_size=2048,
            fullatt_block_indexes=[7, 15, 23, 31],
            window_size=112,
        )
    special = dict(
        image_token_id=text["vocab_size"] - 4,
        video_token_id=text["vocab_size"] - 3,
        vision_start_token_id=text["vocab_size"] - 2,
        vision_end_token_id=text["vocab_size"] - 1,
    )
    vision.update(patch_size=14, spatial_merge_size=2, temporal_patch_size=2, in_channels=3)
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **special), special


def vlm_batch(cfg, special: dict[str, int], batch: int, device: torch.device, *, tiny: bool):
    """Screenshot + prompt + action sequences, as the processor would lay them out.

    Image: 588x280 pixels (a 600x270 screenshot rounded to the 28-pixel grid): 42x20 patches,
    210 tokens after the 2x2 merge. Prompt 80 tokens, action 40 tokens (scored: labels).
    """
    grid_h, grid_w = (8, 4) if tiny else (42, 20)
    merge = 2
    image_tokens = grid_h * grid_w // merge**2
    prompt, action = (12, 6) if tiny else (80, 40)
    vocab = cfg.text_config.vocab_size - 4
    rows = []
    for _ in range(batch):
        ids = (
            torch.randint(0, vocab, (8,)).tolist()
            + [special["vision_start_token_id"]]
            + [special["image_token_id"]] * image_tokens
            + [special["vision_end_token_id"]]
            + torch.randint(0, vocab, (prompt + action,)).tolist()
        )
        rows.append(ids)
    input_ids = torch.tensor(rows, device=device)
    labels = input_ids.clone()
    labels[:, :-action] = -100  # only the action's tokens are scored
    patch_dim = 3 * 2 * 14 * 14  # channels x temporal patch x patch x patch
    pixel_values = torch.randn(batch * grid_h * grid_w, patch_dim, device=device)
    grid = torch.tensor([[1, grid_h, grid_w]] * batch, device=device)
    return {
        "input_ids": input_ids,
        "attention_mask": torch.ones_like(input_ids),
        "pixel_values": pixel_values,
        "image_grid_thw": grid,
        "labels": labels,
    }


def vlm(device: torch.device, *, tiny: bool, steps: int) -> list[dict[str, Any]]:
    """LoRA training steps and generation with a Qwen2.5-VL-3B-sized model."""
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2_5_VLForConditionalGeneration

    cfg, special = qwen25_vl_config(tiny)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    _reset_peak(device)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # built in place, in its dtype: no fp32 copy on the host
    try:
        with device:
            model = Qwen2_5_VLForConditionalGeneration(cfg)
    finally:
        torch.set_default_dtype(default)
    total = sum(p.numel() for p in model.parameters())
    lora = LoraConfig(
        r=16,
        lora_alpha=32,
        lora_dropout=0.0,
        target_modules=r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)",
    )
    model = get_peft_model(model, lora)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)
    results = []
    train_batch = 4 if tiny else 8
    inputs = vlm_batch(cfg, special, train_batch, device, tiny=tiny)
    seq = inputs["input_ids"].shape[1]

    def step() -> None:
        loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    model.train()
    per_step = _timed(step, device, steps)
    results.append(
        {
            "model": "qwen2.5-vl-tiny" if tiny else "qwen2.5-vl-3b-sized",
            "params_b": round(total / 1e9, 6 if tiny else 3),
            "lora_trainable_m": round(sum(p.numel() for p in trainable) / 1e6, 4),
            "batch": f"{train_batch}x{seq} tokens",
            "precision": "bf16" if device.type == "cuda" else "fp32",
            "optimizer_steps_per_s": round(1 / per_step, 3),
            "peak_gib": _peak_gib(device),
        }
    )
    model.eval()
    new_tokens = 8 if tiny else 32
    for batch in (8, 32):
        gen = vlm_batch(cfg, special, batch, device, tiny=tiny)
        gen.pop("labels")
        _reset_peak(device)

        def generate(gen=gen) -> None:
            with torch.no_grad():
                model.generate(
                    **gen,
                    max_new_tokens=new_tokens,
                    min_new_tokens=new_tokens,
                    do_sample=False,
                    pad_token_id=0,
                )

        per_call = _timed(generate, device, 2)
        results.append(
            {
                "model": "qwen2.5-vl-tiny" if tiny else "qwen2.5-vl-3b-sized",
                "inference_batch": batch,
                "new_tokens": new_tokens,
                "precision": "bf16" if device.type == "cuda" else "fp32",
                "actions_per_s": round(batch / per_call, 2),
                "peak_gib": _peak_gib(device),
            }
        )
    return results


def _screenshot(seed: int) -> bytes:
    import io

    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 255, (600, 270, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


def vlm_policy(device: torch.device, *, tiny: bool, steps: int) -> list[dict[str, Any]]:
    """The project's VLM policy on a Qwen2.5-VL-3B-sized model: score + LoRA step, sampling."""
    import tempfile
    from pathlib import Path

    import numpy as np
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2_5_VLForConditionalGeneration, Qwen2VLImageProcessor

    from distrl_tasks.agents.vlm import LORA_TARGETS, VLMPolicy
    from distrl_tasks.agents.vlm_tiny import tiny_tokenizer
    from distrl_tasks.protocol.actions import format_action, tap
    from distrl_tasks.protocol.observation import Observation, format_prompt

    tmp = Path(tempfile.mkdtemp(prefix="gpu-vlm-"))
    tok = tiny_tokenizer(tmp)
    cfg, _ = qwen25_vl_config(tiny)
    special = {
        "image_token_id": "<|image_pad|>",
        "video_token_id": "<|video_pad|>",
        "vision_start_token_id": "<|vision_start|>",
        "vision_end_token_id": "<|vision_end|>",
    }
    for name, token in special.items():
        setattr(cfg, name, tok.convert_tokens_to_ids(token))
    cfg.text_config.eos_token_id = tok.eos_token_id
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    _reset_peak(device)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with device:
            model = Qwen2_5_VLForConditionalGeneration(cfg)
    finally:
        torch.set_default_dtype(default)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                                             target_modules=LORA_TARGETS))  # fmt: skip
    pixels = 28 * 28 * (8 if tiny else 210)  # 210 merged patches: a 588x280 screenshot
    images = Qwen2VLImageProcessor(min_pixels=pixels // 2, max_pixels=pixels)
    policy = VLMPolicy(model, tok, images, base_dir=tmp, temperature=1.0, max_new_tokens=32)
    goals = ["Search for hotels in Paris", "Open the clock app", "Install the Uber app"]

    def batch(n: int) -> list[Observation]:
        return [Observation(format_prompt(goals[i % 3]), np.zeros(8, np.float16), _screenshot(i))
                for i in range(n)]  # fmt: skip

    obs = batch(8)
    actions = [format_action(tap(0.1 * (i + 1), 0.5), plan="") for i in range(8)]
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)

    def step() -> None:
        with torch.autocast(device.type, dtype=dtype, enabled=device.type == "cuda"):
            loss = -policy.score(obs, actions).log_prob.mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    per_step = _timed(step, device, steps)
    results = [{
        "model": "vlm-policy-tiny" if tiny else "vlm-policy-qwen2.5-vl-3b-sized",
        "algorithm": "score+lora-step", "train_batch": 8,
        "precision": "bf16" if device.type == "cuda" else "fp32",
        "optimizer_steps_per_s": round(1.0 / per_step, 3), "peak_gib": _peak_gib(device),
    }]  # fmt: skip
    for n in (8, 32):
        _reset_peak(device)
        inputs = batch(n)
        per_call = _timed(lambda inputs=inputs: policy.sample(inputs), device, 1)
        results.append({
            "model": results[0]["model"], "inference_batch": n, "new_tokens_max": 32,
            "precision": results[0]["precision"], "actions_per_s": round(n / per_call, 2),
            "peak_gib": _peak_gib(device),
        })  # fmt: skip
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--tiny", action="store_true", help="tiny configs (a quick check)")
    parser.add_argument("--steps", type=int, default=5, help="timed optimizer steps")
    parser.add_argument("--only", choices=TASKS, action="append", help="run only these")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(
            "gpu.py: no CUDA device here; its figures are only meaningful on one", file=sys.stderr
        )
        return 2
    card = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    for task in args.only or TASKS:
        fn = {"autoui": autoui, "vlm": vlm, "vlm-policy": vlm_policy}[task]
        for row in fn(device, tiny=args.tiny, steps=args.steps):
            print(json.dumps({"device": card, "torch": torch.__version__, **row}), flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
