"""``make airflow`` as the README writes it: ``distrl airflow`` from a project directory.

Run with a ``PATH`` that does not hold the venv (as on a fresh clone without an activated venv,
where ``airflow standalone`` failed with ``FileNotFoundError: 'airflow'``), it must print the URL
and where the password is, serve the API on loopback only with auth on, run a task of
``distrl_round`` through the LocalExecutor, and stop every process on Ctrl-C (SIGINT).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from cluster_client import REPO_ROOT, Cluster, listening_sockets
from fakes.projects import TINY_PARAMS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_make_airflow_serves_the_ui_on_loopback_with_auth(tmp_path: Path) -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^airflow: install\n\t\$\(BIN\)/distrl airflow$", makefile, re.M)
    assert "make airflow" in (REPO_ROOT / "README.md").read_text()
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "params.yaml").write_text(TINY_PARAMS)
    env = {
        "PATH": "/usr/bin:/bin",  # no .venv/bin: the command must put it first itself
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO_ROOT),
        "LANG": "C.UTF-8",
    }
    port = _free_port()
    log = (tmp_path / "distrl-airflow.out").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "distrl_tasks.cli", "airflow", "--port", str(port)],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out = _wait_for_output(proc, tmp_path / "distrl-airflow.out", "Ctrl-C stops it", 400)
        url = f"http://127.0.0.1:{port}"
        assert f"Airflow is up: {url}" in out
        passwords = workdir / "runs" / "airflow" / "secrets" / "passwords.json"
        assert f"password in {passwords}" in out
        assert passwords.stat().st_mode & 0o077 == 0
        password = json.loads(passwords.read_text())["admin"]
        home = workdir / "runs" / "airflow"
        assert not any(password in p.read_text(errors="replace") for p in home.glob("*.log"))
        assert password not in out

        client = Cluster(
            workdir=workdir,
            state={
                "airflow_url": url,
                "admin_user": "admin",
                "passwords_file": str(passwords),
                "services": [
                    {"name": n, "log": str(home / f"{n}.log")}
                    for n in ("api-server", "scheduler", "dag-processor")
                ],
            },
        )
        with pytest.raises(urllib.error.HTTPError, match=r"401|403"):
            client.request("GET", "/api/v2/dags", auth=False)
        client.login()
        pools = client.request("GET", "/api/v2/pools")["pools"]
        assert [p["slots"] for p in pools if p["name"] == "devices"] == [2]
        client.wait_until(
            "distrl_round to be parsed",
            lambda: client.request("GET", "/api/v2/dags/distrl_round"),
            240,
        )
        listening = listening_sockets(_group_members(proc.pid))
        assert f"127.0.0.1:{port}" in listening
        exposed = sorted(a for a in listening if not a.startswith("127.0.0.1:"))
        assert not exposed, f"listening beyond loopback: {exposed}"

        # a task runs: the executor's `airflow` subprocesses are found without the venv on PATH
        client.trigger("distrl_round", "make_airflow_round", {"round": 1})
        client.wait_until(
            "plan_shards to succeed",
            lambda: (
                {
                    t["task_id"]: t["state"]
                    for t in client.task_instances("distrl_round", "make_airflow_round")
                }.get("plan_shards")
                == "success"
            ),
            300,
        )
    finally:
        members = _group_members(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        try:
            code = proc.wait(timeout=90)
        finally:
            _kill_farm(workdir)
            log.close()
    assert code == 0, (tmp_path / "distrl-airflow.out").read_text()[-3000:]
    time.sleep(1.0)
    left = [pid for pid in members if Path(f"/proc/{pid}").exists() and not _zombie(pid)]
    assert not left, f"still running after Ctrl-C: {left}"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_output(proc: subprocess.Popen, path: Path, marker: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace")
        if marker in text:
            return text
        if proc.poll() is not None:
            raise AssertionError(f"distrl airflow exited {proc.returncode}:\n{text[-3000:]}")
        time.sleep(1.0)
    raise AssertionError(f"no {marker!r} after {timeout:.0f}s:\n{path.read_text()[-3000:]}")


def _group_members(leader: int) -> set[int]:
    """``leader`` and every process in the sessions it started (its components)."""
    found = {leader}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if os.getsid(int(proc.name)) == leader or _ppid(int(proc.name)) == leader:
                    found.add(int(proc.name))
            except OSError:
                continue
    # the components run in sessions of their own: add their groups
    for pid in list(found):
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    if os.getpgid(int(proc.name)) == pid:
                        found.add(int(proc.name))
                except OSError:
                    continue
    return found


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _kill_farm(workdir: Path) -> None:
    record = workdir / "runs" / "farm.json"
    if record.is_file():
        with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
            os.kill(int(json.loads(record.read_text())["pid"]), signal.SIGTERM)
