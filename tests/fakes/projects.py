"""Settings of the throwaway projects the tests run real rounds in (Airflow DAG tests, e2e)."""

from __future__ import annotations

from pathlib import Path

# 2 simulated devices, 1 episode each, a few updates: a whole round well within a minute on two
# cores. Written as the project's params.yaml; everything not named keeps its default.
TINY_PARAMS = """\
sim:
  devices: 2
orchestration:
  workers: 1
  devices_per_worker: 2
  episodes_per_device: 1
  rounds: 1
  eval_tasks: 2
algorithm:
  mode: online  # a run with default Params is round 1 (the offline phase has its own tests)
  batch_size: 2
  actor_epochs: 1
  critic_epochs: 1
  critic_prefit:
    enabled: false  # a fixed, small number of updates
  distrl:
    windows: 2  # one micro-batch per optimizer step
agent:
  max_new_tokens: 32
"""


def register_initial_policy(project: Path) -> int:
    """A fresh tiny policy registered as "behavior" in ``project`` (whose params.yaml it reads),
    so that a round's bootstrap, whose SFT takes minutes, is skipped; returns its version."""
    from distrl_tasks.agents.policy import build_policy
    from distrl_tasks.config import load_config
    from distrl_tasks.tracking.registry import ModelRegistry

    cfg = load_config(project / "params.yaml")
    policy_dir = project / "runs" / "initial_policy"
    build_policy(cfg.agent, seed=0).save(policy_dir)
    registry = ModelRegistry.from_config(cfg, root=project)
    version = registry.register_checkpoint(
        policy_dir, round=0, algorithm="distrl", policy_version=0, data_version=""
    )
    registry.set_behavior(version)
    return version
