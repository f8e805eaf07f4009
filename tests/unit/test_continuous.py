"""The learner that never waits: version publishing cadence, replay ratio, staleness bound.

The board and the continuous learner run for real (threads, the real Learner with DistRL on the
tiny policy); only the actors are played by the test, which calls the board as a device thread
of ``collect_async`` does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
import torch

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.algorithms.factory import build_algorithm
from distrl_tasks.algorithms.learner import Learner
from distrl_tasks.config import AgentConfig, config_from_dict
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.schema import table_from_rows
from distrl_tasks.orchestration.actor_learner.board import BoardClosed, VersionBoard
from distrl_tasks.orchestration.actor_learner.continuous_learner import ContinuousLearner
from distrl_tasks.protocol.actions import ActionType, format_action, key

torch.set_num_threads(1)
DIM = 1408
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
HOME = format_action(key(ActionType.PRESS_HOME))


def trajectory(tid: str, n: int, success: bool, seed: int):
    rng = np.random.default_rng(seed)
    rows = [
        {
            "trajectory_id": tid,
            "step": t,
            "round": 1,
            "task": "Open the clock",
            "task_set": "general",
            "split": "train",
            "device": "emulator-5554",
            "policy_version": 0,
            "prompt": "Previous Actions: Goal: Open the clock",
            "action": HOME,
            "action_type": "PRESS_HOME",
            "invalid": False,
            "screenshot_png": None,
            "final_screenshot_png": None,
            "image_features": rng.normal(size=DIM),
            "final_image_features": rng.normal(size=DIM) if t == n - 1 else None,
            "behavior_log_prob": -2.0,
            "reward": float(success and t == n - 1),
            "penalty": 0.0,
            "done": t == n - 1,
            "mc_return": 0.0,
            "trajectory_reward": float(success),
            "evaluator": "oracle",
            "label_status": "labeled",
            "started_at": T0,
            "ended_at": T0,
        }
        for t in range(n)
    ]
    return table_from_rows(rows, DIM)


def wait_until(cond, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


# --- the staleness gate ---------------------------------------------------------------------


def test_an_actor_blocked_past_eta_starts_once_a_newer_version_is_published():
    board = VersionBoard("p0", 0, replay_ratio=1.0, publish_every_updates=1, max_staleness=1)
    first = board.dispatch()
    assert (first.policy, first.version) == ("p0", 0)
    board.finished(0, 2)  # 2 transitions: the learner owes 2 updates > eta * K = 1
    got: list = []
    actor = threading.Thread(target=lambda: got.append(board.dispatch()))
    actor.start()
    time.sleep(0.3)
    assert actor.is_alive() and not got  # blocked at the gate
    board.record_updates(1)
    board.publish("p1", 1)  # backlog 1 <= 1: admitted, with the new version
    actor.join(5)
    assert got and (got[0].policy, got[0].version) == ("p1", 1)
    assert got[0].waited_s >= 0.25
    assert board.actor_wait_s >= 0.25


def test_running_episodes_count_toward_the_backlog_and_close_releases_waiters():
    board = VersionBoard("p", 0, replay_ratio=0.5, publish_every_updates=2, max_staleness=1,
                         default_length=4.0)  # fmt: skip
    board.dispatch()  # backlog before: 0
    # one running episode of ~4 steps at ratio .5 owes 2 updates <= 1 * 2: a second one starts
    board.dispatch()
    assert board.backlog() == pytest.approx(4.0)
    errors: list = []

    def third():
        try:
            board.dispatch()
        except BoardClosed as exc:
            errors.append(exc)

    t = threading.Thread(target=third)
    t.start()
    time.sleep(0.2)
    assert t.is_alive()
    board.close()
    t.join(5)
    assert len(errors) == 1


def test_any_stop_event_releases_an_actor_waiting_at_the_gate():
    # an actor held by a slow learner must not outlive the run's budget (the halt event)
    board = VersionBoard("p", 0, replay_ratio=1.0, publish_every_updates=1, max_staleness=0)
    board.dispatch()
    board.finished(0, 3)  # 3 updates owed > eta * K = 0: the gate is shut
    error, halt = threading.Event(), threading.Event()
    released: list = []

    def waiting_actor():
        try:
            board.dispatch(error, halt)
        except BoardClosed:
            released.append(time.monotonic())

    t = threading.Thread(target=waiting_actor)
    t.start()
    time.sleep(0.2)
    assert t.is_alive() and not released
    halt.set()
    set_at = time.monotonic()
    t.join(5)
    assert released and released[0] - set_at < 1.0


def test_no_gate_without_a_replay_ratio_and_staleness_is_counted_at_the_end():
    board = VersionBoard("p0", 3)
    dispatched = [board.dispatch() for _ in range(5)]
    board.publish("p5", 5)
    for d in dispatched[:4]:
        board.finished(d.version, 3)
    board.finished(dispatched[4].version, 0)  # lost to a device error: not an episode
    summary = board.staleness_summary()
    assert summary["async/episodes"] == 4
    assert summary["async/staleness_max"] == 2 and summary["async/staleness_mean"] == 2
    with pytest.raises(ValueError, match="must be >"):
        board.publish("old", 5)


# --- the continuous learner -----------------------------------------------------------------


@contextlib.contextmanager
def running(cl: ContinuousLearner) -> Iterator[None]:
    """``cl`` runs in its own thread for the block, and is stopped and joined after it."""
    stop = threading.Event()
    thread = threading.Thread(target=lambda: cl.run(stop))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)


@pytest.fixture
def learner(tmp_path):
    algorithm = {"batch_size": 2, "distrl": {"top_p": 1.0, "windows": 2, "window_start": "step"}}
    cfg = config_from_dict({"algorithm": algorithm})
    policy = build_policy(AgentConfig(), seed=0)
    return Learner(cfg, build_algorithm(cfg, policy), out_dir=tmp_path, seed=0)


def test_continuous_learner_respects_the_replay_ratio_and_publishes_every_k(learner):
    board = VersionBoard(None, 0, replay_ratio=1.0, publish_every_updates=2, max_staleness=8)
    cl = ContinuousLearner(learner, ReplayBuffer(1000), board, publish_every_updates=2)
    with running(cl):
        d = board.dispatch()
        cl.add(trajectory("a", 3, True, 0))
        board.finished(d.version, 3)
        wait_until(lambda: board.updates == 3)
        time.sleep(0.3)  # owes nothing more: the learner idles instead of training on
        assert board.updates == 3 and board.version == 1  # published after update 2 only
        d = board.dispatch()
        assert d.version == 1 and d.policy is not None
        cl.add(trajectory("b", 5, False, 1))
        board.finished(d.version, 5)
        wait_until(lambda: board.updates == 8)
        wait_until(lambda: board.version == 4)
    report = cl.report()
    assert report["async/updates"] == 8 and report["async/transitions"] == 8
    assert report["async/replay_ratio_reached"] == 1.0
    assert report["async/versions_published"] == 4
    assert 0.0 < report["async/learner_idle_share"] < 1.0
    assert [v for v, _ in cl.published] == [1, 2, 3, 4]
    # a published policy is a frozen copy: the learner's later updates do not reach it
    policy = board.dispatch().policy
    assert policy is not learner.algorithm.policy
    assert not any(p.requires_grad for p in policy.model.parameters())


def test_after_a_first_full_scoring_only_arriving_trajectories_are_scored(learner):
    board = VersionBoard(None, 0, replay_ratio=1.0, publish_every_updates=2, max_staleness=8)
    replay = ReplayBuffer(1000)
    cl = ContinuousLearner(learner, replay, board, publish_every_updates=2)
    cl.add(trajectory("a", 3, True, 0))
    cl.add(trajectory("b", 4, False, 1))
    cl._drain()
    cl._prepare()  # the first time: prepare_round, every trajectory scored
    slots = np.asarray(replay.slots)
    scored = learner.algorithm.score_trajectories(replay, slots)
    np.testing.assert_allclose(replay.priorities(), scored, rtol=1e-5)
    replay.update_priorities(slots, [7.0, 9.0])  # markers a re-score would overwrite
    cl.add(trajectory("c", 2, True, 2))
    assert cl._drain() == 1 and replay.priorities()[2] == 9.0  # enters at the highest
    cl._prepare()
    prio = replay.priorities()
    assert prio[:2].tolist() == [7.0, 9.0]  # the old ones kept their priorities
    expected = learner.algorithm.score_trajectories(replay, np.asarray(replay.slots[2:]))
    np.testing.assert_allclose(prio[2:], expected, rtol=1e-5)
    assert prio[2] != 9.0


def test_continuous_learner_publishes_every_t_seconds(learner):
    board = VersionBoard(None, 0, replay_ratio=1.0, publish_every_updates=100, max_staleness=8)
    cl = ContinuousLearner(
        learner, ReplayBuffer(1000), board, publish_every_updates=100, publish_every_s=1e-6
    )
    with running(cl):
        cl.add(trajectory("a", 2, True, 0))
        board.dispatch()
        board.finished(0, 2)
        wait_until(lambda: board.updates == 2 and board.version == 2)
    assert len(cl.published) == 2  # T elapsed after each update, K never reached


def test_rounds_take_replay_ratio_steps_per_new_transition(tmp_path):
    from distrl_tasks.stages.train import _trained_round, replay_ratio_steps

    replay = ReplayBuffer(1000)
    for tid, n, rnd in (("a", 4, 1), ("b", 6, 2), ("c", 5, 3)):
        table = trajectory(tid, n, True, 0)
        replay.add(table.set_column(table.schema.get_field_index("round"), "round",
                                    pa.array([rnd] * n, pa.int32())))  # fmt: skip
    assert replay_ratio_steps(replay, 0.5, after_round=1) == 6  # ceil(.5 * (6 + 5))
    assert replay_ratio_steps(replay, 0.5, after_round=-1) == 8  # ceil(7.5)
    assert replay_ratio_steps(replay, 0.5, after_round=3) == 1  # nothing new: at least 1
    assert _trained_round(None) == -1
    assert _trained_round(tmp_path / "round-000007") == 7


def test_the_replay_ratio_is_the_asynchronous_learners_alone():
    # DistRL's default: asynchronous, a continuous round at the ratio; DigiRL's lockstep rounds
    # take algorithm.actor_epochs steps whatever the ratio says
    from distrl_tasks.orchestration.actor_learner.round import enabled
    from distrl_tasks.stages.train import learner_replay_ratio

    default = config_from_dict({})
    assert learner_replay_ratio(default) == 0.1 and enabled(default)
    sync = config_from_dict({"orchestration": {"asynchronous": False}})
    assert learner_replay_ratio(sync) == 0.0 and not enabled(sync)
    rounds = config_from_dict({"orchestration": {"continuous": {"replay_ratio": 0.0}}})
    assert learner_replay_ratio(rounds) == 0.0 and not enabled(rounds)
    # labeled after collection (Gemini, emulators): learner rounds at the same ratio
    gemini = config_from_dict({"evaluator": {"kind": "gemini"}})
    assert learner_replay_ratio(gemini) == 0.1 and not enabled(gemini)
    emulators = config_from_dict({"env": {"device_kind": "emulator"}})
    assert not enabled(emulators)


def test_actors_halt_the_reserve_before_the_budget_ends():
    from distrl_tasks.orchestration.actor_learner.round import halt_delay

    assert halt_delay(900.0, 30.0, 234.0) == pytest.approx(636.0)  # halts at 870 s of 900
    assert halt_delay(900.0, 0.0, 234.0) == pytest.approx(666.0)  # no reserve: at the budget
    assert halt_delay(900.0, 30.0, 880.0) == 0.0  # already inside the reserve: halt now


def test_the_round_bar_shows_success_updates_version_and_seconds_left(capsys):
    from distrl_tasks.orchestration.actor_learner.round import RoundProgress
    from distrl_tasks.runners.trajectory import Episode

    board = VersionBoard(object(), 3, replay_ratio=0.5)
    board.record_updates(7)
    bar = RoundProgress(board, None, time.perf_counter() + 120.0)
    bar.episode(Episode("t1", "open settings", "emulator-5554", success=True))
    bar.episode(Episode("t2", "open settings", "emulator-5554", success=None))  # device lost
    assert (bar.successes, bar.bar.n) == (1, 2)
    figures = bar.bar.postfix
    bar.close()
    assert "success=50%" in figures and "updates=7" in figures and "version=3" in figures
    left = int(figures.split("left_s=")[1])
    assert 115 <= left <= 120
    assert "continuous: 2traj" in capsys.readouterr().err


def test_a_group_method_without_signal_pays_its_updates_and_takes_no_step(tmp_path):
    # GRPO on one group whose attempts all failed: no advantage anywhere; the owed updates are
    # skipped (no optimizer step) and paid on the board, so actors are not held at the gate
    cfg = config_from_dict({"algorithm": {"name": "grpo", "batch_size": 2}})
    lrn = Learner(cfg, build_algorithm(cfg, build_policy(AgentConfig(), seed=0)), out_dir=tmp_path)
    board = VersionBoard(None, 0, replay_ratio=1.0, publish_every_updates=2, max_staleness=8)
    cl = ContinuousLearner(lrn, ReplayBuffer(1000), board, publish_every_updates=2)
    with running(cl):
        d = board.dispatch()
        cl.add(trajectory("a", 2, False, 0))
        cl.add(trajectory("b", 2, False, 1))
        board.finished(d.version, 4)
        wait_until(lambda: board.updates == 4)
    report = cl.report()
    assert report["async/updates_skipped"] == 4 and report["async/updates"] == 0
    assert lrn.step == 0 and board.version == 0  # nothing learnt, nothing published


def test_the_replay_window_counts_rounds_of_episodes(tmp_path):
    # 2 rounds of 1 worker x 2 devices x 1 episode: the newest 4 trajectories, however short
    from distrl_tasks.orchestration.actor_learner.continuous_learner import (
        continuous_learner,
        window_episodes,
    )

    cfg = config_from_dict(
        {
            "orchestration": {
                "workers": 1,
                "devices_per_worker": 2,
                "episodes_per_device": 1,
                "continuous": {"replay_window_rounds": 2},
            },
        }
    )
    assert window_episodes(cfg) == 4
    whole_run = {"orchestration": {"continuous": {"replay_window_rounds": 0}}}
    assert window_episodes(config_from_dict(whole_run)) is None
    assert window_episodes(config_from_dict({})) == 4 * 16  # the default: 4 rounds' episodes
    lrn = Learner(cfg, build_algorithm(cfg, build_policy(AgentConfig(), seed=0)), out_dir=tmp_path)
    cl = continuous_learner(cfg, lrn, VersionBoard(None, 0), fresh=False)
    for i in range(6):
        cl.add(trajectory(f"t{i}", 2, i % 2 == 0, i))
    assert cl._drain() == 6
    assert cl.replay.trajectory_ids() == ["t2", "t3", "t4", "t5"] and len(cl.replay) == 8
