"""Simulator throughput: screenshots/s over raw ADB, adbutils steps/s, memory per device.

Usage: ``.venv/bin/python benchmarks/sim_throughput.py [--seconds 3]``. The server runs as a
``distrl sim serve`` subprocess pinned to one core (latency off); clients run in this process on
another core when there is one. Results are recorded by hand in a dated record (last:
benchmarks/results/2026-11-21-simulator-throughput.md) and a row of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

SERVER_CPU = 0


@contextmanager
def served(devices: int, extra: Sequence[str] = ()) -> Iterator[int]:
    """Start ``distrl sim serve`` on a free port, pinned to one core; yields the port.

    ``extra``: more serve flags, e.g. ``["--dynamics", "live"]`` (default: the config's).
    """
    cmd = [sys.executable, "-m", "distrl_tasks.cli", "sim", "serve", "--port", "0"]
    cmd += ["--devices", str(devices), *extra]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {SERVER_CPU}),
    )
    try:
        assert proc.stdout is not None
        m = re.search(r":(\d+),", proc.stdout.readline())
        if m is None:
            raise RuntimeError("server did not print its banner")
        yield int(m.group(1))
    finally:
        proc.terminate()
        proc.wait(10)


def _request(sock: socket.socket, text: str) -> None:
    data = text.encode()
    sock.sendall(f"{len(data):04x}".encode() + data)
    if sock.recv(4) != b"OKAY":
        raise RuntimeError(f"request {text!r} refused")


def raw_screencap(port: int, serial: str) -> bytes:
    """The minimal client: transport + ``exec:screencap -p``, read until the server closes."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        _request(sock, f"host:transport:{serial}")
        _request(sock, "exec:screencap -p")
        chunks = []
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    return b"".join(chunks)


def bench_screenshots(seconds: float, extra: Sequence[str] = ()) -> float:
    with served(1, extra) as port:
        png = raw_screencap(port, "emulator-5554")
        assert png.startswith(b"\x89PNG"), "not a PNG"
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            raw_screencap(port, "emulator-5554")
            n += 1
        return n / (time.perf_counter() - t0)


def bench_steps(devices: int, seconds: float, extra: Sequence[str] = ()) -> float:
    """input tap + screenshot per step through adbutils, one thread per device."""
    import adbutils

    with served(devices, extra) as port:
        client = adbutils.AdbClient(host="127.0.0.1", port=port)
        counts = [0] * devices
        stop = time.perf_counter() + seconds

        def worker(i: int) -> None:
            d = client.device(f"emulator-{5554 + 2 * i}")
            while time.perf_counter() < stop:
                d.click(25 + (counts[i] % 5) * 50, 500)  # display pixels (270x600)
                d.screenshot()
                counts[i] += 1

        t0 = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(devices)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - t0)


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kb / 1024


def bench_memory(devices: int) -> float:
    """RSS growth per device (MB) after each device rendered a screen and took some input."""
    from distrl_tasks.sim.device_farm import DeviceFarm

    def exercise(farm: DeviceFarm) -> None:
        for dev in farm.devices.values():
            dev.shell.run("input swipe 135 450 135 150 200; screencap -p; uiautomator dump")

    one = DeviceFarm(1, seed=0)
    exercise(one)
    base = rss_mb()
    many = DeviceFarm(devices, seed=0)
    exercise(many)
    return (rss_mb() - base) / devices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each rate test")
    parser.add_argument("--memory-devices", type=int, default=64)
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) > 1:  # keep the client off the server's core
        os.sched_setaffinity(0, os.sched_getaffinity(0) - {SERVER_CPU})
    print(f"screenshots/s (raw ADB client, 1 server core): {bench_screenshots(args.seconds):.0f}")
    for n in (1, 16):
        print(f"steps/s (adbutils tap+screenshot, {n} devices): {bench_steps(n, args.seconds):.0f}")
    per_dev = bench_memory(args.memory_devices)
    print(f"memory per device (RSS growth over {args.memory_devices} devices): {per_dev:.2f} MB")


if __name__ == "__main__":
    main()
