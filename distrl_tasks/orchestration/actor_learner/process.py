"""The continuous learner in a process of its own: no interpreter lock shared with the actors.

In one process the actors (device I/O, image features, batched decoding) and the learner thread
share the interpreter lock. With ``orchestration.continuous.learner_process`` the learner runs
in a spawned process instead (the default), the shape of DistRL's learner on a device of its
own: as a thread it waits on the actors' lock for much of each update.

The actors' side keeps the :class:`~.board.VersionBoard` (the staleness
gate and its counters); the learner's side drives the same
:class:`~.learner.ContinuousLearner` against :class:`_PipeBoard`, a
stand-in that forwards its updates and versions. One duplex pipe, no pickles: every message is a
JSON header, some followed by one binary payload.

* actors -> learner: ``data`` (the board's transition count, and an Arrow IPC trajectory when it
  is one to train on), ``stop``;
* learner -> actors: ``hello`` (the starting policy, exported to a directory, and its version),
  ``updates`` (n more optimizer steps), ``version`` (its number; payload: the policy's weights as
  safetensors), then ``done`` (the report and the exported round checkpoint) or ``error`` (the
  traceback). The learner exits when the actors' end of the pipe closes.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import torch

from distrl_tasks.agents.checkpoint import load_weights_bytes, weights_to_bytes
from distrl_tasks.agents.policy import build_policy
from distrl_tasks.config import Config, config_from_dict
from distrl_tasks.orchestration.actor_learner import continuous_learner
from distrl_tasks.orchestration.actor_learner.board import VersionBoard
from distrl_tasks.protocol.files import atomic_directory
from distrl_tasks.stages import common

START_TIMEOUT_S = 300.0  # spawning, imports, the registry download and the start export
FINISH_TIMEOUT_S = 600.0  # the learner's last update, its checkpoint and the export


class LearnerProcessError(RuntimeError):
    """The learner process failed, exited or stopped answering."""


class _Channel:
    """Framed messages over a multiprocessing connection; sends are thread-safe."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._lock = threading.Lock()

    def send(self, header: dict[str, Any], payload: bytes | None = None) -> None:
        frame = json.dumps({**header, "payload": payload is not None}).encode()
        with self._lock:
            self.conn.send_bytes(frame)
            if payload is not None:
                self.conn.send_bytes(payload)

    def try_send(self, header: dict[str, Any], payload: bytes | None = None) -> bool:
        """:meth:`send`, False instead of an error when the other end is gone."""
        try:
            self.send(header, payload)
        except OSError:  # a closed pipe: the receiving side reports why it ended
            return False
        return True

    def recv(self) -> tuple[dict[str, Any], bytes | None]:
        """The next message (blocks); raises EOFError when the other end closed."""
        header = json.loads(self.conn.recv_bytes())
        return header, (self.conn.recv_bytes() if header.pop("payload") else None)


def table_to_bytes(table: pa.Table) -> bytes:
    """An Arrow table as IPC stream bytes."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def table_from_bytes(data: bytes) -> pa.Table:
    """Inverse of :func:`table_to_bytes`."""
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class _PipeBoard(VersionBoard):
    """The learner's side of the version board: the same replay-ratio accounting, forwarded.

    The transition count comes from the actors' board with each ``data`` message; updates and
    versions go back to it (the actors' board holds the policies and the staleness gate).
    """

    def __init__(self, channel: _Channel, replay_ratio: float) -> None:
        super().__init__(None, 0, replay_ratio=replay_ratio)
        self._channel = channel

    def set_transitions(self, n: int) -> None:
        with self._cond:
            self.transitions = max(self.transitions, int(n))
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def record_updates(self, n: int = 1) -> None:
        super().record_updates(n)
        self._channel.send({"kind": "updates", "n": int(n)})

    def publish(self, policy: Any, version: int) -> None:
        weights = weights_to_bytes(policy.model)
        self._channel.send({"kind": "version", "version": int(version)}, weights)

    def staleness_summary(self) -> dict[str, float]:
        return {}  # staleness is measured where episodes run: the actors' board


def _export_start(policy: Any, directory: Path, version: int) -> None:
    with atomic_directory(directory) as tmp:
        policy.save(tmp, metadata={"policy_version": version})


def _serve(conn: Any, spec_json: str) -> None:
    """The learner process: open the learner, train on what arrives, export, report."""
    channel = _Channel(conn)
    try:
        spec = json.loads(spec_json)
        torch.set_num_threads(int(spec["threads"]))
        cfg = config_from_dict(spec["config"])
        workdir, round_ = spec["workdir"], int(spec["round"])
        learner, fresh = continuous_learner.fresh_learner(cfg, workdir, round_)
        board = _PipeBoard(channel, cfg.orchestration.continuous.replay_ratio)
        cl = continuous_learner.continuous_learner(
            cfg, learner, board, fresh=fresh, snapshot=lambda p: p
        )
        start_dir = common.learner_dir(workdir) / "continuous-start"
        _export_start(learner.algorithm.policy, start_dir, learner.policy_version)
        channel.send({"kind": "hello", "version": learner.policy_version, "dir": str(start_dir)})
        stop = threading.Event()

        def read() -> None:
            try:
                while True:
                    header, payload = channel.recv()
                    if header["kind"] == "stop":
                        break
                    if payload is not None:  # queued before the count: no update without it
                        cl.add(table_from_bytes(payload))
                    board.set_transitions(header["transitions"])
            except (EOFError, OSError):
                board.close()  # the actors' process is gone: stop without exporting
            stop.set()

        threading.Thread(target=read, name="learner-pipe", daemon=True).start()
        report = cl.run(stop)
        if board.closed:
            return
        final = continuous_learner.export_learner(cfg, workdir, round_, learner)
        channel.send({"kind": "done", "report": report, "final": final})
    except BaseException:  # the actors' side raises it, with this traceback
        channel.try_send({"kind": "error", "traceback": traceback.format_exc()})
    finally:
        conn.close()


class LearnerProcess:
    """The actors' handle on a learner process (see the module docstring).

    Starting it spawns the process and waits for its starting policy (:attr:`policy`, version
    :attr:`version`); :meth:`attach` connects it to the actors' board, :meth:`add` sends it
    data, :meth:`run` stops it and returns its report and the exported checkpoint.

    Raises:
        LearnerProcessError: the process failed to start, failed, or exited early.
    """

    def __init__(self, cfg: Config, workdir: str | os.PathLike, round_: int) -> None:
        ctx = multiprocessing.get_context("spawn")  # no fork of a process with threads
        ours, theirs = ctx.Pipe(duplex=True)
        spec = {
            "config": dataclasses.asdict(cfg),
            "workdir": str(workdir),
            "round": int(round_),
            "threads": torch.get_num_threads(),  # the same budget as an in-process learner
        }
        self._channel = _Channel(ours)
        self._proc = ctx.Process(
            target=_serve, args=(theirs, json.dumps(spec)), name="continuous-learner", daemon=True
        )
        self._proc.start()
        theirs.close()
        self._done = threading.Event()
        self._result: dict[str, Any] = {}
        self._error: str | None = None
        header, _ = self._next(START_TIMEOUT_S, "to start")
        if header["kind"] != "hello":
            self.close()
            raise LearnerProcessError(self._describe(header))
        self.version = int(header["version"])
        self.policy = build_policy(cfg.agent, checkpoint_dir=header["dir"], seed=cfg.sim.seed)
        self._reader: threading.Thread | None = None

    def _next(self, timeout_s: float, what: str) -> tuple[dict[str, Any], bytes | None]:
        end = time.monotonic() + timeout_s
        while not self._channel.conn.poll(1.0):
            if not self._proc.is_alive():
                raise LearnerProcessError(self._exited())
            if time.monotonic() > end:
                self.close()
                raise LearnerProcessError(f"the learner process took over {timeout_s:.0f} s {what}")
        try:
            return self._channel.recv()
        except (EOFError, OSError) as exc:
            raise LearnerProcessError(self._exited()) from exc

    def _exited(self) -> str:
        self._proc.join(1.0)
        return f"the learner process exited (exit code {self._proc.exitcode}) before its report"

    @staticmethod
    def _describe(header: dict[str, Any]) -> str:
        if header.get("kind") == "error":
            return "the learner process failed:\n" + header.get("traceback", "")
        return f"unexpected message from the learner process: {header.get('kind')!r}"

    def attach(self, board: Any) -> None:
        """Apply the learner's updates and versions to ``board`` as they arrive."""

        template = continuous_learner.frozen_copy(self.policy)

        def read() -> None:
            try:
                while True:
                    header, payload = self._channel.recv()
                    kind = header["kind"]
                    if kind == "updates":
                        board.record_updates(header["n"])
                    elif kind == "version" and payload is not None:
                        snap = continuous_learner.frozen_copy(template)
                        load_weights_bytes(snap.model, payload)
                        board.publish(snap, header["version"])
                    elif kind == "done":
                        self._result = header
                        break
                    else:
                        self._error = self._describe(header)
                        break
            except (EOFError, OSError):
                self._error = self._exited()
            except Exception:  # a version that does not load: stop the round, say why
                self._error = "the learner process's message failed:\n" + traceback.format_exc()
            if self._error is not None:
                board.close()  # actors waiting at the gate stop; the round raises
            self._done.set()

        self._reader = threading.Thread(target=read, name="learner-process-reader", daemon=True)
        self._reader.start()

    def add(self, trajectory: pa.Table | None, transitions: int) -> None:
        """Send the board's transition count, with a trajectory to train on (or None)."""
        if self._done.is_set():
            return  # the learner ended; the round reports why
        payload = table_to_bytes(trajectory) if trajectory is not None else None
        self._channel.try_send({"kind": "data", "transitions": int(transitions)}, payload)

    def run(self, stop: threading.Event) -> tuple[dict[str, float], dict[str, Any]]:
        """Wait for ``stop``, stop the learner and return its report and exported checkpoint.

        Raises:
            LearnerProcessError: the learner failed, exited, or did not finish in time.
        """
        while not (stop.is_set() or self._done.is_set()):
            stop.wait(0.5)
        if not self._done.is_set():
            self._channel.try_send({"kind": "stop"})
        if not self._done.wait(FINISH_TIMEOUT_S):
            self.close()
            raise LearnerProcessError(
                f"the learner process took over {FINISH_TIMEOUT_S:.0f} s to finish"
            )
        if self._error is not None:
            raise LearnerProcessError(self._error)
        report = {k: float(v) for k, v in self._result["report"].items()}
        return report, dict(self._result["final"])

    def close(self) -> None:
        """End the process (after its ``done`` it exits by itself)."""
        self._channel.conn.close()  # idempotent
        self._proc.join(10.0)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(5.0)
