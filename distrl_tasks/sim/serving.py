"""Serving a farm in the background: an ADB server on its own event-loop thread.

Phones are not thread-safe: the server touches them from its event-loop thread only, so code in
other threads should go through ADB or :meth:`RunningFarm.call`, which runs a function there.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from distrl_tasks.config import SimConfig
from distrl_tasks.sim.adb_server import AdbServer
from distrl_tasks.sim.device_farm import DeviceFarm
from distrl_tasks.sim.phone import GoalParser

T = TypeVar("T")


@dataclass
class RunningFarm:
    """A farm served by an ADB server on a background thread (see :func:`running_farm`)."""

    host: str
    port: int
    farm: DeviceFarm
    loop: asyncio.AbstractEventLoop

    @property
    def serials(self) -> list[str]:
        return self.farm.serials

    def call(self, fn: Callable[[], T], timeout: float = 30.0) -> T:
        """Run ``fn`` on the server's thread (the only thread that may touch phones)."""

        async def run() -> T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)


@contextmanager
def running_farm(
    devices: int = 2,
    seed: int = 0,
    sim_cfg: SimConfig | None = None,
    port: int = 0,
    host: str | None = None,
    dynamics: str = "static",
    goal_parser: GoalParser | None = None,
) -> Iterator[RunningFarm]:
    """Serve a new farm over ADB on a background thread for the duration of the block.

    Args:
        devices: number of simulated devices.
        seed: farm seed.
        sim_cfg: simulator settings (defaults when None); ``sim_cfg.host`` is the bind address.
        port: TCP port; 0 picks a free one (read it from ``.port``).
        host: overrides the bind address.
        dynamics: live-world profile of the devices (``static`` unless given; see
            :class:`~distrl_tasks.sim.device_farm.DeviceFarm`).
        goal_parser: what ``simctl task set`` parses goals with (see ``DeviceFarm``).
    """
    cfg = sim_cfg or SimConfig()
    farm = DeviceFarm(devices, seed, cfg, dynamics=dynamics, goal_parser=goal_parser)
    bind = host or cfg.host
    loop = asyncio.new_event_loop()
    server = AdbServer(
        farm, host=bind, port=port, backlog=cfg.listen_backlog, idle_timeout_s=cfg.idle_timeout_s
    )
    ready = threading.Event()
    failure: list[BaseException] = []
    stop: asyncio.Event | None = None

    async def main() -> None:
        nonlocal stop
        stop = asyncio.Event()
        try:
            await server.start()
        except BaseException as exc:
            failure.append(exc)
            ready.set()
            return
        ready.set()
        try:
            await server.serve_until(stop)
        finally:
            await server.close()

    thread = threading.Thread(
        target=loop.run_until_complete, args=(main(),), name="sim-adb", daemon=True
    )
    thread.start()
    ready.wait(30)
    if failure:
        thread.join(5)
        loop.close()
        raise failure[0]
    try:
        yield RunningFarm(host=bind, port=server.port, farm=farm, loop=loop)
    finally:
        assert stop is not None
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
