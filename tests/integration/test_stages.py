"""The pipeline stages chained for real: collect → label → version → train → register.

Everything runs for real in a temporary project: a simulator farm over ADB, Parquet shards, DVC
in a temporary git repo with a local remote, MLflow's SQLite store and registry, the learner.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from fakes.gemini_server import FakeGemini, failure, rate_limited, success

from distrl_tasks.agents.checkpoint import load_checkpoint
from distrl_tasks.agents.policy import build_policy
from distrl_tasks.cli.main import main
from distrl_tasks.config import Config, config_from_dict
from distrl_tasks.protocol.observation import Observation
from distrl_tasks.protocol.ui_dump import elements_from_rows
from distrl_tasks.stages import collect, common, farm, label, register, train, version

pytestmark = pytest.mark.integration
KEY = "test-key-not-a-secret"


def tiny_params(**extra) -> dict:
    """The tiny settings as a params.yaml-shaped dict, ``extra``'s sections merged in."""
    base = {
        "orchestration": {"devices_per_worker": 2, "episodes_per_device": 1},
        # fixed step counts (no plateau-ruled pre-fit) and one micro-batch per step
        "algorithm": {
            "actor_epochs": 2,
            "critic_epochs": 1,
            "batch_size": 2,
            "critic_prefit": {"enabled": False},
            "distrl": {"windows": 2},
        },
        "agent": {"max_new_tokens": 48},
        "sim": {"port": 0},
    }
    for section, values in extra.items():
        base.setdefault(section, {}).update(values)
    return base


def tiny_cfg(**extra) -> Config:
    return config_from_dict(tiny_params(**extra))


@pytest.fixture
def project(tmp_path):
    """A git repository inside the test's own ``tmp_path``, so what a test writes beside it
    (a copied project, a params file) is removed with it."""
    torch.set_num_threads(1)
    root = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for key, value in (("user.email", "test@localhost"), ("user.name", "test")):
        subprocess.run(["git", "-C", str(root), "config", key, value], check=True)
    return root


def register_initial_policy(cfg: Config, workdir) -> int:
    """What bootstrap leaves behind: a registered policy under the `behavior` alias."""
    path = workdir / "runs" / "initial-policy"
    build_policy(cfg.agent, seed=0).save(path)
    reg = common.registry(cfg, workdir)
    version_no = reg.register_checkpoint(
        path, round=0, algorithm="sft", policy_version=0, data_version=""
    )
    reg.set_behavior(version_no)
    return version_no


OWNER_SCRIPT = """
import json, os, sys, time
from distrl_tasks.config import config_from_dict
from distrl_tasks.stages import farm
cfg = config_from_dict({"orchestration": {"devices_per_worker": 2}, "sim": {"port": 0}})
print(json.dumps(farm.start(cfg, workdir=sys.argv[1], owner_pid=os.getpid())), flush=True)
time.sleep(600)
"""


def wait_until(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_farm_owned_by_a_process_stops_when_that_process_is_killed(project) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, str(project)], stdout=subprocess.PIPE, text=True
    )
    record = None
    try:
        record = json.loads(owner.stdout.readline())
        assert farm.process_alive(record["pid"])
        assert farm._serials(record["host"], record["port"]) == record["serials"]
        owner.send_signal(signal.SIGKILL)  # no finally, no stop(): only the watchdog is left
        owner.wait(timeout=10)
        assert wait_until(lambda: not farm.process_alive(record["pid"]), 20)
        assert farm._serials(record["host"], record["port"]) is None  # the port is free
        log = (project / "runs" / "farm.log").read_text()
        assert f"owner process {owner.pid} is gone; stopping" in log
        assert log.rstrip().endswith("distrl sim: stopped")
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if record is not None and farm.process_alive(record["pid"]):
            os.kill(record["pid"], signal.SIGKILL)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="zombies are told by /proc")
def test_process_alive_tells_running_exited_and_unreaped_processes() -> None:
    assert farm.process_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        # exited but not reaped: a zombie, which must not count as a live farm owner
        assert wait_until(lambda: not farm.process_alive(child.pid), 20)
    finally:
        child.wait()
    assert not farm.process_alive(child.pid)


def test_round_of_stages_lands_in_registry_with_lineage(project) -> None:
    cfg = tiny_cfg()
    first = register_initial_policy(cfg, project)
    torch.set_num_threads(2)  # what an Airflow task or `dvc repro` starts with on 2 cores
    record = farm.start(cfg, workdir=project)
    try:
        assert farm.start(cfg, workdir=project) == record  # idempotent: the same farm
        c = collect.run(
            cfg,
            collect.CollectRequest(
                round=1, progress=False, adb_address=(record["host"], record["port"])
            ),
            workdir=project,
        )
    finally:
        assert farm.stop(cfg, workdir=project) == {"stopped": True}
    assert farm.stop(cfg, workdir=project) == {"stopped": False}
    assert c["trajectories"] == 2 and c["policy_version"] == 0
    # each stage runs at the configured torch threads and hands the caller's back
    assert c["torch_threads"] == cfg.orchestration.threads == 1 and torch.get_num_threads() == 2
    assert all(str(common.raw_dir(cfg, project)) in p for p in c["shards"])

    lab = label.run(cfg, round=1, workdir=project)
    assert lab["labeled"] + lab["unlabeled"] == 2 and lab["evaluator"] == "oracle"
    for path in lab["shards"]:
        assert pq.read_table(path).num_rows > 0  # plain pyarrow reads the labeled copy
    assert label.run(cfg, round=1, workdir=project)["reused"]

    ver = version.run(cfg, round=1, workdir=project)
    dvc_file = project / "data" / "trajectories.dvc"
    assert dvc_file.is_file() and ver["data_version"] in dvc_file.read_text()
    log = subprocess.run(
        ["git", "-C", str(project), "log", "--format=%B", "-1"], capture_output=True, text=True
    ).stdout
    assert ver["data_version"] in log

    tr = train.run(cfg, round=1, data_version=ver["data_version"], workdir=project)
    # 1 critic warm-up, then DistRL's asynchronous learner: replay_ratio steps per new transition
    ratio = cfg.orchestration.continuous.replay_ratio
    assert tr["policy_version"] == 1 and tr["steps"] == 1 + max(1, math.ceil(ratio * c["steps"]))
    assert "losses/policy" in tr["metrics"] and "losses/value" in tr["metrics"]
    # data from behaviour version 0, learner at version 0 while it trained: staleness 0
    assert tr["metrics"]["train/staleness"] == 0.0
    assert tr["torch_threads"] == 1 and torch.get_num_threads() == 2
    meta = json.loads((common.resolve(project, tr["checkpoint_dir"]) / "config.json").read_text())
    assert meta  # a loadable checkpoint directory
    again = train.run(cfg, round=1, data_version=ver["data_version"], workdir=project)
    assert again["reused"] and again["checkpoint_dir"] == tr["checkpoint_dir"]

    evaluation = {"success_rate": 0.25, "tasks_key": "tasks-abc"}
    reg_out = register.run(
        cfg,
        round=1,
        checkpoint_dir=tr["checkpoint_dir"],
        data_version=ver["data_version"],
        evaluation=evaluation,
        workdir=project,
    )
    assert reg_out["version"] == first + 1 and reg_out["behavior"] == reg_out["version"]
    registry = common.registry(cfg, project)
    info = registry.get_version(reg_out["version"])
    assert info.round == 1 and info.algorithm == "distrl" and info.policy_version == 1
    assert info.data_version == ver["data_version"]
    assert info.eval_success_rate == 0.25
    assert registry.alias_version("behavior").version == reg_out["version"]

    # the round's stages are nested MLflow runs under one finished parent run
    tracker = common.tracker(cfg, project)
    parent = (common.round_dir(project, 1) / "mlflow_run_id").read_text().strip()
    stages = [r.data.tags["mlflow.runName"] for r in tracker.child_runs(parent)]
    assert stages == ["label", "version", "train", "register"]
    assert tracker.client.get_run(parent).info.status == "FINISHED"

    # a try that created the version but died before its manifest: the retry adopts that version
    (common.round_dir(project, 1) / "register.json").unlink()
    again = register.run(
        cfg,
        round=1,
        checkpoint_dir=tr["checkpoint_dir"],
        data_version=ver["data_version"],
        evaluation=evaluation,
        workdir=project,
    )
    assert again["version"] == reg_out["version"] and not again["reused"]
    round_1 = [v.version for v in registry.compare_versions() if v.round == 1]
    assert round_1 == [reg_out["version"]], round_1

    # a copied workdir is a project of its own: no stored manifest or DVC setting points back
    copy = project.parent / "copied"
    shutil.copytree(project, copy, symlinks=True)
    stored = [*common.round_dir(copy, 1).glob("*.json"), *common.raw_dir(cfg, copy).glob("*.json")]
    stored.append(copy / ".dvc" / "config")
    for path in stored:
        assert str(project) not in path.read_text(), path
    assert common.read_manifest(copy, 1, "train")["checkpoint_dir"] == str(
        (common.checkpoint_dir(copy, 1)).resolve()
    )
    assert all(p.startswith(str(copy)) for p in common.read_manifest(copy, 1, "label")["shards"])
    reused = collect.run(cfg, collect.CollectRequest(round=1, progress=False), workdir=copy)
    assert reused["reused"] and all(p.startswith(str(copy)) for p in reused["shards"])
    assert "url = ../runs/dvc-remote" in (copy / ".dvc" / "config").read_text()


def test_off2on_trains_the_offline_round_then_continues_online(project, capsys) -> None:
    params = tiny_params(
        algorithm={"mode": "off2on", "offline_critic_steps": 2, "offline_actor_steps": 3},
        orchestration={"offline_episodes_per_device": 2},
        tracking={"keep_checkpoints": 1},
    )
    cfg = config_from_dict(params)
    first = register_initial_policy(cfg, project)
    record = farm.start(cfg, workdir=project)
    address = {"adb_address": (record["host"], record["port"]), "progress": False}

    def round_(r: int) -> tuple[dict, dict]:
        c = collect.run(cfg, collect.CollectRequest(round=r, **address), workdir=project)
        label.run(cfg, round=r, workdir=project)
        ver = version.run(cfg, round=r, workdir=project)
        tr = train.run(cfg, round=r, data_version=ver["data_version"], workdir=project)
        reg = register.run(
            cfg,
            round=r,
            checkpoint_dir=tr["checkpoint_dir"],
            data_version=ver["data_version"],
            evaluation={"success_rate": 0.0, "tasks_key": "tasks-abc"},
            workdir=project,
        )
        return c, {**tr, "version": reg["version"]}

    try:
        offline_c, offline_t = round_(0)
        online_c, online_t = round_(1)
    finally:
        farm.stop(cfg, workdir=project)
    # round 0: the bootstrap policy's offline dataset (2 devices x 2 episodes), then 2 critic
    # and 3 actor steps
    assert offline_c["trajectories"] == 4 and offline_c["policy_version"] == 0
    assert offline_t["steps"] == 2 + 3 and offline_t["policy_version"] == 1
    assert offline_t["replay_trajectories"] == 4
    # round 1: the offline round's policy collects 2 x 1 episodes; the learner carries on (1
    # critic step, then replay_ratio actor steps per new transition) over a replay window
    # holding both rounds
    assert online_c["trajectories"] == 2 and online_c["policy_version"] == 1
    online = max(1, math.ceil(cfg.orchestration.continuous.replay_ratio * online_c["steps"]))
    assert online_t["steps"] == 5 + 1 + online and online_t["policy_version"] == 2
    assert online_t["replay_trajectories"] == 6
    registry = common.registry(cfg, project)
    assert registry.get_version(offline_t["version"]).round == 0
    assert offline_t["version"] == first + 1 and online_t["version"] == first + 2
    # keep_checkpoints 1: registering round 1 deleted round 0's local policy, which the
    # registry still serves
    assert not Path(offline_t["checkpoint_dir"]).exists()
    assert Path(online_t["checkpoint_dir"]).is_dir()
    with common.checkout(cfg, project, registry, offline_t["version"]) as weights:
        assert (weights / "model.safetensors").is_file()
    # the CLI's round commands say where the pruned policy went, and the registry command
    # fetches it by the version number they name
    config_file = project.parent / f"{project.name}-params.yaml"
    config_file.write_text(yaml.safe_dump(params))
    flags = ["--workdir", str(project), "--config", str(config_file)]
    capsys.readouterr()
    assert main(["evaluate", "--round", "0", "--no-progress", *flags]) == 2
    err = capsys.readouterr().err
    assert f"registered as version {offline_t['version']}" in err, err
    assert "tracking.keep_checkpoints = 1" in err
    assert f"distrl registry compare --load {offline_t['version']}" in err
    assert main(["registry", "compare", "--load", str(offline_t["version"]), *flags]) == 0
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    fetched = Path(printed.split(": ", 1)[1])
    assert (fetched / "model.safetensors").is_file(), printed
    assert main(["registry", "compare", "--load", "99", *flags]) == 2
    assert "no such version" in capsys.readouterr().err


def test_train_refuses_rounds_the_mode_does_not_have(project) -> None:
    with pytest.raises(ValueError, match=r"algorithm\.mode is 'online'"):
        train.run(tiny_cfg(algorithm={"mode": "online"}), round=0, workdir=project)
    with pytest.raises(ValueError, match="trains round 0 only"):
        train.run(tiny_cfg(algorithm={"mode": "offline"}), round=1, workdir=project)


def test_gemini_labeling_retries_and_never_counts_missing_verdicts_as_failures(
    project, monkeypatch
) -> None:
    cfg = tiny_cfg()
    c = collect.run(
        cfg, collect.CollectRequest(round=1, policy="scripted", progress=False), workdir=project
    )
    assert c["trajectories"] == 2
    with FakeGemini(api_key=KEY) as fake:
        gem = tiny_cfg(
            evaluator={"kind": "gemini", "base_url": fake.base_url, "max_retries": 2,
                       "cache_dir": str(project / "cache"), "timeout_s": 5.0},
        )  # fmt: skip
        monkeypatch.setenv("GEMINI_API_KEY", KEY)
        # the scripted episodes were oracle-labeled at collection: relabel them as if they
        # came from real devices, by making the shards unlabeled first
        raw = common.raw_dir(cfg, project)
        for shard in raw.glob("*.parquet"):
            table = pq.read_table(shard).to_pylist()
            for row in table:
                row.update(reward=None, mc_return=None, trajectory_reward=None,
                           evaluator=None, label_status="unlabeled")  # fmt: skip
            from distrl_tasks.data.schema import table_from_rows
            from distrl_tasks.data.shards import write_shard

            write_shard(table_from_rows(table, 1408), raw, round=1, name=shard.stem, overwrite=True)
        fake.script(rate_limited(0.1), success(), failure())
        lab = label.run(gem, round=1, workdir=project)
        assert lab["evaluator"] == "gemini" and lab["labeled"] == 2 and lab["unlabeled"] == 0
        assert lab["successes"] == 1
        kinds = [r.kinds for r in fake.requests]
        assert len(kinds) == 3  # one 429 retried, then the two verdicts
        assert label.run(gem, round=1, workdir=project)["reused"]


def test_a_round_with_the_pointer_stores_elements_and_the_learner_scores_what_acted(
    project,
) -> None:
    """``agent.pointer`` through collect → label → version → train: each step's elements are in
    the shards, the stored behaviour log-probs are what the policy gives those rows (elements
    included), and the trained checkpoint keeps the head."""
    cfg = tiny_cfg(agent={"pointer": True, "temperature": 3.0})  # a fresh model taps at 3
    register_initial_policy(cfg, project)
    c = collect.run(cfg, collect.CollectRequest(round=1, progress=False), workdir=project)
    rows = pq.read_table(c["shards"][0]).to_pylist()
    assert all(r["elements"] for r in rows), "the simulator's dumps list elements at every step"
    policy = build_policy(cfg.agent, checkpoint_dir=project / "runs" / "initial-policy")
    observations = [
        Observation(r["prompt"], np.asarray(r["image_features"], dtype=np.float32), None,
                    elements_from_rows(r["elements"]))
        for r in rows
    ]  # fmt: skip
    learner = policy.log_prob(observations, [r["action"] for r in rows])
    stored = torch.tensor([r["behavior_log_prob"] for r in rows])
    torch.testing.assert_close(learner, stored, atol=2e-3, rtol=1e-4)
    label.run(cfg, round=1, workdir=project)
    ver = version.run(cfg, round=1, workdir=project)
    tr = train.run(cfg, round=1, data_version=ver["data_version"], workdir=project)
    assert tr["policy_version"] == 1 and "losses/policy" in tr["metrics"]
    trained, _ = load_checkpoint(common.resolve(project, tr["checkpoint_dir"]))
    assert trained.pointer_head is not None
