"""run_rounds' control flow with fake stages: rounds, modes, the wall-clock budget."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from distrl_tasks import pipeline
from distrl_tasks.config import Config
from distrl_tasks.pipeline import RoundResult, budget_allows, run_rounds


class FakeClock:
    """``time.perf_counter`` for the pipeline module: advances only when told to."""

    def __init__(self) -> None:
        self.now = 100.0
        self.lock = threading.Lock()

    def perf_counter(self) -> float:
        with self.lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds


@pytest.fixture
def fake_stages(monkeypatch):
    """Stages that take ``collect_s`` / ``learn_s`` seconds of the fake clock."""
    from distrl_tasks.stages import bootstrap, farm

    clock = FakeClock()
    timing = {"collect_s": 0.0, "learn_s": 0.0}
    calls: list[tuple[str, int]] = []
    monkeypatch.setattr(pipeline, "time", clock)
    monkeypatch.setattr(bootstrap, "run", lambda cfg, **kw: {"version": 1, "skipped": True})
    monkeypatch.setattr(farm, "start", lambda cfg, **kw: {"host": "h", "port": 1})
    monkeypatch.setattr(farm, "stop", lambda cfg, **kw: calls.append(("stop", 0)))

    def collect(cfg, round_, workdir, record):
        clock.advance(timing["collect_s"])
        calls.append(("collect", round_))
        return {"round": round_, "trajectories": 4}

    def learn(cfg, result, workdir):
        clock.advance(timing["learn_s"])
        calls.append(("learn", result.round))
        result.evaluate = {"success_rate": 0.5}

    monkeypatch.setattr(pipeline, "_collect", collect)
    monkeypatch.setattr(pipeline, "_learn", learn)
    return timing, calls


def _cfg(asynchronous: bool) -> Config:
    base = Config()
    return dataclasses.replace(
        base,
        orchestration=dataclasses.replace(base.orchestration, asynchronous=asynchronous),
    )


def test_budget_allows_by_hand() -> None:
    assert budget_allows(1e9, None)  # no budget
    assert budget_allows(0.0, 1.0)  # the first round always starts
    assert budget_allows(5.0, 10.0, [2.0, 3.0])  # 5 + 2.5 <= 10
    assert budget_allows(7.5, 10.0, [2.0, 3.0])  # exactly on the budget
    assert not budget_allows(7.6, 10.0, [2.0, 3.0])
    assert not budget_allows(10.5, 10.0)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_without_a_budget_every_round_runs(fake_stages, asynchronous: bool) -> None:
    timing, calls = fake_stages
    timing.update(collect_s=0.0, learn_s=1.0)
    seen: list[int] = []
    collected: list[int] = []
    results = run_rounds(
        _cfg(asynchronous),
        rounds=3,
        on_round=lambda r: seen.append(r.round),
        on_collect=lambda r, m, t: collected.append(r),
    )
    assert [r.round for r in results] == [1, 2, 3] == seen
    assert collected == [1, 2, 3]
    assert [r.finished_s for r in results] == [1.0, 2.0, 3.0]
    assert all(r.seconds == 1.0 for r in results)
    assert calls[-1] == ("stop", 0)  # the farm is always stopped


def test_sync_budget_stops_before_a_round_expected_to_overrun(fake_stages) -> None:
    timing, calls = fake_stages
    timing.update(collect_s=1.0, learn_s=2.0)  # rounds of 3 s
    results = run_rounds(_cfg(False), rounds=100, budget_s=10.0)
    # starts at 0, 3, 6 (6 + 3 <= 10); at 9, 9 + 3 > 10: stop
    assert [r.round for r in results] == [1, 2, 3]
    assert [r.collected_s for r in results] == [1.0, 4.0, 7.0]
    assert [r.finished_s for r in results] == [3.0, 6.0, 9.0]
    assert ("collect", 4) not in calls


def test_async_budget_learns_in_time_and_reports_the_last_collection(fake_stages) -> None:
    timing, calls = fake_stages
    timing.update(collect_s=0.0, learn_s=2.0)  # the learner sets the pace: 2 s per round
    collected: list[int] = []
    results = run_rounds(
        _cfg(True), rounds=100, budget_s=7.0, on_collect=lambda r, m, t: collected.append(r)
    )
    # learned at 2, 4, 6; after round 3, 6 + 2 > 7: stop; round 4 was collected, never learned
    assert [r.finished_s for r in results] == [2.0, 4.0, 6.0]
    assert collected == [1, 2, 3, 4]
    assert ("learn", 4) not in calls


def test_budget_must_be_positive(fake_stages) -> None:
    with pytest.raises(ValueError, match="budget_s"):
        run_rounds(_cfg(False), rounds=1, budget_s=0.0)


def test_round_result_row_is_unchanged() -> None:
    row = RoundResult(2, collect={"trajectories": 3}, seconds=1.5).row()
    assert row["round"] == 2 and row["trajectories"] == 3 and row["seconds"] == 1.5
