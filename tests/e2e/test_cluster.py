"""The scaled-out deployment, for real: ``distrl cluster up`` on this machine, then rounds on it.

Postgres, Redis, the MLflow server, Airflow (api-server, scheduler, dag-processor) and two
Celery workers (queues ``devices`` and ``gpu,default``) run on loopback from a throwaway
project with tiny settings. The tests trigger ``distrl_round`` through the REST API v2 (auth on:
the generated admin password) and check where each task ran, the MLflow server's registry and
the DVC remote; run the asynchronous layout for two learner rounds; kill the devices worker in
the middle of a collection and the MLflow server during a round; grep everything the cluster
wrote for its secrets; and ``down`` must stop exactly what ``up`` started. Failures print the
services' log tails.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_client import Cluster, distrl, listening_sockets
from fakes.projects import TINY_PARAMS

from distrl_tasks.cluster.processes import session_groups

pytestmark = [pytest.mark.e2e, pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(1500)]

EPISODES = 4  # per device in the faulted round
WORKER_OF_QUEUE = {"devices": "worker-devices", "gpu": "worker-gpu", "default": "worker-gpu"}


def _require_system_deps() -> None:
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.fail("Debian's postgresql is missing: make system-deps installs it")
    if not shutil.which("redis-server"):
        pytest.fail("redis-server is missing: make system-deps installs it")
    for module in ("psycopg2", "asyncpg", "redis", "airflow.providers.celery"):
        try:
            __import__(module)
        except ImportError:
            pytest.fail(f"python module {module} is missing: pip install -e '.[cluster]'")


def _register_initial_policy(workdir: Path, mlflow_url: str) -> None:
    """A fresh tiny policy as "behavior" in the server's registry (bootstrap skips its SFT)."""
    from distrl_tasks.agents.policy import build_policy
    from distrl_tasks.config import load_config
    from distrl_tasks.tracking.registry import ModelRegistry

    cfg = load_config(workdir / "params.yaml", {"tracking.tracking_uri": mlflow_url})
    policy_dir = workdir / "runs" / "initial_policy"
    build_policy(cfg.agent, seed=0).save(policy_dir)
    registry = ModelRegistry.from_config(cfg, root=workdir)
    registry.set_behavior(
        registry.register_checkpoint(
            policy_dir, round=0, algorithm="distrl", policy_version=0, data_version=""
        )
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    _require_system_deps()
    # not under pytest's 0700 tmp root: the postgres user must reach its data directory
    workdir = Path(tempfile.mkdtemp(prefix="distrl-cluster-"))
    workdir.chmod(0o755)
    (workdir / "params.yaml").write_text(TINY_PARAMS)
    started = time.monotonic()
    up = distrl("cluster", "up", cwd=workdir)
    try:
        assert up.returncode == 0, f"cluster up failed:\n{up.stdout}\n{up.stderr}"
        print(f"\ncluster up in {time.monotonic() - started:.0f}s:\n{up.stdout}")
        status = distrl("cluster", "status", "--json", cwd=workdir, timeout=60)
        deployment = Cluster(workdir=workdir, state=json.loads(status.stdout))
        deployment.login()
        for dag_id in ("distrl_round", "distrl_actor", "distrl_learner"):
            deployment.wait_until(
                f"{dag_id} to be parsed",
                lambda dag_id=dag_id: deployment.request("GET", f"/api/v2/dags/{dag_id}"),
                240,
            )
        _register_initial_policy(workdir, deployment.mlflow)
        yield deployment
    finally:
        recorded = _recorded_services(workdir)
        down = distrl("cluster", "down", cwd=workdir)
        _stop_farm_left_by(workdir)
        left = [r.name for r in recorded if r.alive()]
        shutil.rmtree(workdir, ignore_errors=True)
        assert down.returncode == 0, down.stderr
        assert recorded and not left, f"still running after cluster down: {left}"


def _recorded_services(workdir: Path) -> list[Any]:
    """What ``up`` recorded (pid and start time each), to check ``down`` stopped all of it."""
    from distrl_tasks.cluster.processes import load_state

    with contextlib.suppress(ValueError):
        return load_state(workdir / "runs" / "cluster" / "state.json")[1]
    return []


def _stop_farm_left_by(workdir: Path) -> None:
    record = workdir / "runs" / "farm.json"
    if record.is_file():
        with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
            os.kill(int(json.loads(record.read_text())["pid"]), signal.SIGTERM)


def test_status_shows_every_service_up_and_bound_to_loopback(cluster: Cluster) -> None:
    names = [s["name"] for s in cluster.state["services"]]
    assert names == [
        "postgres",
        "redis",
        "mlflow",
        "api-server",
        "scheduler",
        "dag-processor",
        "worker-devices",
        "worker-gpu",
    ]
    down = [s["name"] for s in cluster.state["services"] if not s["alive"]]
    assert not down, f"not running: {down}\n{cluster.logs(*down)}"
    listening = listening_sockets({s["pid"] for s in cluster.state["services"]})
    assert listening, "found no listening sockets of the cluster's processes"
    exposed = sorted(addr for addr in listening if not addr.startswith("127.0.0.1:"))
    assert not exposed, f"sockets not on loopback: {exposed}"
    for svc in cluster.state["services"]:
        if svc["port"]:
            assert f"127.0.0.1:{svc['port']}" in listening, svc
    secrets_file = Path(cluster.state["secrets_file"])
    assert secrets_file.stat().st_mode & 0o777 == 0o600
    assert Path(cluster.state["passwords_file"]).stat().st_mode & 0o077 == 0
    # auth is on: no token, no API
    with pytest.raises(Exception, match=r"401|403"):
        cluster.request("GET", "/api/v2/dags", auth=False)


def test_round_runs_on_its_queue_workers_and_survives_killed_worker_and_mlflow(
    cluster: Cluster,
) -> None:
    """One ``distrl_round`` through the REST API, with two faults injected while it runs: the
    devices worker is SIGKILLed during ``collect`` and the MLflow server during ``train``; both
    come back through ``distrl cluster up`` (which restarts only what died)."""
    conf = {"round": 1, "episodes_per_device": EPISODES}  # enough to kill one mid-collection
    run = cluster.trigger("distrl_round", "cluster_round1", conf)
    assert run["conf"] == conf
    started = time.monotonic()
    counts: dict[str, Any] = {}

    def ti_state(task_id: str) -> str | None:
        tis = cluster.task_instances("distrl_round", "cluster_round1")
        return next((t["state"] for t in tis if t["task_id"] == task_id), None)

    journal = cluster.workdir / "data" / "trajectories" / "raw" / ".journal" / "r000001-w00-train"
    cluster.wait_until("collect to run", lambda: ti_state("collect") == "running", 600)
    # kill once an episode is finished (journaled), so the retry has something to keep
    deadline = time.monotonic() + 300
    while not list(journal.glob("*.parquet")):
        assert ti_state("collect") == "running", f"collect ended first: {ti_state('collect')}"
        assert time.monotonic() < deadline, f"no episode journaled in 300 s\n{cluster.logs()}"
        time.sleep(0.1)
    counts["devices_worker_killed_in"] = ti_state("collect")
    _kill_and_restart(cluster, "worker-devices")
    kept = _journaled_episodes(journal)
    counts["trajectories_finished_before_kill"] = len(kept)
    cluster.wait_until("train to run", lambda: ti_state("train") == "running", 900)
    counts["mlflow_killed_in"] = ti_state("train")

    def a_try_failed() -> bool:  # with the server down, a stage that needs MLflow fails a try
        tis = cluster.task_instances("distrl_round", "cluster_round1")
        return any(
            t["state"] in ("up_for_retry", "failed") or t["try_number"] > 1
            for t in tis
            if t["task_id"] in ("train", "evaluate", "register")
        )

    _kill_and_restart(cluster, "mlflow", down_until=a_try_failed)

    cluster.wait_for_run("distrl_round", "cluster_round1", timeout=1200)
    took = time.monotonic() - started
    print(f"\ndistrl_round round 1 on the cluster, faults included: {took:.0f}s")
    tis = cluster.task_instances("distrl_round", "cluster_round1")
    ran = [t for t in tis if t["state"] == "success"]
    assert {t["task_id"] for t in ran} >= {"start_farm", "collect", "train", "evaluate", "register"}
    placement = {}
    for ti in ran:
        worker = WORKER_OF_QUEUE[ti["queue"]]
        assert ti["hostname"].startswith(f"{worker}@"), (ti["task_id"], ti["queue"], ti["hostname"])
        placement[ti["task_id"]] = ti["queue"]
    assert placement["collect"] == placement["start_farm"] == placement["evaluate"] == "devices"
    assert placement["train"] == "gpu" and placement["register"] == "default"
    print(f"task -> queue: {placement}")
    tries = {t["task_id"]: t["try_number"] for t in tis}
    counts["collect_tries"] = tries["collect"]
    counts["train_tries"] = tries["train"]
    counts["register_tries"] = tries["register"]
    # the kill lost collect's first try; the scheduler failed it and the restarted worker ran it
    assert tries["collect"] >= 2, f"collect was not retried after the worker was killed: {tries}"
    # the MLflow outage failed a try of a stage that needs the server, and its retry succeeded
    counts["mlflow_stage_retries"] = {
        t: tries[t] - 1 for t in ("train", "evaluate", "register") if tries[t] > 1
    }
    assert counts["mlflow_stage_retries"], f"no stage was retried over the MLflow outage: {tries}"

    # every trajectory in the round's shards exactly once, and as many as were planned
    shards = _round_shards(cluster.workdir, 1)
    assert shards, f"no Parquet shards of round 1 under {cluster.workdir}/data"
    steps, trajectories = _shard_rows(shards)
    counts["trajectories"] = len(trajectories)
    counts["duplicate_steps"] = len(steps) - len(set(steps))
    assert counts["duplicate_steps"] == 0, f"duplicated (trajectory, step) rows in {shards}"
    assert len(trajectories) == 2 * EPISODES, trajectories  # 2 devices
    # what was finished before the kill was kept as collected (first step's time), not redone
    final = _first_steps(shards)
    counts["kept_after_kill"] = sum(final.get(t) == started for t, started in kept.items())
    assert counts["kept_after_kill"] == len(kept) >= 1, (kept, final)

    # the registered version is in the MLflow server's registry, with its lineage, and only once
    manifest = cluster.xcom("distrl_round", "cluster_round1", "register")
    version = _model_version(cluster, manifest["version"])
    assert version.tags["round"] == "1" and version.tags["algorithm"] == "distrl"
    data_version = cluster.xcom("distrl_round", "cluster_round1", "version")["data_version"]
    assert data_version and version.tags["data_version"] == data_version
    assert version.tags["policy_version"] and version.run_id
    round_versions = _versions_of_round(cluster, 1)
    counts["registry_versions_round_1"] = len(round_versions)
    assert round_versions == [str(manifest["version"])], round_versions

    # the round's shards were pushed: every Parquet file's content is in the DVC remote
    remote = Path(cluster.state["dvc_remote"])
    missing = [p.name for p in shards if not _in_dvc_remote(remote, p)]
    assert not missing, f"shards not in the DVC remote {remote}: {missing}"
    print(f"fault counts: {json.dumps(counts)}")


def _kill_and_restart(
    cluster: Cluster, name: str, down_until: Callable[[], object] | None = None
) -> None:
    """SIGKILL a service's whole session, keep it down until ``down_until()`` holds (2 s
    without one), then ``distrl cluster up`` restarts it."""
    cluster.refresh()
    old = cluster.service(name)
    assert old["alive"], f"{name} is not running:\n{cluster.logs(name)}"
    # the whole worker: its process group and its task processes' own groups (a lost machine)
    for pgid in {old["pid"], *session_groups(old["pid"])}:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    time.sleep(2.0)
    if down_until is not None:
        cluster.wait_until(f"a consequence of {name} being down", down_until, 300)
    again = distrl("cluster", "up", cwd=cluster.workdir)
    assert again.returncode == 0, f"restarting {name}: {again.stdout}\n{again.stderr}"
    cluster.refresh()
    new = cluster.service(name)
    assert new["alive"] and new["pid"] != old["pid"], (old, new)
    others = {s["name"]: s["pid"] for s in cluster.state["services"] if s["name"] != name}
    print(f"killed {name} (pid {old['pid']}), restarted as pid {new['pid']}; others kept")
    assert len(others) == len(cluster.state["services"]) - 1


def _journaled_episodes(journal: Path) -> dict[str, str]:
    """trajectory id -> first step's ``started_at`` of every complete journal entry."""
    from distrl_tasks.data.shards import read_shards

    table = read_shards(journal, columns=["trajectory_id", "step", "started_at"])
    return {r["trajectory_id"]: str(r["started_at"]) for r in table.to_pylist() if r["step"] == 0}


def _first_steps(shards: list[Path]) -> dict[str, str]:
    import pyarrow.parquet as pq

    found: dict[str, str] = {}
    for path in shards:
        table = pq.read_table(path, columns=["trajectory_id", "step", "started_at"])
        for r in table.to_pylist():
            if r["step"] == 0:
                found[r["trajectory_id"]] = str(r["started_at"])
    return found


def _shard_rows(shards: list[Path]) -> tuple[list[tuple[str, int]], set[str]]:
    import pyarrow.parquet as pq

    steps: list[tuple[str, int]] = []
    for path in shards:
        table = pq.read_table(path, columns=["trajectory_id", "step"])
        ids = table.column("trajectory_id").to_pylist()
        steps += list(zip(ids, table.column("step").to_pylist(), strict=True))
    return steps, {t for t, _ in steps}


def _versions_of_round(cluster: Cluster, round_: int) -> list[str]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=cluster.mlflow, registry_uri=cluster.mlflow)
    found = client.search_model_versions("name='distrl-policy'")
    return sorted(v.version for v in found if v.tags.get("round") == str(round_))


def _model_version(cluster: Cluster, version: int) -> Any:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=cluster.mlflow, registry_uri=cluster.mlflow)
    return client.get_model_version("distrl-policy", str(version))


def _round_shards(workdir: Path, round_: int) -> list[Path]:
    """The round's raw shards (``r<round>-w<worker>-<serial>.parquet``)."""
    raw = workdir / "data" / "trajectories" / "raw"
    return sorted(raw.glob(f"r{round_:06d}-w*.parquet"))


def _in_dvc_remote(remote: Path, path: Path) -> bool:
    digest = hashlib.md5(path.read_bytes()).hexdigest()  # DVC's content address
    return (remote / "files" / "md5" / digest[:2] / digest[2:]).is_file()


def test_async_layout_runs_two_learner_rounds_with_staleness(cluster: Cluster) -> None:
    started = time.monotonic()
    cluster.trigger("distrl_actor", "actor_round2", {"round": 2, "rounds": 3})
    cluster.wait_for_run("distrl_actor", "actor_round2")
    actor_runs = cluster.wait_until(
        "the actor's round 3",
        lambda: [
            r["dag_run_id"]
            for r in cluster.request("GET", "/api/v2/dags/distrl_actor/dagRuns")["dag_runs"]
            if r["dag_run_id"] != "actor_round2"
        ],
        120,
    )
    for run_id in actor_runs:
        cluster.wait_for_run("distrl_actor", run_id)

    def learner_runs() -> list[dict[str, Any]]:
        return cluster.request("GET", "/api/v2/dags/distrl_learner/dagRuns")["dag_runs"]

    done = cluster.wait_until(
        "two learner runs to finish",
        lambda: (
            (runs := [r for r in learner_runs() if r["state"] in ("success", "failed")])
            and len(runs) >= 2
            and all(r["state"] in ("success", "failed") for r in learner_runs())
            and runs
        ),
        600,
    )
    for run in done:
        cluster.wait_for_run("distrl_learner", run["dag_run_id"])
    print(
        f"\nasync: actor rounds 2-3 and {len(done)} learner rounds in "
        f"{time.monotonic() - started:.0f}s"
    )
    for run in done:
        for ti in cluster.task_instances("distrl_learner", run["dag_run_id"]):
            if ti["state"] == "success":
                worker = WORKER_OF_QUEUE[ti["queue"]]
                assert ti["hostname"].startswith(f"{worker}@"), ti
    staleness = _staleness_by_round(cluster)
    print(f"train/staleness by round: {staleness}")
    assert {2, 3} <= set(staleness), staleness
    assert all(s >= 0 for s in staleness.values())


def _staleness_by_round(cluster: Cluster) -> dict[int, float]:
    """The learner's ``train/staleness`` metric per round, from the MLflow server."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=cluster.mlflow)
    experiment = client.get_experiment_by_name("distrl")
    assert experiment is not None, "no experiment 'distrl' on the MLflow server"
    out: dict[int, float] = {}
    train_runs = client.search_runs(
        [experiment.experiment_id], "tags.`distrl.stage` = 'train'", max_results=500
    )
    for run in train_runs:
        value = run.data.metrics.get("train/staleness")
        if value is not None:
            out[int(run.data.tags["distrl.round"])] = value
    return out


def test_no_secret_reaches_logs_xcom_mlflow_or_parquet(cluster: Cluster) -> None:
    secrets = {k: v for k, v in cluster.secrets().items() if len(v) >= 16}
    assert len(secrets) >= 7
    private = {
        cluster.root / "secrets",
        cluster.root / "postgres",
        cluster.root / "redis" / "redis.conf",
    }
    scanned = 0
    leaks: list[str] = []
    for path in cluster.workdir.rglob("*"):
        if not path.is_file() or any(p == path or p in path.parents for p in private):
            continue
        data = path.read_bytes()
        scanned += 1
        leaks += [f"{name} in {path}" for name, v in secrets.items() if v.encode() in data]
    assert scanned > 20 and not leaks, leaks
    kinds = {p.suffix for p in cluster.workdir.rglob("*") if p.is_file()}
    assert {".parquet", ".log"} <= kinds, kinds  # task logs and shards were among them
    # XCom values of every task of the synchronous round
    for ti in cluster.task_instances("distrl_round", "cluster_round1"):
        if ti["state"] != "success":
            continue
        with contextlib.suppress(Exception):
            value = json.dumps(
                cluster.xcom("distrl_round", "cluster_round1", ti["task_id"], ti["map_index"])
            )
            leaks += [f"{n} in XCom {ti['task_id']}" for n, v in secrets.items() if v in value]
    # params and tags of every MLflow run, on the server
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=cluster.mlflow)
    experiments = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(experiments, max_results=1000)
    assert runs
    for run in runs:
        text = json.dumps([run.data.params, run.data.tags])
        leaks += [f"{n} in MLflow run {run.info.run_id}" for n, v in secrets.items() if v in text]
    assert not leaks, leaks
