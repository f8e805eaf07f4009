"""A few-MB model of the Qwen2-VL class, written to a local directory as a real checkpoint is.

Random weights, transformers' own ``Qwen2VLForConditionalGeneration``, a byte-level BPE tokenizer
fitted here (with Qwen's vision and end-of-text special tokens) and Qwen's image processor with
a small pixel budget (a 600x270 screenshot becomes 4x8 patches, 8 image tokens). What the VLM
policy loads from it is exactly what it loads from a downloaded Qwen2-VL directory: the tests
run the VLM policy end to end on it, and ``benchmarks/gpu.py`` borrows its tokenizer for a
full-size model of random weights (no model hub is reachable from where they run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    PreTrainedTokenizerFast,
    Qwen2VLConfig,
    Qwen2VLForConditionalGeneration,
    Qwen2VLImageProcessor,
)

SPECIALS = ["<|endoftext|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
            "<|video_pad|>"]  # fmt: skip
CORPUS = [
    'Action Plan: [DUAL_POINT] ; Action Decision: "action_type": "DUAL_POINT", "touch_point": '
    '"[0.1234, 0.5678]", "lift_point": "[0.1234, 0.5678]", "typed_text": ""',
    'Action Plan: [TYPE] ; Action Decision: "action_type": "TYPE", "touch_point": "[-1.0000, '
    '-1.0000]", "lift_point": "[-1.0000, -1.0000]", "typed_text": "weather in Paris"',
    "Previous Actions: Goal: Open the clock app Search for hotels in Paris PRESS_HOME PRESS_BACK",
    "PRESS_ENTER STATUS_TASK_COMPLETE TASK_IMPOSSIBLE 0123456789",
]


def tiny_tokenizer(directory: Path) -> Any:
    """A byte-level BPE tokenizer with Qwen's special tokens, saved to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    bpe.train_from_iterator(CORPUS * 4, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>",
                                  pad_token="<|endoftext|>")  # fmt: skip
    tok.save_pretrained(str(directory))
    return tok


def write_tiny_vlm(directory: Path, seed: int = 0) -> Path:
    """Write the model, tokenizer and image processor to ``directory``; returns it."""
    tok = tiny_tokenizer(directory)
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIALS}
    cfg = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tok), "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "max_position_embeddings": 2048,
            "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
            "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|endoftext|>"],
        },
        vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 64, "num_heads": 2,
                       "mlp_ratio": 2, "patch_size": 14, "spatial_merge_size": 2,
                       "temporal_patch_size": 2, "in_channels": 3},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2VLForConditionalGeneration(cfg)
    model.save_pretrained(str(directory), safe_serialization=True)
    images = Qwen2VLImageProcessor(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 8)
    images.save_pretrained(str(directory))
    return directory
