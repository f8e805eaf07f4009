"""``distrl cluster up|down|status``: the CeleryExecutor deployment on this machine's loopback.

``up`` starts Postgres, Redis, the MLflow server, Airflow's api-server, scheduler and
dag-processor and one Celery worker per queue group (:data:`~distrl_tasks.cluster.services.
WORKERS`), each in its own process group, recording each in ``<root>/state.json`` as soon as it
runs; a failing ``up`` stops what it started. ``down`` stops the recorded groups in reverse order.
Secrets are generated once into ``<root>/secrets/secrets.json`` (0600) and never printed.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from distrl_tasks.cluster import postgres
from distrl_tasks.cluster.processes import Running, free_port, load_state, save_state, start, stop
from distrl_tasks.cluster.secrets import load_or_create, write_passwords_file, write_private
from distrl_tasks.cluster.services import (
    ADMIN_USER,
    DEVICES_POOL,
    LOOPBACK,
    Paths,
    Ports,
    Service,
    airflow_env,
    cluster_services,
    redis_conf,
    venv_bin,
)

START_TIMEOUT_S = 240.0
AIRFLOW_SERVICES = ("api-server", "scheduler", "dag-processor", "worker-devices", "worker-gpu")


def state_path(paths: Paths) -> Path:
    return paths.root / "state.json"


def base_env() -> dict[str, str]:
    """The caller's environment with this venv's scripts first on ``PATH`` (Airflow starts its
    subprocesses as ``airflow`` from ``PATH``)."""
    env = dict(os.environ)
    bin_dir = str(Path(venv_bin("python")).parent)
    env["PATH"] = os.pathsep.join([bin_dir, *(p for p in env.get("PATH", "").split(":") if p)])
    return env


def wait_for(what: str, probe: Callable[[], bool], run: Running | None, timeout: float) -> None:
    """Poll ``probe`` until it is truthy; fail early (with the log tail) if ``run`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if run is not None and not run.alive():
            raise RuntimeError(f"{what}: the process exited; its log:\n{tail(Path(run.log))}")
        try:
            if probe():
                return
        except (OSError, urllib.error.URLError):
            pass  # not listening yet: poll again
        time.sleep(1.0)
    log = tail(Path(run.log)) if run else ""
    raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}\n{log}")


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status == 200


def tail(path: Path, chars: int = 3000) -> str:
    """The end of a log file ('' when there is none)."""
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _airflow(args: list[str], env: dict[str, str], timeout: float = 600) -> None:
    done = subprocess.run(
        [venv_bin("airflow"), *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise RuntimeError(f"airflow {' '.join(args)} failed: {done.stderr[-3000:]}")


def up(paths: Paths, pool_slots: int = 2) -> dict[str, object]:
    """Start the deployment; returns the recorded state (ports, URLs, processes).

    When some recorded services still run, only the ones that died are started again, on their
    recorded ports (a crashed or killed worker rejoins; its tasks' retries then run on it).

    Raises:
        RuntimeError: it is already running, or a service did not come up (its log tail is in
            the message; everything started so far is stopped again).
    """
    info, recorded = load_state(state_path(paths))
    alive = [r for r in recorded if r.alive()]
    if alive and len(alive) == len(recorded):
        raise RuntimeError(f"a cluster already runs from {paths.root} (distrl cluster status)")
    if alive:
        return _restart_dead(paths, info, recorded)
    for directory in (paths.root, paths.logs, paths.redis, paths.airflow_home, paths.artifacts):
        directory.mkdir(parents=True, exist_ok=True)
    paths.dvc_remote.mkdir(parents=True, exist_ok=True)
    secrets = load_or_create(paths.secrets)
    ports = Ports(postgres=free_port(), redis=free_port(), mlflow=free_port(), api=free_port())
    info = {
        "root": str(paths.root),
        "workdir": str(paths.workdir),
        "ports": asdict(ports),
        "airflow_url": f"http://{LOOPBACK}:{ports.api}",
        "mlflow_url": f"http://{LOOPBACK}:{ports.mlflow}",
        "dvc_remote": str(paths.dvc_remote),
        "admin_user": ADMIN_USER,
        "passwords_file": str(paths.secrets / "passwords.json"),
        "secrets_file": str(paths.secrets / "secrets.json"),
    }
    running: list[Running] = []
    try:
        _start_all(paths, ports, secrets, running, info, pool_slots)
    except BaseException:
        for run in reversed(running):
            stop(run, grace_s=10)
        save_state(state_path(paths), info, [])
        raise
    return {**info, "services": [asdict(r) for r in running]}


def _launch(paths: Paths, service: Service, env: dict[str, str]) -> Running:
    prefix = postgres.user_prefix() if service.as_postgres_user else None
    return start(
        service.name,
        list(service.argv),
        {**env, **service.env},
        paths.logs / f"{service.name}.log",
        paths.root,
        service.port,
        preexec=prefix,
    )


def _restart_dead(
    paths: Paths, info: dict[str, object], recorded: list[Running]
) -> dict[str, object]:
    """Start again the recorded services that are not running, with the recorded ports."""
    ports = Ports(**info["ports"])  # type: ignore[arg-type]
    secrets = load_or_create(paths.secrets)
    services = {s.name: s for s in cluster_services(paths, ports, secrets)}
    env = base_env()
    af_env = {**env, **airflow_env(paths, ports, secrets)}
    running = list(recorded)
    for i, run in enumerate(recorded):
        if run.alive():
            continue
        stop(run, grace_s=1)  # orphans of the dead leader, e.g. its task processes
        service = services[run.name]
        service_env = af_env if run.name in AIRFLOW_SERVICES else env
        running[i] = _launch(paths, service, service_env)
        save_state(state_path(paths), info, running)
        if service.port is not None:
            wait_for(run.name, running[i].listening, running[i], START_TIMEOUT_S)
    return {**info, "services": [asdict(r) for r in running]}


def _start_all(
    paths: Paths,
    ports: Ports,
    secrets: dict[str, str],
    running: list[Running],
    info: dict[str, object],
    pool_slots: int,
) -> None:
    services = {s.name: s for s in cluster_services(paths, ports, secrets)}
    env = base_env()
    af_env = {**env, **airflow_env(paths, ports, secrets)}

    def launch(service: Service, service_env: dict[str, str]) -> Running:
        run = _launch(paths, service, service_env)
        running.append(run)
        save_state(state_path(paths), info, running)
        return run

    postgres.initialise(paths.postgres, secrets["postgres_superuser"])
    pg = launch(services["postgres"], env)
    wait_for("Postgres", pg.listening, pg, START_TIMEOUT_S)
    roles = lambda: postgres.ensure_roles(ports.postgres, secrets) or True  # noqa: E731
    wait_for("Postgres roles", roles, pg, 60)
    write_private(paths.redis / "redis.conf", redis_conf(paths, ports, secrets))
    redis = launch(services["redis"], env)
    mlflow = launch(services["mlflow"], env)
    wait_for("Redis", redis.listening, redis, START_TIMEOUT_S)
    write_passwords_file(Path(str(info["passwords_file"])), ADMIN_USER, secrets["admin_password"])
    _airflow(["db", "migrate"], af_env)
    _airflow(["pools", "set", DEVICES_POOL, str(pool_slots), "device capacity"], af_env)
    for name in AIRFLOW_SERVICES:
        launch(services[name], af_env)
    wait_for("the MLflow server", lambda: http_ok(f"{info['mlflow_url']}/health"), mlflow, 300)
    api = next(r for r in running if r.name == "api-server")
    health = f"{info['airflow_url']}/api/v2/monitor/health"
    wait_for("the Airflow api-server", lambda: http_ok(health), api, START_TIMEOUT_S)
    for run in running:
        if not run.alive():
            raise RuntimeError(f"{run.name} exited during start-up:\n{tail(Path(run.log))}")


def down(paths: Paths) -> list[tuple[str, bool]]:
    """Stop what ``up`` recorded, workers first; returns ``(service, was_running)`` pairs."""
    info, recorded = load_state(state_path(paths))
    stopped = []
    for run in reversed(recorded):
        # Postgres: SIGINT is its "fast" shutdown (SIGTERM waits for clients to leave)
        sig = 2 if run.name == "postgres" else 15
        stopped.append((run.name, stop(run, sig=sig, grace_s=30)))
    if info:
        save_state(state_path(paths), info, [])
    return stopped


def status(paths: Paths) -> dict[str, object]:
    """The recorded deployment with each service's liveness (``alive``, ``listening``)."""
    info, recorded = load_state(state_path(paths))
    services = [
        {**asdict(r), "alive": r.alive(), "listening": r.alive() and r.listening()}
        for r in recorded
    ]
    return {**info, "services": services}


def format_status(state: dict[str, object]) -> str:
    """``status`` as the table ``distrl cluster status`` prints."""
    services = state.get("services") or []
    if not services:
        return "no cluster is running (distrl cluster up starts one)"
    lines = [f"{'service':<15} {'pid':>8} {'port':>6}  state    log"]
    for svc in services:  # type: ignore[union-attr]
        alive = "up" if svc["alive"] else "DOWN"
        if svc["alive"] and not svc["listening"]:
            alive = "starting"
        port = svc["port"] or "-"
        lines.append(f"{svc['name']:<15} {svc['pid']:>8} {port:>6}  {alive:<8} {svc['log']}")
    lines += [
        "",
        f"Airflow UI/API: {state['airflow_url']} (user {state['admin_user']}, "
        f"password in {state['passwords_file']})",
        f"MLflow:         {state['mlflow_url']}",
        f"DVC remote:     {state['dvc_remote']}",
        f"project:        {state['workdir']}",
    ]
    return "\n".join(lines)
