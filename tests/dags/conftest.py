"""An isolated Airflow installation for the DAG tests.

Airflow reads its configuration when it is first imported, so the environment is set here, at
collection time, before any test module imports ``airflow``: a throwaway ``AIRFLOW_HOME`` with a
SQLite metadata database, this repository's ``dags/`` as the DAG folder, no examples. The
database itself (``airflow db migrate`` plus the ``devices`` pool) is created only by the
``airflow_db`` fixture, so tests that just parse DAGs stay fast.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGS_FOLDER = REPO_ROOT / "dags"
AIRFLOW_BIN = Path(sys.executable).with_name("airflow")
DEVICE_POOL_SLOTS = 4

if "airflow" in sys.modules:  # its settings are already bound to another home and database
    raise RuntimeError("airflow was imported before tests/dags/conftest.py isolated AIRFLOW_HOME")

_HOME = Path(tempfile.mkdtemp(prefix="distrl-airflow-home-"))
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)

AIRFLOW_ENV = {
    "AIRFLOW_HOME": str(_HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME}/airflow.db",
    "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
    "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(_HOME / "logs"),
}
os.environ.update(AIRFLOW_ENV)


def airflow_cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run the ``airflow`` command against the isolated home; raise with its output on failure."""
    proc = subprocess.run(
        [str(AIRFLOW_BIN), *args],
        env={**os.environ, **AIRFLOW_ENV},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"airflow {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
            f"{proc.stderr[-3000:]}"
        )
    return proc


@pytest.fixture(scope="session")
def airflow_home() -> Path:
    """The isolated ``AIRFLOW_HOME`` of this test session."""
    return _HOME


@pytest.fixture(scope="session")
def airflow_db(airflow_home: Path) -> Path:
    """A migrated SQLite metadata database with the ``devices`` pool; returns its path."""
    airflow_cli("db", "migrate")
    airflow_cli("pools", "set", "devices", str(DEVICE_POOL_SLOTS), "simulated or real devices")
    return airflow_home / "airflow.db"
