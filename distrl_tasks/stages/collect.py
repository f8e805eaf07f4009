"""The collect stage: run one round of episodes on the device fleet and write Parquet shards.

``run`` is idempotent per (round, worker): once a round's manifest exists and its shards verify,
re-running returns that manifest and touches nothing. Shards are one per device,
``r<round>-w<worker>-<serial>``. For the simulator the stage starts its own farm unless given an
ADB address; for emulators it drives every device the ADB server at ``env.adb_host:adb_port``
lists.

Nothing finished is lost to a crash: each episode is journaled as it ends
(:mod:`distrl_tasks.runners.journal`), and a retry of the same (round, worker) takes the
journaled episodes as they are and collects only the rest; the journal is cleared once the
manifest is written.
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from distrl_tasks.agents.image_encoders import build_image_encoder, image_feature_dim
from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import Config
from distrl_tasks.data.shards import write_shard
from distrl_tasks.envs.adb_device import AdbClient, AdbDevice, check_adb_server
from distrl_tasks.envs.android_env import AndroidEnv
from distrl_tasks.evaluators.oracle import OracleEvaluator
from distrl_tasks.protocol.files import atomic_write_json
from distrl_tasks.runners.collector import (
    CollectResult,
    collect_async,
    collect_sync,
    trajectory_id,
)
from distrl_tasks.runners.inference import InferenceServer
from distrl_tasks.runners.journal import EpisodeJournal, journal_dir
from distrl_tasks.runners.policies import RandomPolicy, ScriptedPolicy
from distrl_tasks.stages import curriculum, modes
from distrl_tasks.stages.common import labeled_dir, raw_dir
from distrl_tasks.tasks.taskset import load_goals


def manifest_path(out_dir: str | os.PathLike, round_: int, worker: int) -> Path:
    return Path(out_dir) / f"collect-r{round_:06d}-w{worker:02d}.json"


def sample_goals(
    goals: list[str],
    serials: list[str],
    episodes: int,
    seed: str,
    probabilities: np.ndarray | None = None,
) -> dict[str, list[str]]:
    """``episodes`` goals per device, drawn with a seeded RNG (same seed -> same plan);
    weighted by ``probabilities`` (the curriculum, :mod:`.curriculum`) when given."""
    return curriculum.plan_goals(goals, serials, episodes, seed, probabilities)


def _policy(cfg: Config, policy: object, seed: int) -> object:
    if policy is None:
        return build_policy(cfg.agent, seed=seed)
    if policy == "scripted":
        return ScriptedPolicy(mistake_rate=cfg.sim.expert_mistake_rate, seed=seed)
    if policy == "random":
        return RandomPolicy(seed=seed)
    if isinstance(policy, str):
        raise ValueError(f"policy must be an object, 'scripted' or 'random', got {policy!r}")
    return policy


def behavior_policy(cfg: Config, workdir: str | os.PathLike) -> tuple[object, int]:
    """The registry's ``behavior`` policy and its policy version (what actors run)."""
    from distrl_tasks.stages.common import checkout, registry

    reg = registry(cfg, workdir)
    info = reg.alias_version("behavior")
    if info is None:
        raise RuntimeError(
            f"no 'behavior' policy in the registry {cfg.tracking.model_name!r}: "
            "run `distrl bootstrap` first"
        )
    with checkout(cfg, workdir, reg, info.version) as path:
        policy = build_policy(cfg.agent, checkpoint_dir=path, seed=cfg.sim.seed)
    version = info.policy_version if info.policy_version is not None else info.version
    return policy, int(version)


def _snapshot_loader(cfg: Config, serial: str):
    """Reset for an emulator: load the clean snapshot over its console (``emulator-<port>``)."""
    from distrl_tasks.envs.emulator import console_command

    port = int(serial.rsplit("-", 1)[1])
    return lambda: console_command(port, f"avd snapshot load {cfg.env.avd_snapshot}")


def open_envs(cfg: Config, host: str, port: int, serials: list[str]) -> list[AndroidEnv]:
    """One env per device serial at the ADB server ``host:port`` (``env.*`` settings)."""
    encoder = build_image_encoder(cfg.agent)
    kind = cfg.env.device_kind
    return [
        AndroidEnv(
            AdbDevice(
                s,
                host,
                port,
                kind=kind,
                timeout_s=cfg.env.command_timeout_s,
                snapshot_loader=_snapshot_loader(cfg, s) if kind == "emulator" else None,
            ),
            encoder,
            cfg.env,
            task_set=cfg.env.task_set,
        )
        for s in serials
    ]


def _reuse(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    manifest = json.loads(path.read_text())
    if all(Path(p).exists() for p in manifest.get("shards", [])):
        return {**manifest, "reused": True}
    return None


def run(
    cfg: Config,
    *,
    round: int,
    policy: object = None,
    policy_version: int = 0,
    out_dir: str | os.PathLike | None = None,
    mode: str | None = None,
    episodes_per_device: int | None = None,
    split: str = "train",
    adb_address: tuple[str, int] | None = None,
    worker: int = 0,
    workers: int = 1,
    workdir: str | os.PathLike = ".",
    adb_host: str | None = None,
    adb_port: int | None = None,
    max_batch: int | None = None,
    max_wait_ms: float | None = None,
    progress: bool = True,
    dynamics: str | None = None,
) -> dict[str, Any]:
    """Collect one round and write its shards; returns a small manifest.

    Args:
        cfg: the configuration (devices, task set, horizons, evaluator, gamma).
        round: collection round (shard names and the ``round`` column).
        policy: an ``AutoUIPolicy`` or collect-API policy, ``"scripted"``, ``"random"``, or None
            for the registry's ``behavior`` policy (its version is then recorded).
        policy_version: version recorded on every step (for a policy passed in).
        out_dir: shard directory (default ``<data.root>/raw`` under ``workdir``).
        mode: ``"async"`` (DistRL) or ``"sync"`` (DigiRL); default from
            ``orchestration.asynchronous``.
        episodes_per_device: default ``orchestration.episodes_per_device``, or in round 0 (the
            offline phase, :mod:`distrl_tasks.stages.modes`)
            ``orchestration.offline_episodes_per_device``.
        split: ``train`` or ``test`` goals.
        adb_address: ``(host, port)`` of an ADB server to use instead of starting a sim farm.
        worker: worker index (shard names; farm seed offset; which devices it drives).
        workers: number of workers sharing the ADB server's devices: worker ``w`` drives the
            ``w``-th contiguous block of ``orchestration.devices_per_worker`` devices.
        workdir: project working directory (data, registry).
        adb_host / adb_port: an ADB server to use (e.g. the farm stage's) instead of starting a
            private simulator farm; same as ``adb_address``.
        max_batch / max_wait_ms: inference server batching (async mode); default
            ``orchestration.inference_max_batch`` / ``inference_max_wait_ms``.
        progress: show tqdm bars.
        dynamics: live-world profile of the private simulator farm (``static``, ``live``,
            ``hostile``); default ``sim.dynamics.profile`` (``live``: online collection runs in
            the live world). Ignored with an external ADB server (its farm has its own profile).

    Returns:
        ``shards``, ``trajectories``, ``steps``, ``success_rate``, ``steps_per_s``,
        ``failures`` and more (see :meth:`CollectStats.as_dict`), plus ``reused``.
    """
    mode = mode or ("async" if cfg.orchestration.asynchronous else "sync")
    if max_batch is None:
        max_batch = cfg.orchestration.inference_max_batch
    if max_wait_ms is None:
        max_wait_ms = cfg.orchestration.inference_max_wait_ms
    if mode not in ("async", "sync"):
        raise ValueError(f"mode must be 'async' or 'sync', got {mode!r}")
    episodes = episodes_per_device or modes.episodes_per_device(cfg, round)
    if episodes < 1:
        raise ValueError(f"episodes_per_device must be >= 1, got {episodes}")
    if adb_host is not None and adb_port is not None:
        adb_address = (adb_host, int(adb_port))
    if not 0 <= worker < workers:
        raise ValueError(f"worker must be in [0, workers={workers}), got {worker}")
    out = Path(out_dir) if out_dir is not None else raw_dir(cfg, workdir)
    mpath = manifest_path(out, round, worker)
    reused = _reuse(mpath)
    if reused is not None:
        return reused
    task_set = cfg.env.task_set
    goals = load_goals(task_set, split, cfg.env.data_dir)
    kind = cfg.env.device_kind
    with ExitStack() as stack:
        if adb_address is not None:
            host, port = adb_address
        elif kind == "sim":
            from distrl_tasks.tasks.farm import running_farm

            farm = stack.enter_context(
                running_farm(
                    cfg.orchestration.devices_per_worker,
                    seed=cfg.sim.seed + worker,
                    sim_cfg=cfg.sim,
                    dynamics=dynamics or cfg.sim.dynamics.profile,
                )
            )
            host, port = farm.host, farm.port
        else:
            host, port = cfg.env.adb_host, cfg.env.adb_port
        check_adb_server(host, port)
        client = AdbClient(host, port)
        serials = [d.serial for d in client.device_list()]
        if not serials:
            raise RuntimeError(f"no devices attached to the ADB server at {host}:{port}")
        if adb_address is not None and workers > 1:
            per = cfg.orchestration.devices_per_worker
            serials = serials[worker * per : (worker + 1) * per]
            if not serials:
                raise RuntimeError(f"worker {worker} has no devices at {host}:{port}")
        envs = open_envs(cfg, host, port, serials)
        probs, curriculum_info = (
            curriculum.curriculum_probabilities(cfg, goals, labeled_dir(cfg, workdir))
            if split == "train"
            else (None, {})
        )
        seed = f"{cfg.sim.seed}/{round}/{worker}/{split}"
        plan = sample_goals(goals, serials, episodes, seed, probs)
        oracle = OracleEvaluator() if cfg.evaluator.kind == "oracle" and kind == "sim" else None
        if policy is None:
            policy, policy_version = behavior_policy(cfg, workdir)
        pol = _policy(cfg, policy, seed=cfg.sim.seed + round)
        dim, gamma = image_feature_dim(cfg.agent), cfg.algorithm.gamma
        journal = EpisodeJournal(journal_dir(out, round, worker, split), round, dim, gamma)
        planned = {
            trajectory_id(round, serial, k): goal
            for serial, planned_goals in plan.items()
            for k, goal in enumerate(planned_goals)
        }
        common = dict(
            round_=round,
            split=split,
            oracle=oracle,
            gamma=gamma,
            progress=progress,
            on_episode=journal.record,
            done=journal.load(planned),
        )
        if mode == "async":
            with InferenceServer(
                pol, policy_version, max_batch=max_batch, max_wait_ms=max_wait_ms
            ) as server:
                result = collect_async(envs, server, plan, **common)
        else:
            result = collect_sync(envs, pol, plan, policy_version=policy_version, **common)
    shards = _write(result, out, round, worker, dim, gamma)
    manifest = {
        "round": round,
        "worker": worker,
        "mode": mode,
        "policy_version": policy_version,
        "task_set": task_set,
        "split": split,
        "devices": serials,
        "shards": shards,
        **result.stats.as_dict(),
        **curriculum_info,
        "reused": False,
    }
    atomic_write_json(mpath, manifest)
    journal.clear()  # the shards hold every journaled episode now
    return manifest


def _write(
    result: CollectResult, out: Path, round_: int, worker: int, dim: int, gamma: float
) -> list[str]:
    paths = []
    for serial in result.episodes:
        rows = result.rows(serial)
        if rows:
            name = f"r{round_:06d}-w{worker:02d}-{serial}"
            info = write_shard(
                rows, out, round=round_, name=name, feature_dim=dim, gamma=gamma, overwrite=True
            )  # no manifest yet: a previous attempt of this round died, replace its shards
            paths.append(str(info.path))
    return paths
