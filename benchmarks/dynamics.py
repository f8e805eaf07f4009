"""Live-world dynamics (issue 18): expert success per AitW file and profile, observed rates of
each perturbation, and simulator throughput with ``live`` on.

Usage: ``.venv/bin/python benchmarks/dynamics.py [--profiles static live hostile]
[--files general_test ...] [--limit N] [--seed 0] [--seconds 3] [--no-throughput]``.
The expert runs in process on one simulated phone per goal (a fresh episode of device
``emulator-5554`` of farm seed ``--seed``, episode index = goal index), exactly as it runs over
ADB but without the transport. Results are recorded by hand in a dated record (last:
benchmarks/results/2026-11-23-live-world-dynamics.md) and a row of ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

import torch

from distrl_tasks.sim.dynamics import NAMES, Dynamics
from distrl_tasks.sim.phone import Phone
from distrl_tasks.tasks import load_goals, parse_goal, unique_goals
from distrl_tasks.tasks.expert import solve

FILES = ("general_train", "general_test", "webshop_train", "webshop_test")


def expert_success(
    name: str, profile: str, seed: int, limit: int = 0
) -> tuple[float, int, Counter, list[str], float]:
    """Expert success rate on the unique goals of one AitW file under ``profile``.

    Returns (success rate, goals, per-perturbation [opportunities, appearances], failed goals,
    mean steps).
    """
    task_set, split = name.split("_")
    goals = unique_goals(load_goals(task_set, split))
    if limit:
        goals = goals[:limit]
    dyn = Dynamics(profile, seed=seed, serial="emulator-5554")
    phone = Phone(seed=seed, dynamics=dyn)
    wins, failed, steps = 0, [], 0
    for goal in goals:
        task = parse_goal(goal)
        phone.set_task(task)
        ep = solve(phone, task)
        ok = bool(phone.check_task()["success"])
        wins += ok
        steps += ep.steps
        if not ok:
            failed.append(goal)
    stats = Counter()
    for n, (opp, hit) in dyn.stats.items():
        stats[(n, "opp")] += opp
        stats[(n, "hit")] += hit
    return wins / len(goals), len(goals), stats, failed, steps / len(goals)


def throughput(profile: str, seconds: float) -> tuple[float, float]:
    """Against ``distrl sim serve --dynamics profile`` (server pinned to one core): screenshots/s
    of a raw-protocol client, and adbutils tap+screenshot steps/s on one device (the taps open
    apps from the home screen, so interruptions and slow loads come up)."""
    sys.path.insert(0, os.path.dirname(__file__))
    import sim_throughput as st

    if len(os.sched_getaffinity(0)) > 1:  # keep the client off the server's core
        os.sched_setaffinity(0, os.sched_getaffinity(0) - {st.SERVER_CPU})
    extra = ["--dynamics", profile]
    return st.bench_screenshots(seconds, extra), st.bench_steps(1, seconds, extra)


def server_cpu(profile: str, n: int = 2000) -> tuple[float, float]:
    """CPU seconds per shell ``screencap -p`` of one device in process (the server's work without
    the transport; a load-independent figure on a shared machine): on a still screen, and on a
    screen changed before each capture (``input keyevent HOME`` / launching Chrome by
    ``monkey``, alternately: new screens, so dynamics draws and PNG cache misses)."""
    from distrl_tasks.sim.device_farm import DeviceFarm

    dev = DeviceFarm(1, seed=0, dynamics=profile)["emulator-5554"]
    dev.shell.run("screencap -p")
    t0 = time.process_time()
    for _ in range(n):
        dev.shell.run("screencap -p")
    still = (time.process_time() - t0) / n
    cmds = ("input keyevent HOME", "monkey -p com.android.chrome 1")
    t0 = time.process_time()
    for i in range(n // 10):
        dev.shell.run(cmds[i % 2])
        dev.shell.run("screencap -p")
    moving = (time.process_time() - t0) / (n // 10)
    return still, moving


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=["static", "live", "hostile"])
    parser.add_argument("--files", nargs="+", default=list(FILES))
    parser.add_argument("--limit", type=int, default=0, help="goals per file (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--show-failed", type=int, default=0)
    args = parser.parse_args()
    totals: dict[str, Counter] = {}
    print("| file | " + " | ".join(args.profiles) + " |")
    print("|---|" + "---|" * len(args.profiles))
    for name in args.files:
        cells = []
        for profile in args.profiles:
            t0 = time.perf_counter()
            rate, n, stats, failed, steps = expert_success(name, profile, args.seed, args.limit)
            totals.setdefault(profile, Counter()).update(stats)
            cells.append(f"{100 * rate:.1f}% (n={n}, {steps:.1f} steps)")
            print(
                f"  [{name} {profile}: {time.perf_counter() - t0:.0f} s; failed {len(failed)}"
                f"{': ' + repr(failed[: args.show_failed]) if args.show_failed else ''}]",
                file=sys.stderr,
            )
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print("\nObserved rate per perturbation: appearances / opportunities (configured rate)")
    print("| perturbation | " + " | ".join(args.profiles) + " |")
    print("|---|" + "---|" * len(args.profiles))
    for pert in NAMES:
        cells = []
        for profile in args.profiles:
            c = totals[profile]
            opp, hit = c[(pert, "opp")], c[(pert, "hit")]
            configured = Dynamics(profile).rates[pert]
            obs = f"{hit / opp:.3f}" if opp else "-"
            cells.append(f"{obs} ({hit}/{opp}; {configured:g})")
        print(f"| {pert} | " + " | ".join(cells) + " |")
    if not args.no_throughput:
        for profile in ("static", "live"):
            still, moving = server_cpu(profile)
            print(
                f"dynamics {profile}: server CPU per screencap {1e6 * still:.0f} us on a still "
                f"screen (= {1 / still:.0f}/s per core), {1e3 * moving:.1f} ms with a new screen "
                "before each (input + screencap)"
            )
        for profile in ("static", "live"):
            shots, steps = throughput(profile, args.seconds)
            print(
                f"dynamics {profile}: {shots:.0f} screenshots/s (raw ADB client, 1 server core); "
                f"{steps:.0f} steps/s (adbutils tap+screenshot, 1 device)"
            )


if __name__ == "__main__":
    main()
