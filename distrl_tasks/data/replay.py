"""Replay over the recent window of trajectories: circular, uniform or prioritized.

The buffer holds whole trajectories (one Arrow table each, rows sorted by step) and counts its
capacity in transitions, and optionally in trajectories too: adding a trajectory evicts the
oldest ones, whole, until it fits both.
Priorities are per trajectory, as in DistRL's DPER: a trajectory is drawn with probability
``P(i) = p_i^alpha / sum_k p_k^alpha`` and a transition (or window start) is then drawn
uniformly inside it. Importance weights are ``(N * P(i))^-beta`` with ``N`` the number of stored
trajectories, divided by the largest weight any stored trajectory could get, so they lie in
(0, 1] and do not depend on which trajectories happened to be drawn.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distrl_tasks.data.shards import read_verified, verify_shards
from distrl_tasks.data.sumtree import SumTree
from distrl_tasks.data.trajectories import group_trajectories


@dataclass(frozen=True)
class TransitionBatch:
    """Sampled single steps.

    Attributes:
        rows: One row per sample (all columns the trajectories carry).
        slots: Buffer slot of each sample's trajectory (pass to ``update_priorities``).
        steps: Step index of each sample inside its trajectory.
        weights: Importance weights, float32 (all 1 for uniform sampling).
    """

    rows: pa.Table
    slots: np.ndarray
    steps: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True)
class SequenceBatch:
    """Sampled windows of ``length`` contiguous steps, each inside one trajectory.

    Attributes:
        rows: ``B * length`` rows; row ``b * length + j`` is step ``starts[b] + j``. Steps past a
            short trajectory's end repeat its last step and are masked out.
        next_rows: For each window, the step right after it (its last step when the window
            reaches the trajectory's end; ``done`` then zeroes the bootstrap anyway).
        mask: ``[B, length]`` bool, True for real steps.
        slots: Buffer slot of each window's trajectory.
        starts: First step of each window.
        weights: Importance weights ``[B]``, float32.
    """

    rows: pa.Table
    next_rows: pa.Table
    mask: np.ndarray
    slots: np.ndarray
    starts: np.ndarray
    weights: np.ndarray

    @property
    def length(self) -> int:
        """Window length L."""
        return int(self.mask.shape[1])

    def column(self, name: str) -> np.ndarray:
        """A numeric column reshaped to ``[B, L]``."""
        values = self.rows.column(name).to_numpy(zero_copy_only=False)
        return values.reshape(self.mask.shape)


class ReplayBuffer:
    """Circular trajectory buffer with uniform and prioritized sampling (seeded)."""

    def __init__(
        self,
        capacity: int,
        *,
        alpha: float = 0.5,
        beta: float = 0.4,
        eps: float = 1e-6,
        seed: int | None = 0,
        max_trajectories: int | None = None,
    ) -> None:
        """Create an empty buffer.

        Args:
            capacity: Most transitions (steps) held at once.
            alpha: Priority exponent (0 = uniform over trajectories).
            beta: Importance-weight exponent (0 = no correction).
            eps: Added to every priority so that none is exactly 0.
            seed: Seed of the numpy Generator behind every draw.
            max_trajectories: Most trajectories held at once (None: only ``capacity`` bounds).
        """
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1 transition, got {capacity}")
        if max_trajectories is not None and max_trajectories < 1:
            raise ValueError(f"max_trajectories must be >= 1, got {max_trajectories}")
        if not 0.0 <= alpha <= 1.0 or not 0.0 <= beta <= 1.0:
            raise ValueError(f"alpha and beta must be in [0, 1], got {alpha}, {beta}")
        if eps <= 0:
            raise ValueError(f"eps must be > 0, got {eps}")
        self.capacity = int(capacity)
        self.max_trajectories = max_trajectories
        self.alpha, self.beta, self.eps = float(alpha), float(beta), float(eps)
        self._rng = np.random.default_rng(seed)
        # At most `capacity` trajectories fit (each has >= 1 step), so that many slots suffice.
        self._trajs: list[pa.Table | None] = [None] * self.capacity
        self._lengths = np.zeros(self.capacity, dtype=np.int64)
        self._priorities = np.zeros(self.capacity, dtype=np.float64)
        self._tree = SumTree(self.capacity)
        self._order: deque[int] = deque()  # live slots, oldest first
        self._next = 0
        self._size = 0
        self._max_priority = 1.0

    def __len__(self) -> int:
        """Number of stored transitions."""
        return self._size

    @property
    def num_trajectories(self) -> int:
        """Number of stored trajectories."""
        return len(self._order)

    @property
    def slots(self) -> list[int]:
        """Live slots, oldest trajectory first."""
        return list(self._order)

    def trajectory(self, slot: int) -> pa.Table:
        """The trajectory stored in ``slot``."""
        traj = self._trajs[slot] if 0 <= slot < self.capacity else None
        if traj is None:
            raise KeyError(f"slot {slot} holds no trajectory (never filled or evicted)")
        return traj

    def trajectory_ids(self) -> list[str]:
        """Ids of the stored trajectories, oldest first."""
        return [self.trajectory(s).column("trajectory_id")[0].as_py() for s in self._order]

    def priorities(self) -> np.ndarray:
        """Raw (un-exponentiated) priorities of the live slots, oldest first."""
        return self._priorities[list(self._order)].copy()

    def add(self, trajectory: pa.Table, priority: float | None = None) -> int:
        """Store one trajectory, evicting the oldest whole trajectories until it fits.

        It fits when the transitions stay within ``capacity`` and the trajectories within
        ``max_trajectories``.

        Args:
            trajectory: Rows of one trajectory with at least ``trajectory_id`` and ``step``.
            priority: Initial priority; default the largest priority seen so far.

        Returns:
            The slot it was stored in.
        """
        traj = _checked_trajectory(trajectory)
        n = traj.num_rows
        if n > self.capacity:
            raise ValueError(f"trajectory of {n} steps exceeds the capacity {self.capacity}")
        while self._size + n > self.capacity or (
            self.max_trajectories is not None and len(self._order) >= self.max_trajectories
        ):
            self._evict_oldest()
        slot = self._next
        self._next = (self._next + 1) % self.capacity
        self._trajs[slot] = traj
        self._lengths[slot] = n
        self._order.append(slot)
        self._size += n
        self._set_priorities(
            np.array([slot]), [self._max_priority if priority is None else priority]
        )
        return slot

    def extend(self, table: pa.Table) -> list[int]:
        """Split rows into trajectories and add them oldest first; returns their slots."""
        return [self.add(traj) for traj in group_trajectories(table)]

    def update_priorities(
        self, slots: Sequence[int] | np.ndarray, priorities: Sequence[float] | np.ndarray
    ) -> None:
        """Set the priority of the trajectories in ``slots`` (e.g. from a sampled batch)."""
        idx = np.asarray(slots, dtype=np.int64).reshape(-1)
        if len(idx) != len(np.asarray(priorities).reshape(-1)):
            raise ValueError(f"{len(idx)} slots but {len(priorities)} priorities")
        for s in idx:
            if not 0 <= s < self.capacity or self._trajs[s] is None:
                raise KeyError(f"slot {s} holds no trajectory (evicted since it was sampled?)")
        self._set_priorities(idx, priorities)

    def sample_transitions(
        self,
        batch_size: int,
        *,
        prioritized: bool = False,
        beta: float | None = None,
        rng: np.random.Generator | None = None,
    ) -> TransitionBatch:
        """Draw single steps: uniformly over all transitions, or by trajectory priority.

        ``rng`` draws instead of the buffer's own generator (e.g. one stream per learner rank).
        """
        self._check_batch(batch_size)
        rng = rng or self._rng
        if prioritized:
            slots, weights = self._prioritized_slots(batch_size, beta, rng)
            steps = (rng.random(batch_size) * self._lengths[slots]).astype(np.int64)
        else:
            slots, steps = self._uniform_positions(batch_size, self._lengths, rng)
            weights = np.ones(batch_size, dtype=np.float32)
        return TransitionBatch(self._gather(slots, steps), slots, steps, weights)

    def sample_sequences(
        self,
        batch_size: int,
        length: int,
        *,
        prioritized: bool = False,
        beta: float | None = None,
        rng: np.random.Generator | None = None,
        starts: str = "fit",
        among: Sequence[int] | np.ndarray | None = None,
    ) -> SequenceBatch:
        """Draw windows of ``length`` contiguous steps that never cross a trajectory boundary.

        Window starts (``starts``):

        * ``"fit"``: a trajectory of n steps offers ``max(n - length + 1, 1)`` starts, so every
          window is full, but a trajectory's last steps start few windows (with n = 10 and
          length 3 the last step is in 1 window of 8, against 3 for a middle step).
        * ``"step"``: every stored step is a start, equally likely; windows that reach past the
          trajectory's end are padded (masked), so the rewarded last steps are sampled as often
          as stored.

        Uniform mode draws uniformly among all starts; prioritized mode draws a trajectory by
        priority, then a start uniformly inside it. ``among`` restricts a uniform draw to those
        slots (e.g. the top-p filtered trajectories); it cannot be combined with
        ``prioritized``. Trajectories shorter than ``length`` give one padded window. ``rng``
        draws instead of the buffer's own generator.
        """
        self._check_batch(batch_size)
        rng = rng or self._rng
        if length < 1:
            raise ValueError(f"sequence length must be >= 1, got {length}")
        if starts not in ("fit", "step"):
            raise ValueError(f"starts must be 'fit' or 'step', got {starts!r}")
        if starts == "fit":
            n_starts = np.maximum(self._lengths - length + 1, 1) * (self._lengths > 0)
        else:
            n_starts = self._lengths.copy()
        if prioritized:
            if among is not None:
                raise ValueError("prioritized sampling cannot be restricted to `among` slots")
            slots, weights = self._prioritized_slots(batch_size, beta, rng)
            starts_ = (rng.random(batch_size) * n_starts[slots]).astype(np.int64)
        else:
            live = None if among is None else self._live_subset(among)
            slots, starts_ = self._uniform_positions(batch_size, n_starts, rng, live)
            weights = np.ones(batch_size, dtype=np.float32)
        offsets = starts_[:, None] + np.arange(length)[None, :]
        lengths = self._lengths[slots][:, None]
        mask = offsets < lengths
        steps = np.minimum(offsets, lengths - 1)
        rows = self._gather(np.repeat(slots, length), steps.reshape(-1))
        next_steps = np.minimum(starts_ + length, self._lengths[slots] - 1)
        next_rows = self._gather(slots, next_steps)
        return SequenceBatch(rows, next_rows, mask, slots, starts_, weights)

    def _live_subset(self, among: Sequence[int] | np.ndarray) -> np.ndarray:
        """``among`` as live slots (raises when none of them is stored any more)."""
        wanted = np.asarray(among, dtype=np.int64).reshape(-1)
        live = wanted[np.isin(wanted, np.fromiter(self._order, dtype=np.int64))]
        if len(live) == 0:
            raise ValueError("none of the `among` slots holds a trajectory any more")
        return np.unique(live)

    @classmethod
    def from_shards(
        cls,
        directory: str | os.PathLike,
        window_rounds: int,
        *,
        capacity: int,
        split: str | None = "train",
        labeled_only: bool = True,
        columns: Sequence[str] | None = None,
        **kwargs: float | int | None,
    ) -> ReplayBuffer:
        """Fill a buffer from the newest ``window_rounds`` rounds of verified shards.

        Trajectories are added oldest first, so when they exceed ``capacity`` the newest ones
        stay. ``columns`` limits what is loaded (``trajectory_id``, ``step``, ``round`` and
        ``label_status`` are always added); other keyword arguments go to the constructor.
        """
        if window_rounds < 1:
            raise ValueError(f"window_rounds must be >= 1, got {window_rounds}")
        shards = verify_shards(directory).shards
        newest = sorted({r for s in shards for r in s.rounds})[-window_rounds:]
        if columns is not None:
            needed = ["trajectory_id", "step", "round", "label_status"]
            columns = list(dict.fromkeys([*needed, *columns]))
        table = read_verified(shards, rounds=newest, split=split, columns=columns)
        if labeled_only:
            table = table.filter(pc.equal(table.column("label_status"), "labeled"))
        buffer = cls(capacity, **kwargs)  # type: ignore[arg-type]
        buffer.extend(table)
        return buffer

    def _evict_oldest(self) -> None:
        slot = self._order.popleft()
        self._size -= int(self._lengths[slot])
        self._trajs[slot] = None
        self._lengths[slot] = 0
        self._priorities[slot] = 0.0
        self._tree.update(slot, 0.0)

    def _set_priorities(self, slots: np.ndarray, priorities: Sequence[float]) -> None:
        p = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError(f"priorities must be finite and >= 0, got {p}")
        self._priorities[slots] = p
        self._tree.update(slots, (p + self.eps) ** self.alpha)
        self._max_priority = max(self._max_priority, float(p.max()))

    def _check_batch(self, batch_size: int) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if self._size == 0:
            raise ValueError("cannot sample from an empty replay buffer")

    def _uniform_positions(
        self,
        n: int,
        counts: np.ndarray,
        rng: np.random.Generator,
        live: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw uniformly among ``sum(counts[live])`` positions; return (slots, offsets)."""
        if live is None:
            live = np.fromiter(self._order, dtype=np.int64)
        cum = np.cumsum(counts[live])
        draws = rng.integers(0, cum[-1], size=n)
        pos = np.searchsorted(cum, draws, side="right")
        return live[pos], draws - (cum[pos] - counts[live][pos])

    def _prioritized_slots(
        self, n: int, beta: float | None, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        beta = self.beta if beta is None else beta
        slots = self._tree.sample(n, rng)
        total = self._tree.total
        probs = self._tree.get(slots) / total
        min_prob = self._tree.get(np.fromiter(self._order, dtype=np.int64)).min() / total
        count = self.num_trajectories
        weights = (count * probs) ** -beta / (count * min_prob) ** -beta
        return slots, weights.astype(np.float32)

    def _gather(self, slots: np.ndarray, steps: np.ndarray) -> pa.Table:
        parts = [self._trajs[s].slice(int(t), 1) for s, t in zip(slots, steps, strict=True)]
        return pa.concat_tables(parts).combine_chunks()


def _checked_trajectory(table: pa.Table) -> pa.Table:
    """Sort one trajectory by step and check it is whole: a single id, steps 0..n-1."""
    for name in ("trajectory_id", "step"):
        if name not in table.column_names:
            raise ValueError(f"trajectory is missing column '{name}'")
    if table.num_rows == 0:
        raise ValueError("cannot add an empty trajectory")
    ids = pc.unique(table.column("trajectory_id"))
    if len(ids) != 1:
        raise ValueError(f"expected one trajectory, got ids {ids.to_pylist()[:5]}")
    traj = table.sort_by("step")
    steps = traj.column("step").to_numpy()
    if not np.array_equal(steps, np.arange(len(steps))):
        raise ValueError(f"trajectory {ids[0]} has steps {steps.tolist()}, expected 0..n-1")
    return traj.combine_chunks()
