"""Lifecycle of real Android emulators (AVDs): start, wait for boot, snapshot reset, health, kill.

The papers' code re-clones the AVD directory on every reset, which costs about 60% of an
iteration. Here a reset loads a clean snapshot over the emulator console instead (the same as
``adb -s emulator-P emu avd snapshot load <name>``): a few seconds. Start the AVD once with a
saved snapshot (``-snapshot <name>``), and pass ``-no-snapshot-save`` so a crash or a finished
episode never overwrites the clean state.

Everything is an argv list (never ``shell=True``). KVM is checked up front: without hardware
acceleration an x86_64 emulator is too slow to be worth starting.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from distrl_tasks.envs.adb_device import AdbDevice
from distrl_tasks.envs.device import DeviceError

DEFAULT_FLAGS = ("-no-window", "-no-snapshot-save", "-no-audio", "-no-boot-anim")


class EmulatorError(RuntimeError):
    """An emulator cannot be started, did not boot in time, or its console refused a command."""


def check_kvm(path: str | os.PathLike = "/dev/kvm") -> None:
    """Raise :class:`EmulatorError` unless ``path`` (the KVM device) exists and is read/writable."""
    p = Path(path)
    if not p.exists():
        raise EmulatorError(
            f"KVM is not available: {p} does not exist. Enable virtualization (VT-x/AMD-V) in "
            "the BIOS or use a machine/VM with nested virtualization, or use the simulator "
            "(env.device_kind: sim)."
        )
    if not os.access(p, os.R_OK | os.W_OK):
        raise EmulatorError(
            f"KVM is not accessible: no read/write permission on {p}. Add your user to the "
            "'kvm' group (sudo usermod -aG kvm $USER, then log in again)."
        )


def emulator_command(
    avd: str,
    port: int,
    *,
    emulator_bin: str = "emulator",
    snapshot: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The argv that starts ``avd`` headless on console port ``port`` (serial ``emulator-P``).

    Raises:
        ValueError: an empty AVD name, or a port that is not an even number in 5554..5682
            (the range adb scans for emulators; the ADB port is ``port + 1``).
    """
    if not avd or avd.startswith("-"):
        raise ValueError(f"avd must be an AVD name, got {avd!r}")
    if not (5554 <= port <= 5682 and port % 2 == 0):
        raise ValueError(f"emulator console port must be even and in 5554..5682, got {port}")
    argv = [emulator_bin, "-avd", avd, "-port", str(port), *DEFAULT_FLAGS]
    if snapshot:
        argv += ["-snapshot", snapshot]
    return argv + list(extra)


def wait_for_boot(
    device: AdbDevice,
    timeout_s: float = 300.0,
    poll_s: float = 1.0,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Poll ``getprop sys.boot_completed`` until it reads ``1``; return the seconds waited.

    Raises:
        EmulatorError: not booted within ``timeout_s`` (the message holds the last error).
    """
    start = clock()
    last = "no answer yet"
    while True:
        try:
            value = device.getprop("sys.boot_completed")
            if value == "1":
                return clock() - start
            last = f"sys.boot_completed={value!r}"
        except DeviceError as exc:
            last = str(exc)
        if clock() - start >= timeout_s:
            raise EmulatorError(f"{device.serial} did not boot within {timeout_s:.0f}s ({last})")
        sleep(poll_s)


def console_command(
    port: int,
    command: str,
    *,
    host: str = "127.0.0.1",
    token_path: str | os.PathLike | None = None,
    timeout_s: float = 30.0,
) -> str:
    """Send one command to the emulator console (what ``adb emu <command>`` does); return its reply.

    The console asks for the token in ``~/.emulator_console_auth_token`` before anything else.

    Raises:
        EmulatorError: the console is unreachable or answers ``KO``.
    """
    if "\n" in command or "\r" in command:
        raise ValueError("console command must be one line")
    token_file = Path(token_path or Path.home() / ".emulator_console_auth_token")
    token = token_file.read_text().strip() if token_file.exists() else ""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            reader = sock.makefile("rb")
            _read_reply(reader)  # banner
            if token:
                sock.sendall(f"auth {token}\n".encode())
                _read_reply(reader)
            sock.sendall(f"{command}\n".encode())
            return _read_reply(reader)
    except OSError as exc:
        raise EmulatorError(f"emulator console {host}:{port}: {exc}") from exc


def _read_reply(reader) -> str:
    lines = []
    while True:
        raw = reader.readline()
        if not raw:
            raise EmulatorError("emulator console closed the connection")
        line = raw.decode(errors="replace").rstrip("\r\n")
        if line == "OK":
            return "\n".join(lines)
        if line.startswith("KO"):
            raise EmulatorError(f"emulator console refused: {line}")
        lines.append(line)


class Emulator:
    """One AVD process and its ADB view.

    Args:
        avd: AVD name.
        port: console port (serial ``emulator-<port>``).
        snapshot: clean snapshot that resets load.
        emulator_bin: path of the ``emulator`` binary.
        adb_host / adb_port: the ADB server that sees the emulator.
        boot_timeout_s: how long a (re)start may take to boot.
        kvm_path: the KVM device checked before starting.
        command_timeout_s: timeout of one ADB command.
        extra: more emulator flags (e.g. ``-read-only`` to run several copies of one AVD).
    """

    def __init__(
        self,
        avd: str,
        port: int = 5554,
        *,
        snapshot: str = "clean",
        emulator_bin: str = "emulator",
        adb_host: str = "127.0.0.1",
        adb_port: int = 5037,
        boot_timeout_s: float = 300.0,
        kvm_path: str | os.PathLike = "/dev/kvm",
        command_timeout_s: float = 20.0,
        extra: Sequence[str] = (),
    ) -> None:
        self.argv = emulator_command(
            avd, port, emulator_bin=emulator_bin, snapshot=snapshot, extra=extra
        )
        self.port = port
        self.snapshot = snapshot
        self.boot_timeout_s = boot_timeout_s
        self.kvm_path = kvm_path
        self.process: subprocess.Popen | None = None
        self.device = AdbDevice(
            f"emulator-{port}",
            adb_host,
            adb_port,
            kind="emulator",
            timeout_s=command_timeout_s,
            snapshot_loader=self.load_snapshot,
        )

    def start(self) -> float:
        """Preflight KVM, launch the process, wait for boot; return the boot seconds."""
        check_kvm(self.kvm_path)
        if self.running:
            raise EmulatorError(f"{self.device.serial} is already running")
        self.process = subprocess.Popen(
            self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            return wait_for_boot(self.device, self.boot_timeout_s)
        except EmulatorError:
            self.kill()
            raise

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def healthy(self) -> bool:
        """Process alive, device answering, and booted."""
        if not self.running:
            return False
        try:
            return self.device.getprop("sys.boot_completed") == "1"
        except DeviceError:
            return False

    def load_snapshot(self) -> None:
        """Reset to the clean snapshot through the console."""
        console_command(self.port, f"avd snapshot load {self.snapshot}")

    def kill(self, grace_s: float = 10.0) -> None:
        """Terminate the process (SIGTERM, then SIGKILL after ``grace_s``)."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(grace_s)

    def restart(self) -> float:
        """Kill (if needed) and start again, e.g. after a crash; return the boot seconds."""
        self.kill()
        return self.start()
