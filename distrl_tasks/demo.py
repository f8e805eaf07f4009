"""`distrl demo`: the main job on the embedded default.

Today it starts the simulated device farm behind its ADB server and lets the scripted expert solve
AitW tasks on every device in parallel, through the same ADB actions an agent uses, then prints a
success table per split. Later stages of the pipeline (bootstrap, RL rounds) extend it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from tqdm import tqdm

from distrl_tasks.config import Config

SPLITS: tuple[tuple[str, str], ...] = (
    ("general", "train"),
    ("general", "test"),
    ("webshop", "train"),
    ("webshop", "test"),
)


@dataclass
class SplitResult:
    """Outcome of the expert on one task split."""

    task_set: str
    split: str
    episodes: int = 0
    successes: int = 0
    steps: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0


def pick_goals(goals: Sequence[str], n: int) -> list[str]:
    """The first ``n`` distinct goals in file order (the papers' evaluation protocol)."""
    seen: dict[str, None] = {}
    for goal in goals:
        seen.setdefault(goal, None)
        if len(seen) >= n:
            break
    return list(seen)


def run_split(
    host: str,
    port: int,
    serials: Sequence[str],
    goals: Sequence[str],
    result: SplitResult,
    *,
    mistake_rate: float,
    seed: int,
    progress: tqdm,
) -> None:
    """Run the expert on every goal, one worker thread per device, and fill ``result``."""
    from distrl_tasks.tasks.expert import run_expert

    work: queue.Queue[tuple[int, str]] = queue.Queue()
    for i, goal in enumerate(goals):
        work.put((i, goal))
    lock = threading.Lock()
    start = time.perf_counter()

    def worker(serial: str) -> None:
        while True:
            try:
                i, goal = work.get_nowait()
            except queue.Empty:
                return
            try:
                out = run_expert(
                    host=host,
                    port=port,
                    serial=serial,
                    goal=goal,
                    mistake_rate=mistake_rate,
                    seed=seed + i,
                )
                ok, steps, err = bool(out["success"]), int(out["steps"]), ""
            except Exception as exc:  # a device fault must not stop the farm: record and go on
                ok, steps, err = False, 0, f"{serial}: {goal!r}: {exc}"
            with lock:
                result.episodes += 1
                result.successes += ok
                result.steps.append(steps)
                if err:
                    result.errors.append(err)
                progress.update(1)
                progress.set_postfix(
                    split=f"{result.task_set}/{result.split}",
                    success=f"{result.success_rate:.0%}",
                    refresh=False,
                )

    threads = [threading.Thread(target=worker, args=(s,), daemon=True) for s in serials]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.seconds = time.perf_counter() - start


def format_table(results: Sequence[SplitResult]) -> str:
    """A plain-text table of success per split."""
    lines = [
        f"{'split':<16}{'episodes':>9}{'success':>9}{'mean steps':>12}{'episodes/s':>12}",
        "-" * 58,
    ]
    for r in results:
        mean_steps = sum(r.steps) / len(r.steps) if r.steps else 0.0
        rate = r.episodes / r.seconds if r.seconds else 0.0
        lines.append(
            f"{r.task_set + '/' + r.split:<16}{r.episodes:>9}{r.success_rate:>9.1%}"
            f"{mean_steps:>12.1f}{rate:>12.1f}"
        )
    return "\n".join(lines)


def run_demo(cfg: Config, *, tasks_per_split: int = 24, mistake_rate: float | None = None) -> int:
    """Serve ``cfg.sim.devices`` simulated phones and let the expert solve tasks on all of them.

    Returns a process exit code: 0 when every split ran, 1 if any episode hit an error.
    """
    from distrl_tasks.sim.farm import running_farm
    from distrl_tasks.tasks.taskset import load_goals

    rate = cfg.sim.expert_mistake_rate if mistake_rate is None else mistake_rate
    plan = [
        (ts, sp, pick_goals(load_goals(ts, sp, cfg.env.data_dir), tasks_per_split))
        for ts, sp in SPLITS
    ]
    total = sum(len(goals) for _, _, goals in plan)
    print(
        f"Starting a simulated device farm: {cfg.sim.devices} devices "
        f"(latency {'on' if cfg.sim.latency.enabled else 'off'}, "
        f"faults {'on' if cfg.sim.faults.enabled else 'off'})"
    )
    results: list[SplitResult] = []
    with running_farm(
        devices=cfg.sim.devices, seed=cfg.sim.seed, sim_cfg=cfg.sim, host=cfg.sim.host
    ) as farm:
        print(f"ADB server on {farm.host}:{farm.port}; try: adb -P {farm.port} devices")
        with tqdm(total=total, unit="episode", desc="expert", dynamic_ncols=True) as bar:
            for task_set, split, goals in plan:
                result = SplitResult(task_set, split)
                run_split(
                    farm.host,
                    farm.port,
                    farm.serials,
                    goals,
                    result,
                    mistake_rate=rate,
                    seed=cfg.sim.seed,
                    progress=bar,
                )
                results.append(result)
    print()
    print(f"Scripted expert on the simulator (mistake rate {rate:.0%}):")
    print(format_table(results))
    errors = [e for r in results for e in r.errors]
    for err in errors[:10]:
        print(f"  error: {err}")
    if len(errors) > 10:
        print(f"  ... and {len(errors) - 10} more errors")
    print(
        "\nNext: serve the farm yourself and drive it with adb or adbutils:\n"
        "  distrl sim serve --port 15037 --devices 4\n"
        "  adb -P 15037 devices\n"
        "  distrl sim expert --port 15037 --serial emulator-5554 --goal 'Set an alarm for 6pm'"
    )
    return 1 if errors else 0
