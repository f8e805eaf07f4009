"""Simulated farms that know the project's goals: the simulator plus :func:`parse_goal`.

The simulator knows no task families (it sits below ``tasks``), so ``simctl task set`` needs
a goal parser handed in. Everything that serves a farm for AitW or WebShop goals (the CLI, the
stages, the evaluation runner, the tests) builds it here.
"""

from __future__ import annotations

from functools import partial

from distrl_tasks.sim import serving
from distrl_tasks.sim.device_farm import DeviceFarm
from distrl_tasks.tasks.parse import parse_goal

# The simulator's own factories with the goal parser filled in (same arguments otherwise).
device_farm = partial(DeviceFarm, goal_parser=parse_goal)
running_farm = partial(serving.running_farm, goal_parser=parse_goal)
