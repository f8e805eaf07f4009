"""The cluster launcher's parts that need no services: secrets, process records, env overrides,
the status table and the service descriptions (loopback binds, no secret in any argv)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distrl_tasks.cluster import launcher, processes
from distrl_tasks.cluster.secrets import SECRET_NAMES, load_or_create
from distrl_tasks.cluster.services import LOOPBACK, Paths, Ports, airflow_env, cluster_services
from distrl_tasks.config import ConfigError
from distrl_tasks.orchestration.airflow_params import env_overrides, load_run_config


def _paths(tmp_path: Path) -> Paths:
    return Paths(root=tmp_path / "cluster", workdir=tmp_path, dags=tmp_path / "dags")


def test_secrets_are_generated_once_private_and_url_safe(tmp_path: Path) -> None:
    first = load_or_create(tmp_path / "s")
    assert set(first) == set(SECRET_NAMES) and len(set(first.values())) == len(SECRET_NAMES)
    path = tmp_path / "s" / "secrets.json"
    assert path.stat().st_mode & 0o777 == 0o600 and (tmp_path / "s").stat().st_mode & 0o777 == 0o700
    assert load_or_create(tmp_path / "s") == first  # kept: Postgres was initialised with them
    assert all(
        v.replace("-", "").replace("_", "").replace("=", "").isalnum() for v in first.values()
    )
    path.chmod(0o644)
    with pytest.raises(ValueError, match="readable by group or others"):
        load_or_create(tmp_path / "s")
    path.chmod(0o600)
    path.write_text("[1]")
    with pytest.raises(ValueError, match="JSON object of strings"):
        load_or_create(tmp_path / "s")


def test_services_bind_loopback_and_keep_secrets_out_of_argv(tmp_path: Path) -> None:
    secrets = load_or_create(tmp_path / "s")
    ports = Ports(postgres=5001, redis=5002, mlflow=5003, api=5004)
    services = cluster_services(_paths(tmp_path), ports, secrets)
    for svc in services:
        argv = " ".join(svc.argv)
        assert not any(v in argv for v in secrets.values()), f"{svc.name}: a secret in argv"
        assert "0.0.0.0" not in argv
        if svc.name in ("postgres", "mlflow", "api-server"):
            assert LOOPBACK in svc.argv, svc.name
        if "worker" in svc.name:
            assert "--skip-serve-logs" in svc.argv  # the log server would bind every interface
    env = airflow_env(_paths(tmp_path), ports, secrets)
    assert env["AIRFLOW__API__HOST"] == LOOPBACK
    assert env["AIRFLOW__CELERY__BROKER_URL"].endswith(f"@{LOOPBACK}:5002/0")
    assert env["DISTRL_SET_TRACKING_URI"] == "tracking.tracking_uri=http://127.0.0.1:5003"


def test_env_overrides_apply_below_run_params(tmp_path: Path, monkeypatch) -> None:
    environ = {
        "DISTRL_SET_B": "data.root=/b",
        "DISTRL_SET_A": "data.root=/a",
        "DISTRL_SET_EMPTY": " ",
        "OTHER": "sim.devices=9",
    }
    assert env_overrides(environ) == {"data.root": "/b"}  # name order: B wins
    with pytest.raises(ConfigError, match="DISTRL_SET_X"):
        env_overrides({"DISTRL_SET_X": "no-equals"})
    with pytest.raises(ConfigError, match=r"dotted section\.key"):
        env_overrides({"DISTRL_SET_X": "devices=3"})
    monkeypatch.setenv("DISTRL_SET_TRACKING_URI", "tracking.tracking_uri=http://127.0.0.1:9")
    monkeypatch.setenv("DISTRL_SET_ALGO", "algorithm.name=digirl")
    cfg = load_run_config({"algorithm": "filtered_bc"}, tmp_path)
    assert cfg.tracking.tracking_uri == "http://127.0.0.1:9"
    assert cfg.algorithm.name == "filtered_bc"  # the run's Param wins over the deployment
    monkeypatch.setenv("DISTRL_SET_BAD", "tracking.nope=1")
    with pytest.raises(ConfigError, match=r"tracking\.nope"):
        load_run_config({}, tmp_path)


def test_processes_are_recorded_stopped_by_group_and_not_confused_by_pid_reuse(
    tmp_path: Path,
) -> None:
    script = (
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    )
    run = processes.start(
        "sleeper", [sys.executable, "-c", script], {}, tmp_path / "s.log", tmp_path, None
    )
    time.sleep(0.5)
    assert run.alive()
    group = subprocess.run(
        ["pgrep", "-g", str(run.pid)], capture_output=True, text=True, check=False
    ).stdout.split()
    assert len(group) == 2  # the service and its child
    state = tmp_path / "state.json"
    processes.save_state(state, {"x": 1}, [run])
    info, loaded = processes.load_state(state)
    assert info == {"x": 1} and loaded == [run]
    impostor = processes.Running("sleeper", run.pid, None, run.log, run.started + 1)
    assert not impostor.alive()  # same pid, other start time: never signalled as ours
    assert processes.stop(run, sig=signal.SIGTERM, grace_s=10)
    assert not run.alive()
    assert _live_members(run.pid) == [], "the child outlived the group stop"
    assert not processes.stop(run)  # stopping twice is harmless
    state.write_text("{")
    with pytest.raises(ValueError, match="corrupt cluster state"):
        processes.load_state(state)


def test_status_table_and_down_with_nothing_running(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    assert "no cluster is running" in launcher.format_status(launcher.status(paths))
    assert launcher.down(paths) == []
    state = {
        "airflow_url": "http://127.0.0.1:1",
        "mlflow_url": "http://127.0.0.1:2",
        "dvc_remote": "/r",
        "workdir": "/w",
        "admin_user": "admin",
        "passwords_file": "/p",
        "services": [
            {"name": "redis", "pid": 7, "port": 9, "log": "/l", "alive": False, "listening": False}
        ],
    }
    table = launcher.format_status(json.loads(json.dumps(state)))
    assert "redis" in table and "DOWN" in table and "password in /p" in table


def _live_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies (an init that reaps late leaves those)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(proc.name))
    return out


def test_cli_status_and_down_without_a_cluster(tmp_path: Path, capsys) -> None:
    from distrl_tasks.cli.main import main

    assert main(["cluster", "status", "--workdir", str(tmp_path)]) == 3
    assert "no cluster is running" in capsys.readouterr().out
    assert main(["cluster", "down", "--workdir", str(tmp_path)]) == 0
    assert "nothing was running" in capsys.readouterr().out
    assert main(["cluster", "up", "--workdir", str(tmp_path), "--dags", str(tmp_path / "x")]) == 1
    assert "--dags" in capsys.readouterr().err
    assert main(["airflow", "--workdir", str(tmp_path), "--pool-slots", "0"]) == 1
    assert "--pool-slots: must be >= 1" in capsys.readouterr().err


def test_stop_reaches_children_that_left_the_group_as_airflow_task_processes_do(
    tmp_path: Path,
) -> None:
    # the child makes a process group of its own inside the service's session, as Airflow's task
    # supervisor does for every task process; it would outlive a stop of the service's group
    child = "import os, time; os.setpgid(0, 0); time.sleep(60)"
    script = (
        "import subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(60)"
    )
    run = processes.start(
        "worker", [sys.executable, "-c", script], {}, tmp_path / "w.log", tmp_path, None
    )
    deadline = time.monotonic() + 10
    while len(processes.session_groups(run.pid)) < 2:
        assert time.monotonic() < deadline, "the child never made its own group"
        time.sleep(0.1)
    (own,) = processes.session_groups(run.pid) - {run.pid}
    assert processes.stop(run, sig=signal.SIGTERM, grace_s=10)
    assert not run.alive()
    deadline = time.monotonic() + 5
    while processes.session_groups(run.pid):
        assert time.monotonic() < deadline, f"group {own} of the session outlived the stop"
        time.sleep(0.1)
