"""What A-RIDE reads from the replay besides windows: returns, filters, critic targets.

Helpers of :mod:`distrl_tasks.algorithms.distrl` kept apart so that module stays about the
loss. Trajectories are read column by column (``reward``, ``penalty``, ``done``), without
building feature tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import torch

from distrl_tasks.algorithms import critic_fit
from distrl_tasks.algorithms import functional as F
from distrl_tasks.algorithms.batch import Batch, batch_from_sequences, batch_from_trajectories
from distrl_tasks.data.replay import ReplayBuffer, SequenceBatch


def check_form(
    *,
    sequence_length: int,
    ratio_clip: float,
    top_p: float,
    windows: int | None,
    **choices: tuple[str, tuple[str, ...]],
) -> None:
    """Raise ``ValueError`` naming the first out-of-range :class:`DistRL` argument; each of
    ``choices`` is ``name=(value, allowed values)``."""
    if sequence_length < 1:
        raise ValueError(f"sequence_length must be >= 1, got {sequence_length}")
    if not 0.0 <= ratio_clip < 1.0:
        raise ValueError(f"ratio_clip must be in [0, 1), got {ratio_clip}")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if windows is not None and windows < 1:
        raise ValueError(f"windows must be >= 1, got {windows}")
    for name, (value, allowed) in choices.items():
        if value not in allowed:
            raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")


def _step_rewards(traj: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """``(reward + penalty, done)`` of one trajectory's steps as ``[n]`` arrays."""
    for name in ("reward", "penalty", "done"):
        if name not in traj.column_names:
            raise ValueError(f"replay rows have no '{name}' column")
    if traj.column("reward").null_count:
        raise ValueError("replay rows have null 'reward': train only on labeled trajectories")
    reward = traj.column("reward").to_numpy(zero_copy_only=False).astype(np.float32)
    penalty = traj.column("penalty").to_numpy(zero_copy_only=False).astype(np.float32)
    done = traj.column("done").to_numpy(zero_copy_only=False).astype(bool)
    return reward + penalty, done


def trajectory_returns(replay: ReplayBuffer, slots: np.ndarray) -> np.ndarray:
    """``[N]`` undiscounted return ``sum_t (reward_t + penalty_t)`` of each trajectory.

    The top-p filter's score: success first, and among successes the fewer penalties the better.
    """
    return np.asarray(
        [float(_step_rewards(replay.trajectory(int(s)))[0].sum()) for s in slots],
        dtype=np.float64,
    )


def trajectory_successes(replay: ReplayBuffer, slots: np.ndarray) -> np.ndarray:
    """``[N]`` 1.0 where the trajectory's last reward is positive (the evaluator's verdict)."""
    out = []
    for s in slots:
        traj = replay.trajectory(int(s))
        out.append(float(traj.column("reward")[traj.num_rows - 1].as_py() > 0))
    return np.asarray(out, dtype=np.float64)


def top_p_slots(replay: ReplayBuffer, top_p: float) -> tuple[np.ndarray, dict[str, float]]:
    """The slots of the top ``top_p`` stored trajectories by return, and what share they are
    (``train/kept_frac``) and how many of them succeeded (``train/kept_success``)."""
    slots = np.asarray(replay.slots, dtype=np.int64)
    keep = F.top_p_filter(torch.as_tensor(trajectory_returns(replay, slots)), top_p).numpy()
    kept = slots[keep]
    return kept, {
        "train/kept_frac": float(keep.mean()),
        "train/kept_success": float(trajectory_successes(replay, kept).mean()),
    }


def step_targets_of(replay: ReplayBuffer, slots: np.ndarray, gamma: float) -> torch.Tensor:
    """``[sum n]`` on-policy critic targets ``clip(G_t, 0, 1)`` of every step of ``slots``."""
    parts = []
    for s in slots:
        rewards, dones = _step_rewards(replay.trajectory(int(s)))
        parts.append(
            critic_fit.step_targets(
                torch.as_tensor(rewards).unsqueeze(0), torch.as_tensor(dones).unsqueeze(0), gamma
            ).squeeze(0)
        )
    if not parts:
        raise ValueError("the replay buffer is empty")
    return torch.cat(parts)


def max_length(replay: ReplayBuffer) -> int:
    """Steps of the longest stored trajectory (the window of whole-trajectory sampling)."""
    return max(replay.trajectory(int(s)).num_rows for s in replay.slots)


def concat_sequences(first: SequenceBatch, second: SequenceBatch) -> SequenceBatch:
    """Windows of ``first`` then ``second`` (same length) as one :class:`SequenceBatch`."""
    if first.length != second.length:
        raise ValueError(f"window lengths differ: {first.length} vs {second.length}")
    return SequenceBatch(
        rows=pa.concat_tables([first.rows, second.rows]).combine_chunks(),
        next_rows=pa.concat_tables([first.next_rows, second.next_rows]).combine_chunks(),
        mask=np.concatenate([first.mask, second.mask]),
        slots=np.concatenate([first.slots, second.slots]),
        starts=np.concatenate([first.starts, second.starts]),
        weights=np.concatenate([first.weights, second.weights]).astype(np.float32),
    )


def sample_windows(
    replay: ReplayBuffer,
    batch_size: int,
    rng: np.random.Generator,
    *,
    length: int,
    starts: str,
    beta: float,
    horizons: Mapping[str, int],
    kept_slots: np.ndarray | None,
) -> Batch:
    """``batch_size`` prioritized windows of ``length`` steps; with ``kept_slots`` (a top-p
    filter) the critic trains on them and ``batch_size`` more, drawn uniformly from the kept
    trajectories, train the actor (``Batch.critic_rows`` / ``actor_rows``, critic rows first).
    ``starts`` is ``ReplayBuffer.sample_sequences``'s; ``rng`` draws everything."""
    seq = replay.sample_sequences(
        batch_size, length, prioritized=True, beta=beta, rng=rng, starts=starts
    )
    if kept_slots is None:
        return batch_from_sequences(seq, replay, horizons=horizons)
    actor = replay.sample_sequences(batch_size, length, rng=rng, starts=starts, among=kept_slots)
    batch = batch_from_sequences(concat_sequences(seq, actor), replay, horizons=horizons)
    batch.critic_rows = torch.arange(2 * batch_size) < batch_size
    batch.actor_rows = ~batch.critic_rows
    return batch


@torch.no_grad()
def replay_calibration(
    replay: ReplayBuffer,
    values_of: Callable[[Batch], torch.Tensor],
    gamma: float,
    chunk: int,
    horizons: Mapping[str, int],
) -> dict[str, float]:
    """Calibration metrics (``critic/...``) of a step critic on every stored trajectory.

    Args:
        replay: The replay.
        values_of: ``[B, T]`` values ``V(s_t)`` of a whole-trajectory batch.
        gamma: Discount of the on-policy targets ``clip(G_t, 0, 1)``.
        chunk: Trajectories per batch.
        horizons: Step budget per task set.

    Returns:
        :func:`critic_fit.calibration` of every step (``critic/brier``, ``critic/ece``,
        ``critic/value_mean``, ``critic/target_mean``), plus ``critic/v0_mean`` against
        ``critic/success_rate`` (with ``gamma < 1``, ``V(s_0)`` estimates the discounted success
        probability, whose measured value is ``critic/v0_target_mean``).
    """
    slots = np.asarray(replay.slots, dtype=np.int64)
    values, targets, v0, t0 = [], [], [], []
    for i in range(0, len(slots), chunk):
        batch = batch_from_trajectories(replay, slots[i : i + chunk], horizons=horizons)
        v = values_of(batch).float().cpu()
        mask = batch.mask
        tgt = critic_fit.step_targets(batch.rewards + batch.penalties, batch.dones, gamma)
        tgt = torch.where(mask, tgt, 0.0)
        values.append(v[mask])
        targets.append(tgt[mask])
        v0.append(v[:, 0])
        t0.append(tgt[:, 0])
    out = critic_fit.calibration(torch.cat(values).clamp(0, 1), torch.cat(targets))
    metrics = {f"critic/{k}": val for k, val in out.items()}
    metrics["critic/v0_mean"] = float(torch.cat(v0).mean())
    metrics["critic/v0_target_mean"] = float(torch.cat(t0).mean())
    metrics["critic/success_rate"] = float(trajectory_successes(replay, slots).mean())
    return metrics
