"""Goal text -> :class:`~distrl_tasks.tasks.task.Task`, by general rules over sentence structure.

The goal is cleaned (typos such as "Searchfor" or "a3 bedroom" repaired, see
:func:`~distrl_tasks.tasks.families.text.clean_goal`), then each family in
:data:`~distrl_tasks.tasks.families.FAMILIES` tries its pattern; the first match wins.
"""

from __future__ import annotations

from distrl_tasks.tasks.families import FAMILIES, FAMILY_NAMES
from distrl_tasks.tasks.families.text import clean_goal
from distrl_tasks.tasks.task import GoalParseError, Task


def parse_goal(goal: str) -> Task:
    """Parse one goal.

    Args:
        goal: the instruction, e.g. ``"Set an alarm for 6pm"``.

    Returns:
        The task, with ``goal`` kept exactly as given.

    Raises:
        GoalParseError: the text is empty or matches no family.
    """
    if not isinstance(goal, str):
        raise GoalParseError(f"goal must be a string, got {type(goal).__name__}")
    text = clean_goal(goal)
    if not text:
        raise GoalParseError("goal is empty")
    for family in FAMILIES:
        params = family.match(text)
        if params is not None:
            return Task(goal, family.name, params, family.task_set, family)
    raise GoalParseError(
        f"cannot parse goal {goal!r}: it matches none of the task families "
        f"({', '.join(FAMILY_NAMES)})"
    )
