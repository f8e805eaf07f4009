"""The task type: a parsed AitW goal with preconditions and a pure success predicate.

A :class:`Task` is what :func:`distrl_tasks.tasks.parse.parse_goal` returns. It carries the goal
text, its family name, string parameters extracted from the goal, and a reference to the
:class:`Family` that knows how to set the phone up and how to judge a :class:`SimState`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from distrl_tasks.sim.state import SimState

if TYPE_CHECKING:
    from distrl_tasks.sim.phone import Phone

GENERAL = "general"
WEBSHOP = "webshop"
TASK_SETS = (GENERAL, WEBSHOP)
MAX_STEPS = {GENERAL: 10, WEBSHOP: 20}  # the papers' horizons


class GoalParseError(ValueError):
    """The goal text matches no known task family."""


class Family(ABC):
    """One kind of task: how to recognise its goals, set the phone up and judge success.

    Subclasses set ``name`` and ``task_set`` and implement :meth:`match` and :meth:`check`.
    ``match`` returns the family's parameters (all strings) or ``None``; ``check`` must be pure.
    """

    name: ClassVar[str] = ""
    task_set: ClassVar[str] = GENERAL

    @abstractmethod
    def match(self, text: str) -> dict[str, str] | None:
        """Parameters if the cleaned goal ``text`` is one of this family's goals, else None."""

    def setup(self, phone: Phone, params: Mapping[str, str]) -> None:
        """Preconditions applied right after a reset. Default: none."""

    @abstractmethod
    def check(self, state: SimState, params: Mapping[str, str]) -> bool:
        """Whether ``state`` shows the task done (pure: reads ``state`` only)."""


@dataclass(frozen=True)
class Task:
    """A goal bound to its family. ``setup`` and ``check`` delegate to the family."""

    goal: str
    family: str
    params: Mapping[str, str]
    task_set: str
    spec: Family = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    @property
    def max_steps(self) -> int:
        """Step budget of the task's set (10 general, 20 webshop)."""
        return MAX_STEPS[self.task_set]

    def setup(self, phone: Phone) -> None:
        """Apply the task's preconditions to a freshly reset phone."""
        self.spec.setup(phone, self.params)

    def check(self, state: SimState) -> bool:
        """Whether ``state`` satisfies the goal."""
        return bool(self.spec.check(state, self.params))
