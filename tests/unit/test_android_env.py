"""AndroidEnv on a simulated farm: prompts, penalties, horizon, early stop, pixels, features."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from distrl_tasks.agents.image_encoders import SmallImageEncoder
from distrl_tasks.agents.policy import format_prompt
from distrl_tasks.config import EnvConfig
from distrl_tasks.envs.adb_device import AdbDevice
from distrl_tasks.envs.android_env import AndroidEnv, horizon_for
from distrl_tasks.protocol.actions import ActionType, format_action, key, swipe, tap, type_text
from distrl_tasks.protocol.ui_dump import actionable_elements, goal_elements
from distrl_tasks.runners.policies import ScriptedPolicy
from distrl_tasks.tasks.goal_farms import running_farm

torch.set_num_threads(1)
GOAL = "Set an alarm for 6pm"
HOME = format_action(key(ActionType.PRESS_HOME))
BACK = format_action(key(ActionType.PRESS_BACK))


class RecordingDevice(AdbDevice):
    """The real ADB device, remembering the gestures it sent."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.gestures: list[tuple] = []

    def tap(self, x: float, y: float) -> None:
        self.gestures.append(("tap", round(x), round(y)))
        super().tap(x, y)

    def swipe(self, x1, y1, x2, y2, duration_ms: int = 300) -> None:
        self.gestures.append(("swipe", round(x1), round(y1), round(x2), round(y2)))
        super().swipe(x1, y1, x2, y2, duration_ms)


class DumpDevice(AdbDevice):
    """The real ADB device whose view-hierarchy dump is ``dump`` instead (failed, malformed or
    crowded dumps)."""

    def __init__(self, *args, dump: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.dump = dump

    def ui_xml(self) -> str:
        return self.dump


def crowded_dump(n: int = 300) -> str:
    """A 1080x2400 screen of ``n`` clickable cells (one centre each): "Item i", except an
    "Alarm" cell at 250, a "Clock alarm" cell at 280 and a text field at 10."""
    cells = []
    for i in range(n):
        x1, y1 = (i % 10) * 108, (i // 10) * 80
        label = {250: "Alarm", 280: "Clock alarm"}.get(i, f"Item {i}")
        cls = "android.widget.EditText" if i == 10 else "android.widget.Button"
        cells.append(
            f'<node text="{label}" class="{cls}" clickable="true" '
            f'bounds="[{x1},{y1}][{x1 + 108},{y1 + 80}]" />'
        )
    return (
        '<hierarchy rotation="0"><node class="android.widget.FrameLayout" package="p" '
        f'bounds="[0,0][1080,2400]">{"".join(cells)}</node></hierarchy>'
    )


@pytest.fixture(scope="module")
def farm():
    with running_farm(devices=2, seed=0) as running:
        yield running


@pytest.fixture()
def env(farm) -> AndroidEnv:
    device = RecordingDevice(farm.serials[0], farm.host, farm.port, timeout_s=10)
    return AndroidEnv(device, SmallImageEncoder(), EnvConfig())


def test_reset_gives_prompt_screenshot_and_features_of_that_screenshot(env) -> None:
    obs = env.reset(GOAL, episode_id="ep-1")
    assert obs.prompt == format_prompt(GOAL, []) == "Previous Actions:  Goal: " + GOAL
    assert obs.screenshot_png.startswith(b"\x89PNG")
    assert obs.step == 0 and obs.episode_id == "ep-1" and "<hierarchy" in obs.ui_xml
    want = SmallImageEncoder().encode([obs.screenshot_png])[0]
    assert obs.image_features.dtype == np.float16
    np.testing.assert_array_equal(obs.image_features, want)
    assert obs.policy_input().prompt == obs.prompt


def test_prompt_carries_the_previous_action(env) -> None:
    env.reset(GOAL)
    res = env.step(HOME)
    assert res.observation.prompt == f"Previous Actions: {HOME} Goal: {GOAL}"
    assert res.observation.step == 1 and not res.done
    assert res.started_at <= res.ended_at


def test_prompt_history_comes_from_the_env_config(farm) -> None:
    device = AdbDevice(farm.serials[1], farm.host, farm.port, timeout_s=10)
    env = AndroidEnv(device, SmallImageEncoder(), EnvConfig(prompt_history=2))
    env.reset(GOAL)
    env.step(HOME)
    prompt = env.step(BACK).observation.prompt
    assert prompt == f"Previous Actions: {HOME} {BACK} Goal: {GOAL}"
    assert AndroidEnv(device, SmallImageEncoder(), EnvConfig(), history=0).history == 0


def test_repeat_penalty_is_cumulative_and_resets_on_a_new_action(env) -> None:
    env.reset(GOAL)
    penalties = [env.step(a).penalty for a in (HOME, HOME, HOME, BACK, BACK)]
    assert penalties == pytest.approx([0.0, -0.4, -0.8, 0.0, -0.4])


def test_empty_type_and_invalid_output_are_penalized(env) -> None:
    env.reset(GOAL)
    assert env.step(format_action(type_text(""))).penalty == pytest.approx(-1.0)
    res = env.step("I think I should tap the clock")
    assert res.action.invalid and res.penalty == pytest.approx(-1.0)
    assert not res.done  # an invalid step is a penalized no-op by default
    # an invalid step between two equal actions does not reset the repeat count
    env.step(HOME)
    env.step("garbage")
    assert env.step(HOME).penalty == pytest.approx(-0.4)


def test_invalid_output_can_end_the_episode(farm) -> None:
    env = AndroidEnv(
        AdbDevice(farm.serials[1], farm.host, farm.port),
        SmallImageEncoder(),
        EnvConfig(),
        end_on_invalid=True,
    )
    env.reset(GOAL)
    res = env.step('"action_type": "FLY"')
    assert res.done and res.reason == "invalid" and res.penalty == pytest.approx(-1.0)


def test_horizon_ends_the_episode_per_task_set(farm) -> None:
    cfg = dataclasses.replace(EnvConfig(), horizon_general=3)
    assert horizon_for("general", EnvConfig()) == 10 and horizon_for("webshop", EnvConfig()) == 20
    env = AndroidEnv(AdbDevice(farm.serials[1], farm.host, farm.port), SmallImageEncoder(), cfg)
    env.reset(GOAL)
    results = [env.step(a) for a in (HOME, BACK, HOME)]
    assert [r.done for r in results] == [False, False, True]
    assert results[-1].reason == "horizon" and not results[-1].success
    with pytest.raises(RuntimeError, match="reset"):
        env.step(HOME)
    with pytest.raises(ValueError, match="task set"):
        horizon_for("shopping", cfg)


def test_agent_status_actions_end_the_episode(env) -> None:
    env.reset(GOAL)
    res = env.step(format_action(key(ActionType.TASK_IMPOSSIBLE)))
    assert res.done and res.reason == "impossible" and not res.success


def test_oracle_stops_the_episode_on_success(env) -> None:
    policy = ScriptedPolicy()
    obs = env.reset(GOAL, episode_id="solve")
    reasons = []
    for _ in range(10):
        texts, logps = policy.act([obs])
        assert logps == [0.0]
        res = env.step(texts[0])
        obs = res.observation
        reasons.append(res.reason)
        if res.done:
            break
    # the alarm is set before the expert would say STATUS_TASK_COMPLETE
    assert reasons[-1] == "success" and res.success
    assert res.action.action_type is not ActionType.STATUS_TASK_COMPLETE


def test_normalized_points_map_to_pixels_and_dual_point_splits_tap_and_swipe(env) -> None:
    env.reset(GOAL)
    # the display is the screencap's size (270x600 at the default render scale 0.25)
    assert env.device.screen_size() == (270, 600)
    assert env.to_pixels((0.5, 0.25)) == (67.5, 300.0)
    env.step(format_action(tap(0.5, 0.25)))
    env.step(format_action(swipe(0.5, 0.25, 0.5, 0.26)))  # 0.01 apart: still a tap
    env.step(format_action(swipe(0.8, 0.5, 0.2, 0.5)))
    assert env.device.gestures == [
        ("tap", 68, 300),
        ("tap", 68, 300),
        ("swipe", 135, 480, 135, 120),
    ]


def test_reset_rejects_an_empty_goal(env) -> None:
    with pytest.raises(ValueError, match="goal"):
        env.reset("  ")


def test_pointer_elements_are_the_goals_elements_of_the_dump(farm) -> None:
    device = AdbDevice(farm.serials[1], farm.host, farm.port, timeout_s=10)
    env = AndroidEnv(
        device, SmallImageEncoder(), EnvConfig(), capture_ui_xml=False, pointer_elements=3
    )
    assert env.capture_ui_xml  # the pointer needs the dump
    obs = env.reset(GOAL)
    assert len(actionable_elements(obs.ui_xml)) > 3  # the home screen offers more: cut to 3
    assert obs.elements == tuple(goal_elements(obs.ui_xml, GOAL, 3)) and len(obs.elements) == 3
    assert obs.policy_input().elements == obs.elements
    nxt = env.step(format_action(tap(*obs.elements[0].point))).observation
    assert nxt.elements == tuple(goal_elements(nxt.ui_xml, GOAL, 3)) and nxt.elements
    assert nxt.policy_input().elements == nxt.elements
    # the pointer off: no elements, and the prompt is unchanged by it
    plain = AndroidEnv(device, SmallImageEncoder(), EnvConfig()).reset(GOAL)
    assert plain.elements == () and plain.policy_input().elements == ()
    assert plain.prompt == obs.prompt


@pytest.mark.parametrize("dump", ["", "<hierarchy", "not xml at all", '<hierarchy rotation="0"/>'])
def test_an_unreadable_dump_gives_no_elements_and_the_episode_goes_on(farm, dump) -> None:
    device = DumpDevice(farm.serials[1], farm.host, farm.port, timeout_s=10, dump=dump)
    env = AndroidEnv(device, SmallImageEncoder(), EnvConfig(), pointer_elements=16)
    obs = env.reset(GOAL)
    assert obs.elements == () and obs.policy_input().elements == ()
    res = env.step(HOME)
    assert res.observation.elements == () and not res.done


def test_a_crowded_dump_is_cut_to_k_by_the_goal_prior(farm) -> None:
    xml = crowded_dump()
    assert len(actionable_elements(xml)) == 300
    # the goal's words first ("alarm"), then the text field, then document order
    picked = goal_elements(xml, GOAL, 4)
    assert [e.label for e in picked] == ["Item 0", "Item 10", "Alarm", "Clock alarm"]
    assert picked[1].editable and picked[2].point == (0.85, 0.05)  # row 25, column 0
    assert picked[2].size == (round(80 / 2400, 4), 0.1)
    assert goal_elements(xml, GOAL, 4) == picked  # deterministic
    device = DumpDevice(farm.serials[1], farm.host, farm.port, timeout_s=10, dump=xml)
    env = AndroidEnv(device, SmallImageEncoder(), EnvConfig(), pointer_elements=16)
    obs = env.reset(GOAL)
    assert len(obs.elements) == 16 and obs.elements == tuple(goal_elements(xml, GOAL, 16))
    assert {"Alarm", "Clock alarm", "Item 10"} <= {e.label for e in obs.elements}
