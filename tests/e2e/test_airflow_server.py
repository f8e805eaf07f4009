"""A real Airflow 3 deployment runs ``distrl_round``: triggered by the REST API and by a click.

The test starts ``airflow api-server``, ``airflow scheduler`` and ``airflow dag-processor``
(LocalExecutor, SQLite, loopback, free ports, a throwaway ``AIRFLOW_HOME``, SimpleAuthManager
with every user an admin), points the DAGs at a throwaway project directory with a tiny
``params.yaml`` (``DISTRL_WORKDIR``), triggers one run through ``POST /api/v2/dags/distrl_round/
dagRuns`` with a JWT from ``/auth/token`` and one by clicking Trigger in the web UI in headless
Chromium, and waits for both to succeed. Every process it started is stopped by process group,
also when the test fails. Screenshots go to ``$DISTRL_E2E_ARTIFACTS`` (default: the test's tmp
directory).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fakes.projects import TINY_PARAMS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
AIRFLOW_BIN = Path(sys.executable).with_name("airflow")
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
DAG_ID = "distrl_round"
RUN_TIMEOUT_S = 420.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AirflowDeployment:
    """The processes of one test deployment and how to talk to its API."""

    home: Path
    workdir: Path
    port: int
    env: dict[str, str]
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    token: str = ""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, name: str, *args: str) -> None:
        log = open(self.home / f"{name}.log", "wb")  # noqa: SIM115 (closed in stop_all)
        # a new session per component: stop_all signals the whole group (its workers too)
        self.procs[name] = subprocess.Popen(
            [str(AIRFLOW_BIN), *args],
            env=self.env,
            cwd=self.home,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def stop_all(self) -> None:
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # stragglers, e.g. task processes
            proc.wait(timeout=10)

    def check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise AssertionError(f"airflow {name} exited {proc.returncode}:\n{self.tail(name)}")

    def tail(self, name: str, chars: int = 3000) -> str:
        path = self.home / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def request(self, method: str, path: str, body: Any = None, auth: bool = True) -> Any:
        """One JSON request to the API server; returns the decoded body."""
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data, headers, method=method)
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def wait_until(self, what: str, probe, timeout: float) -> Any:
        """Call ``probe`` until it returns something truthy (HTTP/network errors count as no)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
                result = probe()
                if result:
                    return result
            time.sleep(1.0)
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")

    def run_state(self, run_id: str, dag_id: str = DAG_ID) -> str:
        return self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")["state"]

    def xcom(self, dag_id: str, run_id: str, task_id: str) -> Any:
        """The return value a task pushed."""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries"
        return self.request("GET", f"{path}/return_value")["value"]

    def wait_for_run(self, run_id: str, dag_id: str = DAG_ID) -> None:
        """Wait until the run finishes; fail with task states and log tails unless it succeeded."""
        state = self.wait_until(
            f"run {dag_id}/{run_id} to finish",
            lambda: (s := self.run_state(run_id, dag_id)) in ("success", "failed") and s,
            RUN_TIMEOUT_S,
        )
        if state != "success":
            tis = self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
            states = {t["task_id"]: t["state"] for t in tis["task_instances"]}
            raise AssertionError(
                f"run {dag_id}/{run_id} ended {state}: {states}\n"
                f"{self.task_log_tails(dag_id, run_id, tis)}"
            )

    def task_log_tails(self, dag_id: str, run_id: str, tis: dict[str, Any]) -> str:
        out = []
        for ti in tis["task_instances"]:
            if ti["state"] in ("failed", "upstream_failed", "up_for_retry"):
                path = (
                    f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{ti['task_id']}"
                    f"/logs/{max(ti['try_number'], 1)}?map_index={ti['map_index']}"
                )
                with contextlib.suppress(urllib.error.URLError):
                    content = self.request("GET", path).get("content", [])
                    text = "\n".join(_log_line(e) for e in content)
                    out.append(f"--- {ti['task_id']} ---\n{text[-2500:]}")
        return "\n".join(out)


def _log_line(entry: Any) -> str:
    """One structured task-log entry as text, with the exception details when there are any."""
    if not isinstance(entry, dict):
        return str(entry)
    detail = entry.get("error_detail")
    return entry.get("event", "") + (f" {json.dumps(detail)[-2000:]}" if detail else "")


@contextlib.contextmanager
def running_airflow(home: Path, workdir: Path) -> Iterator[AirflowDeployment]:
    """Start api-server, scheduler and dag-processor for ``workdir``; stop them all on exit."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO_ROOT / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base}/execution/",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
            "AIRFLOW__API__BASE_URL": base,
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "DISTRL_WORKDIR": str(workdir),
            "OMP_NUM_THREADS": "1",  # two cores: torch threads in parallel tasks oversubscribe
            "PYTHONUNBUFFERED": "1",
        }
    )
    deployment = AirflowDeployment(home=home, workdir=workdir, port=port, env=env)
    for args in (("db", "migrate"), ("pools", "set", "devices", "2", "device capacity")):
        done = subprocess.run(
            [str(AIRFLOW_BIN), *args], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"airflow {' '.join(args)}: {done.stderr[-3000:]}"
    try:
        deployment.start("api-server", "api-server", "--host", "127.0.0.1", "--port", str(port))
        deployment.start("scheduler", "scheduler")
        deployment.start("dag-processor", "dag-processor")
        deployment.wait_until(
            "the API server",
            lambda: deployment.request("GET", "/api/v2/monitor/health", auth=False),
            120,
        )
        # SimpleAuthManager in all-admins mode hands out a JWT without credentials
        deployment.token = deployment.request("GET", "/auth/token", auth=False)["access_token"]
        for dag_id in (DAG_ID, "distrl_actor", "distrl_learner"):
            deployment.wait_until(
                f"{dag_id} to be parsed",
                lambda dag_id=dag_id: deployment.request("GET", f"/api/v2/dags/{dag_id}"),
                180,
            )
        yield deployment
    finally:
        deployment.stop_all()
        _stop_farm_left_by(workdir)


@pytest.fixture(scope="module")
def airflow(module_tmp_path: Path) -> Iterator[AirflowDeployment]:
    """A running deployment on a tiny project directory."""
    home, workdir = module_tmp_path / "airflow-home", module_tmp_path / "distrl-project"
    home.mkdir()
    workdir.mkdir()
    (workdir / "params.yaml").write_text(TINY_PARAMS)
    _register_initial_policy(workdir)
    with running_airflow(home, workdir) as deployment:
        yield deployment


def _register_initial_policy(workdir: Path) -> None:
    """A fresh tiny policy as "behavior": bootstrap then skips its SFT (minutes on two cores)."""
    from distrl_tasks.agents.policy import build_policy
    from distrl_tasks.config import load_config
    from distrl_tasks.tracking.registry import ModelRegistry

    cfg = load_config(workdir / "params.yaml")
    policy_dir = workdir / "runs" / "initial_policy"
    build_policy(cfg.agent, seed=0).save(policy_dir)
    registry = ModelRegistry.from_config(cfg, root=workdir)
    registry.set_behavior(
        registry.register_checkpoint(
            policy_dir, round=0, algorithm="distrl", policy_version=0, data_version=""
        )
    )


def _stop_farm_left_by(workdir: Path) -> None:
    """Stop a simulator farm a failed run left behind (its pid is in the farm record)."""
    record = workdir / "runs" / "farm.json"
    if record.is_file():
        with contextlib.suppress(ProcessLookupError, ValueError, KeyError):
            os.kill(int(json.loads(record.read_text())["pid"]), signal.SIGTERM)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("DISTRL_E2E_ARTIFACTS")
    out = Path(env) if env else tmp_path_factory.mktemp("screenshots")
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_rest_api_trigger_runs_a_round_to_success(airflow: AirflowDeployment) -> None:
    dag = airflow.request("GET", f"/api/v2/dags/{DAG_ID}")
    assert dag["is_paused"] is False
    run = airflow.request(
        "POST",
        f"/api/v2/dags/{DAG_ID}/dagRuns",
        {"dag_run_id": "api_round1", "logical_date": None, "conf": {"round": 1}},
    )
    assert run["dag_run_id"] == "api_round1"
    assert run["conf"] == {"round": 1}
    airflow.wait_for_run("api_round1")
    tis = airflow.request("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/api_round1/taskInstances")
    states = {(t["task_id"], t["map_index"]): t["state"] for t in tis["task_instances"]}
    assert states[("register", -1)] == "success"
    assert states[("stop_farm", -1)] == "success"
    assert states[("collect", 0)] == "success"
    assert states[("trigger_next_round", -1)] == "skipped"  # rounds = 1: the chain ends here
    manifest = airflow.request(
        "GET",
        f"/api/v2/dags/{DAG_ID}/dagRuns/api_round1/taskInstances/register/xcomEntries/return_value",
    )
    assert manifest["value"]["version"] >= 1


def test_trigger_button_in_the_web_ui_runs_a_round(
    airflow: AirflowDeployment, artifacts: Path
) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (make system-deps)")
    from playwright.sync_api import expect, sync_playwright

    before = {
        r["dag_run_id"]
        for r in airflow.request("GET", f"/api/v2/dags/{DAG_ID}/dagRuns")["dag_runs"]
    }
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            # all-admins mode: this endpoint sets the JWT cookie and redirects into the UI
            page.goto(f"{airflow.base_url}/auth/token/login?next={airflow.base_url}/dags/{DAG_ID}")
            page.get_by_role("button", name="Trigger").first.click()
            dialog = page.get_by_role("dialog")
            expect(dialog).to_be_visible(timeout=30_000)
            page.screenshot(path=str(artifacts / "trigger_dialog.png"))
            dialog.get_by_role("button", name="Trigger").click()
            new_run = airflow.wait_until(
                "the run triggered from the UI",
                lambda: [
                    r["dag_run_id"]
                    for r in airflow.request("GET", f"/api/v2/dags/{DAG_ID}/dagRuns")["dag_runs"]
                    if r["dag_run_id"] not in before
                ],
                60,
            )
            assert len(new_run) == 1
            run_id = new_run[0]
            airflow.wait_for_run(run_id)
            run = airflow.request("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}")
            # the dialog's defaults: an empty round, resolved by the tasks to the mode's first
            # (1: the tiny project trains online), which the API run above already finished
            assert run["run_type"] == "manual" and run["conf"].get("round") is None
            registered = airflow.request(
                "GET",
                f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/register/xcomEntries/"
                "return_value",
            )
            assert registered["value"]["round"] == 1
            page.goto(f"{airflow.base_url}/dags/{DAG_ID}/runs/{run_id}")
            expect(page.get_by_text("success").first).to_be_visible(timeout=30_000)
            page.screenshot(path=str(artifacts / "run_success.png"), full_page=True)
        finally:
            browser.close()


def test_actor_round_feeds_the_learner_through_the_asset(airflow: AirflowDeployment) -> None:
    # round 2 continues from the rounds above: the actor collects with their "behavior" policy
    run = airflow.request(
        "POST",
        "/api/v2/dags/distrl_actor/dagRuns",
        {"dag_run_id": "actor_round2", "logical_date": None, "conf": {"round": 2, "rounds": 2}},
    )
    assert run["state"] in ("queued", "running")
    airflow.wait_for_run("actor_round2", dag_id="distrl_actor")
    events = airflow.request("GET", "/api/v2/assets/events?source_dag_id=distrl_actor")
    extras = [e["extra"] for e in events["asset_events"]]
    assert [x["round"] for x in extras] == [2]
    assert extras[0]["data_version"] and extras[0]["params"]["rounds"] == 2
    learner_runs = airflow.wait_until(
        "the learner run the asset event schedules",
        lambda: airflow.request("GET", "/api/v2/dags/distrl_learner/dagRuns")["dag_runs"],
        120,
    )
    assert [r["run_type"] for r in learner_runs] == ["asset_triggered"]
    airflow.wait_for_run(learner_runs[0]["dag_run_id"], dag_id="distrl_learner")
    registered = airflow.xcom("distrl_learner", learner_runs[0]["dag_run_id"], "register")
    assert registered["round"] == 2 and registered["behavior"] == registered["version"]
    # round 2 is the last of a 2-round chain: the actor did not re-trigger itself
    tis = airflow.request("GET", "/api/v2/dags/distrl_actor/dagRuns/actor_round2/taskInstances")
    states = {t["task_id"]: t["state"] for t in tis["task_instances"]}
    assert states["trigger_next_round"] == "skipped" and states["stop_farm"] == "success"
    actor_runs = airflow.request("GET", "/api/v2/dags/distrl_actor/dagRuns")["dag_runs"]
    assert [r["dag_run_id"] for r in actor_runs] == ["actor_round2"]


def test_a_misspelled_conf_key_fails_the_first_task_at_once(airflow: AirflowDeployment) -> None:
    # Airflow's Params accept keys they do not declare, so the first task refuses them: at once,
    # without retries (a retry cannot fix a configuration), naming the key in its log
    run_id = "api_typo"
    started = time.monotonic()
    airflow.request(
        "POST",
        f"/api/v2/dags/{DAG_ID}/dagRuns",
        {"dag_run_id": run_id, "logical_date": None, "conf": {"devcies_per_worker": 2}},
    )
    state = airflow.wait_until(
        "the misconfigured run to end",
        lambda: (s := airflow.run_state(run_id)) in ("success", "failed") and s,
        RUN_TIMEOUT_S,
    )
    elapsed = time.monotonic() - started
    assert state == "failed"
    tis = airflow.request("GET", f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances")
    by_id = {t["task_id"]: t for t in tis["task_instances"]}
    start = by_id["start_farm"]
    assert start["state"] == "failed" and start["try_number"] == 1  # no retry
    assert by_id["collect"]["state"] in ("upstream_failed", None)
    assert "devcies_per_worker" in airflow.task_log_tails(DAG_ID, run_id, tis)
    assert elapsed < 60, f"a config error took {elapsed:.0f}s to fail the run (retries?)"
