"""The simulated farm through the unmodified adbutils client."""

from __future__ import annotations

import json
import random
import re
import socket
import threading
import time

import adbutils
import pytest

from distrl_tasks.config import FaultConfig, SimConfig
from distrl_tasks.sim.apps.launcher import SEARCH_ID
from distrl_tasks.sim.ui import SCREEN_H, SCREEN_W
from distrl_tasks.tasks.goal_farms import running_farm

pytestmark = pytest.mark.integration


def center_in_xml(xml: str, attr: str, value: str) -> tuple[int, int]:
    pattern = rf'{attr}="{re.escape(value)}"[^>]*?bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"'
    m = re.search(pattern, xml)
    assert m is not None, f"no node with {attr}={value!r} in the hierarchy"
    x1, y1, x2, y2 = map(int, m.groups())
    return (x1 + x2) // 2, (y1 + y2) // 2


def state(d: adbutils.AdbDevice) -> dict:
    return json.loads(d.shell("simctl state"))


def test_devices_listing(adb_client):
    assert adb_client.server_version() == 41
    infos = adb_client.list()
    assert [(i.serial, i.state) for i in infos] == [
        ("emulator-5554", "device"),
        ("emulator-5556", "device"),
    ]
    long = adb_client.list(extended=True)
    assert [i.tags["transport_id"] for i in long] == ["1", "2"]
    assert long[0].tags["model"] == "sdk_gphone64_x86_64"
    d = adb_client.device("emulator-5556")
    assert (d.get_state(), d.get_serialno()) == ("device", "emulator-5556")
    assert "shell_v2" in d.get_features().split(",")


def test_shell_session_without_a_command_answers_line_by_line(adb_client):
    """`shell:` with no command (v1, one byte stream): each line runs when its newline arrives,
    a quote left open waits for the next line, and closing stdin runs the last line."""
    sock = adb_client.device("emulator-5554").open_shell("").conn
    sock.settimeout(10)

    def answer(n: int) -> bytes:
        got = b""
        while len(got) < n:
            chunk = sock.recv(4096)
            assert chunk, f"the session closed early after {got!r}"
            got += chunk
        return got

    try:
        sock.sendall(b"echo one\n")
        assert answer(4) == b"one\n"  # while stdin is still open
        sock.sendall(b"false\necho $?\n")
        assert answer(2) == b"1\n"  # $? carries from line to line
        sock.sendall(b"echo 'a\n")
        time.sleep(0.2)  # the open quote reaches the device alone
        sock.sendall(b"b' && echo c\n")
        assert answer(6) == b"a\nb\nc\n"
        sock.sendall(b"echo last")
        sock.shutdown(socket.SHUT_WR)
        assert answer(5) == b"last\n"
        assert sock.recv(4096) == b""  # then the device hangs up
    finally:
        sock.close()


@pytest.mark.parametrize("v2", [False, True])
def test_shell_exit_codes(adb_client, v2):
    d = adb_client.device("emulator-5554")
    assert d.shell2("false", v2=v2).returncode == 1
    r = d.shell2("echo out; echo err >&2; false", v2=v2)
    assert r.returncode == 1
    if v2:
        assert (r.stdout, r.stderr) == ("out\n", "err\n")
        assert d.shell2("exit 7", v2=True).returncode == 7
    else:
        assert r.output == "out\nerr\n"
    assert d.shell2("nosuchcmd", v2=v2).returncode == 127


def test_screenshot_window_size_and_current_app(adb_client, sim_farm):
    d = adb_client.device("emulator-5554")
    scale = sim_farm.farm.cfg.render_scale
    assert d.screenshot().size == (round(SCREEN_W * scale), round(SCREEN_H * scale))
    # as on a real device, the reported display size is the screenshot's pixel size
    assert tuple(d.window_size()) == d.screenshot().size
    assert d.rotation() == 0
    assert d.app_current().package == "com.google.android.apps.nexuslauncher"


def test_tap_icon_in_drawer_opens_app(adb_client):
    d = adb_client.device("emulator-5554")
    d.swipe(135, 450, 135, 150, 0.2)  # display pixels (270x600)
    assert state(d)["page"] == "drawer"
    x, y = center_in_xml(d.dump_hierarchy(), "content-desc", "Netflix")
    d.click(x, y)
    assert d.app_current().package == "com.netflix.mediaclient"
    d.keyevent("KEYCODE_HOME")
    assert state(d)["page"] == "home"


@pytest.mark.parametrize("text", ["'; rm -rf /", "$(reboot)", 'say "hi" & <go> | \\ %d'])
def test_send_keys_lands_literally(adb_client, text):
    d = adb_client.device("emulator-5556")
    x, y = center_in_xml(d.dump_hierarchy(), "resource-id", SEARCH_ID)
    d.click(x, y)
    d.send_keys(text)
    s = state(d)
    assert (s["focused_field"], s["field_text"]) == (SEARCH_ID, text)


def test_push_pull_binary_round_trip(adb_client, tmp_path):
    d = adb_client.device("emulator-5554")
    payload = bytes(range(256)) + random.Random(0).randbytes(200_000)
    assert d.sync.push(payload, "/sdcard/Download/blob.bin") == len(payload)
    assert d.sync.stat("/sdcard/Download/blob.bin").size == len(payload)
    assert d.sync.read_bytes("/storage/emulated/0/Download/blob.bin") == payload
    d.sync.pull("/sdcard/Download/blob.bin", tmp_path / "blob.bin")
    assert (tmp_path / "blob.bin").read_bytes() == payload
    names = [f.path for f in d.sync.list("/sdcard/Download")]
    assert "blob.bin" in names
    assert not d.sync.exists("/sdcard/missing.bin")
    assert "blob.bin" not in adb_client.device("emulator-5556").shell("ls /sdcard/Download")


def test_simctl_reset_and_state(adb_client):
    d = adb_client.device("emulator-5554")
    d.app_start("com.whatsapp")
    assert state(d)["app_label"] == "WhatsApp"
    assert d.shell2("simctl reset").returncode == 0
    s = state(d)
    assert (s["page"], s["app_label"], s["crashed"]) == ("home", "Launcher", False)


def test_concurrent_clients_on_several_devices():
    with running_farm(devices=4) as rf:
        errors: list[BaseException] = []

        def worker(serial: str, k: int) -> None:
            try:
                c = adbutils.AdbClient(host=rf.host, port=rf.port)
                d = c.device(serial)
                for i in range(15):
                    d.click(10 + k, 10 + i)
                    assert d.screenshot().size[0] > 0
                    assert d.shell2(f"echo {serial}-{k}-{i}").output == f"{serial}-{k}-{i}\n"
            except BaseException as exc:  # collected and re-raised in the main thread
                errors.append(exc)

        threads = [
            threading.Thread(target=worker, args=(s, k)) for s in rf.serials for k in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors[0]


# ----- faults over the wire ----------------------------------------------------------------
def faulty(**kw: float) -> SimConfig:
    return SimConfig(faults=FaultConfig(enabled=True, **kw))


def test_offline_device_is_listed_and_refused():
    with running_farm(devices=2, sim_cfg=faulty(offline_prob=1.0, offline_seconds=0.6)) as rf:
        c = adbutils.AdbClient(host=rf.host, port=rf.port)
        d = c.device("emulator-5554")
        with pytest.raises(adbutils.AdbError, match="device offline"):
            d.shell("echo hi")
        assert {i.serial: i.state for i in c.list()} == {
            "emulator-5554": "offline",
            "emulator-5556": "device",
        }
        assert d.get_state() == "offline"
        time.sleep(0.7)
        assert c.list()[0].state == "device"


def test_hang_stalls_one_command_without_blocking_other_devices():
    with running_farm(devices=2, sim_cfg=faulty(hang_prob=1.0, hang_seconds=0.5)) as rf:
        c = adbutils.AdbClient(host=rf.host, port=rf.port)
        elapsed: dict[str, float] = {}

        def timed(serial: str) -> None:
            t0 = time.monotonic()
            assert c.device(serial).shell("echo hi") == "hi"
            elapsed[serial] = time.monotonic() - t0

        t0 = time.monotonic()
        threads = [threading.Thread(target=timed, args=(s,)) for s in rf.serials]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert all(v >= 0.5 for v in elapsed.values()) and len(elapsed) == 2
        assert time.monotonic() - t0 < 0.95  # the two hangs overlapped


def test_crash_fails_commands_until_simctl_reset():
    with running_farm(devices=1, sim_cfg=faulty(crash_prob=1.0)) as rf:
        d = adbutils.AdbClient(host=rf.host, port=rf.port).device("emulator-5554")
        r = d.shell2("input tap 5 5", v2=True)
        assert r.returncode == 1 and "crashed" in r.stderr
        assert state(d)["crashed"] is True
        d.shell("simctl reset")
        assert state(d)["crashed"] is False


def test_blank_frame_after_navigation():
    with running_farm(devices=1, sim_cfg=faulty(blank_frame_prob=1.0)) as rf:
        d = adbutils.AdbClient(host=rf.host, port=rf.port).device("emulator-5554")
        d.screenshot()  # consumes the boot navigation
        assert d.screenshot().getextrema() != ((255, 255), (255, 255), (255, 255))
        d.app_start("com.whatsapp")
        assert d.screenshot().getextrema() == ((255, 255), (255, 255), (255, 255))
        assert d.screenshot().getextrema() != ((255, 255), (255, 255), (255, 255))
