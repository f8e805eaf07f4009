"""Helpers of the cluster e2e tests: start/stop through the CLI, talk to the REST API v2 with
the generated admin password, and read service logs for failure messages."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 600.0


def distrl(*args: str, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``distrl <args>`` as the README writes it (this interpreter's package, this checkout)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "distrl_tasks.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass
class Cluster:
    """A running ``distrl cluster`` and a client of its Airflow API."""

    workdir: Path
    state: dict[str, Any]
    token: str = ""

    @property
    def root(self) -> Path:
        return Path(self.state["root"])

    @property
    def api(self) -> str:
        return str(self.state["airflow_url"])

    @property
    def mlflow(self) -> str:
        return str(self.state["mlflow_url"])

    def secrets(self) -> dict[str, str]:
        return json.loads(Path(self.state["secrets_file"]).read_text())

    def service(self, name: str) -> dict[str, Any]:
        return next(s for s in self.state["services"] if s["name"] == name)

    def refresh(self) -> None:
        done = distrl("cluster", "status", "--json", cwd=self.workdir, timeout=60)
        self.state = json.loads(done.stdout)

    def logs(self, *names: str, chars: int = 2500) -> str:
        """The tails of the named services' logs (all when none is named)."""
        out = []
        for svc in self.state["services"]:
            if names and svc["name"] not in names:
                continue
            path = Path(svc["log"])
            text = path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"
            out.append(f"----- {svc['name']} ({path}) -----\n{text}")
        return "\n".join(out)

    def login(self) -> None:
        """A JWT for user admin with the password the cluster generated (auth is on)."""
        password = json.loads(Path(self.state["passwords_file"]).read_text())["admin"]
        body = {"username": self.state["admin_user"], "password": password}
        self.token = self.request("POST", "/auth/token", body, auth=False)["access_token"]

    def request(self, method: str, path: str, body: Any = None, auth: bool = True) -> Any:
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.api + path, data, headers, method=method)
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def wait_until(self, what: str, probe: Callable[[], Any], timeout: float) -> Any:
        """Poll ``probe`` until truthy; on timeout fail with every service's log tail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
                result = probe()
                if result:
                    return result
            time.sleep(2.0)
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{self.logs()}")

    def trigger(self, dag_id: str, run_id: str, conf: dict[str, Any]) -> dict[str, Any]:
        return self.request(
            "POST",
            f"/api/v2/dags/{dag_id}/dagRuns",
            {"dag_run_id": run_id, "logical_date": None, "conf": conf},
        )

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self.request("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")["state"]

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances"
        return self.request("GET", path)["task_instances"]

    def xcom(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> Any:
        path = (
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/"
            f"return_value?map_index={map_index}"
        )
        return self.request("GET", path)["value"]

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = RUN_TIMEOUT_S) -> None:
        """Wait until the run ends; unless it succeeded, fail with task states, task logs and
        the service logs."""
        state = self.wait_until(
            f"run {dag_id}/{run_id} to finish",
            lambda: (s := self.run_state(dag_id, run_id)) in ("success", "failed") and s,
            timeout,
        )
        if state != "success":
            tis = self.task_instances(dag_id, run_id)
            states = {(t["task_id"], t["map_index"]): t["state"] for t in tis}
            raise AssertionError(
                f"run {dag_id}/{run_id} ended {state}: {states}\n"
                f"{self.task_logs(dag_id, run_id, tis)}\n{self.logs()}"
            )

    def task_log(self, dag_id: str, run_id: str, ti: dict[str, Any], try_number: int) -> str:
        path = (
            f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{ti['task_id']}"
            f"/logs/{try_number}?map_index={ti['map_index']}"
        )
        content = self.request("GET", path).get("content", [])
        return "\n".join(_log_line(e) for e in content)

    def task_logs(self, dag_id: str, run_id: str, tis: list[dict[str, Any]]) -> str:
        out = []
        for ti in tis:
            if ti["state"] in ("failed", "upstream_failed", "up_for_retry"):
                with contextlib.suppress(urllib.error.URLError):
                    text = self.task_log(dag_id, run_id, ti, max(ti["try_number"], 1))
                    out.append(f"--- task {ti['task_id']} ---\n{text[-2500:]}")
        return "\n".join(out)


def _log_line(entry: Any) -> str:
    """One structured task-log entry as text, with the exception details when there are any."""
    if not isinstance(entry, dict):
        return str(entry)
    detail = entry.get("error_detail")
    return entry.get("event", "") + (f" {json.dumps(detail)[-2000:]}" if detail else "")


def listening_sockets(leaders: set[int]) -> set[str]:
    """``ip:port`` of every TCP listening socket held by a process in the leaders' groups."""
    inodes: set[str] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.getpgid(int(proc.name)) not in leaders and int(proc.name) not in leaders:
                continue
            for fd in (proc / "fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    found: set[str] = set()
    for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A = LISTEN
                continue
            ip_hex, port_hex = fields[1].split(":")
            found.add(f"{_ip(ip_hex, v6)}:{int(port_hex, 16)}")
    return found


def _ip(hex_ip: str, v6: bool) -> str:
    if not v6:
        return ".".join(str(int(hex_ip[i : i + 2], 16)) for i in (6, 4, 2, 0))
    if hex_ip == "0" * 32:
        return "[::]"
    if hex_ip == "0000000000000000FFFF00000100007F":
        return "127.0.0.1"
    return "[" + hex_ip + "]"
