"""Emulator lifecycle: argv, KVM preflight, boot wait and health (against the simulator)."""

from __future__ import annotations

import os
import socket
import stat
import sys
import threading

import pytest

from distrl_tasks.envs.adb_device import AdbDevice
from distrl_tasks.envs.emulator import (
    Emulator,
    EmulatorError,
    check_kvm,
    console_command,
    emulator_command,
    wait_for_boot,
)
from distrl_tasks.tasks.goal_farms import running_farm


@pytest.fixture(scope="module")
def farm():
    with running_farm(devices=1, seed=0) as running:
        yield running


def test_command_is_an_argv_list_with_headless_flags() -> None:
    argv = emulator_command("pixel_api33", 5556, emulator_bin="/sdk/emulator", snapshot="clean")
    assert argv == [
        "/sdk/emulator",
        "-avd",
        "pixel_api33",
        "-port",
        "5556",
        "-no-window",
        "-no-snapshot-save",
        "-no-audio",
        "-no-boot-anim",
        "-snapshot",
        "clean",
    ]
    assert emulator_command("a; rm -rf /", 5554)[2] == "a; rm -rf /"  # one argv item, no shell
    with pytest.raises(ValueError, match="even"):
        emulator_command("a", 5555)
    with pytest.raises(ValueError, match="AVD name"):
        emulator_command("-wipe-data", 5554)


def test_kvm_preflight(tmp_path) -> None:
    with pytest.raises(EmulatorError, match="does not exist"):
        check_kvm(tmp_path / "kvm")
    node = tmp_path / "kvm"
    node.write_bytes(b"")
    check_kvm(node)  # present and read/writable
    if os.geteuid() != 0:  # root can open anything, so the permission case needs a user
        node.chmod(0)
        with pytest.raises(EmulatorError, match="kvm' group"):
            check_kvm(node)


def test_boot_wait_reads_boot_completed_from_the_device(farm) -> None:
    dev = AdbDevice(farm.serials[0], farm.host, farm.port, kind="emulator")
    assert dev.getprop("sys.boot_completed") == "1"
    assert wait_for_boot(dev, timeout_s=5) < 5


def test_boot_wait_times_out_with_the_last_error(farm) -> None:
    dev = AdbDevice("emulator-5580", farm.host, farm.port, kind="emulator", timeout_s=1)
    now = [0.0]
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        now[0] += s

    with pytest.raises(EmulatorError, match="did not boot within 3s"):
        wait_for_boot(dev, timeout_s=3, poll_s=1, clock=lambda: now[0], sleep=sleep)
    assert sleeps == [1, 1, 1]


def test_start_health_kill_restart_with_a_stand_in_binary(farm, tmp_path) -> None:
    fake = tmp_path / "emulator"
    fake.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    kvm = tmp_path / "kvm"
    kvm.write_bytes(b"")
    emu = Emulator(
        "test_avd",
        5554,
        emulator_bin=str(fake),
        adb_host=farm.host,
        adb_port=farm.port,
        boot_timeout_s=10,
        kvm_path=kvm,
    )
    assert not emu.healthy()
    assert emu.start() < 10  # the simulator already answers sys.boot_completed=1
    assert emu.running and emu.healthy()
    with pytest.raises(EmulatorError, match="already running"):
        emu.start()
    first = emu.process
    emu.restart()
    assert first.poll() is not None and emu.healthy()
    emu.kill()
    assert not emu.running and not emu.healthy()


def test_start_refuses_without_kvm(tmp_path) -> None:
    emu = Emulator("test_avd", kvm_path=tmp_path / "missing")
    with pytest.raises(EmulatorError, match="KVM is not available"):
        emu.start()


def test_console_authenticates_and_loads_the_snapshot(tmp_path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    server = socket.create_server(("127.0.0.1", 0))
    received: list[str] = []

    def console() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rwb") as f:
            f.write(b"Android Console: type 'help'\r\nOK\r\n")
            f.flush()
            for _ in range(2):
                line = f.readline().decode().strip()
                received.append(line)
                f.write(b"OK\r\n" if line != "avd snapshot load missing" else b"KO: no snap\r\n")
                f.flush()

    t = threading.Thread(target=console, daemon=True)
    t.start()
    port = server.getsockname()[1]
    assert console_command(port, "avd snapshot load clean", token_path=token, timeout_s=5) == ""
    t.join(5)
    assert received == ["auth s3cret", "avd snapshot load clean"]
    server.close()
    with pytest.raises(EmulatorError, match="console"):
        console_command(port, "avd snapshot load clean", token_path=token, timeout_s=1)
