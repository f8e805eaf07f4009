"""The expert through the simulated ADB server: adbutils, uiautomator dumps and `input` only."""

from __future__ import annotations

import pytest

from distrl_tasks.tasks import GoalParseError
from distrl_tasks.tasks.expert import run_expert

farm_module = pytest.importorskip("distrl_tasks.tasks.goal_farms")

pytestmark = pytest.mark.integration

GOALS = [
    "Set an alarm for 6pm",
    "What's the weather like in Seoul?",
    'Go to ebay.com, search for "razer kraken", and select the first entry',
    "Install the Pandora app",
]


@pytest.fixture(scope="module")
def farm():
    with farm_module.running_farm(devices=2, seed=0) as running:
        yield running


@pytest.mark.parametrize("goal", GOALS)
def test_expert_solves_goals_over_adb(farm, goal: str) -> None:
    result = run_expert(farm.host, farm.port, farm.serials[0], goal)
    assert result["success"] is True, result
    assert result["goal"] == goal and result["done"] is True
    assert 2 <= result["steps"] <= (20 if goal.startswith("Go to") else 10)
    assert result["actions"][-1]["action_type"] == "STATUS_TASK_COMPLETE"


def test_hostile_text_lands_literally(farm) -> None:
    goal = 'Search for "it\'s 100% ok" & done; $HOME'
    result = run_expert(farm.host, farm.port, farm.serials[1], goal)
    assert result["family"] == "web_search"
    typed = [a["typed_text"] for a in result["actions"] if a["action_type"] == "TYPE"]
    assert typed and result["success"] is True, result


def test_two_devices_are_independent(farm) -> None:
    a = run_expert(farm.host, farm.port, farm.serials[0], "Open the clock")
    b = run_expert(farm.host, farm.port, farm.serials[1], "Check my email")
    assert a["success"] and b["success"]
    assert a["family"] == "open_app" and b["family"] == "check_email"


def test_unparseable_goal_fails_before_touching_the_device(farm) -> None:
    with pytest.raises(GoalParseError):
        run_expert(farm.host, farm.port, farm.serials[0], "Blorp the frobnicator")
