"""Policy versions between a continuous learner and its actors, with a bounded staleness.

:class:`VersionBoard` is the meeting point of the asynchronous (DistRL) design: the learner
publishes a new policy version every ``K`` updates (or ``T`` seconds) and records its updates;
actors take the newest version between episodes (:meth:`VersionBoard.dispatch`) and report the
transitions they finished (:meth:`VersionBoard.finished`).

Staleness is bounded where episodes are dispatched, as AReaL bounds it (admission, not dropping
data; docs/architecture.md, "The actor-learner"). The learner wants ``replay_ratio`` updates per
finished transition; the updates it still owes, counting a running episode at the mean episode
length, are its *backlog*. An episode may start only while the backlog of the episodes already
admitted is at most ``eta`` versions of work (``eta * K`` updates)::

    replay_ratio * (transitions + running * mean_length) - updates <= eta * K

so the learner reaches the data an episode collects with version ``v`` by version ``v + eta``
(plus the episode's own share of updates). With ``eta = 0`` an episode starts only once the
learner has caught up with everything admitted; the gate never deadlocks, since a learner that
owes nothing always admits. An actor that would exceed it waits, without a timeout,
until the learner publishes a newer version (or the board closes); the staleness that remains
(versions published while a long episode runs) is corrected by truncated importance weights,
and no episode is ever dropped for being stale. With ``replay_ratio = 0`` nothing is gated.

Counters for the run's report: the staleness of every finished episode (newest version at its
end minus the version it ran), and the seconds actors spent waiting at the gate.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from distrl_tasks.runners.gate import Dispatch, GateClosed


class BoardClosed(GateClosed):
    """The board was closed while an actor waited at the gate."""


class VersionBoard:
    """Newest published policy, the learner's update count, and the staleness gate.

    The :class:`~distrl_tasks.runners.gate.EpisodeGate` the asynchronous collector starts
    episodes through.

    Args:
        policy: The first policy (version ``version``).
        version: Its policy version.
        replay_ratio: Updates the learner makes per finished transition (0 = no gate).
        publish_every_updates: ``K``.
        max_staleness: ``eta``.
        default_length: Episode length assumed for running episodes before any finished.
    """

    def __init__(
        self,
        policy: object,
        version: int = 0,
        *,
        replay_ratio: float = 0.0,
        publish_every_updates: int = 1,
        max_staleness: int = 0,
        default_length: float = 10.0,
    ) -> None:
        if replay_ratio < 0 or publish_every_updates < 1 or max_staleness < 0:
            raise ValueError(
                "need replay_ratio >= 0, publish_every_updates >= 1 and max_staleness >= 0, got "
                f"{replay_ratio}, {publish_every_updates}, {max_staleness}"
            )
        if default_length <= 0:
            raise ValueError(f"default_length must be > 0, got {default_length}")
        self.replay_ratio = float(replay_ratio)
        self.k = int(publish_every_updates)
        self.eta = int(max_staleness)
        self._policy, self._version = policy, int(version)
        self._cond = threading.Condition()
        self._closed = False
        self.updates = 0
        self.transitions = 0
        self.episodes = 0
        self.running = 0
        self._default_length = float(default_length)
        self.staleness: Counter[int] = Counter()  # finished episodes by staleness at their end
        self.actor_wait_s = 0.0

    # ----- learner side ----------------------------------------------------------------------
    def publish(self, policy: object, version: int) -> None:
        """Make ``policy`` the newest version (versions only increase); wakes waiting actors."""
        with self._cond:
            if version <= self._version:
                raise ValueError(f"version {version} must be > the newest ({self._version})")
            self._policy, self._version = policy, int(version)
            self._cond.notify_all()

    def record_updates(self, n: int = 1) -> None:
        """The learner made ``n`` more optimizer steps."""
        with self._cond:
            self.updates += int(n)
            self._cond.notify_all()

    def updates_owed(self) -> float:
        """Updates the replay ratio allows now: ``ratio * transitions - updates``."""
        with self._cond:
            return self.replay_ratio * self.transitions - self.updates

    def wait_for_data(self, timeout: float) -> bool:
        """Block until the learner may update again (or ``timeout``); False when closed."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._closed or self.replay_ratio * self.transitions - self.updates >= 1,
                timeout,
            )
            return not self._closed

    # ----- actor side ------------------------------------------------------------------------
    @property
    def version(self) -> int:
        """The newest published version."""
        with self._cond:
            return self._version

    def _mean_length(self) -> float:
        return self.transitions / self.episodes if self.episodes else self._default_length

    def backlog(self, extra_episodes: int = 0) -> float:
        """Updates owed once running (and ``extra_episodes`` more) episodes finish."""
        with self._cond:
            return self._backlog(extra_episodes)

    def _backlog(self, extra: int) -> float:
        pending = self.transitions + (self.running + extra) * self._mean_length()
        return self.replay_ratio * pending - self.updates

    def _admissible(self) -> bool:
        return self.replay_ratio == 0 or self._backlog(0) <= self.eta * self.k

    def dispatch(self, *stops: threading.Event | None) -> Dispatch:
        """Wait at the gate, then hand out the newest policy for one episode.

        Args:
            stops: events that end the wait (an error elsewhere, the end of the budget): an
                actor waiting for the learner must not outlive its run.

        Raises:
            BoardClosed: the board closed (or one of ``stops`` was set) while waiting.
        """
        start = time.monotonic()
        with self._cond:
            while not self._admissible():
                if self._closed or any(s is not None and s.is_set() for s in stops):
                    raise BoardClosed("the version board closed while an actor waited")
                self._cond.wait(0.05)  # the stops are Events, not tied to this condition
            if self._closed:
                raise BoardClosed("the version board is closed")
            waited = time.monotonic() - start
            self.actor_wait_s += waited
            self.running += 1
            return Dispatch(self._policy, self._version, waited)

    def finished(self, version: int, steps: int) -> None:
        """An episode dispatched with ``version`` ended after ``steps`` kept transitions."""
        with self._cond:
            self.running -= 1
            if steps > 0:
                self.transitions += int(steps)
                self.episodes += 1
                self.staleness[self._version - int(version)] += 1
            self._cond.notify_all()

    def add_resumed(self, steps: int) -> None:
        """A journaled episode of a killed attempt: its transitions count as a finished one's
        (the learner owes them updates), its staleness does not (the dead learner's version)."""
        with self._cond:
            if steps > 0:
                self.transitions += int(steps)
                self.episodes += 1
            self._cond.notify_all()

    def close(self) -> None:
        """Release every waiter (actors raise :class:`BoardClosed`, the learner stops)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # ----- report ----------------------------------------------------------------------------
    def staleness_summary(self) -> dict[str, float]:
        """``async/staleness_{mean,p50,p90,max}`` over finished episodes, and their count."""
        with self._cond:
            values = sorted(v for v, n in self.staleness.items() for _ in range(n))
        if not values:
            return {"async/episodes": 0.0}

        def q(p: float) -> float:
            return float(values[min(len(values) - 1, int(p * len(values)))])

        return {
            "async/episodes": float(len(values)),
            "async/staleness_mean": sum(values) / len(values),
            "async/staleness_p50": q(0.5),
            "async/staleness_p90": q(0.9),
            "async/staleness_max": float(values[-1]),
        }
