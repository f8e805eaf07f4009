"""Trajectories in a table of steps: grouping rows per episode, Monte-Carlo returns, observations.

Works on any table in the shard schema (:mod:`distrl_tasks.data.schema`), sorted or not: every
function orders rows canonically by (trajectory_id, step) first.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from distrl_tasks.data.schema import SchemaError, column_values, fail_rows, sort_steps


def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """Reward-to-go of one trajectory: ``G_t = r_t + gamma * G_{t+1}``, ``G_n = 0`` (float64)."""
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    out = np.zeros(len(rewards), dtype=np.float64)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out


def _bounds(ids: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of equal ids in a sorted id array."""
    if len(ids) == 0:
        return []
    cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(ids)]])
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def add_returns(table: pa.Table, gamma: float) -> pa.Table:
    """Fill ``mc_return`` and ``trajectory_reward`` from ``reward`` for every trajectory.

    Trajectories with any null reward (not labeled yet) keep nulls. Returns the table in
    canonical (trajectory_id, step) order with both columns as float32.
    """
    t = sort_steps(table)
    rewards = t.column("reward").to_numpy(zero_copy_only=False).astype(np.float64)
    null = t.column("reward").is_null().to_numpy(zero_copy_only=False)
    mc = np.full(t.num_rows, np.nan)
    total = np.full(t.num_rows, np.nan)
    for start, end in _bounds(column_values(t, "trajectory_id")):
        if not null[start:end].any():
            mc[start:end] = discounted_returns(rewards[start:end], gamma)
            total[start:end] = rewards[start:end].sum()
    for name, values in (("mc_return", mc), ("trajectory_reward", total)):
        arr = pa.array(values.astype(np.float32), mask=np.isnan(values), type=pa.float32())
        if name in t.column_names:
            t = t.set_column(t.column_names.index(name), name, arr)
        else:
            t = t.append_column(name, arr)
    return t


def check_returns(table: pa.Table, gamma: float, atol: float = 1e-4) -> None:
    """Raise SchemaError unless labeled rows' ``mc_return``/``trajectory_reward`` match rewards."""
    expected = add_returns(table, gamma)
    t = sort_steps(table)
    ids = column_values(t, "trajectory_id")
    for name in ("mc_return", "trajectory_reward"):
        want = expected.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
        have = t.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
        check = ~np.isnan(want)
        bad = np.zeros(len(ids), dtype=bool)
        bad[check] = ~np.isclose(have[check], want[check], atol=atol, rtol=1e-4)
        fail_rows(name, f"does not match the rewards with gamma={gamma}", bad, ids)


def group_trajectories(table: pa.Table) -> list[pa.Table]:
    """Split rows into one table per trajectory, each sorted by step.

    Trajectories come oldest first: by round, then the time of step 0, then id (columns that
    are absent are skipped).
    """
    t = sort_steps(table)
    spans = _bounds(column_values(t, "trajectory_id"))
    keys = [n for n in ("round", "started_at", "trajectory_id") if n in t.column_names]
    firsts = t.take([s for s, _ in spans]).select(keys).to_pylist() if spans else []
    order = sorted(range(len(spans)), key=lambda i: tuple(firsts[i][k] for k in keys))
    return [t.slice(spans[i][0], spans[i][1] - spans[i][0]) for i in order]


def observations(trajectory: pa.Table) -> list[bytes]:
    """The n+1 screenshots of an n-step trajectory: s_0..s_{n-1} and the final observation."""
    shots = sort_steps(trajectory)
    final = shots.column("final_screenshot_png")[-1].as_py()
    if final is None:
        raise SchemaError("column 'final_screenshot_png': missing on the last step")
    return [*shots.column("screenshot_png").to_pylist(), final]
