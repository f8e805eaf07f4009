"""Simulated farms that know the project's goals: the simulator plus :func:`parse_goal`.

The simulator knows no task families (it sits below ``tasks``), so ``simctl task set`` needs
a goal parser handed in. Everything that serves a farm for AitW or WebShop goals (the CLI, the
stages, the evaluation runner, the tests) builds it here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from distrl_tasks.config import SimConfig
from distrl_tasks.sim.farm import DeviceFarm
from distrl_tasks.sim.serving import RunningFarm
from distrl_tasks.sim.serving import running_farm as _serve_farm
from distrl_tasks.tasks.parse import parse_goal


def device_farm(
    n_devices: int,
    seed: int = 0,
    sim_cfg: SimConfig | None = None,
    dynamics: str = "static",
) -> DeviceFarm:
    """A :class:`~distrl_tasks.sim.farm.DeviceFarm` whose ``simctl task set`` parses our goals."""
    return DeviceFarm(n_devices, seed, sim_cfg, dynamics=dynamics, goal_parser=parse_goal)


@contextmanager
def running_farm(
    devices: int = 2,
    seed: int = 0,
    sim_cfg: SimConfig | None = None,
    port: int = 0,
    host: str | None = None,
    dynamics: str = "static",
) -> Iterator[RunningFarm]:
    """:func:`distrl_tasks.sim.serving.running_farm` with the project's goal parser."""
    with _serve_farm(
        devices, seed, sim_cfg, port=port, host=host, dynamics=dynamics, goal_parser=parse_goal
    ) as served:
        yield served
