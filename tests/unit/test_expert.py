"""The scripted expert on the in-process Phone: oracle success, horizons, mistakes, recording."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from distrl_tasks.protocol.actions import parse_action
from distrl_tasks.protocol.ui_dump import Screen
from distrl_tasks.sim.phone import Phone
from distrl_tasks.tasks import MAX_STEPS, load_goals, parse_goal, unique_goals
from distrl_tasks.tasks.driver import AdbDriver, Driver, escape_input_text
from distrl_tasks.tasks.expert import Expert, solve


def run(goal: str, **kw) -> tuple[Phone, object]:
    task = parse_goal(goal)
    phone = Phone()
    phone.set_task(task)
    return phone, solve(phone, task, **kw)


@pytest.mark.parametrize("name", ["general_train", "general_test", "webshop_train", "webshop_test"])
def test_oracle_success_on_each_aitw_file(name: str) -> None:
    task_set, split = name.split("_")
    goals = unique_goals(load_goals(task_set, split))
    wins, steps, failed = 0, Counter(), []
    for goal in goals:
        phone, ep = run(goal)
        ok = phone.check_task()["success"]
        wins += ok
        steps[ep.steps] += 1
        if not ok:
            failed.append(goal)
        assert ep.steps <= MAX_STEPS[task_set], goal
    assert wins / len(goals) >= 0.98, failed[:10]


def test_expert_declares_completion_and_records_autoui_actions() -> None:
    phone, ep = run("Set an alarm for 6pm")
    assert phone.check_task()["success"] and ep.done
    assert ep.actions[-1]["action_type"] == "STATUS_TASK_COMPLETE"
    kinds = [a["action_type"] for a in ep.actions]
    assert "DUAL_POINT" in kinds and "TYPE" in kinds
    for a in ep.actions:
        parsed = parse_action(a["action"])
        assert parsed.action_type.value == a["action_type"] and not parsed.invalid
        if a["action_type"] == "DUAL_POINT":
            y, x = a["touch_point"]
            assert 0.0 <= y <= 1.0 and 0.0 <= x <= 1.0
    typed = [a["typed_text"] for a in ep.actions if a["action_type"] == "TYPE"]
    assert typed == ["6"]  # hour 6, PM toggle, minutes left at 00


def test_mistakes_are_seeded_and_mostly_recovered() -> None:
    goals = ["Open the clock", "Set an alarm for 7am", "Check my email", "Install the Uber app"]
    a = [run(g, mistake_rate=0.3, seed=5)[1].actions for g in goals]
    b = [run(g, mistake_rate=0.3, seed=5)[1].actions for g in goals]
    assert a == b
    total = wins = mistakes = 0
    for seed in range(3):
        for goal in goals:
            phone, ep = run(goal, mistake_rate=0.2, seed=seed)
            total += 1
            wins += phone.check_task()["success"]
            mistakes += ep.mistakes
    assert mistakes > 0
    assert wins / total >= 0.6


def test_bad_mistake_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="mistake_rate"):
        Expert(Phone(), parse_goal("Open the clock"), mistake_rate=1.5)


def test_random_policy_almost_never_succeeds() -> None:
    rng = random.Random(0)
    goals = unique_goals(load_goals("general", "test"))
    sample = rng.sample(goals, 40) + rng.sample(unique_goals(load_goals("webshop", "test")), 20)
    wins = 0
    for goal in sample:
        task = parse_goal(goal)
        phone = Phone()
        phone.set_task(task)
        for _ in range(task.max_steps):
            r = rng.random()
            if r < 0.7:
                phone.tap(rng.uniform(0, 1080), rng.uniform(0, 2400))
            elif r < 0.8:
                phone.input_text(rng.choice(["hello", "news", "6"]))
            elif r < 0.9:
                phone.keyevent(rng.choice([3, 4, 66]))
            else:
                phone.swipe(540, rng.uniform(0, 2400), 540, rng.uniform(0, 2400))
        wins += phone.check_task()["success"]
    assert wins / len(sample) <= 0.05


def test_screen_parsing_and_phone_is_a_driver() -> None:
    phone = Phone()
    assert isinstance(phone, Driver)
    screen = Screen.parse(phone.ui_xml())
    assert (screen.width, screen.height) == (1080, 2400)
    assert screen.first(lambda n: n.desc == "Chrome" and n.clickable) is not None
    with pytest.raises(ValueError, match="not a uiautomator dump"):
        Screen.parse("<hierarchy")


class FakeAdbDevice:
    """Records shell argument lists, as adbutils' AdbDevice.shell receives them."""

    def __init__(self) -> None:
        self.calls: list[list[str] | str] = []

    def shell(self, cmd):
        self.calls.append(cmd)
        return ""

    def dump_hierarchy(self) -> str:
        return Phone().ui_xml()


def test_adb_driver_commands_and_escaping() -> None:
    dev = FakeAdbDevice()
    d = AdbDriver(dev)
    d.tap(10.4, 20.6)
    d.swipe(1, 2, 3, 4, 250)
    d.input_text('it\'s a "test"; rm -rf $HOME & x')
    d.keyevent(66)
    assert dev.calls == [
        ["input", "tap", "10", "21"],
        ["input", "swipe", "1", "2", "3", "4", "250"],
        ["input", "text", 'it\'s%sa%s"test";%srm%s-rf%s$HOME%s&%sx'],
        ["input", "keyevent", "66"],
    ]
    assert isinstance(d, Driver) and "hierarchy" in d.ui_xml()
    with pytest.raises(ValueError, match="newline"):
        escape_input_text("a\nb")
    with pytest.raises(ValueError, match="literal '%s'"):
        escape_input_text("100%sure")
