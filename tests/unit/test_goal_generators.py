"""Goal generators: seeded, parse as their family, never a test goal (text or task)."""

from __future__ import annotations

from collections import Counter

import pytest

from distrl_tasks.sim.apps import PLAY_STORE
from distrl_tasks.tasks.generators import (
    PATTERNS,
    HeldOut,
    balanced_corpus,
    family_shares,
    generate_goals,
    normalise,
    solvable,
    task_key,
)
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.task import TASK_SETS
from distrl_tasks.tasks.taskset import load_goals


@pytest.fixture(scope="module")
def goals() -> list[str]:
    return generate_goals(600, seed=3)


def test_seeded_and_distinct(goals: list[str]) -> None:
    assert generate_goals(600, seed=3) == goals
    assert generate_goals(600, seed=4) != goals
    assert len({normalise(g) for g in goals}) == len(goals)


def test_never_a_test_goal_by_text_or_task(goals: list[str]) -> None:
    tests = [g for ts in TASK_SETS for g in load_goals(ts, "test")]
    texts = {normalise(g) for g in tests}
    keys = {task_key(t.family, t.params) for t in map(parse_goal, tests)}
    for goal in goals:
        task = parse_goal(goal)
        assert normalise(goal) not in texts, goal
        assert task_key(task.family, task.params) not in keys, goal


def test_every_family_is_generated(goals: list[str]) -> None:
    families = {parse_goal(g).family for g in goals}
    # the families whose patterns are almost all AitW test goals may be missing from 600
    rare = {"chrome_new", "check_email", "show_notifications", "calendar_view"}
    assert set(PATTERNS) - rare <= families


def test_task_set_filter() -> None:
    shop = generate_goals(50, seed=0, task_set="webshop")
    assert {parse_goal(g).task_set for g in shop} == {"webshop"}
    general = generate_goals(50, seed=0, task_set="general")
    assert {parse_goal(g).task_set for g in general} == {"general"}


def test_exclusion_on_params_not_only_text() -> None:
    # same task, different wording: excluded because (family, params) match
    held_out = HeldOut(["Set an alarm for 7pm"])
    assert "Set alarm at 7pm" in held_out
    assert "Set an alarm for 8pm" not in held_out
    goals = generate_goals(40, seed=1, families=["set_alarm"], exclude=held_out)
    assert all(parse_goal(g).params["time"] != "19:00" for g in goals)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown families"):
        generate_goals(1, families=["nope"])
    with pytest.raises(ValueError, match="unknown task set"):
        generate_goals(1, task_set="nope")
    with pytest.raises(ValueError, match="run out"):
        generate_goals(500, families=["check_email"])


def test_balanced_corpus_gives_every_family_its_share() -> None:
    extra = load_goals("general", "train")
    corpus = balanced_corpus("general", 3000, 8, seed=0, extra=extra)
    assert len(corpus.train) == 3000
    counts = Counter(parse_goal(g).family for g in corpus.train)
    assert counts["web_search"] == 600  # 20%: a minority, not AitW's two thirds
    others = [n for f, n in counts.items() if f != "web_search"]
    assert len(others) == 14 and max(others) - min(others) <= 1
    # only the text of test goals is kept out, so the slot-free families have goals too
    tests = {normalise(g) for ts in TASK_SETS for g in load_goals(ts, "test")}
    assert not {normalise(g) for g in corpus.train + corpus.heldout} & tests
    assert corpus.families["chrome_new"]["distinct"] >= 20
    assert corpus.families["show_notifications"]["distinct"] >= 10
    # held-out goals: every family, texts never trained on
    assert {parse_goal(g).family for g in corpus.heldout} == set(counts)
    assert not {normalise(g) for g in corpus.heldout} & {normalise(g) for g in corpus.train}
    assert all(f["heldout"] == 8 for f in corpus.families.values())
    assert balanced_corpus("general", 3000, 8, seed=0, extra=extra) == corpus


def test_balanced_corpus_quotas_sum_exactly_and_text_only_exclusion() -> None:
    corpus = balanced_corpus("general", 31, 1, seed=2)
    assert len(corpus.train) == 31
    assert sum(f["train"] for f in corpus.families.values()) == 31
    # another wording of a test task is fine for the corpus: only test *texts* are out
    assert "Set alarm at 7pm" not in HeldOut(["Set an alarm for 7pm"], match_tasks=False)
    assert "set an alarm for 7PM!" in HeldOut(["Set an alarm for 7pm"], match_tasks=False)
    assert family_shares("webshop") == {"webshop": 1.0}
    with pytest.raises(ValueError, match="search_share"):
        family_shares("general", search_share=1.0)
    with pytest.raises(ValueError, match="sizes"):
        balanced_corpus("general", -1, 1)


def test_installing_the_play_store_is_never_a_goal() -> None:
    # its setup uninstalls the store it would be installed from: no agent could solve it
    task = parse_goal("Install the Play Store app")
    assert task.family == "install_app" and not solvable(task.family, task.params)
    for seed in range(3):
        installs = generate_goals(60, seed=seed, families=["install_app"])
        assert all(parse_goal(g).params["package"] != PLAY_STORE for g in installs)
    extra = ["Install the Play Store app", "Get Play Store", "Install Spotify"]
    corpus = balanced_corpus("general", 200, 1, seed=0, extra=extra)
    assert not {"Install the Play Store app", "Get Play Store"} & set(corpus.train + corpus.heldout)
