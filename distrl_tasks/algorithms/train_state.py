"""Learner checkpoints without pickle: safetensors for tensors, JSON (and Parquet) for the rest.

A checkpoint is one directory, written under a temporary name and renamed into place, so a
reader sees either no checkpoint or a complete one::

    <dir>/policy/                  AutoUIPolicy.save output: what build_policy / actors load
    <dir>/modules/<name>.safetensors   every other trainable module (critics), by role
    <dir>/optimizer.safetensors    optimizer tensors, keyed "<param index>.<state field>"
    <dir>/rng-rank<r>.safetensors  torch RNG state(s) of rank r (CPU, and CUDA when present)
    <dir>/rng-rank<r>.json         numpy sampling Generator state of rank r
    <dir>/priorities-rank<r>.parquet  rank r's replay priorities by trajectory id (DistRL
                                   with ``algorithm.distrl.rescore: new`` only)
    <dir>/train_state.json         step, policy version, optimizer scalars and param-group
                                   hyperparameters, world size, format version

Everything here is plain data; ``torch.load`` (which unpickles) is never called.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, load_model, save_file, save_model

from distrl_tasks.protocol.files import atomic_write_text, read_json_object

FORMAT_VERSION = 1
STATE_FILE = "train_state.json"
OPTIMIZER_FILE = "optimizer.safetensors"
POLICY_DIR = "policy"
MODULES_DIR = "modules"
LATEST_FILE = "latest"


class TrainStateError(ValueError):
    """A learner checkpoint is missing, incomplete, or does not fit the learner loading it."""


# --- optimizer ------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    """Tuples become lists; everything else must already be JSON-representable."""
    if isinstance(value, tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, torch.Tensor):
        return value.item()
    return value


def optimizer_to_files(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict]:
    """Split ``optimizer.state_dict()`` into safetensors-ready tensors and a JSON-ready dict."""
    state = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for index, fields in state["state"].items():
        for name, value in fields.items():
            if isinstance(value, torch.Tensor):
                tensors[f"{index}.{name}"] = value.detach().to("cpu").contiguous()
            else:
                scalars.setdefault(str(index), {})[name] = _json_value(value)
    groups = [{k: _json_value(v) for k, v in g.items()} for g in state["param_groups"]]
    return tensors, {"scalars": scalars, "param_groups": groups}


def optimizer_from_files(
    optimizer: torch.optim.Optimizer, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any]
) -> None:
    """Restore ``optimizer`` from :func:`optimizer_to_files` output (strict about structure)."""
    current = optimizer.param_groups
    saved_groups = meta["param_groups"]
    if len(saved_groups) != len(current):
        raise TrainStateError(
            f"checkpoint has {len(saved_groups)} optimizer param groups, the learner has "
            f"{len(current)} (a different algorithm or configuration?)"
        )
    groups = []
    for i, (saved, now) in enumerate(zip(saved_groups, current, strict=True)):
        if len(saved["params"]) != len(now["params"]):
            raise TrainStateError(
                f"optimizer param group {i} ({now.get('name', '?')}): checkpoint has "
                f"{len(saved['params'])} parameters, the learner {len(now['params'])}"
            )
        # Restore tuple-typed hyperparameters (betas) as tuples, like the optimizer built them.
        groups.append(
            {k: tuple(v) if isinstance(now.get(k), tuple) else v for k, v in saved.items()}
        )
    per_param: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        index, name = key.split(".", 1)
        per_param.setdefault(int(index), {})[name] = value
    for index, fields in meta["scalars"].items():
        per_param.setdefault(int(index), {}).update(fields)
    optimizer.load_state_dict({"state": per_param, "param_groups": groups})


# --- RNG ------------------------------------------------------------------------------------


def torch_rng_tensors() -> dict[str, torch.Tensor]:
    """This process's torch RNG states as uint8 tensors (CPU, plus one per CUDA device)."""
    out = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            out[f"cuda{i}"] = s
    return out


def set_torch_rng(tensors: Mapping[str, torch.Tensor]) -> None:
    """Inverse of :func:`torch_rng_tensors`."""
    torch.set_rng_state(tensors["cpu"])
    cuda = sorted(k for k in tensors if k.startswith("cuda"))
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([tensors[k] for k in cuda])


def numpy_rng_json(rng: np.random.Generator) -> dict[str, Any]:
    """A Generator's bit-generator state (Python ints, JSON-safe at any size)."""
    return rng.bit_generator.state


def numpy_rng_from_json(state: Mapping[str, Any]) -> np.random.Generator:
    """Rebuild a Generator from :func:`numpy_rng_json` output."""
    kind = state.get("bit_generator")
    if kind != "PCG64":
        raise TrainStateError(f"unsupported numpy bit generator {kind!r} in checkpoint")
    bits = np.random.PCG64()
    bits.state = dict(state)
    return np.random.Generator(bits)


# --- files ----------------------------------------------------------------------------------


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as indented JSON (the directory itself is renamed atomically later)."""
    path.write_text(json.dumps(data, indent=2, sort_keys=True))


def read_json(path: Path) -> dict[str, Any]:
    """Read a JSON object, with an error naming the file when it is missing or malformed."""
    return read_json_object(path, TrainStateError, what="checkpoint file")


def save_module(module: torch.nn.Module, path: Path) -> None:
    """Weights of ``module`` (shared/tied tensors handled by safetensors' save_model)."""
    save_model(module, str(path), metadata={"format": "pt"})


def load_module(module: torch.nn.Module, path: Path) -> None:
    """Load weights saved by :func:`save_module` into ``module`` (strict)."""
    if not path.is_file():
        raise TrainStateError(f"checkpoint file missing: {path}")
    try:
        missing, unexpected = load_model(module, str(path), strict=False)
    except (SafetensorError, OSError) as exc:  # truncated, overwritten, not safetensors
        raise TrainStateError(f"{path}: unreadable safetensors file ({exc})") from exc
    except RuntimeError as exc:  # torch's size mismatch: saved by a model of another shape
        mismatch = str(exc).strip().splitlines()[-1].strip()  # torch's last line names the tensor
        raise TrainStateError(
            f"{path}: weights saved by a model of another shape ({mismatch}); "
            f"remove {path.parent} to start that training afresh"
        ) from exc
    if missing or unexpected:
        raise TrainStateError(
            f"{path}: weights do not fit the module: missing {sorted(missing)[:5]}, "
            f"unexpected {sorted(unexpected)[:5]}"
        )


def save_tensors(tensors: Mapping[str, torch.Tensor], path: Path) -> None:
    """Plain tensor dict to safetensors (an empty dict is written as an empty file)."""
    save_file(dict(tensors), str(path), metadata={"format": "pt"})


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    """Inverse of :func:`save_tensors`."""
    if not path.is_file():
        raise TrainStateError(f"checkpoint file missing: {path}")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as exc:  # truncated, overwritten, not safetensors
        raise TrainStateError(f"{path}: unreadable safetensors file ({exc})") from exc


def save_priorities(priorities: Mapping[str, float], path: Path) -> None:
    """Replay priorities by trajectory id, as a two-column Parquet file."""
    table = pa.table(
        {
            "trajectory_id": pa.array(list(priorities), pa.string()),
            "priority": pa.array(list(priorities.values()), pa.float64()),
        }
    )
    pq.write_table(table, path)


def load_priorities(path: Path) -> dict[str, float]:
    """Read :func:`save_priorities` output; raises :class:`TrainStateError` when unreadable."""
    try:
        table = pq.read_table(path, columns=["trajectory_id", "priority"])
    except (OSError, KeyError, pa.ArrowException) as exc:
        raise TrainStateError(f"{path}: unreadable priorities ({exc})") from exc
    ids, prio = table.column("trajectory_id").to_pylist(), table.column("priority").to_pylist()
    return dict(zip(ids, prio, strict=True))


def write_latest(root: Path, name: str) -> None:
    """Atomically point ``root/latest`` at checkpoint directory ``name``."""
    atomic_write_text(root / LATEST_FILE, name + "\n")


def prune_checkpoints(root: str | os.PathLike, keep: int) -> list[Path]:
    """Delete all but the ``keep`` newest complete checkpoints under ``root``; 0 keeps all.

    Newest means the highest saved ``step`` (then name), and the one ``root/latest`` names is
    never deleted: resuming needs only it, so older states are disk space (88 MB each for the
    tiny policy with its critic and Adam moments) that a long run would otherwise pile up.
    Temporary and half-written directories are left to :func:`publish_dir`'s next writer.

    Returns:
        The deleted directories.
    """
    if keep < 0:
        raise ValueError(f"keep must be >= 0, got {keep}")
    root = Path(root)
    if keep == 0 or not root.is_dir():
        return []
    latest = latest_checkpoint(root)
    complete = [
        d for d in root.iterdir() if not d.name.startswith(".") and (d / STATE_FILE).is_file()
    ]

    def order(d: Path) -> tuple[int, str]:
        try:
            return int(read_json(d / STATE_FILE).get("step", -1)), d.name
        except (OSError, ValueError):
            return -1, d.name  # unreadable state: oldest, pruned first

    stale = [d for d in sorted(complete, key=order, reverse=True)[keep:] if d != latest]
    for d in stale:
        shutil.rmtree(d, ignore_errors=True)
    return stale


def latest_checkpoint(root: str | os.PathLike) -> Path | None:
    """The checkpoint ``root/latest`` names, or None when there is none yet."""
    pointer = Path(root) / LATEST_FILE
    if not pointer.is_file():
        return None
    path = Path(root) / pointer.read_text().strip()
    return path if (path / STATE_FILE).is_file() else None


# --- modules ------------------------------------------------------------------------------


def unique_params(modules: dict[str, torch.nn.Module]) -> list[torch.nn.Parameter]:
    """Trainable parameters of all modules, each once (modules may share submodules)."""
    seen: set[int] = set()
    out = []
    for module in modules.values():
        for p in module.parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def module_buffers(modules: dict[str, torch.nn.Module]) -> list[torch.Tensor]:
    """Buffers of all modules, each once."""
    seen: set[int] = set()
    out = []
    for module in modules.values():
        for b in module.buffers():
            if id(b) not in seen:
                seen.add(id(b))
                out.append(b)
    return out
