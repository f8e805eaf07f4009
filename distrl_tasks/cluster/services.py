"""Every service of the scaled-out deployment, described once.

The launcher (:mod:`distrl_tasks.cluster.launcher`) starts exactly these processes on loopback,
and ``tests/unit/test_docker_files.py`` checks ``docker/compose.yaml`` against them (same
services, same queues and concurrency, same MLflow and Redis flags, same ``DISTRL_SET_*`` keys).
Nothing here starts anything: :func:`cluster_services` only builds argv and environment.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from distrl_tasks.cluster.hostname import WORKER_NAME_ENV

LOOPBACK = "127.0.0.1"
SIMPLE_AUTH = "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
ADMIN_USER = "admin"
DEVICES_POOL = "devices"

# Celery workers: name -> (queues, concurrency). The devices worker owns the simulator farm.
WORKERS: dict[str, tuple[tuple[str, ...], int]] = {
    "worker-devices": (("devices",), 2),
    "worker-gpu": (("gpu", "default"), 2),
}
# cluster service -> the docker/compose.yaml services that play its part (compose splits the
# gpu,default worker in two: its gpu worker sits on a GPU machine, bookkeeping need not wait there)
COMPOSE_NAMES: dict[str, tuple[str, ...]] = {
    "postgres": ("postgres",),
    "redis": ("redis",),
    "mlflow": ("mlflow",),
    "api-server": ("airflow-apiserver",),
    "scheduler": ("airflow-scheduler",),
    "dag-processor": ("airflow-dag-processor",),
    "worker-devices": ("airflow-worker-devices",),
    "worker-gpu": ("airflow-worker-gpu", "airflow-worker-default"),
}
# params.yaml keys every Airflow process gets from the environment (DISTRL_SET_<NAME>)
PARAMS_OVERRIDES: dict[str, str] = {
    "DISTRL_SET_TRACKING_URI": "tracking.tracking_uri",
    "DISTRL_SET_DVC_REMOTE": "data.dvc_remote",
}
MLFLOW_FLAGS = ("--serve-artifacts", "--artifacts-destination")  # the latter takes a path
REDIS_FLAGS = ("--appendonly", "yes", "--protected-mode", "yes")


def venv_bin(name: str) -> str:
    """The console script ``name`` next to this interpreter (the venv's, not ``$PATH``'s)."""
    return str(Path(sys.executable).with_name(name))


@dataclass(frozen=True)
class Ports:
    """The loopback ports of one deployment (chosen free at ``up``)."""

    postgres: int
    redis: int
    mlflow: int
    api: int


@dataclass(frozen=True)
class Paths:
    """Where a deployment keeps its state: everything under ``root`` (``runs/cluster``)."""

    root: Path
    workdir: Path  # the project whose params.yaml and data the tasks use
    dags: Path

    @property
    def secrets(self) -> Path:
        return self.root / "secrets"

    @property
    def postgres(self) -> Path:
        return self.root / "postgres"

    @property
    def redis(self) -> Path:
        return self.root / "redis"

    @property
    def airflow_home(self) -> Path:
        return self.root / "airflow"

    @property
    def artifacts(self) -> Path:
        return self.root / "mlflow-artifacts"

    @property
    def dvc_remote(self) -> Path:
        return self.root / "dvc-remote"

    @property
    def logs(self) -> Path:
        return self.root / "logs"


@dataclass(frozen=True)
class Service:
    """One long-running process: its argv, extra environment and main port."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    port: int | None = None
    as_postgres_user: bool = False  # postgres refuses to run as root


def database_url(user: str, password: str, port: int, db: str, scheme: str) -> str:
    return f"{scheme}://{user}:{quote(password, safe='')}@{LOOPBACK}:{port}/{db}"


# How long a stage waits for an unreachable MLflow server before it fails and Airflow's task
# retries (2, 10 s apart) take over: 4 client retries with backoff 1 s give up after ~15 s, so
# an outage is visible as a failed try instead of being hidden in one try for minutes (the
# client's default), and a short one (a restart) is still absorbed by the task's retries.
FAULT_POLICY_ENV = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "4",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
}


def airflow_env(paths: Paths, ports: Ports, secrets: dict[str, str]) -> dict[str, str]:
    """The environment every Airflow process of the cluster shares (secrets included)."""
    api = f"http://{LOOPBACK}:{ports.api}"
    pg = (secrets["airflow_db"], ports.postgres, "airflow")
    return {
        "AIRFLOW_HOME": str(paths.airflow_home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(paths.dags),
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN_USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(paths.secrets / "passwords.json"),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{api}/execution/",
        "AIRFLOW__CORE__HOSTNAME_CALLABLE": "distrl_tasks.cluster.hostname.worker_hostname",
        "AIRFLOW__CORE__FERNET_KEY": secrets["fernet_key"],
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": database_url("airflow", *pg, "postgresql+psycopg2"),
        "AIRFLOW__CELERY__RESULT_BACKEND": database_url("airflow", *pg, "db+postgresql+psycopg2"),
        "AIRFLOW__CELERY__BROKER_URL": (
            f"redis://:{quote(secrets['redis'], safe='')}@{LOOPBACK}:{ports.redis}/0"
        ),
        "AIRFLOW__API__BASE_URL": api,
        "AIRFLOW__API__HOST": LOOPBACK,
        "AIRFLOW__API__PORT": str(ports.api),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API__SECRET_KEY": secrets["api_secret_key"],
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets["jwt_secret"],
        "AIRFLOW__OPERATORS__DEFAULT_QUEUE": "default",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(paths.airflow_home / "logs"),
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        # a SIGKILLed worker's task is failed (and retried) after this, not after 5 minutes
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "10",
        "DISTRL_WORKDIR": str(paths.workdir),
        "DISTRL_SET_TRACKING_URI": f"tracking.tracking_uri=http://{LOOPBACK}:{ports.mlflow}",
        "DISTRL_SET_DVC_REMOTE": f"data.dvc_remote={paths.dvc_remote}",
        "OMP_NUM_THREADS": "1",  # torch threads of parallel tasks would oversubscribe the cores
        "PYTHONUNBUFFERED": "1",
        **FAULT_POLICY_ENV,
    }


def cluster_services(paths: Paths, ports: Ports, secrets: dict[str, str]) -> list[Service]:
    """The deployment's services in start order (``down`` stops them in reverse)."""
    pg_bin = postgres_bin_dir()
    mlflow_store = database_url(
        "mlflow", secrets["mlflow_db"], ports.postgres, "mlflow", "postgresql+psycopg2"
    )
    services = [
        Service(
            "postgres",
            (
                str(pg_bin / "postgres"),
                "-D",
                str(paths.postgres / "data"),
                "-h",
                LOOPBACK,
                "-p",
                str(ports.postgres),
                "-c",
                "unix_socket_directories=",  # TCP on loopback only; no socket path limits
            ),
            port=ports.postgres,
            as_postgres_user=True,
        ),
        # the password lives in the 0600 config file, not in argv (which `ps` shows)
        Service("redis", ("redis-server", str(paths.redis / "redis.conf")), port=ports.redis),
        Service(
            "mlflow",
            (
                venv_bin("mlflow"),
                "server",
                "--host",
                LOOPBACK,
                "--port",
                str(ports.mlflow),
                *MLFLOW_FLAGS,
                str(paths.artifacts),
                "--workers",
                "1",  # two cores: one server process is plenty
            ),
            env={"MLFLOW_BACKEND_STORE_URI": mlflow_store},
            port=ports.mlflow,
        ),
        Service(
            "api-server",
            (venv_bin("airflow"), "api-server", "--host", LOOPBACK, "--port", str(ports.api)),
            port=ports.api,
        ),
        # task logs are on this machine's disk: no log server (it would bind every interface)
        Service("scheduler", (venv_bin("airflow"), "scheduler", "--skip-serve-logs")),
        Service("dag-processor", (venv_bin("airflow"), "dag-processor")),
    ]
    for name, (queues, concurrency) in WORKERS.items():
        argv = (
            venv_bin("airflow"),
            "celery",
            "worker",
            "--queues",
            ",".join(queues),
            "--concurrency",
            str(concurrency),
            "--celery-hostname",
            f"{name}@%h",
            "--skip-serve-logs",
        )
        services.append(Service(name, argv, env={WORKER_NAME_ENV: name}))
    return services


def redis_conf(paths: Paths, ports: Ports, secrets: dict[str, str]) -> str:
    """The redis.conf of the broker (written 0600: it holds the password)."""
    flags = dict(zip(REDIS_FLAGS[::2], REDIS_FLAGS[1::2], strict=True))
    lines = {
        "bind": LOOPBACK,
        "port": str(ports.redis),
        "dir": str(paths.redis),
        "requirepass": secrets["redis"],
        "daemonize": "no",
        **{k.lstrip("-"): v for k, v in flags.items()},
    }
    return "".join(f"{k} {v}\n" for k, v in lines.items())


def postgres_bin_dir() -> Path:
    """Debian's versioned server binaries (``initdb``, ``postgres``), newest version first.

    Raises:
        FileNotFoundError: Postgres is not installed (``make system-deps`` installs it).
    """
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if not found:
        raise FileNotFoundError(
            "no /usr/lib/postgresql/*/bin/postgres: install Debian's postgresql (make system-deps)"
        )
    return found[-1].parent
