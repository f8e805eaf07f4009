"""What each DVC stage reads of the config, one small file per stage, so ``dvc exp show`` reads.

DVC re-runs a stage when one of its declared dependencies changes. Declaring whole config sections
as a stage's ``params`` kept re-runs exact but listed every key of ``params.yaml`` under ``dvc exp
show --param-deps``. Instead, the ``config`` stage of ``dvc.yaml`` writes each stage's slice of the
*resolved* config (defaults included) to ``<workdir>/runs/config/<stage>.json``, a file dependency
of that stage: a change to any key a stage reads still re-runs it, and nothing else does. A stage's
``params`` then list only the few keys that define a run, the columns a person compares.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from distrl_tasks.config import Config
from distrl_tasks.protocol.files import atomic_write_text

# The dotted keys or key prefixes each stage reads (a prefix covers its whole subtree).
STAGE_READS: dict[str, tuple[str, ...]] = {
    "bootstrap": (
        "sim",
        "env",
        "agent",
        "tracking",
        "orchestration.devices_per_worker",
        "orchestration.eval_tasks",
    ),
    "collect": (
        "sim",
        "env",
        "agent",
        "algorithm.gamma",
        "evaluator.kind",
        "data.root",
        "orchestration.devices_per_worker",
        "orchestration.episodes_per_device",
        "orchestration.offline_episodes_per_device",
        "orchestration.asynchronous",
        "orchestration.inference_max_batch",
        "orchestration.inference_max_wait_ms",
    ),
    "label": ("evaluator", "algorithm.gamma", "data.root"),
    "train": (
        "algorithm",
        "agent",
        "data.root",
        "data.replay_capacity",
        "data.replay_window_rounds",
        "orchestration.asynchronous",
        "orchestration.continuous.replay_ratio",
        "sim.seed",
    ),
    "evaluate": (
        "sim",
        "env",
        "agent",
        "orchestration.eval_tasks",
        "orchestration.eval_devices",
        "orchestration.devices_per_worker",
    ),
    "register": ("tracking", "algorithm.name"),
    "metrics": ("data.root",),
    "pretrain": ("sim", "env", "agent"),
}
CONFIG_DIR = Path("runs") / "config"


def reads(key: str, prefixes: tuple[str, ...]) -> bool:
    """Whether dotted ``key`` is one of ``prefixes`` or lies under one."""
    return any(key == p or key.startswith(p + ".") for p in prefixes)


def config_slice(cfg: Config, stage: str) -> dict[str, Any]:
    """The resolved values of every key ``stage`` reads, by dotted key.

    Raises:
        KeyError: an unknown stage (the message lists the known ones).
    """
    if stage not in STAGE_READS:
        raise KeyError(f"unknown stage {stage!r}; known: {sorted(STAGE_READS)}")
    return {k: v for k, v in cfg.to_flat_dict().items() if reads(k, STAGE_READS[stage])}


def write_slices(cfg: Config, workdir: str | os.PathLike = ".") -> dict[str, str]:
    """Write every stage's slice to ``<workdir>/runs/config/<stage>.json``; returns the paths.

    A file whose content would not change is left untouched, so its modification time, too,
    says when the stage's inputs last changed.
    """
    out = Path(workdir) / CONFIG_DIR
    written = {}
    for stage in STAGE_READS:
        path = out / f"{stage}.json"
        text = json.dumps(config_slice(cfg, stage), indent=1, sort_keys=True, default=str) + "\n"
        if not path.is_file() or path.read_text() != text:
            atomic_write_text(path, text)
        written[stage] = str(path)
    return written


def declared_params(*dvc_files: str | os.PathLike) -> list[str]:
    """The ``params.yaml`` keys the stages of ``dvc_files`` declare, in first-seen order."""
    keys: list[str] = []
    for path in dvc_files:
        for stage in (yaml.safe_load(Path(path).read_text()).get("stages") or {}).values():
            for key in stage.get("params", []) or []:
                if isinstance(key, str) and key not in keys:
                    keys.append(key)
    return keys


def experiment_columns(declared: list[str]) -> list[str]:
    """``dvc exp show`` arguments that hide every config key but ``declared``, and the
    dependencies' hashes: DVC always lists all of ``params.yaml`` (about 200 columns) for
    committed rows, ``--param-deps`` or not."""
    sections = "|".join(f.name for f in dataclasses.fields(Config))
    keep = "|".join(re.escape(k) for k in declared)
    return ["--drop", rf"^(({sections})\.|.*/|params\.yaml$)", "--keep", rf"^({keep})$"]
