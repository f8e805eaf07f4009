"""Writing and reading a :class:`~distrl_tasks.algorithms.learner.Learner`'s checkpoint.

The files and their format are :mod:`train_state`'s; this module knows which parts of a learner
go where. Saving is collective (every rank writes its RNG streams and, for DistRL with
``rescore: new``, its replay priorities); the main rank writes the rest and publishes the
directory atomically, then deletes states older than the newest
``algorithm.keep_states``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distrl_tasks.agents import checkpoint as policy_checkpoint
from distrl_tasks.algorithms import train_state as ts

if TYPE_CHECKING:
    from distrl_tasks.algorithms.learner import Learner


def save(learner: Learner, name: str) -> Path:
    """Write checkpoint ``name`` under ``<out_dir>/checkpoints``; returns its directory."""
    root = learner.out_dir / "checkpoints"
    final, tmp = root / name, root / f".tmp-{name}"
    rank = learner.accelerator.process_index
    if learner.accelerator.is_main_process:
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
    learner.accelerator.wait_for_everyone()
    ts.save_tensors(ts.torch_rng_tensors(), tmp / f"rng-rank{rank}.safetensors")
    ts.write_json(tmp / f"rng-rank{rank}.json", ts.numpy_rng_json(learner.rng))
    known = getattr(learner.algorithm, "known_priorities", None)
    if known:  # each rank's replay priorities are its own (it sampled its own windows)
        ts.save_priorities(known, tmp / f"priorities-rank{rank}.parquet")
    learner.accelerator.wait_for_everyone()
    if learner.accelerator.is_main_process:
        _write_main_files(learner, tmp)
        ts.publish_dir(tmp, final)
        ts.write_latest(root, name)
        ts.prune_checkpoints(root, learner.cfg.algorithm.keep_states)
    learner.accelerator.wait_for_everyone()
    return final


def _write_main_files(learner: Learner, tmp: Path) -> None:
    policy = learner.trained_policy()
    meta = {
        "policy_version": learner.policy_version,
        "step": learner.step,
        "algorithm": learner.algorithm.name,
    }
    if policy is not None:
        policy.save(tmp / ts.POLICY_DIR, metadata=meta)
    (tmp / ts.MODULES_DIR).mkdir()
    for role, module in learner.modules.items():
        if policy is None or role != "policy":
            ts.save_module(module, tmp / ts.MODULES_DIR / f"{role}.safetensors")
    tensors, opt_meta = ts.optimizer_to_files(learner.optimizer)
    ts.save_tensors(tensors, tmp / ts.OPTIMIZER_FILE)
    state: dict[str, Any] = {
        "format_version": ts.FORMAT_VERSION,
        **meta,
        "seed": learner.seed,
        "world_size": learner.accelerator.num_processes,
        "grad_accum_steps": learner.grad_accum_steps,
        "modules": sorted(learner.modules),
        "optimizer": opt_meta,
    }
    ts.write_json(tmp / ts.STATE_FILE, state)


def load(learner: Learner, where: Path) -> None:
    """Restore ``learner`` from checkpoint directory ``where`` (the caller resets the lr)."""
    state = ts.read_json(where / ts.STATE_FILE)
    if state.get("format_version") != ts.FORMAT_VERSION:
        raise ts.TrainStateError(
            f"{where}: unsupported format_version {state.get('format_version')!r}"
        )
    if state["world_size"] != learner.accelerator.num_processes:
        raise ts.TrainStateError(
            f"{where}: saved by {state['world_size']} processes, resuming with "
            f"{learner.accelerator.num_processes}; per-rank sampling streams would not match"
        )
    if state["modules"] != sorted(learner.modules):
        raise ts.TrainStateError(
            f"{where}: modules {state['modules']} vs learner {sorted(learner.modules)}"
        )
    policy = learner.trained_policy()
    for role, module in learner.modules.items():
        if policy is not None and role == "policy":
            saved, _ = policy_checkpoint.load_checkpoint(where / ts.POLICY_DIR)
            module.load_state_dict(saved.state_dict())
        else:
            ts.load_module(module, where / ts.MODULES_DIR / f"{role}.safetensors")
    ts.optimizer_from_files(
        learner.optimizer, ts.load_tensors(where / ts.OPTIMIZER_FILE), state["optimizer"]
    )
    learner.step, learner.policy_version = int(state["step"]), int(state["policy_version"])
    rank = learner.accelerator.process_index
    ts.set_torch_rng(ts.load_tensors(where / f"rng-rank{rank}.safetensors"))
    learner.rng = ts.numpy_rng_from_json(ts.read_json(where / f"rng-rank{rank}.json"))
    priorities = where / f"priorities-rank{rank}.parquet"
    if priorities.is_file() and hasattr(learner.algorithm, "known_priorities"):
        learner.algorithm.known_priorities = ts.load_priorities(priorities)
