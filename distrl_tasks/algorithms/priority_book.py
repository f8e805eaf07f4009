"""DPER bookkeeping for DistRL: the loss's deferred priorities and the priorities kept by id.

A loss computes new priorities for the trajectories of the windows it trained on; they are
written to the replay at the next draw (:meth:`PriorityBook.flush`), after the optimizer step,
so one step never samples from priorities it is still changing. With ``keep`` (DistRL's
``rescore: new``) the book also remembers every scored trajectory's last priority by id: the
replay is rebuilt from shards every round, and a trajectory scored in an earlier round gets its
priority back instead of a re-score (the learner saves :attr:`PriorityBook.known` with its
state). Ape-X keeps priorities the same way: set once when data arrives, then updated only where
a loss sampled.
"""

from __future__ import annotations

import numpy as np

from distrl_tasks.data.replay import ReplayBuffer


def _trajectory_id(replay: ReplayBuffer, slot: int) -> str:
    return replay.trajectory(slot).column("trajectory_id")[0].as_py()


class PriorityBook:
    """Deferred and known DPER priorities of one replay.

    Args:
        keep: remember priorities by trajectory id across rounds (``rescore: new``).
    """

    def __init__(self, keep: bool) -> None:
        self.keep = bool(keep)
        self.known: dict[str, float] = {}  # trajectory id -> last priority (only with keep)
        self._pending: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def pending(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The deferred ``(slots, priorities)``, or None."""
        return self._pending

    def defer(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        """Hold ``[B]`` priorities for the trajectories in ``slots`` until the next flush."""
        self._pending = (np.asarray(slots).copy(), np.asarray(priorities, dtype=np.float64))

    def discard(self) -> None:
        """Drop the deferred priorities (a full re-score is about to replace them)."""
        self._pending = None

    def flush(self, replay: ReplayBuffer) -> None:
        """Write the deferred priorities; slots evicted since are skipped. With ``keep`` the
        written ones become known (a loss scored them). A slot drawn twice gets its last."""
        if self._pending is None:
            return
        slots, prio = self._pending
        self._pending = None
        live = np.isin(slots, np.asarray(replay.slots, dtype=np.int64))
        if not live.any():
            return
        replay.update_priorities(slots[live], prio[live])
        if self.keep:
            for slot, p in zip(slots[live].tolist(), prio[live].tolist(), strict=True):
                self.known[_trajectory_id(replay, slot)] = p

    def remember(self, replay: ReplayBuffer) -> None:
        """Flush, and forget trajectories the replay no longer stores. The known priorities
        are what was scored or written by a loss, never the replay's placeholders: a replay
        rebuilt from shards holds the highest priority seen for every trajectory until scored.
        Nothing happens without ``keep``."""
        if not self.keep:
            return
        self.flush(replay)
        stored = set(replay.trajectory_ids())
        self.known = {i: p for i, p in self.known.items() if i in stored}

    def restore(self, replay: ReplayBuffer) -> np.ndarray:
        """Give the stored trajectories their known priorities; returns the slots that still
        need scoring (``[N]`` int64, oldest first: every slot without ``keep``)."""
        slots = np.asarray(replay.slots, dtype=np.int64)
        if not self.keep:
            self.discard()
            return slots
        self.remember(replay)
        ids = replay.trajectory_ids()  # aligned with replay.slots: both oldest first
        known = np.array([i in self.known for i in ids], dtype=bool)
        if known.any():
            kept = [self.known[i] for i, k in zip(ids, known, strict=True) if k]
            replay.update_priorities(slots[known], kept)
        return slots[~known]

    def scored(self, replay: ReplayBuffer, slots: np.ndarray, priorities: np.ndarray) -> None:
        """Record priorities just computed for ``slots`` (with ``keep``; else nothing)."""
        if self.keep:
            ids = [_trajectory_id(replay, s) for s in np.asarray(slots).tolist()]
            self.known.update(zip(ids, np.asarray(priorities).tolist(), strict=True))
