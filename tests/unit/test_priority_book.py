"""PriorityBook: deferred DPER priorities and priorities kept by trajectory id (hand-built)."""

from __future__ import annotations

import numpy as np

from distrl_tasks.algorithms.priority_book import PriorityBook
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.schema import table_from_rows
from tests.unit.test_critic_prefit import DIM, trajectory


def replay_of(*ids: str, capacity: int = 1000) -> ReplayBuffer:
    buf = ReplayBuffer(capacity, seed=0)
    for k, tid in enumerate(ids):
        buf.extend(table_from_rows(trajectory(tid, 3, k % 2 == 0, seed=k), DIM))
    return buf


def by_id(replay: ReplayBuffer) -> dict[str, float]:
    return dict(zip(replay.trajectory_ids(), replay.priorities().tolist(), strict=True))


def test_flush_writes_the_last_of_a_twice_drawn_slot_and_skips_evicted_ones():
    replay = replay_of("a", "b", "c", capacity=9)  # three 3-step trajectories fill it
    book = PriorityBook(keep=True)
    book.defer(np.array([0, 1, 0]), np.array([5.0, 2.0, 7.0]))
    replay.extend(table_from_rows(trajectory("d", 3, True, seed=9), DIM))  # evicts "a" (slot 0)
    book.flush(replay)
    assert book.pending is None
    assert by_id(replay)["b"] == 2.0
    assert book.known == {"b": 2.0}  # slot 0 was evicted: neither written nor known


def test_restore_gives_known_priorities_back_and_names_the_rest():
    replay = replay_of("a", "b", "c")
    book = PriorityBook(keep=True)
    book.known = {"a": 0.25, "c": 3.0, "gone": 9.0}
    todo = book.restore(replay)
    assert todo.tolist() == [replay.slots[1]]  # only "b" needs scoring
    assert by_id(replay)["a"] == 0.25 and by_id(replay)["c"] == 3.0
    assert "gone" not in book.known  # no longer stored: forgotten
    book.scored(replay, todo, np.array([1.5]))
    assert book.known == {"a": 0.25, "b": 1.5, "c": 3.0}


def test_without_keep_nothing_is_kept_and_everything_is_rescored():
    replay = replay_of("a", "b")
    book = PriorityBook(keep=False)
    book.defer(np.array([0]), np.array([4.0]))
    assert book.restore(replay).tolist() == replay.slots  # all of them
    assert book.pending is None  # a full re-score replaces what a loss deferred
    book.scored(replay, np.array(replay.slots), np.array([1.0, 2.0]))
    book.remember(replay)
    assert book.known == {}


def test_remember_keeps_scored_and_loss_written_priorities_not_placeholders():
    replay = replay_of("a", "b", "c")
    book = PriorityBook(keep=True)
    book.scored(replay, np.array(replay.slots[:2]), np.array([1.0, 2.0]))
    book.defer(np.array([replay.slots[1]]), np.array([0.5]))
    book.remember(replay)
    assert book.known == {"a": 1.0, "b": 0.5}  # "c" holds only its placeholder: not known
    rebuilt = replay_of("b", "c")  # the next round's replay: "a" left the window
    assert rebuilt.priorities().tolist() == [1.0, 1.0]  # placeholders
    todo = book.restore(rebuilt)
    assert book.known == {"b": 0.5} and by_id(rebuilt)["b"] == 0.5
    assert todo.tolist() == [rebuilt.slots[1]]
