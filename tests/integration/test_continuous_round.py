"""The learner that never waits, for real: a continuous round on the simulator farm.

A sim farm over ADB, the batching inference server, the oracle, the real learner (DistRL on
the tiny policy), the MLflow registry: actors collect while the learner trains at the replay
ratio and publishes versions the actors pick up between episodes; the learner as a thread
beside the actors (the default) and in a process of its own.
"""

from __future__ import annotations

import subprocess
import time

import pyarrow.parquet as pq
import pytest
import torch

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import config_from_dict
from distrl_tasks.orchestration.actor_learner import round as continuous
from distrl_tasks.stages import common, farm

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("learner_process", [True, False], ids=["process", "thread"])
def test_continuous_round_trains_while_collecting_and_registers(
    tmp_path, learner_process, capsys
) -> None:
    torch.set_num_threads(1)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    cfg = config_from_dict(
        {
            "orchestration": {
                "devices_per_worker": 2,
                "episodes_per_device": 3,
                "eval_tasks": 2,
                "eval_devices": 2,
                "asynchronous": True,
                "continuous": {
                    "replay_ratio": 0.5,
                    "publish_every_updates": 2,
                    "max_staleness": 2,
                    "learner_process": learner_process,
                },
            },
            "algorithm": {
                "mode": "online",
                "batch_size": 2,
                "critic_prefit": {"min_steps": 2, "max_steps": 3, "window": 1},
                "distrl": {"windows": 2},
            },
            "agent": {"max_new_tokens": 48},
            "env": {"horizon_general": 4},
            "sim": {"port": 0},
        }
    )
    assert continuous.enabled(cfg)
    path = tmp_path / "runs" / "initial-policy"
    build_policy(cfg.agent, seed=0).save(path)
    reg = common.registry(cfg, tmp_path)
    first = reg.register_checkpoint(
        path, round=0, algorithm="sft", policy_version=0, data_version=""
    )
    reg.set_behavior(first)
    record = farm.start(cfg, workdir=tmp_path)
    try:
        res = continuous.continuous_round(cfg, tmp_path, record, 1, 3, time.perf_counter())
    finally:
        farm.stop(cfg, workdir=tmp_path)
    m = res.train["metrics"]
    print({k: round(v, 3) for k, v in m.items() if k.startswith(("async/", "critic/"))})
    steps = res.collect["steps"]
    assert res.collect["trajectories"] == 6 and steps >= 6
    # the learner caught up with the ratio: ceil-free, 0.5 updates per transition
    assert m["async/updates"] == pytest.approx(0.5 * m["async/transitions"], abs=1.0)
    assert m["async/versions_published"] == m["async/updates"] // 2
    assert res.train["policy_version"] == m["async/versions_published"]
    assert 0.0 <= m["async/learner_idle_share"] <= 1.0
    assert 0.0 <= m["async/actor_idle_share"] <= 1.0
    assert m["async/episodes"] == 6 and m["async/staleness_max"] >= 0
    assert m["critic/prefit_steps"] >= 2
    assert m["async/learner_process"] == float(learner_process)
    # shards hold the round's episodes, with the versions they ran
    shards = res.collect["shards"]
    versions = {v for s in shards for v in pq.read_table(s).column("policy_version").to_pylist()}
    assert versions <= set(range(res.train["policy_version"] + 1))
    assert res.label["labeled"] + res.label["unlabeled"] == 6  # in labeled/ for later rounds
    assert res.register["version"] == first + 1
    assert "success_rate" in res.evaluate
    # the round's own bar counted every planned episode (no budget: a total to count down)
    lines = capsys.readouterr().err.replace("\r", "\n").splitlines()
    last = [ln for ln in lines if ln.startswith("continuous")][-1]
    assert "6/6" in last and "updates=" in last and "left_s" not in last
