"""Typing from the goal: the goal in a prompt, the per-goal masks, the narrowed grammar masks."""

from __future__ import annotations

import torch

from distrl_tasks.agents.goal_typing import GoalTyping, goal_of, restrict
from distrl_tasks.protocol.actions import format_action, type_text
from distrl_tasks.protocol.observation import format_prompt

PIECES = ["", " walmart", " target", "s", " a", ".com", '"', " Dell", "ell", "12"]


def test_goal_of_reads_the_goal_between_the_action_and_the_screen() -> None:
    typed = format_action(type_text("Goal: decoy"))
    prompt = format_prompt("Search for dell on Walmart", [typed], screen="Search [0.1, 0.2]")
    assert goal_of(prompt) == "Search for dell on Walmart"
    assert goal_of(format_prompt("Open the clock")) == "Open the clock"
    assert goal_of("no marks at all") == "no marks at all"


def test_masks_allow_goal_pieces_and_short_ones_only() -> None:
    typing = GoalTyping(PIECES)
    mask = typing.mask("Search for Dell XPS on Walmart 12")
    # " walmart"/" Dell"/"ell"/"12" occur (case-folded); " target" and ".com" do not; "" (ids
    # that write nothing, eos among them), "s", " a" and the quote have fewer than two letters
    # or digits and stay free
    assert mask.tolist() == [True, True, False, True, True, False, True, True, True, True]
    assert typing.mask("Search for Dell XPS on Walmart 12") is mask  # remembered per goal
    # a word start needs the word to start in the goal: " ell" is not in " ... dell ..."
    assert GoalTyping([" ell"]).mask("dell").tolist() == [False]
    rows = typing.masks([format_prompt("go to target.com"), format_prompt("a")])
    assert rows.shape == (2, len(PIECES))
    assert rows[0, 2] and rows[0, 5] and not rows[1, 2] and not rows[1, 5]


def test_restrict_narrows_only_text_states_and_never_empties_a_row() -> None:
    # 3 states (1 is inside the typed text), 4 ids; one row whose goal allows ids 0 and 2
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
    # teacher forcing keeps the written id where the grammar allows it (position 1 writes id 3)
    forced = restrict(keep, states, text_ok, in_text, written=torch.tensor([[0, 3, 1, 0]]))
    assert forced[0, 1].tolist() == [False, False, True, True]
    assert forced[0, 2].tolist() == out[0, 2].tolist()
    # [B, V] masks at [B] states (the reference loop's shapes)
    flat = restrict(keep[0, 1:3], torch.tensor([1, 0]), text_ok.expand(2, -1), in_text)
    assert flat.tolist() == [[False, False, True, False], [False, True, False, True]]
