"""The register stage: the round's checkpoint becomes a registry version with its lineage.

The version is tagged ``round``, ``algorithm``, ``policy_version``, ``data_version``,
``eval_success_rate`` (on the tasks identified by ``eval_tasks``) and ``checkpoint_digest``. The
``behavior`` alias moves to it (actors run the newest policy, as DistRL's learner pushes each
update), while ``champion`` moves only when it beats the current champion on the same test tasks.
A retried registration finds the version its failed try created (same round and digest) and
goes on from it, so the registry holds one version per round. Once the round is registered,
local round policies older than the newest ``tracking.keep_checkpoints`` are deleted.
"""

from __future__ import annotations

import os
from typing import Any

from distrl_tasks.config import Config
from distrl_tasks.stages import common

DIGEST_TAG = "checkpoint_digest"  # the weights' digest, so a retried registration is recognised


def run(
    cfg: Config,
    *,
    round: int,
    checkpoint_dir: str,
    data_version: str,
    evaluation: dict[str, Any],
    policy_version: int | None = None,
    steps: int | None = None,
    workdir: str | os.PathLike = ".",
) -> dict[str, Any]:
    """Register ``checkpoint_dir``; returns ``{version, behavior, champion, promoted, ...}``."""
    done = common.read_manifest(workdir, round, "register")
    if done is not None:
        return {**done, "reused": True}
    registry = common.registry(cfg, workdir)
    trained = common.read_manifest(workdir, round, "train") or {}
    version_no = policy_version if policy_version is not None else trained.get("policy_version")
    from distrl_tasks.stages.evaluate import checkpoint_digest  # torch: only when it runs

    path = common.resolve(workdir, checkpoint_dir)
    digest = checkpoint_digest(path)
    with common.stage_run(cfg, workdir, round, "register") as run_:
        # a try that died after creating the version (e.g. the tracking server went away before
        # the manifest was written) left it in the registry: its retry adopts it, never a second
        earlier = next(
            (
                v.version
                for v in registry.compare_versions()
                if v.tags.get("round") == str(round) and v.tags.get(DIGEST_TAG) == digest
            ),
            None,
        )
        version = earlier or registry.register_checkpoint(
            path,
            round=round,
            algorithm=cfg.algorithm.name,
            policy_version=int(version_no if version_no is not None else round),
            data_version=data_version,
            eval_success_rate=float(evaluation["success_rate"]),
            eval_tasks_key=evaluation["tasks_key"],
            steps=steps if steps is not None else trained.get("steps"),
            tags={DIGEST_TAG: digest},
            run_id=run_.run_id,
        )
        registry.set_behavior(version)
        promotion = registry.promote_if_better(
            version, float(evaluation["success_rate"]), evaluation["tasks_key"]
        )
        run_.set_tags({"model_version": version, "champion": promotion.champion})
        metrics = {"eval/success_rate": float(evaluation["success_rate"])}
        if "invalid_rate" in evaluation:
            metrics["eval/invalid_rate"] = float(evaluation["invalid_rate"])
        run_.log_metrics(metrics, step=round)
    _finish_round(cfg, workdir, round)
    manifest = {
        "round": round,
        "version": version,
        "behavior": version,
        "champion": promotion.champion,
        "promoted": promotion.promoted,
        "reason": promotion.reason,
        "reused": False,
    }
    common.write_manifest(workdir, round, "register", manifest)
    # the local copy is now a registry version: older rounds' copies are only disk
    common.prune_round_checkpoints(workdir, cfg.tracking.keep_checkpoints)
    return manifest


def _finish_round(cfg: Config, workdir: str | os.PathLike, round_: int) -> None:
    """Registration is a round's last stage: mark its parent MLflow run finished."""
    id_file = common.round_dir(workdir, round_) / "mlflow_run_id"
    if id_file.is_file():
        common.tracker(cfg, workdir).resume(id_file.read_text().strip()).end("FINISHED")
