"""What the asynchronous collector needs of a version board: the gate an episode starts through.

The board itself (:class:`~distrl_tasks.orchestration.actor_learner.board.VersionBoard`) belongs
to the actor-learner machinery above the runners; the collector only knows this interface, so
the dependency runs one way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Dispatch:
    """What an actor starts an episode with."""

    policy: object
    version: int
    waited_s: float  # seconds it spent blocked at the staleness gate


class GateClosed(RuntimeError):
    """The gate closed while (or before) an actor waited: start no further episode."""


class EpisodeGate(Protocol):
    """Admits episodes and hears when they end (the collector's side of a version board)."""

    def dispatch(self, *stops: threading.Event | None) -> Dispatch:
        """Block until an episode may start; the newest policy. Raises :class:`GateClosed`."""
        ...

    def finished(self, version: int, steps: int) -> None:
        """An episode run with ``version`` ended after ``steps`` transitions."""
        ...
