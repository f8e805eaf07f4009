"""Save and load AutoUI policies: our own checkpoints and local Auto-UI-Base style directories.

One layout serves both, the one Auto-UI-Base ships in::

    <dir>/config.json        T5 configuration (+ our keys ``image_dim`` and ``distrl``)
    <dir>/model.safetensors  weights (or model.safetensors.index.json + shards)
    <dir>/spiece.model       T5 SentencePiece tokenizer (absent for the byte tokenizer)

Weights are read from safetensors only. ``pytorch_model.bin`` is a pickle, and unpickling can run
arbitrary code, so it is refused with instructions for a one-off conversion.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load, save, save_file
from transformers import T5Config

from distrl_tasks.agents.autoui import AutoUIModel, lm_head_is_tied
from distrl_tasks.agents.pointer import upgrade_head_state
from distrl_tasks.agents.tokenizer import ByteTokenizer, SentencePieceTokenizer, Tokenizer
from distrl_tasks.config import RETIRED_KEYS
from distrl_tasks.protocol.files import atomic_copy, atomic_write, read_json_object, temp_name

FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
SPIECE_FILE = "spiece.model"
_OUR_KEYS = ("image_dim", "distrl")
# model options that were removed: config.json key -> the retired config key that set it. A
# checkpoint saved with one on is refused, since today's code would decode it differently from how
# it was trained; the reason is the config key's own (config.RETIRED_KEYS), written once.
_RETIRED_MODEL_OPTIONS = {"copy_word_ends": "agent.pretrain.copy_word_ends"}
RETIRED_MODEL_KEYS: dict[str, str] = {
    key: f"{RETIRED_KEYS[option]} ({option}); this model would not decode as it was trained: "
    "retrain it without the option"
    for key, option in _RETIRED_MODEL_OPTIONS.items()
}

CONVERT_HINT = (
    "convert it once, in an environment where you trust the file, with:\n"
    '  python -c "import torch; from safetensors.torch import save_file; '
    "sd = torch.load('pytorch_model.bin', map_location='cpu', weights_only=True); "
    "save_file({k: v.clone().contiguous() for k, v in sd.items()}, 'model.safetensors', "
    "metadata={'format': 'pt'})\"\n"
    "and run it inside the checkpoint directory"
)


class CheckpointError(ValueError):
    """A checkpoint directory is missing, incomplete or inconsistent."""


def _unique_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """State dict with tied tensors stored once (safetensors refuses shared memory)."""
    seen: set[tuple[int, tuple[int, ...]]] = set()
    out: dict[str, torch.Tensor] = {}
    for name, tensor in model.state_dict().items():
        key = (tensor.untyped_storage().data_ptr(), tuple(tensor.shape))
        if key in seen:
            continue
        seen.add(key)
        out[name] = tensor.detach().to("cpu").contiguous()
    return out


def save_checkpoint(
    model: AutoUIModel,
    tokenizer: Tokenizer,
    directory: str | Path,
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``model`` and ``tokenizer`` to ``directory`` (created if needed); returns it.

    Each file is replaced atomically, so a reader never sees a half-written file.
    ``metadata`` (JSON-serialisable, e.g. round and algorithm) is kept under ``distrl.metadata``.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    config = model.config.to_dict()
    config.pop("scale_decoder_outputs", None)
    config["tie_word_embeddings"] = model.tied  # the one portable spelling of the tying choice
    config["image_dim"] = model.image_dim
    config["distrl"] = {
        "format_version": FORMAT_VERSION,
        "tokenizer": tokenizer.kind,
        "metadata": dict(metadata or {}),
    }
    tmp_weights = temp_name(out / WEIGHTS_FILE)
    save_file(_unique_state(model), str(tmp_weights), metadata={"format": "pt"})
    os.replace(tmp_weights, out / WEIGHTS_FILE)
    if isinstance(tokenizer, SentencePieceTokenizer):
        if tokenizer.path.resolve() != (out / SPIECE_FILE).resolve():
            atomic_copy(tokenizer.path, out / SPIECE_FILE)
    else:
        (out / SPIECE_FILE).unlink(missing_ok=True)  # a stale one would override "byte"
    atomic_write(out / CONFIG_FILE, json.dumps(config, indent=2, default=str).encode())
    return out


def read_metadata(directory: str | Path) -> dict[str, Any]:
    """The ``metadata`` saved with one of our checkpoints (empty for foreign ones)."""
    config = _read_config(Path(directory))
    return dict(config.get("distrl", {}).get("metadata", {}))


def _read_config(directory: Path) -> dict[str, Any]:
    if not directory.is_dir():
        raise CheckpointError(f"checkpoint directory not found: {directory}")
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{directory}: no {CONFIG_FILE}; not a T5/AutoUI checkpoint")
    return read_json_object(path, CheckpointError)


def weight_files(directory: Path) -> list[Path]:
    """The safetensors files of a checkpoint directory; refuses pickles with a conversion hint."""
    single = directory / WEIGHTS_FILE
    if single.is_file():
        return [single]
    index = directory / INDEX_FILE
    if index.is_file():
        weight_map = json.loads(index.read_text()).get("weight_map", {})
        files = sorted({directory / name for name in weight_map.values()})
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise CheckpointError(f"{directory}: shards listed in {INDEX_FILE} missing: {missing}")
        return files
    if (directory / "pytorch_model.bin").is_file():
        raise CheckpointError(
            f"{directory}: only pytorch_model.bin found. Pickled weights are not loaded (a pickle "
            f"can execute code); {CONVERT_HINT}"
        )
    raise CheckpointError(f"{directory}: no {WEIGHTS_FILE} (or {INDEX_FILE}) found")


def read_weights(files: list[Path], prefix: str = "") -> dict[str, torch.Tensor]:
    """Tensors of safetensors ``files``; with ``prefix``, only those names, prefix removed."""
    state: dict[str, torch.Tensor] = {}
    for file in files:
        try:
            with safe_open(str(file), framework="pt") as f:
                for name in f.keys():  # noqa: SIM118 - safe_open handles have no __iter__
                    if name.startswith(prefix):
                        state[name[len(prefix) :]] = f.get_tensor(name)
        except (SafetensorError, OSError) as exc:  # truncated, overwritten, not safetensors
            raise CheckpointError(f"{file}: unreadable safetensors file ({exc})") from exc
    return state


def _load_tokenizer(directory: Path, config: Mapping[str, Any]) -> Tokenizer:
    spiece = directory / SPIECE_FILE
    if spiece.is_file():
        return SentencePieceTokenizer(spiece)
    kind = config.get("distrl", {}).get("tokenizer")
    if kind == ByteTokenizer.kind:
        return ByteTokenizer()
    raise CheckpointError(
        f"{directory}: no {SPIECE_FILE} and config.json does not name the byte tokenizer; "
        "copy the T5 spiece.model of this checkpoint into the directory"
    )


def refuse_retired(config: Mapping[str, Any], where: str | Path) -> None:
    """Raise :class:`CheckpointError` if the saved model ``config`` turns on a retired option
    (:data:`RETIRED_MODEL_KEYS`); the option off, or absent, is fine."""
    for key, why in RETIRED_MODEL_KEYS.items():
        if config.get(key):
            raise CheckpointError(f"{where}: {key} is on, but {why}")


def _t5_config(config: Mapping[str, Any], where: Path) -> T5Config:
    fields = {k: v for k, v in config.items() if k not in _OUR_KEYS}
    try:
        t5 = T5Config.from_dict(fields)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{where}/{CONFIG_FILE}: not a usable T5 config: {exc}") from exc
    return t5


def _tied_groups(model: AutoUIModel) -> list[list[str]]:
    """State-dict names grouped by shared storage; loading any one name restores the group."""
    groups: dict[tuple[int, tuple[int, ...]], list[str]] = {}
    for name, tensor in model.state_dict().items():
        key = (tensor.untyped_storage().data_ptr(), tuple(tensor.shape))
        groups.setdefault(key, []).append(name)
    return list(groups.values())


def load_checkpoint(
    directory: str | Path,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
) -> tuple[AutoUIModel, Tokenizer]:
    """Load a model and its tokenizer from a local checkpoint directory (ours or Auto-UI-Base).

    The image feature size comes from the ``image_dense`` weights, so a checkpoint made for
    BLIP-2 (1408) or for the small encoder loads without extra configuration. The model is
    returned in eval mode.

    Raises:
        CheckpointError: missing files, a pickle-only checkpoint, a retired model option
            (:data:`RETIRED_MODEL_KEYS`), or weights that do not fit the configuration (the
            message names the offending keys).
    """
    where = Path(directory)
    config = _read_config(where)
    refuse_retired(config, where / CONFIG_FILE)
    files = weight_files(where)
    tokenizer = _load_tokenizer(where, config)
    state = read_weights(files)
    upgrade_head_state(state)  # a pointer head saved before its goal-named feature
    t5 = _t5_config(config, where)
    if "image_dense.weight" not in state:
        raise CheckpointError(
            f"{where}: weights have no image_dense.weight; this is a plain T5, not an AutoUI "
            "checkpoint"
        )
    image_dim = int(state["image_dense.weight"].shape[1])
    if config.get("image_dim", image_dim) != image_dim:
        raise CheckpointError(
            f"{where}: config image_dim {config['image_dim']} disagrees with the weights "
            f"({image_dim})"
        )
    model = AutoUIModel(t5, image_dim)
    if model.tied != lm_head_is_tied(t5):
        raise CheckpointError(f"{where}: inconsistent tie_word_embeddings")
    tokenizer.output_mask(model.vocab_size)  # raises if the tokenizer outgrows the model
    expected = model.state_dict()
    wrong = [
        f"{k}: file {tuple(v.shape)} vs model {tuple(expected[k].shape)}"
        for k, v in state.items()
        if k in expected and tuple(v.shape) != tuple(expected[k].shape)
    ]
    if wrong:
        raise CheckpointError(f"{where}: tensor shapes do not match the config: {wrong[:5]}")
    # Old T5 exports carry a cross-attention position bias that T5 never uses.
    ignorable = {"decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"}
    unexpected = sorted(set(state) - set(expected) - ignorable)
    if unexpected:
        raise CheckpointError(f"{where}: unexpected tensors in the weights: {unexpected[:5]}")
    missing = sorted(g[0] for g in _tied_groups(model) if not any(n in state for n in g))
    if missing:
        raise CheckpointError(f"{where}: tensors missing from the weights: {missing[:5]}")
    model.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=False)
    model.to(device=device, dtype=dtype)
    model.eval()
    return model, tokenizer


def weights_to_bytes(model: torch.nn.Module) -> bytes:
    """The model's weights as safetensors bytes (tied tensors once), e.g. to send to a process."""
    return save(_unique_state(model))


def load_weights_bytes(model: torch.nn.Module, data: bytes) -> None:
    """Load :func:`weights_to_bytes` output into ``model`` (same architecture), in place.

    Raises:
        CheckpointError: the bytes are not safetensors, or their tensors are not the model's.
    """
    try:
        state = load(data)
    except SafetensorError as exc:
        raise CheckpointError(f"not safetensors weights: {exc}") from exc
    expected = model.state_dict()
    unexpected = sorted(set(state) - set(expected))
    missing = sorted(g[0] for g in _tied_groups(model) if not any(n in state for n in g))
    wrong = [k for k, v in state.items() if k in expected and v.shape != expected[k].shape]
    if unexpected or missing or wrong:
        raise CheckpointError(
            f"weights do not fit the model: unexpected {unexpected[:3]}, missing {missing[:3]}, "
            f"wrong shapes {wrong[:3]}"
        )
    model.load_state_dict(state, strict=False)
