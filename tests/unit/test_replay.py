"""Tests of the sum-tree and the circular, uniform and prioritized replay buffer."""

from __future__ import annotations

import datetime as dt
import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.shards import write_shard
from distrl_tasks.data.sumtree import SumTree
from distrl_tasks.data.trajectories import discounted_returns


def traj(tid: str, n: int, rnd: int = 0) -> pa.Table:
    """A minimal trajectory table: the columns the buffer needs plus a reward."""
    return pa.table(
        {
            "trajectory_id": [tid] * n,
            "step": pa.array(range(n), pa.int32()),
            "round": pa.array([rnd] * n, pa.int32()),
            "reward": pa.array([float(t) for t in range(n)], pa.float32()),
        }
    )


# --- sum-tree -------------------------------------------------------------------------------


def test_sumtree_total_find_and_update_hand_computed():
    tree = SumTree(5)  # not a power of two: padding leaves must stay out of the way
    tree.update(np.arange(5), [1.0, 0.0, 3.0, 2.0, 0.0])
    assert tree.total == 6.0
    # cumulative ranges: leaf 0 [0,1), leaf 2 [1,4), leaf 3 [4,6)
    got = tree.find(np.array([0.0, 0.99, 1.0, 3.99, 4.0, 5.99, 6.0, 100.0]))
    np.testing.assert_array_equal(got, [0, 0, 2, 2, 3, 3, 3, 3])
    tree.update(2, 0.5)
    assert tree.total == 3.5 and tree.get(2)[0] == 0.5
    tree.update([0, 0], [7.0, 4.0])  # the last write to a repeated index wins
    assert tree.total == 6.5
    np.testing.assert_array_equal(tree.leaves, [4.0, 0.0, 0.5, 2.0, 0.0])


def test_sumtree_rejects_bad_input():
    tree = SumTree(3)
    with pytest.raises(ValueError, match="empty"):
        tree.find(np.array([0.0]))
    with pytest.raises(ValueError, match=">= 0"):
        tree.update(0, -1.0)
    with pytest.raises(ValueError, match="finite"):
        tree.update(0, np.inf)
    with pytest.raises(ValueError, match="out of range"):
        tree.update(3, 1.0)
    with pytest.raises(ValueError, match="capacity"):
        SumTree(0)


def test_sumtree_sampling_frequencies_match_values():
    tree = SumTree(6)
    values = np.array([1.0, 2.0, 0.0, 4.0, 8.0, 1.0])
    tree.update(np.arange(6), values)
    draws = tree.sample(200_000, np.random.default_rng(123))
    freq = np.bincount(draws, minlength=6) / len(draws)
    np.testing.assert_allclose(freq, values / values.sum(), atol=0.005)
    assert freq[2] == 0.0


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(0.0, 1e3), min_size=1, max_size=40),
    updates=st.lists(st.tuples(st.integers(0, 39), st.floats(0.0, 1e3)), max_size=30),
    fractions=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20),
)
def test_sumtree_properties(values, updates, fractions):
    tree = SumTree(len(values))
    tree.update(np.arange(len(values)), values)
    leaves = np.array(values, dtype=np.float64)
    for index, value in updates:
        index %= len(values)
        tree.update(index, value)
        leaves[index] = value
    np.testing.assert_allclose(tree.leaves, leaves)
    assert tree.total == pytest.approx(leaves.sum(), rel=1e-9, abs=1e-9)
    if leaves.sum() == 0:
        return
    u = np.array(fractions) * tree.total
    found = tree.find(u)
    cum = np.cumsum(leaves)
    assert np.all(leaves[found] > 0)  # never lands on an empty leaf
    tol = 1e-9 * max(1.0, cum[-1])
    assert np.all(cum[found] - leaves[found] <= u + tol)  # u lies inside the leaf's range ...
    assert np.all((u < cum[found] + tol) | (u >= np.nextafter(cum[-1], 0)))  # ... or is clipped


# --- circular storage -----------------------------------------------------------------------


def test_circular_eviction_drops_oldest_whole_trajectories():
    buf = ReplayBuffer(10, seed=0)
    for tid, n in (("a", 4), ("b", 3), ("c", 2)):
        buf.add(traj(tid, n))
    assert len(buf) == 9 and buf.trajectory_ids() == ["a", "b", "c"]
    buf.add(traj("d", 3))  # 12 > 10: a goes
    assert buf.trajectory_ids() == ["b", "c", "d"] and len(buf) == 8
    buf.add(traj("e", 5))  # 13 > 10: b goes, 10 fits exactly
    assert buf.trajectory_ids() == ["c", "d", "e"] and len(buf) == 10
    for i in range(25):  # wrap the slot ring several times
        buf.add(traj(f"s{i}", 1))
    assert buf.trajectory_ids() == [f"s{i}" for i in range(15, 25)]
    assert sorted(buf.slots) == list(range(10))
    with pytest.raises(ValueError, match="exceeds the capacity"):
        buf.add(traj("huge", 11))


def test_trajectory_cap_evicts_oldest_whatever_their_length():
    buf = ReplayBuffer(100, seed=0, max_trajectories=3)
    for tid, n in (("a", 1), ("b", 9), ("c", 2)):
        buf.add(traj(tid, n))
    buf.add(traj("d", 1))  # 13 transitions fit 100, but a 4th trajectory does not: a goes
    assert buf.trajectory_ids() == ["b", "c", "d"] and len(buf) == 12
    buf.add(traj("e", 98))  # 110 transitions: b and c go, then 99 fit and the cap holds
    assert buf.trajectory_ids() == ["d", "e"] and len(buf) == 99
    buf.add(traj("f", 1))
    buf.add(traj("g", 1))  # 101 transitions: d goes
    assert buf.trajectory_ids() == ["e", "f", "g"] and len(buf) == 100
    with pytest.raises(ValueError, match="max_trajectories"):
        ReplayBuffer(10, max_trajectories=0)


def test_add_checks_trajectory_shape_and_extend_groups_rows():
    buf = ReplayBuffer(20)
    with pytest.raises(ValueError, match="steps"):
        buf.add(traj("a", 3).filter(pa.array([True, False, True])))
    with pytest.raises(ValueError, match="one trajectory"):
        buf.add(pa.concat_tables([traj("a", 1), traj("b", 1)]))
    with pytest.raises(ValueError, match="missing column 'step'"):
        buf.add(traj("a", 1).drop_columns(["step"]))
    mixed = pa.concat_tables([traj("late", 2, rnd=1), traj("early", 3, rnd=0)])
    buf.extend(mixed.take([4, 0, 2, 1, 3]))
    assert buf.trajectory_ids() == ["early", "late"]  # oldest round first
    assert buf.trajectory(buf.slots[0]).column("step").to_pylist() == [0, 1, 2]
    with pytest.raises(ValueError, match="empty replay buffer"):
        ReplayBuffer(5).sample_transitions(1)


# --- uniform sampling -----------------------------------------------------------------------


def test_uniform_transitions_cover_every_step_equally():
    buf = ReplayBuffer(50, seed=1)
    for tid, n in (("a", 1), ("b", 3), ("c", 6)):
        buf.add(traj(tid, n))
    batch = buf.sample_transitions(20_000)
    keys = list(
        zip(batch.rows.column("trajectory_id").to_pylist(), batch.steps.tolist(), strict=True)
    )
    assert batch.rows.column("step").to_pylist() == batch.steps.tolist()
    counts = {k: keys.count(k) / len(keys) for k in set(keys)}
    assert len(counts) == 10
    assert all(abs(f - 0.1) < 0.01 for f in counts.values())
    assert np.all(batch.weights == 1.0)


def test_sequences_never_cross_trajectory_boundaries():
    buf = ReplayBuffer(40, seed=2)
    lengths = {"a": 1, "b": 2, "c": 3, "d": 5, "e": 8}
    for tid, n in lengths.items():
        buf.add(traj(tid, n))
    for prioritized in (False, True):
        batch = buf.sample_sequences(400, 3, prioritized=prioritized)
        assert batch.mask.shape == (400, 3) and batch.rows.num_rows == 1200
        ids = np.array(batch.rows.column("trajectory_id").to_pylist()).reshape(400, 3)
        steps = batch.column("step")
        for b in range(400):
            tid = buf.trajectory(batch.slots[b]).column("trajectory_id")[0].as_py()
            n, s = lengths[tid], batch.starts[b]
            assert set(ids[b]) == {tid}
            assert 0 <= s <= max(n - 3, 0)
            np.testing.assert_array_equal(batch.mask[b], s + np.arange(3) < n)
            np.testing.assert_array_equal(steps[b], np.minimum(s + np.arange(3), n - 1))
            assert batch.next_rows.column("step")[b].as_py() == min(s + 3, n - 1)
            assert batch.next_rows.column("trajectory_id")[b].as_py() == tid
    # Uniform over window starts: a,b,c give 1 start each, d 3, e 6 -> 12 starts.
    batch = buf.sample_sequences(24_000, 3)
    tids = batch.rows.column("trajectory_id").to_pylist()[::3]
    assert tids.count("e") / len(tids) == pytest.approx(6 / 12, abs=0.015)
    assert tids.count("a") / len(tids) == pytest.approx(1 / 12, abs=0.01)


def test_step_starts_sample_every_stored_step_equally_and_among_restricts():
    buf = ReplayBuffer(100, seed=0)
    buf.add(traj("a", 10))
    buf.add(traj("b", 2))
    n = 24000
    fit = buf.sample_sequences(n, 3, starts="fit")
    step = buf.sample_sequences(n, 3, starts="step")
    # "fit": a's 8 starts + b's 1 = 9; the last step of a (9) is never a start
    assert not np.any((fit.slots == 0) & (fit.starts == 9))
    # "step": 12 stored steps, each a start 1/12 of the time; windows past the end are masked
    counts = np.zeros(12)
    for slot, start in zip(step.slots, step.starts, strict=True):
        counts[start + (10 if slot == 1 else 0)] += 1
    np.testing.assert_allclose(counts / n, 1 / 12, atol=0.01)
    last = (step.slots == 0) & (step.starts == 9)
    assert last.any() and not step.mask[last][:, 1:].any()
    only_b = buf.sample_sequences(50, 3, starts="step", among=[1, 57])
    assert set(only_b.slots.tolist()) == {1}
    with pytest.raises(ValueError, match="prioritized"):
        buf.sample_sequences(2, 3, prioritized=True, among=[1])
    with pytest.raises(ValueError, match="starts"):
        buf.sample_sequences(2, 3, starts="end")


def test_same_seed_same_samples():
    def draw(seed: int) -> list[int]:
        buf = ReplayBuffer(30, seed=seed)
        for i in range(6):
            buf.add(traj(str(i), i + 1))
        return buf.sample_sequences(16, 2, prioritized=True).starts.tolist() + (
            buf.sample_transitions(16).steps.tolist()
        )

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


# --- prioritized sampling -------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_importance_weights_hand_computed_three_items(alpha):
    buf = ReplayBuffer(10, alpha=alpha, beta=0.5, eps=1e-12, seed=3)
    for tid, priority in (("x", 1.0), ("y", 2.0), ("z", 5.0)):
        buf.add(traj(tid, 1), priority=priority)
    scaled = np.array([1.0, 2.0, 5.0]) ** alpha
    probs = scaled / scaled.sum()
    # w_i = (N P_i)^-beta / max_j (N P_j)^-beta = sqrt(P_min / P_i) for beta = 0.5
    expected = np.sqrt(probs.min() / probs)
    if alpha == 1.0:
        np.testing.assert_allclose(expected, [1.0, np.sqrt(0.5), np.sqrt(0.2)])
    batch = buf.sample_transitions(30_000, prioritized=True)
    for slot, want in zip(buf.slots, expected, strict=True):
        got = batch.weights[batch.slots == slot]
        np.testing.assert_allclose(got, want, rtol=1e-5)
    freq = np.array([(batch.slots == s).mean() for s in buf.slots])
    np.testing.assert_allclose(freq, probs, atol=0.01)
    assert batch.weights.dtype == np.float32


def test_priority_updates_and_new_items_at_max_priority():
    buf = ReplayBuffer(10, alpha=1.0, beta=1.0, eps=1e-12, seed=4)
    slots = [buf.add(traj(t, 2)) for t in ("a", "b")]
    np.testing.assert_allclose(buf.priorities(), [1.0, 1.0])  # max priority starts at 1
    buf.update_priorities(slots, [9.0, 1.0])
    c = buf.add(traj("c", 2))
    np.testing.assert_allclose(buf.priorities(), [9.0, 1.0, 9.0])  # new item at the max seen
    batch = buf.sample_transitions(20_000, prioritized=True)
    assert (batch.slots == slots[1]).mean() == pytest.approx(1 / 19, abs=0.01)
    buf.update_priorities([c], [0.0])  # eps keeps it drawable in principle, never in practice
    assert not np.any(buf.sample_transitions(2_000, prioritized=True).slots == c)
    for t in ("d", "e", "f", "g"):
        buf.add(traj(t, 2))  # 14 > 10: a and b are evicted
    with pytest.raises(KeyError, match="evicted"):
        buf.update_priorities([slots[0]], [1.0])
    with pytest.raises(ValueError, match="finite"):
        buf.update_priorities([c], [-1.0])


# --- loading from shards --------------------------------------------------------------------


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("L", (2, 2)).save(out, "PNG")
    return out.getvalue()


def _rows(tid: str, n: int, rnd: int, labeled: bool = True) -> list[dict]:
    rewards = [0.0] * (n - 1) + [1.0]
    mc = discounted_returns(np.array(rewards), 0.5)
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=rnd)
    fixed = {
        "trajectory_id": tid,
        "round": rnd,
        "task": "Search for shoes",
        "task_set": "webshop",
        "split": "train",
        "device": "emulator-5556",
        "policy_version": rnd,
        "prompt": "p",
        "action": "a",
        "action_type": "PRESS_BACK",
        "invalid": False,
        "screenshot_png": _png(),
        "behavior_log_prob": -0.1,
        "penalty": 0.0,
        "trajectory_reward": 1.0 if labeled else None,
        "evaluator": "oracle" if labeled else None,
        "label_status": "labeled" if labeled else "unlabeled",
    }
    return [
        dict(
            fixed,
            step=t,
            reward=rewards[t] if labeled else None,
            mc_return=float(mc[t]) if labeled else None,
            done=t == n - 1,
            final_screenshot_png=_png() if t == n - 1 else None,
            started_at=t0 + dt.timedelta(seconds=t),
            ended_at=t0 + dt.timedelta(seconds=t + 1),
        )
        for t in range(n)
    ]


def test_from_shards_loads_the_newest_rounds(tmp_path):
    for rnd in range(4):
        rows = _rows(f"r{rnd}-a", 2, rnd) + _rows(f"r{rnd}-b", 3, rnd)
        rows += _rows(f"r{rnd}-unlabeled", 2, rnd, labeled=False)
        write_shard(rows, tmp_path, round=rnd, feature_dim=16, gamma=0.5)
    buf = ReplayBuffer.from_shards(tmp_path, window_rounds=2, capacity=100, seed=5, alpha=0.6)
    assert buf.trajectory_ids() == ["r2-a", "r2-b", "r3-a", "r3-b"]
    assert len(buf) == 10 and buf.alpha == 0.6
    small = ReplayBuffer.from_shards(tmp_path, 2, capacity=6, labeled_only=False)
    # Oldest first is r3-a, r3-b, r3-unlabeled (2 + 3 + 2 = 7 steps > 6): r3-a is evicted.
    assert small.trajectory_ids() == ["r3-b", "r3-unlabeled"]
    cols = ReplayBuffer.from_shards(tmp_path, 1, capacity=100, columns=["reward"])
    assert cols.trajectory(cols.slots[0]).column_names == [
        "trajectory_id",
        "step",
        "round",
        "label_status",
        "reward",
    ]
    batch = cols.sample_sequences(4, 3, prioritized=True)
    assert batch.column("reward").shape == (4, 3)
    empty = ReplayBuffer.from_shards(tmp_path / "none", 2, capacity=10)
    assert len(empty) == 0
