"""Start, watch and stop the cluster's processes: one process group each, recorded on disk.

Each service runs in its own session. Its children share that session but not always its process
group: Airflow's task supervisor puts each task process in a group of its own. ``state.json``
records pid, port and log of what ``up`` started, so ``down`` signals exactly those sessions
(every process group in them), and only while the pid still runs the recorded command (a
recycled pid is never signalled); a dead leader's leftover members are killed too.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from distrl_tasks.cluster.secrets import write_private


@dataclass(frozen=True)
class Running:
    """What ``up`` recorded about one started service."""

    name: str
    pid: int
    port: int | None
    log: str
    started: int  # start time in clock ticks since boot (/proc/<pid>/stat), against pid reuse

    def alive(self) -> bool:
        """The recorded pid still runs the process ``up`` started (same start time, no zombie).

        Compared by start time, not command line: Airflow and Celery rewrite their titles.
        """
        stat = _stat(self.pid)
        return stat is not None and stat[0] != "Z" and stat[1] == self.started

    def listening(self) -> bool:
        """Something accepts connections on the recorded loopback port (True when none)."""
        if self.port is None:
            return True
        with socket.socket() as s:
            s.settimeout(1.0)
            return s.connect_ex(("127.0.0.1", self.port)) == 0


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, start time)`` of ``pid`` from ``/proc/<pid>/stat``; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # after "pid (comm)": state is field 3, start 22
    return fields[0], int(fields[19])


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(
    name: str,
    argv: list[str],
    env: dict[str, str],
    log: Path,
    cwd: Path,
    port: int | None,
    preexec: list[str] | None = None,
) -> Running:
    """Start ``argv`` in a new session with stdout/stderr appended to ``log``.

    ``preexec`` is a prefix that changes the user (``setpriv ...``) and then execs ``argv``, so
    the recorded pid is the service itself.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [*(preexec or []), *argv],
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    stat = _stat(proc.pid)
    started = stat[1] if stat else -1
    return Running(name=name, pid=proc.pid, port=port, log=str(log), started=started)


def stop(run: Running, sig: int = signal.SIGTERM, grace_s: float = 30.0) -> bool:
    """Signal ``run``'s process group, wait up to ``grace_s``, then SIGKILL the group.

    Returns:
        Whether the process was running when asked to stop.
    """
    if not run.alive():
        _kill_group(run.pid, signal.SIGKILL)  # orphans of a dead leader (task processes)
        return False
    _kill_group(run.pid, sig)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and run.alive():
        _reap(run.pid)
        time.sleep(0.2)
    _kill_group(run.pid, signal.SIGKILL)
    _reap(run.pid)
    _wait_group_gone(run.pid, 5.0)
    return True


def _wait_group_gone(pgid: int, timeout: float) -> None:
    """Give the killed session's members (e.g. task processes) a moment to disappear."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            if not session_groups(pgid):
                return
        time.sleep(0.1)


def _kill_group(pid: int, sig: int) -> None:
    """Signal the service's process group and every other group of its session (task
    processes that made a group of their own)."""
    for pgid in {pid, *session_groups(pid)}:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def session_groups(sid: int) -> set[int]:
    """The process groups of the processes in session ``sid`` (from ``/proc/<pid>/stat``)."""
    groups = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
        if int(fields[3]) == sid:  # after "(comm)": state, ppid, pgrp, session
            groups.add(int(fields[2]))
    return groups


def _reap(pid: int) -> None:
    """Collect the exit status when the service is our own child (tests start it in-process)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def save_state(path: Path, info: dict[str, object], running: list[Running]) -> None:
    """Record the deployment (ports, URLs, processes) atomically; no secrets go in here."""
    body = {**info, "services": [asdict(r) for r in running]}
    write_private(path, json.dumps(body, indent=2) + "\n")


def load_state(path: Path) -> tuple[dict[str, object], list[Running]]:
    """The recorded deployment, or ``({}, [])`` when nothing was started.

    Raises:
        ValueError: the state file is corrupt (the message names it).
    """
    if not path.exists():
        return {}, []
    try:
        body = json.loads(path.read_text())
        running = [Running(**r) for r in body.pop("services")]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        msg = f"{path}: corrupt cluster state ({exc}); stop stray processes by hand"
        raise ValueError(msg) from exc
    return body, running
