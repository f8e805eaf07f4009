"""The plan a journal is matched against: trajectory id -> goal, parsed on lookup."""

from __future__ import annotations

import tracemalloc

import pytest

from distrl_tasks.runners.collector import PlannedTrajectories, trajectory_id

PLAN = {
    "emulator-5554": ["Open Chrome", "Set an alarm for 6pm", "Open Chrome"],
    "127.0.0.1:5557": ["Search for 'usb c cable' on ebay.com"],
}


def test_it_holds_exactly_the_ids_collect_writes_with_their_goals() -> None:
    planned = PlannedTrajectories(PLAN, 3, prefix="eval-")
    built = {
        trajectory_id(3, serial, k, "eval-"): goal
        for serial, goals in PLAN.items()
        for k, goal in enumerate(goals)
    }
    assert dict(planned) == built
    assert len(planned) == 4
    assert planned["eval-r3-emulator-5554-e0001"] == "Set an alarm for 6pm"
    assert planned["eval-r3-127.0.0.1:5557-e0000"] == "Search for 'usb c cable' on ebay.com"


@pytest.mark.parametrize(
    "tid",
    [
        "eval-r3-emulator-5554-e0003",  # past the device's plan
        "eval-r3-emulator-5556-e0000",  # a device the plan does not hold
        "eval-r2-emulator-5554-e0000",  # another round
        "r3-emulator-5554-e0000",  # another prefix
        "eval-r3-emulator-5554-e1",  # not the id trajectory_id writes for episode 1
        "eval-r3-emulator-5554-e-001",
        "eval-r3-emulator-5554",
        "",
    ],
)
def test_ids_outside_the_plan_are_missing(tid: str) -> None:
    planned = PlannedTrajectories(PLAN, 3, prefix="eval-")
    assert tid not in planned
    assert planned.get(tid) is None


def test_a_plan_of_millions_of_episodes_costs_no_memory_per_episode() -> None:
    # what a budgeted continuous round plans: UNBOUNDED_ROUNDS rounds' episodes per device
    plan = {f"emulator-{5554 + 2 * d}": ["Open Chrome"] * 1_000_000 for d in range(4)}
    tracemalloc.start()
    planned = PlannedTrajectories(plan, 1)
    found = planned.get("r1-emulator-5560-e999999")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert found == "Open Chrome" and len(planned) == 4_000_000
    assert peak < 100_000
