"""The simulated farm through the real ``adb`` client (Debian's /usr/bin/adb), and
``distrl sim serve`` as a real subprocess."""

from __future__ import annotations

import io
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest
from PIL import Image

from distrl_tasks.sim.apps.launcher import SEARCH_ID
from distrl_tasks.sim.ui import SCREEN_H, SCREEN_W

ADB = shutil.which("adb")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        ADB is None, reason="the real `adb` client is not installed (make system-deps)"
    ),
]


def adb(
    port: int, *args: str, check: bool = True, timeout: float = 30
) -> subprocess.CompletedProcess:
    """Run the real adb client against our server only (-P; never its default 5037)."""
    env = {**os.environ, "ADB_SERVER_SOCKET": f"tcp:127.0.0.1:{port}"}
    env.pop("ANDROID_SERIAL", None)
    proc = subprocess.run(
        [ADB, "-P", str(port), *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
        env=env,
    )
    if check:
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc


def reap(proc: subprocess.Popen) -> None:
    """Kill ``proc`` if it still runs and close its pipes."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def sim_state(port: int, serial: str) -> dict:
    return json.loads(adb(port, "-s", serial, "shell", "simctl state").stdout)


def test_devices_and_queries(sim_farm):
    p = sim_farm.port
    out = adb(p, "devices").stdout.decode()
    assert out.splitlines()[1:3] == ["emulator-5554\tdevice", "emulator-5556\tdevice"]
    long = adb(p, "devices", "-l").stdout.decode()
    assert "transport_id:2" in long and "model:sdk_gphone64_x86_64" in long
    assert adb(p, "-s", "emulator-5556", "get-state").stdout == b"device\n"
    assert adb(p, "-s", "emulator-5556", "get-serialno").stdout == b"emulator-5556\n"
    assert adb(p, "-s", "emulator-5554", "features").stdout == b"shell_v2\n"
    adb(p, "-s", "emulator-5554", "wait-for-device", timeout=10)
    many = adb(p, "shell", "echo", check=False)
    assert many.returncode == 1 and b"more than one device" in many.stderr
    missing = adb(p, "-s", "emulator-9999", "shell", "echo", check=False)
    assert missing.returncode == 1 and b"not found" in missing.stderr


def test_shell_exit_codes_and_streams(sim_farm):
    p = sim_farm.port
    assert adb(p, "-s", "emulator-5554", "shell", "false", check=False).returncode == 1
    proc = adb(p, "-s", "emulator-5554", "shell", "echo out; echo err >&2; exit 3", check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, b"out\n", b"err\n")
    proc = adb(p, "-s", "emulator-5554", "shell", "wm", "size")
    assert proc.stdout == b"Physical size: 270x600\n"
    assert b"deviceWidth=270" in adb(p, "-s", "emulator-5554", "shell", "dumpsys display").stdout


def read_line(fd: int, timeout: float = 10.0) -> bytes:
    """One line from a pipe, failing (not hanging) when it does not come in time."""
    line, deadline = b"", time.monotonic() + timeout
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no line within {timeout} s (got {line!r})"
        byte = os.read(fd, 1)
        assert byte, f"the stream closed (got {line!r})"
        line += byte
    return line


def test_interactive_shell_over_a_pipe(sim_farm):
    """`adb shell` with no command and stdin a pipe: shell v2 without a PTY; every line is
    answered before the next is sent, and `exit 3` ends the session with status 3."""
    p = sim_farm.port
    env = {**os.environ, "ADB_SERVER_SOCKET": f"tcp:127.0.0.1:{p}"}
    proc = subprocess.Popen(
        [ADB, "-P", str(p), "-s", "emulator-5554", "shell"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    out = proc.stdout.fileno()

    def send(data: bytes) -> None:
        proc.stdin.write(data)
        proc.stdin.flush()

    try:
        send(b"echo one\n")
        assert read_line(out) == b"one\n"
        send(b"wm size\n")
        assert read_line(out) == b"Physical size: 270x600\n"
        send(b"false\necho $?\n")
        assert read_line(out) == b"1\n"
        send(b"exit 3\n")
        assert proc.wait(timeout=10) == 3
    finally:
        reap(proc)


def test_exec_out_screencap_is_a_png_of_the_right_size(sim_farm):
    png = adb(sim_farm.port, "-s", "emulator-5554", "exec-out", "screencap -p").stdout
    scale = sim_farm.farm.cfg.render_scale
    assert Image.open(io.BytesIO(png)).size == (round(SCREEN_W * scale), round(SCREEN_H * scale))


def test_uiautomator_dump_and_pull_then_type_hostile_text(sim_farm, tmp_path):
    p, s = sim_farm.port, "emulator-5554"
    out = adb(p, "-s", s, "shell", "uiautomator", "dump", "/sdcard/ui.xml").stdout
    assert out == b"UI hierchary dumped to: /sdcard/ui.xml\n"
    adb(p, "-s", s, "pull", "/sdcard/ui.xml", str(tmp_path / "ui.xml"))
    xml = (tmp_path / "ui.xml").read_text()
    m = re.search(
        rf'resource-id="{re.escape(SEARCH_ID)}"[^>]*?bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"', xml
    )
    assert m is not None
    x1, y1, x2, y2 = map(int, m.groups())
    adb(p, "-s", s, "shell", "input", "tap", str((x1 + x2) // 2), str((y1 + y2) // 2))
    hostile = "'; rm -rf / $(reboot) && echo pwned"
    # the adb client joins its arguments with spaces, so quote for the device shell, as scripts do
    adb(p, "-s", s, "shell", "input", "text", shlex.quote(hostile))
    assert sim_state(p, s)["field_text"] == hostile
    adb(p, "-s", s, "shell", "input", "keyevent", "KEYCODE_HOME")
    assert sim_state(p, s)["field_text"] == ""


def test_push_pull_binary_round_trip(sim_farm, tmp_path):
    p = sim_farm.port
    data = bytes(range(256)) * 1000
    (tmp_path / "in.bin").write_bytes(data)
    adb(p, "-s", "emulator-5556", "push", str(tmp_path / "in.bin"), "/data/local/tmp/x/in.bin")
    adb(p, "-s", "emulator-5556", "pull", "/data/local/tmp/x/in.bin", str(tmp_path / "out.bin"))
    assert (tmp_path / "out.bin").read_bytes() == data
    bad = adb(p, "-s", "emulator-5556", "pull", "/nope.bin", str(tmp_path / "n"), check=False)
    assert bad.returncode == 1 and b"does not exist" in bad.stdout + bad.stderr


def test_simctl_reset_state_and_kill_server_is_ignored(sim_farm):
    p, s = sim_farm.port, "emulator-5554"
    adb(p, "-s", s, "shell", "monkey", "-p", "com.whatsapp", "1")
    assert sim_state(p, s)["app_label"] == "WhatsApp"
    adb(p, "-s", s, "shell", "simctl", "reset")
    assert sim_state(p, s)["app_label"] == "Launcher"
    adb(p, "kill-server")
    assert adb(p, "-s", s, "get-state").stdout == b"device\n"  # still serving


def test_distrl_sim_serve_subprocess(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "distrl_tasks.cli", "sim", "serve", "--port", "0", "--devices", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = proc.stdout.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", banner)
        assert m is not None, (banner, proc.stderr.read() if proc.poll() is not None else "")
        port = int(m.group(1))
        lines = adb(port, "devices").stdout.decode().splitlines()
        assert lines[1:4] == [f"emulator-{5554 + 2 * i}\tdevice" for i in range(3)]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
        assert proc.returncode == 0, err
        assert "stopped" in out
    finally:
        reap(proc)


def test_distrl_sim_serve_bad_config_exits_2():
    proc = subprocess.run(
        [sys.executable, "-m", "distrl_tasks.cli", "sim", "serve", "--set", "sim.devices=0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "distrl: config error: sim.devices: must be in 1..256"
