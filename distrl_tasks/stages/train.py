"""The train stage: one round of the configured algorithm on the replay window.

The learner's full state (policy, critics, optimizer, RNG streams) lives in ``runs/learner`` and
carries over from round to round, so critics keep learning and a resumed round makes exactly the
update an uninterrupted one would. The very first round starts from the ``behavior`` policy in
the registry (the SFT bootstrap). The round's policy is exported as a plain safetensors
checkpoint in ``runs/checkpoints/r<round>`` for evaluation and registration. Round 0 is the
offline phase (:mod:`distrl_tasks.config.modes`): more critic-only steps first, then the
actor.

Multi-process training (``accelerate launch -m distrl_tasks.cli train --round N``, CPU gloo or
several GPUs) runs this same function in every process; the main process alone exports the
checkpoint, logs to MLflow and writes the stage manifest.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distrl_tasks.config import Config, modes
from distrl_tasks.protocol.files import atomic_directory, atomic_write_json
from distrl_tasks.protocol.progress import progress_bar
from distrl_tasks.stages import common

if TYPE_CHECKING:
    from distrl_tasks.algorithms.learner import Learner


def _replay(cfg: Config, workdir: str | os.PathLike):
    from distrl_tasks.data.replay import ReplayBuffer  # lazy: pyarrow + pandas

    return ReplayBuffer.from_shards(
        common.labeled_dir(cfg, workdir),
        cfg.data.replay_window_rounds,
        capacity=cfg.data.replay_capacity,
        alpha=cfg.algorithm.distrl.priority_alpha,
        beta=cfg.algorithm.distrl.priority_beta,
        seed=cfg.sim.seed,
    )


def _starting_version(cfg: Config, workdir: str | os.PathLike, round_: int, registry) -> int:
    """The registry version a learner without saved state starts from.

    The previous round's registered policy, or for the first round the bootstrap's: fixed by
    the round, so re-training a round (e.g. `dvc repro` after a param change) starts from the
    same weights, whatever ``behavior`` points at by then. The alias is the last resort.
    """
    previous = common.read_manifest(workdir, round_ - 1, "register") if round_ > 0 else None
    if previous is not None:
        return int(previous["version"])
    boot = Path(workdir) / "runs" / "bootstrap" / "manifest.json"
    if boot.is_file():
        return int(json.loads(boot.read_text())["version"])
    behavior = registry.alias_version("behavior")
    if behavior is None:
        raise RuntimeError("no 'behavior' policy registered: run `distrl bootstrap` first")
    return behavior.version


def _trained_round(latest: Path | None) -> int:
    """The last round the learner state was saved after (-1 for a fresh learner)."""
    if latest is None or not latest.name.startswith("round-"):
        return -1
    return int(latest.name.split("-", 1)[1])


def learner_replay_ratio(cfg: Config) -> float:
    """The replay ratio an online round trains at: asynchronous runs' (DistRL's learner);
    synchronous rounds (DigiRL's lockstep) take ``algorithm.actor_epochs`` steps (0)."""
    o = cfg.orchestration
    return o.continuous.replay_ratio if o.asynchronous else 0.0


def replay_ratio_steps(replay, ratio: float, after_round: int) -> int:
    """``ceil(ratio * n)`` optimizer steps, ``n`` the replay's transitions newer than a round.

    The asynchronous learner's rounds take every collection finished since the last one, so
    at a fixed replay ratio more collected transitions become more updates (at least 1).
    """
    new = 0
    for slot in replay.slots:
        traj = replay.trajectory(slot)
        if int(traj.column("round")[0].as_py()) > after_round:
            new += traj.num_rows
    return max(1, math.ceil(ratio * new))


def run(
    cfg: Config,
    *,
    round: int,
    data_version: str = "",
    workdir: str | os.PathLike = ".",
    steps: int | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Train one round; returns ``{checkpoint_dir, policy_version, metrics, ...}``.

    Args:
        cfg: the configuration (``algorithm.*``, ``data.replay_*``).
        round: the round number.
        data_version: DVC hash of the data trained on (lineage; recorded in the manifest).
        workdir: project working directory.
        steps: actor optimizer steps this round (default ``algorithm.actor_epochs``, or
            ``algorithm.offline_actor_steps`` in round 0; in an asynchronous run with
            ``orchestration.continuous.replay_ratio > 0`` an online round takes that many
            steps per transition collected since the learner's last round, see
            :func:`replay_ratio_steps`); the critic-only steps before them
            are ``algorithm.critic_epochs`` (round 0: ``algorithm.offline_critic_steps``).
        progress: a progress bar over the round's optimizer steps (stderr).

    Raises:
        ValueError: the configured ``algorithm.mode`` has no round ``round``.
        RuntimeError: the replay window is empty, or no policy to start from is registered.
    """
    modes.check_round(cfg, round)
    done = common.read_manifest(workdir, round, "train")
    if done is not None:
        return {**done, "reused": True}
    # an Airflow task or `dvc repro` gets the configured threads too, not every core each
    with common.torch_threads(cfg.orchestration.threads):
        return _train(cfg, round, data_version, workdir, steps, progress)


def _train(
    cfg: Config,
    round: int,
    data_version: str,
    workdir: str | os.PathLike,
    steps: int | None,
    progress: bool,
) -> dict[str, Any]:
    """The round's training (``run`` without its reuse check); returns the manifest."""
    from distrl_tasks.algorithms import train_state as ts  # lazy: torch

    actor_steps, critic_steps = modes.train_steps(cfg, round)
    replay = _replay(cfg, workdir)
    if len(replay) == 0:
        raise RuntimeError(
            f"the replay window holds no labeled trajectories under "
            f"{common.labeled_dir(cfg, workdir)}: run collect and label first"
        )
    state_root = common.learner_dir(workdir) / "checkpoints"
    latest = ts.latest_checkpoint(state_root)
    ratio = learner_replay_ratio(cfg)
    if steps is None and ratio > 0 and round != modes.OFFLINE_ROUND:
        # updates follow the data: every collection merged into this round adds updates
        steps = replay_ratio_steps(replay, ratio, _trained_round(latest))
    steps = steps or actor_steps
    learner = open_learner(cfg, workdir, round, latest, seed_round=round)
    algorithm = learner.algorithm
    policy = algorithm.policy
    if hasattr(algorithm, "policy_version"):
        # DistRL reports train/staleness (this version minus the data's behaviour versions)
        algorithm.policy_version = learner.policy_version
    if latest is not None and _trained_round(latest) == round:
        # killed after the round's state was saved, before its manifest: never train it twice
        metrics = _saved_metrics(latest)
        return _finish(cfg, workdir, round, data_version, learner, policy, replay, metrics)
    # every process trains (gradients are all-reduced; checkpoints are collective) ...
    # a fresh critic is pre-fitted until its loss plateaus (algorithm.critic_prefit); then the
    # critic warm-up, then the actor (bumps learner.policy_version)
    prefit = cfg.algorithm.critic_prefit if latest is None else None
    show = progress and learner.accelerator.is_main_process
    with progress_bar(total=critic_steps + steps, desc=f"train r{round}", unit="step",
                      enabled=show, dynamic_ncols=True) as bar:  # fmt: skip

        def advance(phase: str) -> None:
            bar.set_postfix(phase=phase, refresh=False)
            bar.update()

        metrics = learner.train_round(
            replay, steps, critic_steps=critic_steps, prefit=prefit, on_step=advance
        )
    saved = learner.save_checkpoint(f"round-{round:06d}")
    if learner.accelerator.is_main_process:  # what a resume after a kill right here reports
        atomic_write_json(saved / ROUND_METRICS, {k: float(v) for k, v in metrics.items()})
    return _finish(cfg, workdir, round, data_version, learner, policy, replay, metrics)


ROUND_METRICS = "round_metrics.json"  # beside a learner state: the metrics of its round


def _saved_metrics(state: Path) -> dict[str, float]:
    """The metrics of the round that saved learner state ``state`` ({} if they were lost)."""
    path = state / ROUND_METRICS
    return json.loads(path.read_text()) if path.is_file() else {}


def _finish(
    cfg: Config,
    workdir: str | os.PathLike,
    round: int,
    data_version: str,
    learner: Learner,
    policy: Any,
    replay: Any,
    metrics: dict[str, Any],
) -> dict[str, Any]:
    """Export the round's trained policy, log its metrics and write the train manifest."""
    import torch  # lazy: loaded already by the learner

    out = common.checkpoint_dir(workdir, round).resolve()
    manifest = {
        "round": round,
        "algorithm": cfg.algorithm.name,
        "checkpoint_dir": str(out),
        "policy_version": learner.policy_version,
        "data_version": data_version,
        "steps": learner.step,
        "replay_transitions": len(replay),
        "replay_trajectories": replay.num_trajectories,
        "processes": learner.accelerator.num_processes,
        "torch_threads": torch.get_num_threads(),  # per process
        "metrics": {k: float(v) for k, v in metrics.items()},
        "reused": False,
    }
    if not learner.accelerator.is_main_process:
        return manifest  # ... and only the main one exports, logs and records the stage
    with atomic_directory(out) as tmp:
        policy.save(
            tmp,
            metadata={
                "round": round,
                "algorithm": cfg.algorithm.name,
                "policy_version": learner.policy_version,
                "data_version": data_version,
            },
        )
    with common.stage_run(cfg, workdir, round, "train") as run_:
        run_.log_metrics(metrics, step=round)
        run_.set_tags({"data_version": data_version, "policy_version": learner.policy_version})
    return common.write_manifest(workdir, round, "train", manifest)


def open_learner(
    cfg: Config,
    workdir: str | os.PathLike,
    round_: int,
    latest: Path | None,
    *,
    seed_round: int | None = None,
) -> Learner:
    """The round's learner: its saved state (``latest``) if any, else the registry's start policy.

    Shared by the train stage and the continuous round (``orchestration.continuous``) so both
    resume and start the same way. ``seed_round`` seeds torch before the algorithm's critics
    are built (the train stage's reproducibility); None leaves the generator as it is.
    """
    import torch  # lazy: torch (the CLI imports this module)

    from distrl_tasks.agents.policy import build_policy  # lazy: torch + transformers
    from distrl_tasks.algorithms import train_state as ts  # lazy: torch
    from distrl_tasks.algorithms.factory import (
        build_algorithm,  # lazy: torch + pyarrow
    )
    from distrl_tasks.algorithms.learner import (
        Learner,  # lazy: torch + pyarrow
    )

    start_version = 0
    if latest is None:
        registry = common.registry(cfg, workdir)
        origin = registry.get_version(_starting_version(cfg, workdir, round_, registry))
        with common.checkout(cfg, workdir, registry, origin.version) as start:
            policy = build_policy(cfg.agent, checkpoint_dir=start, seed=cfg.sim.seed)
        start_version = origin.policy_version or 0
    else:
        policy = build_policy(cfg.agent, checkpoint_dir=latest / ts.POLICY_DIR, seed=cfg.sim.seed)
    if seed_round is not None:
        torch.manual_seed(cfg.sim.seed + seed_round)
    a = cfg.algorithm
    learner = Learner(
        cfg,
        build_algorithm(cfg, policy),
        out_dir=common.learner_dir(workdir),
        seed=cfg.sim.seed,
        policy_version=start_version,
        grad_accum_steps=a.grad_accum_steps,
        mixed_precision=a.mixed_precision,
        warmup_steps=a.warmup_steps,
        weight_decay=a.weight_decay,
    )
    if latest is not None:
        learner.load_checkpoint(latest)
    return learner
