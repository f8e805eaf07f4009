"""AdbDevice against the simulator's ADB server: observation, control, and hostile text."""

from __future__ import annotations

import json
import shlex
import socket

import adbutils
import pytest

from distrl_tasks.agents.image_encoders import SmallImageEncoder
from distrl_tasks.config import EnvConfig
from distrl_tasks.envs.adb_device import AdbClient, AdbDevice, input_text_commands
from distrl_tasks.envs.android_env import AndroidEnv
from distrl_tasks.envs.device import Device, DeviceError
from distrl_tasks.protocol.actions import ActionType, parse_action
from distrl_tasks.runners.policies import ScriptedPolicy
from distrl_tasks.tasks.goal_farms import running_farm

pytestmark = pytest.mark.integration

HOSTILE = [
    'it\'s "quoted"',
    "a; reboot",
    "$(rm -rf /) `id` && echo pwned || true",
    "100%s sure % s%",
    "$HOME ${PATH} > /sdcard/x | cat",
    "héllo wörld ✓ 日本",
    "line one\nline two\ttab",
]


@pytest.fixture(scope="module")
def farm():
    with running_farm(devices=1, seed=0) as running:
        yield running


@pytest.fixture(scope="module")
def device(farm) -> AdbDevice:
    return AdbDevice(farm.serials[0], farm.host, farm.port, timeout_s=10)


def test_commands_keep_text_one_literal_argument() -> None:
    assert input_text_commands("") == []
    assert input_text_commands("a b") == ["input text a%sb"]
    assert input_text_commands("it's") == ["input text 'it'\"'\"'s'"]
    # a literal %s is cut between '%' and 's' so no command holds it
    assert [shlex.split(c)[2] for c in input_text_commands("x%sy")] == ["x%", "sy"]
    for text in HOSTILE:
        for line in input_text_commands(text):
            argv = shlex.split(line)
            assert argv[:2] == ["input", "text"] and len(argv) == 3 and "\n" not in line


def test_observation_and_control(device) -> None:
    assert isinstance(device, Device)
    assert device.screenshot().startswith(b"\x89PNG\r\n\x1a\n")
    assert "<hierarchy" in device.ui_xml()
    assert device.screen_size() == (270, 600)  # the screencap's pixel size
    assert device.is_healthy()
    device.set_task("Set an alarm for 6pm")
    assert device.check_task()["success"] is False
    device.launch_app("com.google.android.deskclock")
    assert json.loads(device.shell("simctl state"))["app"] == "com.google.android.deskclock"
    device.reset()
    assert json.loads(device.shell("simctl state"))["page"] == "home"


class CountingDevice(AdbDevice):
    """The real device, counting its exact-state reads."""

    exact_reads = 0

    def exact_state(self):
        self.exact_reads += 1
        return super().exact_state()


def test_exact_state_keys_cost_an_adb_call_only_when_asked(farm) -> None:
    goal = "Set an alarm for 6pm"
    keys = {}
    for exact in (False, True):
        dev = CountingDevice(farm.serials[0], farm.host, farm.port, timeout_s=10)
        env = AndroidEnv(dev, SmallImageEncoder(), EnvConfig(), exact_state_keys=exact)
        keys[exact] = env.reset(goal).state_key
        assert env.step('"action_type": "PRESS_HOME"').observation.state_key
        assert dev.exact_reads == (2 if exact else 0)  # one per observation, or none at all
    # the same start, keyed two ways: by the simulator's state, and by the screenshot's bytes
    assert keys[True] != keys[False]


def _focus_search_field(device: AdbDevice) -> None:
    """Let the expert drive until it is about to type, i.e. a text field has focus."""
    env = AndroidEnv(device, SmallImageEncoder(), EnvConfig())
    policy = ScriptedPolicy()
    obs = env.reset("Search for hotels in Washington DC", episode_id="focus")
    for _ in range(8):
        text = policy.act([obs])[0][0]
        if parse_action(text).action_type is ActionType.TYPE:
            return
        obs = env.step(text).observation
    raise AssertionError("the expert never reached a text field")


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_lands_literally(device, text: str) -> None:
    _focus_search_field(device)
    state = json.loads(device.shell("simctl state"))
    assert state["focused_field"] and state["field_text"] == ""
    device.input_text(text)
    state = json.loads(device.shell("simctl state"))
    assert state["field_text"] == text.replace("\n", " ").replace("\t", " ")
    assert device.is_healthy()  # nothing after ';' or '&&' ran


def test_failures_become_device_errors(farm) -> None:
    ghost = AdbDevice("emulator-5600", farm.host, farm.port, timeout_s=1)
    with pytest.raises(DeviceError, match="emulator-5600"):
        ghost.screenshot()
    assert not ghost.is_healthy()
    real = AdbDevice(farm.serials[0], farm.host, farm.port, timeout_s=5)
    with pytest.raises(DeviceError, match="exited"):
        real.shell("simctl task set 'not a goal we know zzz'")
    emu = AdbDevice(farm.serials[0], farm.host, farm.port, kind="emulator")
    with pytest.raises(DeviceError, match="oracle"):
        emu.check_task()
    with pytest.raises(DeviceError, match="snapshot_loader"):
        emu.reset()
    with pytest.raises(ValueError, match="kind"):
        AdbDevice("x", kind="phone")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_vanished_adb_server_is_a_device_error_and_starts_no_adb_daemon() -> None:
    # a farm that stopped under a running device: its port refuses connections
    with running_farm(devices=1, seed=0) as farm:
        device = AdbDevice(farm.serials[0], farm.host, farm.port, timeout_s=5)
        assert device.is_healthy()
    daemon_before = _listening(5037)
    with pytest.raises(DeviceError, match="emulator-5554"):
        device.screenshot()  # adbutils alone would run `adb start-server` here
    with pytest.raises(adbutils.AdbError):
        AdbClient(farm.host, farm.port).device_list()
    if not daemon_before:
        assert not _listening(5037)  # no adb daemon was started on the default port
