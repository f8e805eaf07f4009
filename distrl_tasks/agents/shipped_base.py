"""The shipped base policy: our AutoUI-Base, built by ``distrl pretrain``.

The package carries one checkpoint (``distrl_tasks/agents/base/``: config.json,
model.safetensors, spiece.model and ``model_card.json``). The bootstrap stage starts from it
(``agent.base_checkpoint``: ``shipped`` = this one, a directory = another base, ``""`` = a fresh
model) the way the papers start from AutoUI-Base. The card records how the base was built and
the model configuration it was built with; :func:`load_base` refuses a base whose card does not
match the configuration the code builds today, so a stale base cannot go unnoticed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import T5Config

from distrl_tasks.agents.autoui import AutoUIModel, tiny_t5_config
from distrl_tasks.agents.checkpoint import CheckpointError, load_checkpoint, refuse_retired
from distrl_tasks.agents.tokenizer import Tokenizer

CARD_FILE = "model_card.json"
SHIPPED = "shipped"
SHIPPED_DIR = Path(__file__).resolve().parent / "base"
REBUILD = "distrl pretrain --out distrl_tasks/agents/base"
# T5 config keys that decide the architecture (what a card must agree on with the code)
_ARCH_KEYS = (
    "vocab_size",
    "d_model",
    "d_kv",
    "d_ff",
    "num_layers",
    "num_decoder_layers",
    "num_heads",
    "relative_attention_num_buckets",
    "relative_attention_max_distance",
    "feed_forward_proj",
    "copy_attention",
    "copy_match",
    "copy_span",
    "pointer",
)
# keys that configs written before them lack, with the value that absence means
_ARCH_DEFAULTS: dict[str, Any] = {"copy_span": False, "pointer": False}
# optional heads: a card records them, and the code builds a model with or without them
_OPTIONAL_KEYS = ("pointer",)


class BaseCheckpointError(CheckpointError):
    """The base checkpoint is missing, corrupt or does not match the code's model config."""


def card_model_config(config: T5Config) -> dict[str, Any]:
    """The architecture keys of ``config`` (what the card records and is checked on)."""
    return {k: getattr(config, k, _ARCH_DEFAULTS.get(k)) for k in _ARCH_KEYS}


def recorded_model_config(card: dict[str, Any]) -> dict[str, Any]:
    """The architecture keys a card records, with what a missing key meant when it was written
    (cards older than a key, such as ``copy_span``, lack it)."""
    recorded = card["model_config"]
    return {k: recorded.get(k, _ARCH_DEFAULTS.get(k)) for k in _ARCH_KEYS}


def base_dir(setting: str) -> Path | None:
    """The directory ``agent.base_checkpoint`` names (None for ``""``: no base)."""
    if not setting:
        return None
    return SHIPPED_DIR if setting == SHIPPED else Path(setting)


def read_card(directory: Path) -> dict[str, Any]:
    """The model card of a base checkpoint.

    Raises:
        BaseCheckpointError: missing or unreadable card (the message names the file and the
            rebuild command).
    """
    path = directory / CARD_FILE
    if not path.is_file():
        raise BaseCheckpointError(
            f"base checkpoint card {path} is missing; rebuild with: {REBUILD}"
        )
    try:
        card = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaseCheckpointError(
            f"base checkpoint card {path} is unreadable ({exc}); rebuild with: {REBUILD}"
        ) from exc
    if not isinstance(card, dict) or not isinstance(card.get("model_config"), dict):
        raise BaseCheckpointError(f"{path}: no model_config in the card; rebuild with: {REBUILD}")
    return card


def check_card(directory: Path, card: dict[str, Any]) -> None:
    """Raise unless the card's model config is what :func:`tiny_t5_config` builds today (a
    retired option on, :data:`~.checkpoint.RETIRED_MODEL_KEYS`, is never that)."""
    try:
        refuse_retired(card["model_config"], directory / CARD_FILE)
    except CheckpointError as exc:
        raise BaseCheckpointError(f"{exc}; rebuild with: {REBUILD}") from exc
    recorded = recorded_model_config(card)
    today = card_model_config(tiny_t5_config(int(recorded.get("vocab_size") or 0) or 384))
    wrong = {
        k: (recorded[k], v)
        for k, v in today.items()
        if recorded[k] != v and k not in _OPTIONAL_KEYS
    }
    if wrong:
        detail = ", ".join(f"{k}: card {a!r} vs code {b!r}" for k, (a, b) in wrong.items())
        raise BaseCheckpointError(
            f"base checkpoint {directory / CARD_FILE} was built for another model config "
            f"({detail}); rebuild with: {REBUILD}"
        )


def load_base(
    setting: str, *, device: str = "cpu"
) -> tuple[AutoUIModel, Tokenizer, dict[str, Any]] | None:
    """Model, tokenizer and card of the base ``agent.base_checkpoint`` names (None: no base).

    Raises:
        BaseCheckpointError: missing or corrupt files, or a card that does not match the code's
            model config; the message names the file and the command that rebuilds the base.
    """
    directory = base_dir(setting)
    if directory is None:
        return None
    if not directory.is_dir():
        raise BaseCheckpointError(
            f"base checkpoint directory {directory} does not exist (agent.base_checkpoint = "
            f"{setting!r}); rebuild with: {REBUILD}, or set agent.base_checkpoint: '' to start "
            "from a fresh model"
        )
    card = read_card(directory)
    check_card(directory, card)
    try:
        model, tokenizer = load_checkpoint(directory, device=device)
    except Exception as exc:  # safetensors raises its own error type on a truncated file
        raise BaseCheckpointError(
            f"base checkpoint {directory} cannot be loaded ({exc}); rebuild with: {REBUILD}"
        ) from exc
    if card_model_config(model.config) != recorded_model_config(card):
        raise BaseCheckpointError(
            f"{directory / 'config.json'} disagrees with {directory / CARD_FILE}; "
            f"rebuild with: {REBUILD}"
        )
    return model, tokenizer, card
