"""SFT to a plateau of the held-out loss, in parts that resume to the same result."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distrl_tasks.agents.autoui import build_tiny_model
from distrl_tasks.agents.policy import AutoUIPolicy
from distrl_tasks.agents.tokenizer import ByteTokenizer
from distrl_tasks.algorithms.sft import Demo, SFTSettings, heldout_loss, train_sft
from distrl_tasks.protocol.actions import ActionType, format_action, key, tap
from distrl_tasks.protocol.observation import format_prompt

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def demos(n: int, seed: int) -> list[Demo]:
    rng = np.random.default_rng(seed)
    actions = [format_action(key(ActionType.PRESS_HOME), plan=""),
               format_action(tap(0.5, 0.25), plan="")]  # fmt: skip
    out = []
    for i in range(n):
        target = actions[i % 2]
        feats = rng.standard_normal(1408).astype(np.float16)
        out.append(Demo(format_prompt(f"goal {i % 2}"), feats, target, "x"))
    return out


def policy() -> AutoUIPolicy:
    return AutoUIPolicy(build_tiny_model(seed=0).eval(), ByteTokenizer(), max_new_tokens=24)


SETTINGS = dict(steps=400, batch_size=2, lr=3e-3, warmup_steps=2, eval_every=5, patience=2)


def test_training_stops_on_the_plateau_and_keeps_the_best_weights() -> None:
    train, held = demos(8, 0), demos(4, 1)
    p = policy()
    before = heldout_loss(p, held)
    result = train_sft(p, train, SFTSettings(**SETTINGS), heldout=held)
    assert result.stopped == "plateau" and result.steps < 400
    steps = [s for s, _ in result.heldout]
    assert steps == list(range(5, result.steps + 1, 5))
    # two plateaus cut the rate (back to the best weights each time); the third ends training
    assert len(result.decays) == 2 and result.decays[0] < result.decays[1] < result.steps
    best = min(v for _, v in result.heldout)
    assert dict(result.heldout)[result.best_step] == best
    # the kept weights are the best measurement's, not the last step's
    assert heldout_loss(p, held) == pytest.approx(best, rel=1e-5)
    assert best < 0.2 * before


def test_a_run_in_parts_resumes_to_the_same_weights(tmp_path) -> None:
    train, held = demos(8, 0), demos(4, 1)
    settings = SFTSettings(**{**SETTINGS, "steps": 30, "patience": 50})
    whole = policy()
    reference = train_sft(whole, train, settings, heldout=held, seed=3)
    assert reference.stopped == "steps"
    # the same run stopped at a ceiling of 10 steps, then called with the full ceiling
    first = policy()
    part = train_sft(first, train, SFTSettings(**{**SETTINGS, "steps": 10, "patience": 50}),
                     heldout=held, seed=3, state_dir=tmp_path / "state")  # fmt: skip
    assert part.steps == 10
    resumed = policy()
    result = train_sft(resumed, train, settings, heldout=held, seed=3, state_dir=tmp_path / "state")
    assert result.parts == 2 and result.steps == 30
    assert [s for s, _ in result.heldout] == [s for s, _ in reference.heldout]
    assert [v for _, v in result.heldout] == pytest.approx([v for _, v in reference.heldout])
    for a, b in zip(whole.model.parameters(), resumed.model.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    # a finished run is not trained again: the next call returns its result
    again = policy()
    done = train_sft(again, train, settings, heldout=held, seed=3, state_dir=tmp_path / "state")
    assert done.steps == 30 and done.parts == 3
    for a, b in zip(whole.model.parameters(), again.model.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_time_budget_ends_a_part_that_the_next_call_continues(tmp_path) -> None:
    train, held = demos(8, 0), demos(4, 1)
    budget = SFTSettings(**{**SETTINGS, "steps": 20, "patience": 50, "time_budget_s": 0.0})
    p = policy()
    part = train_sft(p, train, budget, heldout=held, state_dir=tmp_path)
    assert part.stopped == "time_budget" and part.steps == 0
    go_on = SFTSettings(**{**SETTINGS, "steps": 20, "patience": 50})
    result = train_sft(p, train, go_on, heldout=held, state_dir=tmp_path)
    assert result.steps == 20 and result.parts == 2 and result.stopped == "steps"


def test_bad_plateau_settings() -> None:
    with pytest.raises(ValueError, match="patience"):
        SFTSettings(eval_every=5, patience=0)
    with pytest.raises(ValueError, match="at least one"):
        heldout_loss(policy(), [])


def test_a_finished_run_goes_on_when_more_rate_cuts_are_allowed(tmp_path) -> None:
    train, held = demos(8, 0), demos(4, 1)
    none = SFTSettings(**{**SETTINGS, "lr_decays": 0})
    p = policy()
    first = train_sft(p, train, none, heldout=held, state_dir=tmp_path)
    assert first.stopped == "plateau" and first.decays == []
    more = SFTSettings(**{**SETTINGS, "lr_decays": 1})
    second = train_sft(policy(), train, more, heldout=held, state_dir=tmp_path)
    assert second.parts == 2 and second.decays == [first.steps]
    assert second.stopped == "plateau" and second.steps > first.steps
    best = min(v for _, v in second.heldout)
    assert best <= min(v for _, v in first.heldout)
