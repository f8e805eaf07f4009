"""The collect stage: run one round of episodes on the device fleet and write Parquet shards.

``run`` is idempotent per (round, worker): once a round's manifest exists and its shards verify,
re-running under the same settings (:func:`recorded_under`) returns that manifest and touches
nothing; under other settings it stops with an error. Shards are one per device,
``r<round>-w<worker>-<serial>``. For the simulator the stage starts its own farm unless given an
ADB address; for emulators it drives every device the ADB server at ``env.adb_host:adb_port``
lists.

Nothing finished is lost to a crash: each episode is journaled as it ends
(:mod:`distrl_tasks.runners.journal`), and a retry of the same (round, worker) takes the
journaled episodes as they are and collects only the rest; the journal is cleared once the
manifest is written. A retry under other settings than the journal's is refused, as for a
finished round.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distrl_tasks.agents.image_encoders import build_image_encoder, image_feature_dim
from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import Config, modes
from distrl_tasks.config.algorithm_specs import algorithm_spec
from distrl_tasks.data.shards import write_shard
from distrl_tasks.envs.adb_device import AdbClient, AdbDevice, check_adb_server
from distrl_tasks.envs.android_env import AndroidEnv
from distrl_tasks.envs.emulator import console_command
from distrl_tasks.evaluators.oracle import OracleEvaluator
from distrl_tasks.protocol.files import atomic_write_json
from distrl_tasks.runners.collector import (
    CollectResult,
    PlannedTrajectories,
    collect_async,
    collect_sync,
)
from distrl_tasks.runners.exploration import ElementExploration
from distrl_tasks.runners.inference import InferenceServer
from distrl_tasks.runners.journal import EpisodeJournal, journal_dir
from distrl_tasks.runners.policies import (
    ModelPolicy,
    RandomPolicy,
    ScriptedPolicy,
    as_collect_policy,
)
from distrl_tasks.stages import curriculum
from distrl_tasks.stages.common import (
    checkout,
    labeled_dir,
    located_paths,
    portable_paths,
    raw_dir,
    registry,
    torch_threads,
)
from distrl_tasks.tasks.goal_farms import running_farm
from distrl_tasks.tasks.taskset import load_goals


def manifest_path(out_dir: str | os.PathLike, round_: int, worker: int) -> Path:
    return Path(out_dir) / f"collect-r{round_:06d}-w{worker:02d}.json"


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
            pointer_elements=cfg.agent.tap_elements,  # agent.pointer
            # GiGPO groups steps by state: on the simulator by its exact state
            exact_state_keys=algorithm_spec(cfg.algorithm.name).step_keys,
        )
        for s in serials
    ]


def recorded_under(cfg: Config, req: CollectRequest) -> dict[str, Any]:
    """The settings that shape a round's episodes beyond its number and worker (kept in its
    manifest): a finished round is reused only under the same ones.

    Args:
        cfg: the configuration the round runs under (its world, task set, expert).
        req: the resolved request (split, episodes, goal mix, policy).
    """
    policy = (
        req.policy if isinstance(req.policy, str) else "behavior" if req.policy is None else "model"
    )
    return {
        "task_set": cfg.env.task_set,
        "split": req.split,
        "episodes_per_device": req.episodes_per_device,
        "goal_mix": req.goal_mix,
        "policy": policy,
        "world": cfg.sim.dynamics.profile if cfg.env.device_kind == "sim" else None,
        "expert_mistake_rate": cfg.sim.expert_mistake_rate if policy == "scripted" else None,
    }


def _reuse(path: Path, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The finished round's manifest, if its shards are all there and it was recorded under
    ``settings`` (a manifest from before the settings were kept is taken as it is).

    Raises:
        ValueError: the round was recorded under other settings: reusing it would answer a
            different question (say a ``live`` rerun with ``static`` episodes) without a word.
    """
    if not path.exists():
        return None
    manifest = located_paths(json.loads(path.read_text()), path.parent)
    recorded = manifest.get("recorded_under")
    if recorded is not None and recorded != settings:
        raise ValueError(
            f"collect: round {manifest.get('round')} in {path.parent} was recorded under other "
            f"settings ({_differences(recorded, settings)}); remove {path.name} and its shards "
            "(or use a fresh --workdir) to collect it again"
        )
    if all(Path(p).exists() for p in manifest.get("shards", [])):
        return {**manifest, "reused": True}
    return None


def _differences(recorded: dict[str, Any], asked: dict[str, Any]) -> str:
    """Each setting that differs, as ``name <there> there, <asked> asked``."""
    differ = sorted(k for k in recorded.keys() | asked.keys() if recorded.get(k) != asked.get(k))
    return ", ".join(f"{k} {recorded.get(k)!r} there, {asked.get(k)!r} asked" for k in differ)


def check_journal(journal: EpisodeJournal, settings: dict[str, Any], round_: int) -> None:
    """Refuse to resume an interrupted round whose journaled episodes were collected under
    other settings (they would join this round's shards as if collected under these).

    Raises:
        ValueError: naming each difference and the journal to remove.
    """
    recorded = journal.recorded_settings()
    if recorded is not None and recorded != settings:
        raise ValueError(
            f"collect: round {round_} was interrupted after journaling episodes under other "
            f"settings ({_differences(recorded, settings)}); remove {journal.directory} to "
            "collect it again under these"
        )


@dataclass(frozen=True)
class CollectRequest:
    """What one collect run does; every field but ``round`` has a default from the config.

    Attributes:
        round: collection round (shard names and the ``round`` column).
        worker: worker index (shard names; farm seed offset; which devices it drives).
        workers: number of workers sharing the ADB server's devices: worker ``w`` drives the
            ``w``-th contiguous block of ``orchestration.devices_per_worker`` devices.
        split: ``train`` or ``test`` goals.
        policy: an ``AutoUIPolicy`` or collect-API policy, ``"scripted"``, ``"random"``, or None
            for the registry's ``behavior`` policy (its version is then recorded).
        policy_version: version recorded on every step (for a policy passed in).
        mode: ``"async"`` (DistRL) or ``"sync"`` (DigiRL); default from
            ``orchestration.asynchronous``.
        episodes_per_device: default ``orchestration.episodes_per_device``, or in round 0 (the
            offline phase, :mod:`distrl_tasks.config.modes`)
            ``orchestration.offline_episodes_per_device``.
        adb_address: ``(host, port)`` of an ADB server (e.g. the farm stage's) to use instead of
            starting a private simulator farm (or, for emulators, ``env.adb_host:adb_port``).
        out_dir: shard directory (default ``<data.root>/raw`` under the workdir).
        max_batch / max_wait_ms: inference server batching (async mode); default
            ``orchestration.inference_max_batch`` / ``inference_max_wait_ms``.
        goal_mix: on the train split, ``file`` draws the goals uniformly (times the
            curriculum's weights); ``balanced`` gives every task family the same share of the
            draws; default ``orchestration.curriculum.goal_mix`` (the bootstrap passes
            ``agent.sft.goal_mix``).
        progress: show tqdm bars.
    """

    round: int
    worker: int = 0
    workers: int = 1
    split: str = "train"
    policy: object = None
    policy_version: int = 0
    mode: str | None = None
    episodes_per_device: int | None = None
    adb_address: tuple[str, int] | None = None
    out_dir: str | os.PathLike | None = None
    max_batch: int | None = None
    max_wait_ms: float | None = None
    goal_mix: str | None = None
    progress: bool = True

    def resolved(self, cfg: Config) -> CollectRequest:
        """This request with the config's defaults filled in; ValueError on a bad field."""
        o = cfg.orchestration
        mode = self.mode or ("async" if o.asynchronous else "sync")
        if mode not in ("async", "sync"):
            raise ValueError(f"mode must be 'async' or 'sync', got {mode!r}")
        episodes = self.episodes_per_device or modes.episodes_per_device(cfg, self.round)
        if episodes < 1:
            raise ValueError(f"episodes_per_device must be >= 1, got {episodes}")
        if not 0 <= self.worker < self.workers:
            raise ValueError(f"worker must be in [0, workers={self.workers}), got {self.worker}")
        goal_mix = self.goal_mix or o.curriculum.goal_mix
        if goal_mix not in ("file", "balanced"):
            raise ValueError(f"goal_mix must be 'file' or 'balanced', got {goal_mix!r}")
        return dataclasses.replace(
            self,
            mode=mode,
            goal_mix=goal_mix,
            episodes_per_device=episodes,
            max_batch=o.inference_max_batch if self.max_batch is None else self.max_batch,
            max_wait_ms=o.inference_max_wait_ms if self.max_wait_ms is None else self.max_wait_ms,
        )


def run(
    cfg: Config, request: CollectRequest, *, workdir: str | os.PathLike = "."
) -> dict[str, Any]:
    """Collect one round and write its shards; returns a small manifest.

    The steps, in order: fill in the request's defaults, return the finished manifest if there
    is one, find the devices (starting a private farm if needed), plan the goals, pick the
    acting policy, run the episodes (journaled as they end), write the shards and the manifest.

    Args:
        cfg: the configuration (devices, task set, horizons, evaluator, gamma).
        request: what to collect (:class:`CollectRequest`).
        workdir: project working directory (data, registry).

    Returns:
        ``shards``, ``trajectories``, ``steps``, ``success_rate``, ``steps_per_s``,
        ``failures`` and more (see :meth:`CollectStats.as_dict`), plus ``reused``.
    """
    req = request.resolved(cfg)
    out = Path(req.out_dir) if req.out_dir is not None else raw_dir(cfg, workdir)
    mpath = manifest_path(out, req.round, req.worker)
    settings = recorded_under(cfg, req)
    reused = _reuse(mpath, settings)
    if reused is not None:
        return reused
    dim, gamma = image_feature_dim(cfg.agent), cfg.algorithm.gamma
    journal = EpisodeJournal(
        journal_dir(out, req.round, req.worker, req.split), req.round, dim, gamma, settings
    )
    check_journal(journal, settings, req.round)  # before a device starts: a refusal is cheap
    goals = load_goals(cfg.env.task_set, req.split, cfg.env.data_dir)
    with ExitStack() as stack:
        # an Airflow or DVC task gets the configured threads too, not every core each
        threads = stack.enter_context(torch_threads(cfg.orchestration.threads))
        host, port, serials = _devices(cfg, req, stack)
        envs = open_envs(cfg, host, port, serials)
        plan, curriculum_info = _plan(cfg, req, goals, serials, workdir)
        policy, policy_version = _acting_policy(cfg, req, workdir)
        exploration = _exploration(cfg, req, policy)
        result = _run_episodes(cfg, req, envs, plan, policy, policy_version, journal, exploration)
    shards = write_shards(result, out, req.round, req.worker, dim, gamma)
    manifest = {
        "round": req.round,
        "worker": req.worker,
        "mode": req.mode,
        "policy_version": policy_version,
        "task_set": cfg.env.task_set,
        "split": req.split,
        "devices": serials,
        "shards": shards,
        "recorded_under": settings,
        "torch_threads": threads,
        **result.stats.as_dict(),
        **curriculum_info,
        "reused": False,
    }
    if exploration is not None:  # which episodes explored: the label stage's rollout/explore_*
        manifest["exploration"] = {
            **exploration.summary(),
            "episodes": sorted(exploration.explored_episodes),
        }
    if cfg.evaluator.kind != "oracle" and cfg.env.device_kind == "sim":
        manifest["oracle_verdicts"] = oracle_verdicts(result)
    atomic_write_json(mpath, portable_paths(manifest, mpath.parent))
    journal.clear()  # the shards hold every journaled episode now
    return manifest


def _devices(cfg: Config, req: CollectRequest, stack: ExitStack) -> tuple[str, int, list[str]]:
    """The ADB server and the serials this worker drives (a private farm lives in ``stack``)."""
    if req.adb_address is not None:
        host, port = req.adb_address
    elif cfg.env.device_kind == "sim":
        farm = stack.enter_context(
            running_farm(
                cfg.orchestration.devices_per_worker,
                seed=cfg.sim.seed + req.worker,
                sim_cfg=cfg.sim,
                dynamics=cfg.sim.dynamics.profile,  # an external ADB server's farm has its own
            )
        )
        host, port = farm.host, farm.port
    else:
        host, port = cfg.env.adb_host, cfg.env.adb_port
    check_adb_server(host, port)
    serials = [d.serial for d in AdbClient(host, port).device_list()]
    if not serials:
        raise RuntimeError(f"no devices attached to the ADB server at {host}:{port}")
    if req.adb_address is not None and req.workers > 1:  # a shared server: this worker's block
        per = cfg.orchestration.devices_per_worker
        serials = serials[req.worker * per : (req.worker + 1) * per]
        if not serials:
            raise RuntimeError(f"worker {req.worker} has no devices at {host}:{port}")
    return host, int(port), serials


def _plan(
    cfg: Config, req: CollectRequest, goals: list[str], serials: list[str], workdir
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Goals per device (seeded; weighted by the curriculum on the train split)."""
    assert req.goal_mix is not None  # resolved
    probs, curriculum_info = (
        curriculum.collection_probabilities(cfg, goals, labeled_dir(cfg, workdir), req.goal_mix)
        if req.split == "train"
        else (None, {})
    )
    seed = f"{cfg.sim.seed}/{req.round}/{req.worker}/{req.split}"
    assert req.episodes_per_device is not None  # resolved
    # evaluation-like splits: every goal its own draw
    group = curriculum.attempts_per_goal(cfg) if req.split == "train" else 1
    plan = curriculum.plan_goals(
        goals, serials, req.episodes_per_device, seed, probs, group_size=group
    )
    return plan, curriculum_info


def _acting_policy(cfg: Config, req: CollectRequest, workdir) -> tuple[object, int]:
    """The policy the devices run and the version recorded on its steps."""
    policy, version = req.policy, req.policy_version
    if policy is None:
        policy, version = behavior_policy(cfg, workdir)
    return _policy(cfg, policy, seed=cfg.sim.seed + req.round), version


def _exploration(cfg: Config, req: CollectRequest, policy: object) -> ElementExploration | None:
    """Element exploration (``agent.exploration.element_epsilon``) for a learning policy; the
    scripted expert and the random policy never explore. Seeded by round and worker."""
    eps = cfg.agent.exploration.element_epsilon
    if eps == 0.0 or not isinstance(as_collect_policy(policy), ModelPolicy):
        return None
    return ElementExploration(
        eps,
        seed=cfg.sim.seed * 7919 + req.round * 101 + req.worker,
        goal_weight=cfg.agent.exploration.element_goal_weight,
    )


def _run_episodes(
    cfg: Config,
    req: CollectRequest,
    envs: list[AndroidEnv],
    plan: dict[str, list[str]],
    policy: object,
    policy_version: int,
    journal: EpisodeJournal,
    exploration: ElementExploration | None = None,
) -> CollectResult:
    """Every planned episode, minus those an earlier attempt journaled (taken as they are)."""
    sim = cfg.env.device_kind == "sim"
    # on the simulator the oracle always judges: it labels, or (another evaluator configured)
    # keeps its verdict as the reference the label stage measures that evaluator's agreement on
    oracle = OracleEvaluator(labels=cfg.evaluator.kind == "oracle") if sim else None
    planned = PlannedTrajectories(plan, req.round)
    done = journal.load(planned)
    if done:  # say what an earlier, interrupted attempt left (a resume is never silent)
        print(
            f"collect: round {req.round} worker {req.worker}: resuming an interrupted attempt, "
            f"{len(done)} of {len(planned)} episodes kept from its journal, "
            f"{len(planned) - len(done)} to collect",
            file=sys.stderr,
            flush=True,
        )
    common = dict(
        round_=req.round,
        split=req.split,
        oracle=oracle,
        gamma=cfg.algorithm.gamma,
        progress=req.progress,
        on_episode=journal.record,
        done=done,
    )
    if req.mode == "async":
        assert req.max_batch is not None and req.max_wait_ms is not None  # resolved
        with InferenceServer(
            policy,
            policy_version,
            max_batch=req.max_batch,
            max_wait_ms=req.max_wait_ms,
            wrap=exploration.wrap if exploration is not None else None,
        ) as server:
            return collect_async(envs, server, plan, **common)
    acting = as_collect_policy(policy)
    if exploration is not None:
        acting = exploration.wrap(acting)
    return collect_sync(envs, acting, plan, policy_version=policy_version, **common)


def oracle_verdicts(result: CollectResult) -> dict[str, bool]:
    """Trajectory id -> the simulator oracle's verdict, for the episodes it judged (the label
    stage's reference when another evaluator labels; journaled episodes of an interrupted
    attempt have none)."""
    return {
        ep.trajectory_id: ep.oracle_success
        for episodes in result.episodes.values()
        for ep in episodes
        if ep is not None and ep.oracle_success is not None
    }


def write_shards(
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
