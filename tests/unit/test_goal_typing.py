"""Typing from the goal: the goal in a prompt, the per-goal masks, the narrowed grammar masks."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from distrl_tasks.agents.goal_typing import (
    GoalTyping,
    restrict,
    typing_state,
    unfinished_word,
    words,
)
from distrl_tasks.protocol.actions import format_action, type_text
from distrl_tasks.protocol.observation import format_prompt, goal_of_prompt
from distrl_tasks.tasks import load_goals, parse_goal, unique_goals

PIECES = ["", " walmart", " target", "s", " a", ".com", '"', " Dell", "ell", "12", " ", " xps"]
GOAL = 'Search for "Dell XPS 12" on Walmart'


def test_goal_of_reads_the_goal_after_the_previous_action() -> None:
    typed = format_action(type_text("Goal: decoy"))
    prompt = format_prompt(GOAL, [typed])
    assert goal_of_prompt(prompt) == GOAL
    assert goal_of_prompt(format_prompt("Open the clock")) == "Open the clock"
    assert goal_of_prompt("no marks at all") == "no marks at all"


def test_words_and_the_unfinished_word() -> None:
    assert words("What's the news in Bolivia?") == ["what", "s", "the", "news", "in", "bolivia"]
    assert unfinished_word("dell xp") == "xp"
    assert unfinished_word("dell ") == "" and unfinished_word("") == ""
    assert typing_state("xps dell xp") == ("xp", ("dell", "xps"))
    assert typing_state("dell, ") == ("", ("dell",)) and typing_state("") == ("", ())


def test_masks_allow_what_continues_goal_words_only() -> None:
    typing = GoalTyping(PIECES)
    start = typing.mask(GOAL)
    # between words: a goal word or its start may begin (" walmart", "s" of search, " Dell",
    # "12", " xps"), symbols and spaces are free; " target", " a", ".com" (com) and "ell" start
    # no goal word
    assert start.tolist() == [True, True, False, True, False, False, True, True, False, True,
                              True, True]  # fmt: skip
    assert typing.mask(GOAL) is start  # remembered per goal and text state
    # inside "d": "ell" finishes "dell"; a space or a quote after "d" would leave "d" unfinished
    # as a whole word, which the goal does not have
    inside = typing.mask(GOAL, "d")
    assert inside[PIECES.index("ell")] and not inside[PIECES.index(" ")]
    assert not inside[PIECES.index('"')] and not inside[PIECES.index(" walmart")]
    # after a whole word a space, a quote or another word may follow
    after = typing.mask(GOAL, "walmart")
    assert after[PIECES.index(" ")] and after[PIECES.index('"')] and after[PIECES.index(" xps")]
    # the same id lists for another goal differ: ".com" is allowed where "com" is a goal word
    assert typing.mask("go to target.com", "target")[PIECES.index(".com")]


def test_no_word_is_typed_more_often_than_the_goal_holds_it() -> None:
    typing = GoalTyping(PIECES)
    # the query typed once: " Dell" and " xps" are used up, so neither may start again (a copy
    # that runs past the closing quote); "12" is still left, symbols and spaces stay free
    done = typing.mask(GOAL, "dell xps ")
    assert not done[PIECES.index(" Dell")] and not done[PIECES.index(" xps")]
    assert done[PIECES.index("12")] and done[PIECES.index('"')] and done[PIECES.index(" ")]
    # inside a used-up word's start nothing may finish it: "d" + "ell" would be a second "dell"
    assert not typing.mask(GOAL, "dell d")[PIECES.index("ell")]
    # a word the goal holds twice may be typed twice, not three times
    twice = 'Search for "dell dell" on Walmart'
    assert typing.mask(twice, "dell")[PIECES.index(" Dell")]
    assert not typing.mask(twice, "dell dell")[PIECES.index(" Dell")]
    # a piece that finishes one word and starts another counts both
    assert typing.mask(GOAL, "walmart")[PIECES.index(" Dell")]
    assert not typing.mask(GOAL, "dell walmart")[PIECES.index(" Dell")]


@pytest.mark.parametrize("task_set", ["general", "webshop"])
def test_no_goal_parameter_repeats_a_word_its_goal_holds_fewer_times(task_set: str) -> None:
    """What the expert types comes from the goal's parameters (its query, site, app, contact):
    where those are made of goal words, none holds a word more often than the goal, so the count
    forbids nothing a demonstration types."""
    checked = 0
    for split in ("train", "test"):
        for goal in unique_goals(load_goals(task_set, split)):
            have = Counter(words(goal))
            for value in parse_goal(goal).params.values():
                need = Counter(words(value)) if isinstance(value, str) else Counter()
                if need and all(w in have for w in need):
                    checked += 1
                    assert all(have[w] >= n for w, n in need.items()), (goal, value)
    assert checked > 300


def test_position_masks_follow_the_typed_text() -> None:
    typing = GoalTyping(PIECES)
    prompt = format_prompt(GOAL)
    # states: 0 = format, 1 = inside the text; the row writes a quote (format), then types
    # " Dell", " xps" and a quote inside the text
    ids = [6, 7, 11, 6]
    walk = [0, 1, 1, 1]
    masks = typing.position_masks([prompt], [ids], [walk], [False, True], width=5)
    assert masks.shape == (1, 5, len(PIECES))
    assert bool(masks[0, 0].all()) and bool(masks[0, 4].all())  # outside the text, padding
    assert torch.equal(masks[0, 1], typing.mask(GOAL))
    assert torch.equal(masks[0, 2], typing.mask(GOAL, " Dell"))
    assert torch.equal(masks[0, 3], typing.mask(GOAL, " Dell xps"))
    # a decoding loop's tracker gives the same masks as it advances
    run = typing.start([prompt])
    in_text = torch.tensor([False, True])
    for pos, (token, state) in enumerate(zip(ids, walk, strict=True)):
        if state:
            assert torch.equal(run.masks("cpu")[0], masks[0, pos])
        run.advance(torch.tensor([state]), torch.tensor([token]), in_text)
    assert run.typed == [' Dell xps"']


def test_restrict_narrows_only_text_states_and_never_empties_a_row() -> None:
    # 3 states (1 is inside the typed text), 4 ids; one row whose rule allows ids 0 and 2
    in_text = torch.tensor([False, True, False])
    text_ok = torch.tensor([[True, False, True, False]])
    keep = torch.tensor([[[True, True, True, True], [False, True, True, True],
                          [False, True, False, True], [True, True, False, False]]])  # fmt: skip
    states = torch.tensor([[0, 1, 1, 2]])
    out = restrict(keep, states, text_ok, in_text)
    assert out.tolist() == [[
        [True, True, True, True],  # outside the text: the grammar's ids
        [False, False, True, False],  # inside: only what both allow
        [False, True, False, True],  # inside, but nothing both allow: the grammar's ids
        [True, True, False, False],  # outside again
    ]]  # fmt: skip
    # per-position masks give the same
    assert torch.equal(restrict(keep, states, text_ok[:, None].expand(1, 4, 4), in_text), out)
    # teacher forcing keeps the written id where the grammar allows it (position 1 writes id 3)
    forced = restrict(keep, states, text_ok, in_text, written=torch.tensor([[0, 3, 1, 0]]))
    assert forced[0, 1].tolist() == [False, False, True, True]
    assert forced[0, 2].tolist() == out[0, 2].tolist()
    # [B, V] masks at [B] states (the reference loop's shapes)
    flat = restrict(keep[0, 1:3], torch.tensor([1, 0]), text_ok.expand(2, -1), in_text)
    assert flat.tolist() == [[False, False, True, False], [False, True, False, True]]
