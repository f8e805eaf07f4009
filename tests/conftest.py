"""Shared fixtures: a simulated device farm served over ADB on a free loopback port, and one
torch thread for the modules that run tiny models."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from distrl_tasks.sim.serving import RunningFarm, running_farm


@pytest.fixture
def sim_farm() -> Iterator[RunningFarm]:
    """Two fresh simulated devices (emulator-5554, emulator-5556) behind an ADB server."""
    with running_farm(devices=2, seed=0) as rf:
        yield rf


@pytest.fixture
def adb_client(sim_farm: RunningFarm):
    """An adbutils client pointed at :func:`sim_farm`."""
    import adbutils

    return adbutils.AdbClient(host=sim_farm.host, port=sim_farm.port, socket_timeout=30)


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Tiny models run fastest single-threaded; intra-op threads only contend on shared CPUs.
    Use it per module: ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
