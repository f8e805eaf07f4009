"""Start, watch and stop the cluster's processes: one process group each, recorded on disk.

Each service runs in its own session (its children, e.g. Celery's pool and the task processes,
share its process group). ``state.json`` records pid, port and log of what ``up`` started, so
``down`` signals exactly those groups, and only while the pid still runs the recorded command
(a recycled pid is never signalled).
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
    argv0: str  # the executable, to recognise the pid later

    def alive(self) -> bool:
        """The recorded pid still runs the recorded program (and is not a zombie)."""
        try:
            cmdline = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
        want = Path(self.argv0).name
        # setproctitle may fold argv into one string ("airflow scheduler"): compare tokens
        tokens = b" ".join(cmdline).decode(errors="replace").replace(":", " ").split()
        return any(Path(token).name == want for token in tokens)

    def listening(self) -> bool:
        """Something accepts connections on the recorded loopback port (True when none)."""
        if self.port is None:
            return True
        with socket.socket() as s:
            s.settimeout(1.0)
            return s.connect_ex(("127.0.0.1", self.port)) == 0


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
    return Running(name=name, pid=proc.pid, port=port, log=str(log), argv0=argv[0])


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
    return True


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


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
