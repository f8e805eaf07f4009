"""``AdbDevice``: a :class:`~distrl_tasks.envs.device.Device` over adbutils.

The same class drives real emulators and the simulator; only the ADB server address and the
``kind`` differ. ``kind="sim"`` resets with ``simctl reset`` and sets/checks tasks with
``simctl task set|check``. ``kind="emulator"`` resets by loading a clean snapshot through the
emulator console (``adb emu avd snapshot load <name>`` does the same; see
:mod:`distrl_tasks.envs.emulator`), which takes seconds where re-cloning an AVD (what the DigiRL
code does every reset) takes minutes.

Typed text is model output, so it is treated as hostile: every command is an argv list joined
with POSIX quoting (:func:`shlex.join`), so quotes, ``;``, ``&&``, ``$(...)`` and backticks reach
``input text`` as literal characters and the device shell never interprets them.
"""

from __future__ import annotations

import json
import shlex
import socket
import unicodedata
from collections.abc import Callable
from typing import Any, TypeVar

import adbutils

from distrl_tasks.envs.device import DeviceError

T = TypeVar("T")
_FAILURES = (adbutils.AdbError, OSError, socket.timeout, EOFError, ValueError)


def input_text_commands(text: str) -> list[str]:
    """Shell command lines that make ``input text`` type ``text`` literally.

    Android's ``input text`` reads ``%s`` as a space and has no escape for a literal ``%s``, so the
    text is cut between ``%`` and ``s`` into separate commands; spaces become ``%s``. Control
    characters (newline, tab, ...) cannot be typed and become spaces: a newline in model output
    must not turn into a second shell command or an ENTER the agent did not choose.

    Returns:
        Quoted command lines, in order; empty for empty text.
    """
    clean = "".join(" " if unicodedata.category(c) == "Cc" else c for c in text)
    parts = clean.split("%s")
    chunks = [
        ("s" if i else "") + part + ("%" if i < len(parts) - 1 else "")
        for i, part in enumerate(parts)
    ]
    return [shlex.join(["input", "text", c.replace(" ", "%s")]) for c in chunks if c]


def check_adb_server(host: str, port: int, timeout_s: float = 2.0) -> None:
    """Fail clearly when nothing listens at ``host:port``.

    adbutils answers a refused connection by launching a real adb daemon on port 5037, which is
    never what a caller aiming at a simulator farm (or a remote server) wants.

    Raises:
        ConnectionError: no ADB server answers there.
    """
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except OSError as exc:
        raise ConnectionError(
            f"no ADB server at {host}:{port} ({exc.strerror or exc}); start one with "
            f"`distrl sim serve --port {port}` or point env.adb_host/adb_port at yours"
        ) from exc


class _NoDaemonConnection(adbutils.AdbConnection):
    """A connection that fails when nothing listens: adbutils' own would run ``adb
    start-server``, a real daemon on 5037 that is never the server the caller named (a farm
    that stopped, a remote server that is down)."""

    def _safe_connect(self) -> Any:
        return self._create_socket()  # AdbConnectionError / AdbTimeout, nothing started


class AdbClient(adbutils.AdbClient):
    """``adbutils.AdbClient`` that never starts an adb daemon behind the caller's back."""

    def __init__(self, host: str, port: int, socket_timeout: float | None = None) -> None:
        super().__init__(host=host, port=int(port), socket_timeout=socket_timeout)
        self._timeout = socket_timeout

    def make_connection(self, timeout: float | None = None) -> adbutils.AdbConnection:
        conn = _NoDaemonConnection(self.host, self.port)
        if timeout or self._timeout:
            conn.conn.settimeout(timeout or self._timeout)
        return conn


class AdbDevice:
    """One device behind an ADB server.

    Args:
        serial: device serial (``emulator-5554``).
        host: ADB server host.
        port: ADB server port (the sim farm's port, or 5037 for the local adb server).
        kind: ``"sim"`` (simctl control) or ``"emulator"`` (snapshot reset).
        timeout_s: per-command timeout; a slower command raises :class:`DeviceError`.
        snapshot_loader: for emulators, a callable that loads the clean snapshot (e.g.
            :meth:`distrl_tasks.envs.emulator.Emulator.load_snapshot`).
    """

    def __init__(
        self,
        serial: str,
        host: str = "127.0.0.1",
        port: int = 5037,
        *,
        kind: str = "sim",
        timeout_s: float = 20.0,
        snapshot_loader: Callable[[], None] | None = None,
    ) -> None:
        if kind not in ("sim", "emulator"):
            raise ValueError(f"kind must be 'sim' or 'emulator', got {kind!r}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.serial = serial
        self.kind = kind
        self.timeout_s = float(timeout_s)
        self.snapshot_loader = snapshot_loader
        self._client = AdbClient(host, port, socket_timeout=timeout_s)
        self._dev = self._client.device(serial)
        self._size: tuple[int, int] | None = None

    def __repr__(self) -> str:
        return f"AdbDevice({self.serial!r}, kind={self.kind!r})"

    # ----- transport -------------------------------------------------------------------------
    def _guard(self, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except DeviceError:
            raise
        except _FAILURES as exc:
            raise DeviceError(f"{self.serial}: {what} failed: {type(exc).__name__}: {exc}") from exc

    def shell(self, cmd: str | list[str]) -> str:
        """Run a shell command; raise :class:`DeviceError` on a non-zero exit or transport error."""
        line = cmd if isinstance(cmd, str) else shlex.join(cmd)
        res = self._guard(line, lambda: self._dev.shell2(line, timeout=self.timeout_s, v2=True))
        if res.returncode != 0:
            raise DeviceError(
                f"{self.serial}: {line!r} exited {res.returncode}: {str(res.output).strip()!r}"
            )
        return str(res.output)

    # ----- observation -----------------------------------------------------------------------
    def screenshot(self) -> bytes:
        data = self._guard(
            "screencap",
            lambda: self._dev.shell("screencap -p", timeout=self.timeout_s, encoding=None),
        )
        if not isinstance(data, bytes) or not data.startswith(b"\x89PNG\r\n\x1a\n"):
            raise DeviceError(f"{self.serial}: screencap returned no PNG ({bytes(data[:16])!r})")
        return data

    def ui_xml(self) -> str:
        xml = self._guard("uiautomator dump", lambda: str(self._dev.dump_hierarchy()))
        if "<hierarchy" not in xml:
            raise DeviceError(f"{self.serial}: uiautomator dump returned no hierarchy")
        return xml

    def screen_size(self) -> tuple[int, int]:
        """``(width, height)`` from ``wm size`` (cached: it does not change during a run)."""
        if self._size is None:
            out = self.shell("wm size")
            try:
                w, h = out.strip().splitlines()[-1].split(":")[-1].strip().split("x")
                self._size = (int(w), int(h))
            except (ValueError, IndexError) as exc:
                raise DeviceError(f"{self.serial}: cannot parse `wm size` output {out!r}") from exc
        return self._size

    # ----- input -----------------------------------------------------------------------------
    def tap(self, x: float, y: float) -> None:
        self.shell(["input", "tap", str(round(x)), str(round(y))])

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int = 300) -> None:
        coords = [str(round(v)) for v in (x1, y1, x2, y2)]
        self.shell(["input", "swipe", *coords, str(int(duration_ms))])

    def input_text(self, text: str) -> None:
        for line in input_text_commands(text):
            self.shell(line)

    def keyevent(self, code: int) -> None:
        self.shell(["input", "keyevent", str(int(code))])

    def launch_app(self, package: str) -> None:
        self.shell(["monkey", "-p", package, "-c", "android.intent.category.LAUNCHER", "1"])

    # ----- episode control -------------------------------------------------------------------
    def reset(self) -> None:
        if self.kind == "sim":
            self.shell("simctl reset")
        elif self.snapshot_loader is not None:
            self._guard("snapshot load", self.snapshot_loader)
        else:
            raise DeviceError(f"{self.serial}: emulator reset needs a snapshot_loader")

    def set_task(self, goal: str) -> None:
        if self.kind == "sim":
            out = self.shell(["simctl", "task", "set", goal])
            if '"family"' not in out:
                raise DeviceError(f"{self.serial}: simctl task set failed: {out.strip()!r}")
        else:
            self.reset()

    def check_task(self) -> dict[str, Any]:
        if self.kind != "sim":
            raise DeviceError(f"{self.serial}: only simulated devices have a task oracle")
        raw = self.shell("simctl task check").strip()
        try:
            verdict = json.loads(raw[raw.index("{") :])
        except ValueError as exc:
            raise DeviceError(f"{self.serial}: simctl task check printed no JSON: {raw!r}") from exc
        if not isinstance(verdict, dict) or "success" not in verdict:
            raise DeviceError(f"{self.serial}: simctl task check lacks 'success': {raw!r}")
        return verdict

    def exact_state(self) -> dict[str, Any] | None:
        """The simulator's exact state (``simctl state``: app, page, fields, what is on screen;
        the episode counter and profile left out, so equal states of different attempts match);
        None on other devices, whose state is only what they show."""
        if self.kind != "sim":
            return None
        raw = self.shell("simctl state").strip()
        try:
            state = json.loads(raw[raw.index("{") :])
        except ValueError as exc:
            raise DeviceError(f"{self.serial}: simctl state printed no JSON: {raw!r}") from exc
        dynamics = state.get("dynamics")
        if isinstance(dynamics, dict):
            state["dynamics"] = {"on_screen": dynamics.get("on_screen")}
        return state

    def getprop(self, name: str) -> str:
        return self.shell(["getprop", name]).strip()

    def is_healthy(self) -> bool:
        try:
            return self.shell("echo ok").strip() == "ok"
        except DeviceError:
            return False
