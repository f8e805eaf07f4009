"""``distrl airflow`` / ``make airflow``: the Airflow UI on one machine, in the foreground.

What ``airflow standalone`` does, minus its pitfalls: the components are started from this venv
(``PATH`` gets ``.venv/bin`` first, so Airflow's own subprocesses find ``airflow``), the
api-server binds 127.0.0.1, no log server is started (task logs are on this disk; a log server
would listen on every interface), auth stays on (SimpleAuthManager, user ``admin`` with a
generated password in a 0600 file under ``AIRFLOW_HOME``), the DAGs folder is the project's
``dags/`` and the ``devices`` pool exists. LocalExecutor and SQLite: nothing else to install.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from distrl_tasks.cluster.launcher import base_env, http_ok, tail, wait_for
from distrl_tasks.cluster.processes import Running, free_port, start, stop
from distrl_tasks.cluster.secrets import load_or_create, write_passwords_file
from distrl_tasks.cluster.services import (
    ADMIN_USER,
    DEVICES_POOL,
    LOOPBACK,
    SIMPLE_AUTH,
    venv_bin,
)

COMPONENTS = (
    ("api-server", ("api-server", "--host", LOOPBACK)),
    ("scheduler", ("scheduler", "--skip-serve-logs")),
    ("dag-processor", ("dag-processor",)),
)


@dataclass(frozen=True)
class LocalAirflow:
    """Where the single-machine Airflow lives and how to reach it."""

    home: Path
    workdir: Path
    dags: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def passwords_file(self) -> Path:
        return self.home / "secrets" / "passwords.json"

    def env(self) -> dict[str, str]:
        """The environment of every component (this venv first on ``PATH``)."""
        keys = load_or_create(self.home / "secrets")
        return {
            **base_env(),
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.passwords_file),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "AIRFLOW__CORE__FERNET_KEY": keys["fernet_key"],
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.home}/airflow.db",
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API__HOST": LOOPBACK,
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__SECRET_KEY": keys["api_secret_key"],
            "AIRFLOW__API_AUTH__JWT_SECRET": keys["jwt_secret"],
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs"),
            "DISTRL_WORKDIR": str(self.workdir),
            "OMP_NUM_THREADS": "1",
            "PYTHONUNBUFFERED": "1",
        }


def prepare(airflow: LocalAirflow, pool_slots: int) -> dict[str, str]:
    """Migrate the database and create the ``devices`` pool; returns the components' env."""
    airflow.home.mkdir(parents=True, exist_ok=True)
    keys = load_or_create(airflow.home / "secrets")
    write_passwords_file(airflow.passwords_file, ADMIN_USER, keys["admin_password"])
    env = airflow.env()
    for args in (
        ["db", "migrate"],
        ["pools", "set", DEVICES_POOL, str(pool_slots), "device capacity"],
    ):
        done = subprocess.run(
            [venv_bin("airflow"), *args], env=env, capture_output=True, text=True, timeout=600
        )
        if done.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed: {done.stderr[-3000:]}")
    return env


def serve(airflow: LocalAirflow, pool_slots: int = 2, out=sys.stdout) -> int:
    """Start the components, print where the UI and password are, run until a signal.

    Returns:
        0 after SIGINT/SIGTERM stopped it, 1 when a component died (its log tail is printed).
    """
    env = prepare(airflow, pool_slots)
    running: list[Running] = []
    stop_requested = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for name, args in COMPONENTS:
            argv = [venv_bin("airflow"), *args]
            if name == "api-server":
                argv += ["--port", str(airflow.port)]
            running.append(start(name, argv, env, airflow.home / f"{name}.log", airflow.home, None))
        api = running[0]
        wait_for(
            "the Airflow api-server",
            lambda: stop_requested or http_ok(f"{airflow.url}/api/v2/monitor/health"),
            api,
            300,
        )
        print(
            f"Airflow is up: {airflow.url}\n"
            f"  user {ADMIN_USER}, password in {airflow.passwords_file}\n"
            f"  DAGs from {airflow.dags}, project {airflow.workdir}, logs in {airflow.home}\n"
            "Ctrl-C stops it.",
            file=out,
            flush=True,
        )
        while not stop_requested:
            dead = [r for r in running if not r.alive()]
            if dead:
                print(f"airflow {dead[0].name} exited:\n{tail(Path(dead[0].log))}", file=out)
                return 1
            time.sleep(1.0)
        return 0
    finally:
        for run in reversed(running):
            stop(run, grace_s=20)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def default_port() -> int:
    """8080 when it is free, else any free loopback port."""
    with socket.socket() as s:
        try:
            s.bind((LOOPBACK, 8080))
            return 8080
        except OSError:
            return free_port()
