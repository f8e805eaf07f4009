"""The simulated device farm: phones keyed by serial, and a way to serve them in the background.

``DeviceFarm`` only holds state; :mod:`distrl_tasks.sim.adb_server` serves it. Phones are not
thread-safe: the server touches them from its event-loop thread only, so code in other threads
should go through ADB or :meth:`RunningFarm.call`, which runs a function on that thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from distrl_tasks.config import SimConfig
from distrl_tasks.sim.phone import Phone
from distrl_tasks.sim.realism import DeviceRealism
from distrl_tasks.sim.shell import DeviceShell
from distrl_tasks.sim.vfs import VirtualFS

T = TypeVar("T")
FIRST_PORT = 5554  # emulator serials are emulator-<console port>; console ports go up by 2


def serial_for(index: int) -> str:
    """``0 -> emulator-5554``, ``1 -> emulator-5556``, ..."""
    return f"emulator-{FIRST_PORT + 2 * index}"


@dataclass
class SimDevice:
    """One simulated device with everything the ADB server needs."""

    serial: str
    transport_id: int
    phone: Phone
    fs: VirtualFS
    realism: DeviceRealism
    shell: DeviceShell = field(init=False)

    def __post_init__(self) -> None:
        self.shell = DeviceShell(
            self.phone, self.fs, screenshot=lambda: self.realism.screenshot(self.phone)
        )

    @property
    def state(self) -> str:
        """ADB connection state: ``device`` or ``offline``."""
        return "offline" if self.realism.faults.is_offline() else "device"


class DeviceFarm:
    """``n_devices`` phones with serials ``emulator-5554``, ``emulator-5556``, ...

    Args:
        n_devices: how many devices (1..256 in configs; any positive number here).
        seed: seeds app content, latency draws and faults; each device derives its own streams.
        sim_cfg: render scale, latency and fault settings (defaults when None).
    """

    def __init__(self, n_devices: int, seed: int = 0, sim_cfg: SimConfig | None = None) -> None:
        if n_devices < 1:
            raise ValueError(f"n_devices must be >= 1, got {n_devices}")
        self.cfg = sim_cfg or SimConfig()
        self.seed = seed
        self.devices: dict[str, SimDevice] = {}
        for _ in range(n_devices):
            self.add_device()

    def add_device(self) -> SimDevice:
        """Attach one more device (the next serial in sequence)."""
        i = len(self.devices)
        serial = serial_for(i)
        dev = SimDevice(
            serial=serial,
            transport_id=i + 1,
            phone=Phone(serial, seed=(self.seed << 16) + i, render_scale=self.cfg.render_scale),
            fs=VirtualFS(),
            realism=DeviceRealism(self.cfg.latency, self.cfg.faults, seed=self.seed, serial=serial),
        )
        self.devices[serial] = dev
        return dev

    @property
    def serials(self) -> list[str]:
        return list(self.devices)

    def __len__(self) -> int:
        return len(self.devices)

    def __getitem__(self, serial: str) -> SimDevice:
        try:
            return self.devices[serial]
        except KeyError:
            raise KeyError(f"no simulated device {serial!r} (have: {self.serials})") from None

    def by_transport_id(self, tid: int) -> SimDevice | None:
        return next((d for d in self.devices.values() if d.transport_id == tid), None)


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
) -> Iterator[RunningFarm]:
    """Serve a new farm over ADB on a background thread for the duration of the block.

    Args:
        devices: number of simulated devices.
        seed: farm seed.
        sim_cfg: simulator settings (defaults when None); ``sim_cfg.host`` is the bind address.
        port: TCP port; 0 picks a free one (read it from ``.port``).
        host: overrides the bind address.
    """
    from distrl_tasks.sim.adb_server import AdbServer

    cfg = sim_cfg or SimConfig()
    farm = DeviceFarm(devices, seed, cfg)
    bind = host or cfg.host
    loop = asyncio.new_event_loop()
    server = AdbServer(farm, host=bind, port=port)
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
