"""Curriculum by difficulty: goal weights, outcomes read from real labeled shards, the plan."""

from __future__ import annotations

import datetime as dt
import io
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from distrl_tasks.config import CurriculumConfig, config_from_dict
from distrl_tasks.data.shards import write_shard
from distrl_tasks.stages import curriculum
from distrl_tasks.stages.curriculum import plan_goals as sample_goals

T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
DIM = 4


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (2, 2)).save(buf, "PNG")
    return buf.getvalue()


PNG = _png()


def rows(tid: str, task: str, success: bool, round_: int, n: int = 2) -> list[dict]:
    return [
        {
            "trajectory_id": tid,
            "step": t,
            "round": round_,
            "task": task,
            "task_set": "general",
            "split": "train",
            "device": "emulator-5554",
            "policy_version": 0,
            "prompt": f"Goal: {task}",
            "action": '"action_type": "PRESS_HOME"',
            "action_type": "PRESS_HOME",
            "invalid": False,
            "screenshot_png": PNG,
            "final_screenshot_png": PNG if t == n - 1 else None,
            "image_features": np.zeros(DIM),
            "final_image_features": np.zeros(DIM) if t == n - 1 else None,
            "behavior_log_prob": -1.0,
            "reward": float(success and t == n - 1),
            "penalty": 0.0,
            "done": t == n - 1,
            "mc_return": float(success) * 0.5 ** (n - 1 - t),
            "trajectory_reward": float(success),
            "evaluator": "oracle",
            "label_status": "labeled",
            "started_at": T0,
            "ended_at": T0,
        }
        for t in range(n)
    ]


def test_goal_weights_boost_uncertain_goals_with_a_floor():
    goals = ["a", "b", "c", "d"]
    attempts = {"a": 4, "b": 4, "c": 4}  # d never tried
    successes = {"a": 2, "b": 4, "c": 0}  # only a is uncertain
    rule = CurriculumConfig(enabled=True, boost=4.0, floor=0.2)
    p = curriculum.goal_weights(goals, attempts, successes, rule)
    # w = [4, 1, 1, 1]: P = .8 * w / 7 + .2 / 4
    np.testing.assert_allclose(p, [0.8 * 4 / 7 + 0.05] + [0.8 / 7 + 0.05] * 3)
    assert p.sum() == pytest.approx(1.0)
    # min_attempts: 4 attempts are not enough for 5, so nothing is boosted
    flat = curriculum.goal_weights(
        goals, attempts, successes, CurriculumConfig(enabled=True, min_attempts=5)
    )
    np.testing.assert_allclose(flat, [0.25] * 4)
    with pytest.raises(ValueError, match="successes"):
        curriculum.goal_weights(["a"], {"a": 1}, {"a": 2}, rule)


def test_outcomes_come_from_the_newest_labeled_rounds(tmp_path):
    data = rows("r1-a0", "a", True, 1) + rows("r1-a1", "a", False, 1) + rows("r1-b", "b", True, 1)
    write_shard(data, tmp_path, round=1, name="r1", feature_dim=DIM, gamma=0.5)
    write_shard(rows("r2-c", "c", False, 2), tmp_path, round=2, name="r2", feature_dim=DIM)
    attempts, successes = curriculum.goal_outcomes(tmp_path, window_rounds=2)
    assert attempts == {"a": 2, "b": 1, "c": 1}
    assert successes == {"a": 1, "b": 1, "c": 0}
    assert curriculum.goal_outcomes(tmp_path, window_rounds=1) == ({"c": 1}, {"c": 0})
    assert curriculum.goal_outcomes(tmp_path / "none", window_rounds=2) == ({}, {})


def test_plan_draws_uncertain_goals_more_often_and_is_off_by_default(tmp_path):
    goals = ["a", "b", "c", "d"]
    data = rows("x0", "a", True, 1) + rows("x1", "a", False, 1) + rows("x2", "b", True, 1)
    write_shard(data, tmp_path, round=1, name="r1", feature_dim=DIM, gamma=0.5)
    off = config_from_dict({})
    assert curriculum.curriculum_probabilities(off, goals, tmp_path) == (None, {})
    on = config_from_dict({"orchestration": {"curriculum": {"enabled": True, "floor": 0.2}}})
    probs, info = curriculum.curriculum_probabilities(on, goals, tmp_path)
    assert info["curriculum_goals_uncertain"] == 1
    assert info["curriculum_share_uncertain"] == pytest.approx(probs[0])
    plan = sample_goals(goals, ["d0", "d1"], 2000, "seed", probs)
    counts = Counter(g for s in plan.values() for g in s)
    assert counts["a"] / 4000 == pytest.approx(probs[0], abs=0.03)
    assert counts["a"] > 2.5 * counts["b"]
    assert plan == sample_goals(goals, ["d0", "d1"], 2000, "seed", probs)  # seeded
    # without probabilities the plan is the uniform one it always was
    uniform = sample_goals(goals, ["d0"], 4000, "seed")
    assert max(Counter(uniform["d0"]).values()) / 4000 < 0.28


SEARCHES = [
    "What is the weather in Paris?",
    "Search for hotels in Paris",
    "What time is it in Oslo?",
]


def test_family_balanced_weights_give_every_family_the_same_share():
    goals = [*SEARCHES, "Set an alarm for 7am", "blorp zzz"]  # the last one no family reads
    w = curriculum.family_balanced_weights(goals)
    # three families (web_search x3, set_alarm, unknown): 1/3 each, split within a family
    assert w.tolist() == pytest.approx([1 / 9, 1 / 9, 1 / 9, 1 / 3, 1 / 3])
    with pytest.raises(ValueError, match="at least one goal"):
        curriculum.family_balanced_weights([])


def test_the_balanced_goal_mix_draws_families_evenly_and_keeps_the_curriculum(tmp_path):
    from distrl_tasks.stages import collect

    goals = [*SEARCHES, "Set an alarm for 7am"]
    serials = ["d0", "d1"]
    off = config_from_dict({})

    def drawn(cfg, mix: str) -> Counter:
        req = collect.CollectRequest(round=1, goal_mix=mix, episodes_per_device=3000)
        plan, _ = collect._plan(cfg, req.resolved(cfg), goals, serials, tmp_path)
        return Counter(g for s in plan.values() for g in s)

    file_mix, balanced = drawn(off, "file"), drawn(off, "balanced")
    assert file_mix["Set an alarm for 7am"] / 6000 == pytest.approx(1 / 4, abs=0.03)
    assert balanced["Set an alarm for 7am"] / 6000 == pytest.approx(1 / 2, abs=0.03)
    assert sum(balanced[g] for g in SEARCHES) / 6000 == pytest.approx(1 / 2, abs=0.03)
    # with the curriculum on, its weights multiply the families' (here: the alarm is boosted)
    data = rows("x0", goals[3], True, 1) + rows("x1", goals[3], False, 1)
    write_shard(data, tmp_path / "labeled", round=1, name="r1", feature_dim=DIM, gamma=0.5)
    on = config_from_dict(
        {
            "data": {"root": str(tmp_path)},
            "orchestration": {"curriculum": {"enabled": True, "floor": 0.0, "boost": 3.0}},
        }
    )
    both = drawn(on, "balanced")
    assert both["Set an alarm for 7am"] / 6000 == pytest.approx(3 / 4, abs=0.03)
    with pytest.raises(ValueError, match="goal_mix"):
        collect.CollectRequest(round=1, goal_mix="families").resolved(off)


def test_the_configured_goal_mix_is_rl_collections_default_and_the_bootstraps_own_wins(tmp_path):
    from distrl_tasks.stages import collect

    goals = [*SEARCHES, "Set an alarm for 7am"]
    rl = config_from_dict({"orchestration": {"curriculum": {"goal_mix": "balanced"}}})
    resolved = collect.CollectRequest(round=1, episodes_per_device=3000).resolved(rl)
    assert resolved.goal_mix == "balanced"
    plan, _ = collect._plan(rl, resolved, goals, ["d0", "d1"], tmp_path)
    drawn = Counter(g for s in plan.values() for g in s)
    assert drawn["Set an alarm for 7am"] / 6000 == pytest.approx(1 / 2, abs=0.03)
    # the continuous round draws through the same function, with the same weights
    probs, _ = curriculum.collection_probabilities(rl, goals, tmp_path / "labeled", "balanced")
    assert probs is not None and probs[-1] == pytest.approx(1 / 2)
    assert curriculum.collection_probabilities(rl, goals, tmp_path, "file") == (None, {})
    # an explicit mix (the bootstrap's agent.sft.goal_mix) is kept
    own = collect.CollectRequest(round=1, goal_mix="file").resolved(rl)
    assert own.goal_mix == "file"
    with pytest.raises(ValueError, match=r"orchestration\.curriculum\.goal_mix: must be one of"):
        config_from_dict({"orchestration": {"curriculum": {"goal_mix": "families"}}})
