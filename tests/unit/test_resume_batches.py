"""A resumed asynchronous run learns the batches the killed run had learned or merged.

The learner of ``distrl round`` takes every collection finished since its last round; after a
``kill -9`` the same command reuses the finished collections at once, so without care it would
cut them into other batches than the killed run did: learn a round whose data the killed run had
merged into a newer one (training that data under two numbers), or count its rounds differently.
"""

from __future__ import annotations

from pathlib import Path

from distrl_tasks.orchestration import pipeline
from distrl_tasks.stages.common import round_dir


class FakeActor:
    """Hands out scripted lists of finished collections, one list per ``take``."""

    def __init__(self, *takes: list[int]) -> None:
        self.takes = [[(r, {"round": r}, 0.0) for r in take] for take in takes]
        self.ended = False

    def take(self) -> list[tuple[int, dict, float]]:
        if not self.takes:
            self.ended = True
            return []
        return self.takes.pop(0)


def _manifests(workdir: Path, round_: int, *stages: str) -> None:
    for stage in stages:
        path = round_dir(workdir, round_) / f"{stage}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")


def _rounds(batch: list[tuple[int, dict, float]]) -> list[int]:
    return [r for r, _, _ in batch]


def test_a_fresh_run_takes_what_finished(tmp_path: Path) -> None:
    pending: list = []
    assert _rounds(pipeline._next_batch(FakeActor([1, 2]), pending, tmp_path, 4)) == [1, 2]
    assert pending == []


def test_a_resumed_run_learns_the_killed_runs_batches(tmp_path: Path) -> None:
    # the killed run learned [1], then merged 2 and 3 into round 4 and died training it
    _manifests(tmp_path, 1, "label", "version", "train")
    _manifests(tmp_path, 2, "label")
    _manifests(tmp_path, 3, "label")
    _manifests(tmp_path, 4, "label", "version")
    actor, pending = FakeActor([1, 2], [3], [4, 5]), []
    assert _rounds(pipeline._next_batch(actor, pending, tmp_path, 4)) == [1]  # cut after 1
    assert _rounds(pipeline._next_batch(actor, pending, tmp_path, 4)) == [2, 3, 4]  # extended
    assert _rounds(pipeline._next_batch(actor, pending, tmp_path, 4)) == [5]
    assert pending == []


def test_a_batch_never_outgrows_the_actors_lead(tmp_path: Path) -> None:
    # a merged-looking round at the lead: the actor can collect no more, so learn what is there
    _manifests(tmp_path, 1, "label")
    _manifests(tmp_path, 2, "label")
    actor = FakeActor([1], [2], [3])
    assert _rounds(pipeline._next_batch(actor, [], tmp_path, 2)) == [1, 2]
