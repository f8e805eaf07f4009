"""The ADB server under a burst of clients, and connections that go quiet (bounded: loopback)."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

from distrl_tasks.config import SimConfig
from distrl_tasks.tasks.goal_farms import running_farm

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from adb_load import burst  # the benchmark's own client, so both measure alike

pytestmark = pytest.mark.integration


def test_a_burst_of_300_clients_gets_every_answer() -> None:
    result = burst(clients=300, backlog=SimConfig().listen_backlog, devices=2)
    assert result["errors"] == 0, result
    assert result["clients"] == 300


def test_an_idle_connection_is_closed_after_the_timeout_and_others_are_served() -> None:
    with running_farm(1, seed=0, sim_cfg=SimConfig(idle_timeout_s=0.5)) as farm:
        idle = socket.create_connection((farm.host, farm.port), timeout=10)
        started = time.monotonic()
        assert idle.recv(1) == b""  # the server closed it: nothing was ever asked
        waited = time.monotonic() - started
        assert 0.4 <= waited < 5, waited
        idle.close()
        with socket.create_connection((farm.host, farm.port), timeout=10) as sock:
            sock.sendall(b"000chost:version")
            assert sock.recv(4) == b"OKAY"
