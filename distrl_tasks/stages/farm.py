"""Setup/teardown stage: the device farm a round collects on.

The farm has ``orchestration.workers x orchestration.devices_per_worker`` devices (worker ``w``
collects on the ``w``-th block). For ``env.device_kind == "sim"`` this starts `distrl sim serve`
as a detached process (it must
outlive the Airflow task that starts it), records ``runs/farm.json`` (host, port, pid, serials),
and waits until the ADB server lists every device. ``stop`` terminates it. Both are idempotent:
starting a farm that is already serving returns its record; stopping a stopped farm is a no-op.
A caller that owns the farm for its own lifetime (``distrl round``, the demo, the benchmark, a
notebook) passes ``owner_pid``: the farm then also exits when that process dies without calling
``stop`` (SIGKILL, a crash), instead of lingering on its port.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import adbutils

from distrl_tasks.config import Config
from distrl_tasks.envs.adb_device import AdbClient
from distrl_tasks.envs.emulator import Emulator

RECORD = Path("runs") / "farm.json"
LOG = Path("runs") / "farm.log"
START_TIMEOUT_S = 60.0


def _record_path(workdir: str | os.PathLike) -> Path:
    return Path(workdir) / RECORD


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` is running (an exited process its parent has not reaped yet, a
    zombie, counts as gone where ``/proc`` tells)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by another user
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS) or it just exited: the signal probe above answered
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"  # the state field follows "(comm)"


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _serials(host: str, port: int) -> list[str] | None:
    """The serials an ADB server lists, or None if nothing answers there."""
    if not _listening(host, port):
        return None
    try:
        return [d.serial for d in AdbClient(host, port).device_list()]
    except (adbutils.AdbError, OSError):
        return None


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def farm_size(cfg: Config) -> int:
    """Devices a round's farm serves: every worker's block."""
    return cfg.orchestration.workers * cfg.orchestration.devices_per_worker


def _expected_serials(n: int) -> list[str]:
    return [f"emulator-{5554 + 2 * i}" for i in range(n)]


def start(
    cfg: Config, *, workdir: str | os.PathLike = ".", owner_pid: int | None = None
) -> dict[str, Any]:
    """Start (or find) the farm for ``cfg`` and return ``{host, port, pid, serials}``.

    Args:
        cfg: the configuration (``sim.*``, topology, ``env.device_kind``).
        workdir: project working directory (``runs/farm.json``, ``runs/farm.log``).
        owner_pid: a farm started here exits by itself once this process is gone (None: it
            lives until :func:`stop`, as the Airflow setup task needs). A farm that is already
            serving is returned as it is.
    """
    if cfg.env.device_kind != "sim":
        return _start_emulators(cfg, workdir)
    path = _record_path(workdir)
    if path.is_file():
        record = json.loads(path.read_text())
        if (
            process_alive(record["pid"])
            and _serials(record["host"], record["port"]) == record["serials"]
        ):
            return record
        path.unlink()  # a stale record from a farm that died: start a fresh one
    host = cfg.sim.host
    wanted = cfg.sim.port
    port = wanted if wanted and not _listening(host, wanted) else _free_port(host)
    path.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        "-m",
        "distrl_tasks.cli",
        "sim",
        "serve",
        "--port",
        str(port),
        "--devices",
        str(farm_size(cfg)),
        "--seed",
        str(cfg.sim.seed),
        "--host",
        host,
        "--set",
        f"sim.render_scale={cfg.sim.render_scale}",
        "--dynamics",  # online collection runs in the live world (sim.dynamics.profile)
        cfg.sim.dynamics.profile,
    ]
    for name, rate in cfg.sim.dynamics.rates.overrides().items():
        argv += ["--set", f"sim.dynamics.rates.{name}={rate}"]
    if cfg.sim.latency.enabled:
        argv += ["--latency", "--set", f"sim.latency.time_scale={cfg.sim.latency.time_scale}"]
    if cfg.sim.faults.enabled:
        argv.append("--faults")
    if owner_pid is not None:
        argv += ["--exit-with", str(owner_pid)]
    with open(Path(workdir) / LOG, "ab") as log:
        # a new session: the farm survives the task process that started it
        proc = subprocess.Popen(
            argv, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    expected = _expected_serials(farm_size(cfg))
    deadline = time.monotonic() + START_TIMEOUT_S
    while _serials(host, port) != expected:
        if proc.poll() is not None:
            tail = (Path(workdir) / LOG).read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the simulator farm exited with {proc.returncode}:\n{tail}")
        if time.monotonic() > deadline:
            proc.terminate()
            raise TimeoutError(f"the simulator farm did not come up on {host}:{port} in time")
        time.sleep(0.2)
    record = {"kind": "sim", "host": host, "port": port, "pid": proc.pid, "serials": expected}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(path)
    return record


def stop(cfg: Config, *, workdir: str | os.PathLike = ".") -> dict[str, Any]:
    """Stop the farm recorded in ``runs/farm.json`` (no-op when none runs)."""
    path = _record_path(workdir)
    if not path.is_file():
        return {"stopped": False}
    record = json.loads(path.read_text())
    stopped = False
    if record.get("kind") == "sim":
        pid = record["pid"]
        if process_alive(pid):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while process_alive(pid) and time.monotonic() < deadline:
                _reap(pid)
                time.sleep(0.1)
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)
            stopped = True
        _reap(pid)  # a farm that was our child (and exited) leaves no zombie behind
    elif record.get("kind") == "emulator":
        stopped = _stop_emulators(record)
    path.unlink(missing_ok=True)
    return {"stopped": stopped}


def _reap(pid: int) -> None:
    """Collect the exit status if the farm is our child (keeps it from lingering as a zombie)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _start_emulators(cfg: Config, workdir: str | os.PathLike) -> dict[str, Any]:
    """Boot ``orchestration.devices_per_worker`` copies of ``env.avd`` (read-only instances)."""

    path = _record_path(workdir)
    if path.is_file():
        record = json.loads(path.read_text())
        if record.get("kind") == "emulator" and all(process_alive(p) for p in record["pids"]):
            return record
    n = farm_size(cfg)
    emulators = [
        Emulator(
            cfg.env.avd,
            5554 + 2 * i,
            snapshot=cfg.env.avd_snapshot,
            emulator_bin=cfg.env.emulator_bin,
            adb_host=cfg.env.adb_host,
            adb_port=cfg.env.adb_port,
            command_timeout_s=cfg.env.command_timeout_s,
            extra=("-read-only",) if n > 1 else (),
        )
        for i in range(n)
    ]
    started: list[Emulator] = []
    try:
        for emu in emulators:
            emu.start()
            started.append(emu)
    except Exception:
        for emu in started:  # never leave half a fleet running
            emu.kill()
        raise
    record = {
        "kind": "emulator",
        "host": cfg.env.adb_host,
        "port": cfg.env.adb_port,
        "pids": [e.process.pid for e in started if e.process is not None],
        "serials": [e.device.serial for e in started],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(path)
    return record


def _stop_emulators(record: dict[str, Any]) -> bool:
    stopped = False
    for pid in record.get("pids", []):
        if process_alive(pid):
            os.kill(pid, signal.SIGTERM)
            stopped = True
    return stopped
