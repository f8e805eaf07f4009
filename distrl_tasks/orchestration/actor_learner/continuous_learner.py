"""A learner that never waits for a round: it trains while the actors collect (DistRL's design).

:class:`ContinuousLearner` runs :meth:`Learner.update` steps on the replay for as long as the
replay ratio allows (``replay_ratio`` updates per finished transition, counted by the
:class:`~.board.VersionBoard`), and publishes a new policy version to the
board every ``K`` updates or every ``T`` seconds (with at least one update since the last). New
trajectories arrive through :meth:`ContinuousLearner.add` from any thread and enter the replay
between updates, in the learner's own thread (the replay is not thread-safe). At each published
version the algorithm's filters and priorities are refreshed on the grown replay
(:meth:`ContinuousLearner._prepare`).

The report (:meth:`ContinuousLearner.report`) holds the replay ratio reached (updates per
transition), the learner's idle share (time spent waiting for data over wall time), the
versions published and the mean of the update metrics.
"""

from __future__ import annotations

import copy
import os
import queue
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from distrl_tasks.algorithms import train_state as ts
from distrl_tasks.algorithms.learner import Learner
from distrl_tasks.config import Config, CriticPrefitConfig
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.orchestration.actor_learner.board import VersionBoard
from distrl_tasks.protocol.files import atomic_directory
from distrl_tasks.stages import common
from distrl_tasks.stages.train import open_learner


def frozen_copy(policy: object) -> object:
    """A copy of the policy for actors: later updates of the learner do not reach it."""
    snap = copy.deepcopy(policy)
    model = getattr(snap, "model", None)
    if model is not None:
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
    return snap


class ContinuousLearner:
    """Trains ``learner`` on ``replay`` at the board's replay ratio; see the module docstring.

    Args:
        learner: The learner (its ``policy_version`` is the version being trained).
        replay: The replay new trajectories are added to.
        board: Shared with the actors.
        publish_every_updates: ``K``.
        publish_every_s: ``T`` (0 = only every ``K`` updates).
        snapshot: Turns the learner's policy into what actors run (default :func:`frozen_copy`).
        poll_s: How long an idle learner waits for data before checking ``stop`` again.
        prefit: Pre-fit the (fresh) critic before the first update (:meth:`Learner.prefit_critic`).
    """

    def __init__(
        self,
        learner: Learner,
        replay: ReplayBuffer,
        board: VersionBoard,
        *,
        publish_every_updates: int,
        publish_every_s: float = 0.0,
        snapshot: Callable[[object], object] = frozen_copy,
        poll_s: float = 0.05,
        prefit: CriticPrefitConfig | None = None,
    ) -> None:
        if publish_every_updates < 1 or publish_every_s < 0:
            raise ValueError(
                f"need publish_every_updates >= 1 and publish_every_s >= 0, got "
                f"{publish_every_updates}, {publish_every_s}"
            )
        self.learner, self.replay, self.board = learner, replay, board
        self.k, self.t = int(publish_every_updates), float(publish_every_s)
        self.snapshot, self.poll_s = snapshot, float(poll_s)
        self.prefit = prefit if prefit is not None and prefit.enabled else None
        self.prefit_metrics: dict[str, float] = {}
        self._incoming: queue.SimpleQueue[pa.Table] = queue.SimpleQueue()
        self.updates = 0
        self.skipped = 0  # updates skipped: the replay had nothing to learn from
        self.idle_s = 0.0
        self.wall_s = 0.0
        self.published: list[tuple[int, float]] = []  # (version, seconds since start)
        self._prepared_at = 0  # replay size at the last full prepare_round
        self._unscored: set[int] = set()  # slots added since the last scoring
        self._sums: dict[str, float] = defaultdict(float)
        self._counts: dict[str, int] = defaultdict(int)

    def add(self, trajectory: pa.Table) -> None:
        """Queue one labeled trajectory for the replay (thread-safe)."""
        self._incoming.put(trajectory)

    def _drain(self) -> int:
        n = 0
        while True:
            try:
                self._unscored.add(self.replay.add(self._incoming.get_nowait()))
            except queue.Empty:
                return n
            n += 1

    def _prepare(self) -> None:
        """Refresh the algorithm's filters and priorities for the grown replay.

        The first time, a full ``prepare_round``. After it, an algorithm that scores single
        trajectories (DistRL's ``score_trajectories``) scores only those that arrived since and
        re-selects its filter: a full re-score costs many updates' time
        (benchmarks/results/2026-11-25-ablation.md, timed by benchmarks/continuous_learner.py),
        and the loss re-prioritizes what it trains on. Other algorithms re-run ``prepare_round``
        when the replay grew by half, and their cheap ``refresh_filter`` (if any) in between. New
        trajectories enter at the highest priority seen, so none is starved until scored.
        """
        algo, n = self.learner.algorithm, self.replay.num_trajectories
        score = getattr(algo, "score_trajectories", None)
        light = getattr(algo, "refresh_filter", None)
        if self._prepared_at and score is not None:
            live = set(self.replay.slots)
            new = np.asarray(sorted(self._unscored & live), dtype=np.int64)
            if len(new):
                score(self.replay, new)
            if light is not None:
                light(self.replay)
        elif light is not None and n < 1.5 * self._prepared_at:
            light(self.replay)
        else:
            algo.prepare_round(self.replay)
            self._prepared_at = n
        self._unscored.clear()

    def _publish(self, started: float) -> None:
        self.learner.policy_version += 1
        policy = getattr(self.learner.algorithm, "policy", None)
        self.board.publish(self.snapshot(policy), self.learner.policy_version)
        self.published.append((self.learner.policy_version, time.monotonic() - started))

    def run(self, stop: threading.Event) -> dict[str, float]:
        """Train until ``stop`` is set (or the board closes); returns :meth:`report`."""
        started = time.monotonic()
        last_publish, since_publish, stale_filters = started, 0, True
        while not stop.is_set():
            added = self._drain()
            stale_filters = stale_filters or added > 0
            if self.replay.num_trajectories == 0 or self.board.updates_owed() < 1:
                t0 = time.monotonic()
                if not self.board.wait_for_data(self.poll_s):
                    break
                self.idle_s += time.monotonic() - t0
                continue
            if self.prefit is not None:  # the first data: fit the critic before trusting it
                self.prefit_metrics = self.learner.prefit_critic(self.replay, self.prefit)
                self.prefit = None
            if stale_filters:
                self._prepare()
                stale_filters = False
            metrics = self.learner.update(self.replay)
            if metrics.get("train/skipped_steps"):
                # nothing to learn from yet (groups without signal): the update is owed no
                # longer, so the actors are not held back waiting for it
                self.skipped += 1
                self.board.record_updates(1)
                continue
            for name, value in metrics.items():
                self._sums[name] += value
                self._counts[name] += 1
            self.updates += 1
            self.board.record_updates(1)
            since_publish += 1
            now = time.monotonic()
            if since_publish >= self.k or (self.t > 0 and now - last_publish >= self.t):
                self._publish(started)
                # filters and priorities follow the new policy and the data that came in
                last_publish, since_publish, stale_filters = now, 0, True
        self.wall_s = time.monotonic() - started
        return self.report()

    def report(self) -> dict[str, float]:
        """Replay ratio reached, idle share, versions published and mean update metrics."""
        transitions = self.board.transitions
        out = {k: self._sums[k] / self._counts[k] for k in sorted(self._sums)}
        out.update(self.prefit_metrics)
        out.update(
            {
                "async/updates": float(self.updates),
                "async/updates_skipped": float(self.skipped),
                "async/transitions": float(transitions),
                "async/replay_ratio_reached": self.updates / transitions if transitions else 0.0,
                "async/learner_idle_share": self.idle_s / self.wall_s if self.wall_s else 0.0,
                "async/versions_published": float(len(self.published)),
                "async/policy_version": float(self.learner.policy_version),
            }
        )
        out.update(self.board.staleness_summary())
        return out


# The round's learner, the same in a thread beside the actors and in a process of its own.


def fresh_learner(cfg: Config, workdir: str | os.PathLike, round_: int):
    """The learner of the round: saved state if any, else the registry's starting policy."""
    latest = ts.latest_checkpoint(common.learner_dir(workdir) / "checkpoints")
    return open_learner(cfg, workdir, round_, latest), latest is None


def window_episodes(cfg: Config) -> int | None:
    """The replay's window in episodes (``orchestration.continuous.replay_window_rounds``
    rounds' collection), or None for the whole run."""
    o = cfg.orchestration
    per_round = o.workers * o.devices_per_worker * o.episodes_per_device
    return o.continuous.replay_window_rounds * per_round or None


def continuous_learner(cfg: Config, learner, board, *, fresh: bool, snapshot=None):
    """The round's :class:`ContinuousLearner` on an empty replay, publishing to ``board``.

    The replay keeps the newest :func:`window_episodes` trajectories (all of them when None),
    at most ``data.replay_capacity`` transitions. ``fresh`` (no saved learner state) pre-fits
    the critic on the first data; ``snapshot`` turns the policy into what is published
    (default: a frozen copy, for in-process actors).
    """
    c = cfg.orchestration.continuous
    replay = ReplayBuffer(
        cfg.data.replay_capacity,
        alpha=cfg.algorithm.distrl.priority_alpha,
        beta=cfg.algorithm.distrl.priority_beta,
        seed=cfg.sim.seed,
        max_trajectories=window_episodes(cfg),
    )
    return ContinuousLearner(
        learner,
        replay,
        board,
        publish_every_updates=c.publish_every_updates,
        publish_every_s=c.publish_every_s,
        snapshot=snapshot or frozen_copy,
        prefit=cfg.algorithm.critic_prefit if fresh else None,
    )


def export_learner(cfg: Config, workdir: str | os.PathLike, round_: int, learner) -> dict:
    """Checkpoint the learner's state and export its policy as the round's checkpoint."""
    learner.save_checkpoint(f"round-{round_:06d}")
    out = common.checkpoint_dir(workdir, round_).resolve()
    with atomic_directory(out) as tmp:
        learner.algorithm.policy.save(
            tmp,
            metadata={
                "round": round_,
                "algorithm": cfg.algorithm.name,
                "policy_version": learner.policy_version,
            },
        )
    return {
        "checkpoint_dir": str(out),
        "policy_version": learner.policy_version,
        "steps": learner.step,
    }
