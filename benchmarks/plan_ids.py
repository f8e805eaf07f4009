"""Cost of a budgeted continuous round's plan at its start: the planned goals, and the map of
trajectory ids the episode journal is matched against, built as a dict (before) or parsed on
lookup (``PlannedTrajectories``, now).

A budgeted run plans ``UNBOUNDED_ROUNDS`` rounds' episodes (2 per device per round, 8 devices):
1.6 M episodes, of which the budget runs a few thousand.

    PYTHONPATH=. OMP_NUM_THREADS=1 .venv/bin/python benchmarks/plan_ids.py
"""

from __future__ import annotations

import time
import tracemalloc

from distrl_tasks.orchestration.pipeline import UNBOUNDED_ROUNDS
from distrl_tasks.runners.collector import PlannedTrajectories, trajectory_id
from distrl_tasks.stages.curriculum import plan_goals
from distrl_tasks.tasks.taskset import load_goals

DEVICES, EPISODES_PER_ROUND = 8, 2


def main() -> None:
    goals = load_goals("general", "train")
    serials = [f"emulator-{5554 + 2 * d}" for d in range(DEVICES)]
    start = time.perf_counter()
    plan = plan_goals(goals, serials, UNBOUNDED_ROUNDS * EPISODES_PER_ROUND, "0/1/0/train")
    drawn_s = time.perf_counter() - start

    def as_dict() -> dict[str, str]:
        return {
            trajectory_id(1, s, k): g for s, planned in plan.items() for k, g in enumerate(planned)
        }

    def on_lookup() -> PlannedTrajectories:
        return PlannedTrajectories(plan, 1)

    for name, build in (("dict (before)", as_dict), ("parsed on lookup", on_lookup)):
        start = time.perf_counter()
        ids = build()
        ids.get("r1-emulator-5554-e0000")
        took = time.perf_counter() - start
        del ids
        tracemalloc.start()
        ids = build()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del ids
        print(f"id map, {name}: {took:.2f} s, {peak / 2**20:.0f} MiB traced")
    print(f"plan: {drawn_s:.2f} s to draw {sum(map(len, plan.values())):,} episodes' goals")


if __name__ == "__main__":
    main()
