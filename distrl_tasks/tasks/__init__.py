"""AitW tasks: goal parsing, success predicates, task sets and the scripted expert.

``parse_goal(goal) -> Task`` turns an instruction into a task whose ``setup(phone)`` applies its
preconditions and whose ``check(state)`` is a pure success predicate over a
:class:`~distrl_tasks.sim.state.SimState`. ``load_goals(task_set, split)`` reads the AitW lists.
The scripted expert lives in :mod:`distrl_tasks.tasks.expert` (imported on demand: it needs
adbutils only when talking to a device).
"""

from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.task import MAX_STEPS, TASK_SETS, Family, GoalParseError, Task
from distrl_tasks.tasks.taskset import SPLITS, load_goals, unique_goals

__all__ = [
    "MAX_STEPS",
    "SPLITS",
    "TASK_SETS",
    "Family",
    "GoalParseError",
    "Task",
    "load_goals",
    "parse_goal",
    "unique_goals",
]
