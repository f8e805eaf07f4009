"""Conversion of replay rows (pyarrow) into the training Batch: layout, neighbours, errors."""

from __future__ import annotations

import datetime as dt
import io

import numpy as np
import pytest
import torch
from PIL import Image

from distrl_tasks.algorithms.batch import (
    batch_from_sequences,
    batch_from_trajectories,
    batch_from_transitions,
)
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.schema import table_from_rows

DIM = 3
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)


def png(shade: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (2, 2), (shade, 0, 0)).save(buf, "PNG")
    return buf.getvalue()


def rows(tid: str, rewards: list[float], *, task_set: str = "general", pv: int = 0, **kw) -> list:
    """One labeled trajectory whose step t has features [10*k + t] * DIM (k from the id)."""
    k = {"a": 1, "b": 2, "c": 3}[tid]
    n = len(rewards)
    out = []
    for t in range(n):
        last = t == n - 1
        out.append(
            {
                "trajectory_id": tid,
                "step": t,
                "round": 0,
                "task": f"goal {tid}",
                "task_set": task_set,
                "split": "train",
                "device": "emulator-5554",
                "policy_version": pv,
                "prompt": f"p{tid}{t}",
                "action": f"a{tid}{t}",
                "action_type": "PRESS_BACK",
                "invalid": t == 1,
                "screenshot_png": png(t),
                "final_screenshot_png": png(99) if last else None,
                "image_features": kw.get("features", np.full(DIM, 10.0 * k + t)),
                "final_image_features": np.full(DIM, -1.0 * k) if last else None,
                "behavior_log_prob": -0.5 * (t + 1),
                "reward": rewards[t],
                "penalty": -0.25 if t == 0 else 0.0,
                "done": last,
                "mc_return": 0.0,
                "trajectory_reward": float(sum(rewards)),
                "evaluator": "oracle",
                "label_status": "labeled",
                "started_at": T0,
                "ended_at": T0,
            }
        )
    return out


@pytest.fixture
def replay() -> ReplayBuffer:
    buf = ReplayBuffer(100, seed=0)
    buf.extend(table_from_rows(rows("a", [0.0, 0.0, 1.0]) + rows("b", [0.0], pv=3), DIM))
    return buf


def test_whole_trajectories_pad_and_link_neighbours(replay):
    b = batch_from_trajectories(replay, [0, 1])
    assert (b.batch_size, b.length) == (2, 3)
    assert b.mask.tolist() == [[True, True, True], [True, False, False]]
    assert b.prompts == ["pa0", "pa1", "pa2", "pb0", "pb0", "pb0"]  # padding repeats the last
    assert b.next_prompts[:3] == ["pa1", "pa2", "pa2"]
    assert b.features[0, :, 0].tolist() == [10.0, 11.0, 12.0]
    assert b.prev_features[0, :, 0].tolist() == [0.0, 10.0, 11.0]  # nothing before step 0
    # next state: the following step, then the final observation after the last step
    assert b.next_features[0, :, 0].tolist() == [11.0, 12.0, -1.0]
    assert b.next_features[1, 0, 0].item() == -2.0
    assert b.rewards.tolist() == [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    assert b.penalties.tolist() == [[-0.25, 0.0, 0.0], [-0.25, 0.0, 0.0]]
    assert b.dones.tolist() == [[False, False, True], [True, False, False]]
    assert b.invalid.tolist() == [[False, True, False], [False, False, False]]
    assert b.behavior_log_probs[0].tolist() == [-0.5, -1.0, -1.5]
    assert b.final_rewards.tolist() == [1.0, 0.0]
    assert b.lengths.tolist() == [3, 1] and b.horizons.tolist() == [10, 10]
    assert b.policy_versions.tolist() == [0, 3] and b.tasks == ["goal a", "goal b"]
    assert b.weights.tolist() == [1.0, 1.0] and b.slots.tolist() == [0, 1]
    assert b.flat_index().tolist() == [0, 1, 2, 3]
    obs = b.observations(torch.tensor([1]))
    assert obs[0].prompt == "pa1" and obs[0].image_features[0].item() == 11.0


def test_sequences_read_the_frame_before_the_window_and_the_step_after_it(replay):
    seen = set()
    for _ in range(20):
        seq = replay.sample_sequences(4, 2)
        b = batch_from_sequences(seq, replay)
        for i, (slot, start) in enumerate(zip(b.slots, b.starts, strict=True)):
            seen.add((int(slot), int(start)))
            if slot == 0 and start == 1:  # window = steps 1, 2 of "a"
                assert b.prev_features[i, :, 0].tolist() == [10.0, 11.0]
                assert b.next_features[i, :, 0].tolist() == [12.0, -1.0]
                assert b.next_prompts[2 * i] == "pa2"
            if slot == 0 and start == 0:  # window = steps 0, 1; the next state is step 2
                assert b.next_features[i, 1, 0].item() == 12.0
                assert b.next_prompts[2 * i + 1] == "pa2"
                assert not b.dones[i].any()
    assert {(0, 0), (0, 1), (1, 0)} == seen


def test_transitions_are_length_one_windows(replay):
    tb = replay.sample_transitions(16)
    b = batch_from_transitions(tb, replay)
    assert b.length == 1 and b.mask.all()
    for i in range(b.batch_size):
        step = int(b.steps[i, 0])
        if int(b.slots[i]) == 0 and step < 2:
            assert b.next_features[i, 0, 0].item() == 11.0 + step
            assert b.prev_features[i, 0, 0].item() == (0.0 if step == 0 else 9.0 + step)


def test_batch_moves_to_a_device(replay):
    b = batch_from_trajectories(replay, [0]).to("cpu")
    assert b.features.dtype == torch.float32 and b.mask.dtype == torch.bool


def test_unlabeled_rows_are_refused():
    r = rows("a", [0.0, 1.0])
    r[1]["reward"] = None
    buf = ReplayBuffer(10)
    buf.extend(table_from_rows(r, DIM))
    with pytest.raises(ValueError, match="labeled"):
        batch_from_trajectories(buf, buf.slots)


def test_missing_features_need_a_featurizer():
    r = rows("c", [0.0, 1.0], features=None)
    buf = ReplayBuffer(10)
    buf.extend(table_from_rows(r, DIM))
    with pytest.raises(ValueError, match="image_features"):
        batch_from_trajectories(buf, buf.slots)
    b = batch_from_trajectories(buf, buf.slots, featurize=lambda pngs: np.full((len(pngs), 3), 7))
    assert b.features.unique().tolist() == [7.0]


def test_unknown_task_set_and_empty_slots_are_clear_errors():
    buf = ReplayBuffer(10)
    buf.extend(table_from_rows(rows("a", [1.0], task_set="shopping"), DIM))
    with pytest.raises(ValueError, match="horizon for task set"):
        batch_from_trajectories(buf, buf.slots)
    assert batch_from_trajectories(buf, buf.slots, horizons={"shopping": 7}).horizons.item() == 7
    with pytest.raises(ValueError, match="at least one slot"):
        batch_from_trajectories(buf, [])
