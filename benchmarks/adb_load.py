"""ADB server under a burst of clients on loopback: latency of `shell:echo`, errors, backlog.

Each client opens its own connection at the same moment (a barrier), switches to the device
(``host:transport:<serial>``) and runs ``shell:echo ok``; the figure is the time from its
connect to the full answer. A listen backlog smaller than the burst makes the kernel drop SYNs
and the client retry after about a second: the p99 shows it.

Usage::

    python benchmarks/adb_load.py --clients 500 --backlog 100 1024
"""

from __future__ import annotations

import argparse
import socket
import statistics
import threading
import time

from distrl_tasks.config import SimConfig
from distrl_tasks.tasks.goal_farms import running_farm


def _request(sock: socket.socket, payload: str) -> None:
    data = payload.encode()
    sock.sendall(f"{len(data):04x}".encode() + data)
    status = sock.recv(4)
    if status != b"OKAY":
        raise RuntimeError(f"{payload}: {status!r}")


def one_client(host: str, port: int, serial: str, barrier: threading.Barrier) -> float:
    """Seconds from connect to the full `echo` answer."""
    barrier.wait()
    started = time.perf_counter()
    with socket.create_connection((host, port), timeout=30) as sock:
        _request(sock, f"host:transport:{serial}")
        _request(sock, "shell:echo ok")
        out = b""
        while chunk := sock.recv(4096):
            out += chunk
    if out.strip() != b"ok":
        raise RuntimeError(f"unexpected answer {out!r}")
    return time.perf_counter() - started


def burst(clients: int, backlog: int, devices: int = 4) -> dict[str, float]:
    """One burst of ``clients`` against a fresh farm whose server queues ``backlog``."""
    cfg = SimConfig(listen_backlog=backlog)
    with running_farm(devices, seed=0, sim_cfg=cfg) as farm:
        barrier = threading.Barrier(clients)
        times: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()

        def run(i: int) -> None:
            try:
                t = one_client(farm.host, farm.port, farm.serials[i % devices], barrier)
                with lock:
                    times.append(t)
            except Exception as exc:  # counted, not raised: the figure is the error count
                with lock:
                    errors.append(repr(exc))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    times.sort()
    q = statistics.quantiles(times, n=100) if len(times) >= 2 else [float("nan")] * 99
    return {
        "clients": clients,
        "backlog": backlog,
        "errors": len(errors),
        "p50_s": round(q[49], 4),
        "p99_s": round(q[98], 4),
        "max_s": round(times[-1], 4) if times else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=500)
    parser.add_argument("--backlog", type=int, nargs="+", default=[100, 1024])
    args = parser.parse_args()
    for backlog in args.backlog:
        print(burst(args.clients, backlog), flush=True)


if __name__ == "__main__":
    main()
