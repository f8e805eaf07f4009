"""Shared fixtures: a simulated device farm served over ADB on a free loopback port, and one
torch thread for the modules that run tiny models; a module's scratch directory that does not
outlive it; and a guard that keeps one test's signal handlers from reaching the next."""

from __future__ import annotations

import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from distrl_tasks.sim.serving import RunningFarm
from distrl_tasks.tasks.goal_farms import running_farm


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
def module_tmp_path(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """``tmp_path`` for a module-scoped fixture: removed when the module ends unless one of its
    tests failed. pytest's ``tmp_path_retention_policy`` only covers ``tmp_path``, so a module's
    clones and deployments (hundreds of MB) would otherwise sit on disk until the session ends."""
    failed_before = request.session.testsfailed
    path = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    yield path
    if request.session.testsfailed == failed_before:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Tiny models run fastest single-threaded; intra-op threads only contend on shared CPUs.
    Use it per module: ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# Signals whose Python-level handlers later tests depend on (SIGINT: ``_thread.interrupt_main``
# only raises KeyboardInterrupt under Python's default handler).
_GUARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_signal_leaks: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Restore SIGINT/SIGTERM handlers a test (or a fixture it tore down) left changed, and
    name that test in the summary, so a leak is found where it happens, not where it bites."""
    before = {sig: signal.getsignal(sig) for sig in _GUARDED_SIGNALS}
    yield
    for sig, handler in before.items():
        now = signal.getsignal(sig)
        if now != handler:
            signal.signal(sig, handler)
            name = signal.Signals(sig).name
            _signal_leaks.append(f"{item.nodeid}: {name} handler {handler!r} -> {now!r}")


def pytest_terminal_summary(terminalreporter) -> None:
    if _signal_leaks:
        terminalreporter.section("signal handlers left changed by tests (restored after each)")
        for line in _signal_leaks:
            terminalreporter.write_line(line)
