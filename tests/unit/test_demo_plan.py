"""What the demo says its RL phase will run: rounds, a wall-clock budget, or both."""

from __future__ import annotations

from distrl_tasks.config import load_config
from distrl_tasks.orchestration.demo import describe_plan
from distrl_tasks.orchestration.pipeline import UNBOUNDED_ROUNDS


def test_a_budget_alone_bounds_the_continuous_round() -> None:
    cfg = load_config(None, {"algorithm.mode": "online"})
    plan = describe_plan(cfg, UNBOUNDED_ROUNDS, 540.0, continuous=True)
    assert plan == "one continuous asynchronous round (540 s of wall clock)"


def test_rounds_and_a_budget_are_both_named() -> None:
    cfg = load_config(None, {"algorithm.mode": "online"})
    plan = describe_plan(cfg, 2, 540.0, continuous=True)
    assert plan == (
        "one continuous asynchronous round (2 rounds' episodes, at most 540 s of wall clock)"
    )


def test_synchronous_rounds_without_a_budget_after_the_offline_phase() -> None:
    cfg = load_config(None, {"algorithm.mode": "off2on", "orchestration.asynchronous": False})
    plan = describe_plan(cfg, 3, None, continuous=False)
    assert plan == "synchronous rounds (3 rounds' episodes) after the offline phase (round 0)"


def test_offline_mode_runs_only_round_zero() -> None:
    cfg = load_config(None, {"algorithm.mode": "offline"})
    assert describe_plan(cfg, 3, 540.0, continuous=False) == "the offline phase (round 0) only"
