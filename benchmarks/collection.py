"""Asynchronous (DistRL) vs synchronous (DigiRL) collection throughput on simulated devices.

Usage::

    .venv/bin/python benchmarks/collection.py            # 8 and 32 devices (several minutes)
    .venv/bin/python benchmarks/collection.py --quick    # 4 and 8 devices, fewer episodes

Setup: an in-process simulator farm with the emulator-calibrated latency model
(:mod:`distrl_tasks.sim.realism`) time-scaled by ``--time-scale``, faults off. The policy is
the scripted expert with a mistake rate (``--mistake-rate``, default 0.3): mistakes add wrong
taps, typos and detours, so episode lengths vary from task to task and between episodes, which
is what makes lockstep collection wait on stragglers. Both modes run exactly the same episodes:
the same goal plan, fresh farms with the same seed (so every device draws the same latencies for
the same commands) and mistakes seeded per trajectory id.

Figures per device count:

* trajectories/min of each mode over the whole run (``trajectories / wall``) and their ratio;
* the ideal: ``devices / mean episode time``, where an episode's time is what it takes on a
  device that has the host to itself: the device time the latency model charged for it
  (summed from the farm's own latency draws) plus the ADB client's per-step cost, measured by
  a calibration run of device 0's plan alone (same device, same latency draws, same episodes);
* async efficiency = measured / ideal, over the whole run (which includes the tail of a fixed
  plan: devices that finished their episodes wait for the last one) and back to back (all
  trajectories over the mean device finish time: what actors that run continuously, as
  DistRL's do, sustain).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from distrl_tasks.agents.image_encoders import SmallImageEncoder
from distrl_tasks.bench.describe import machine_info
from distrl_tasks.config import EnvConfig, LatencyConfig, SimConfig
from distrl_tasks.envs.adb_device import AdbDevice
from distrl_tasks.envs.android_env import AndroidEnv
from distrl_tasks.evaluators.oracle import OracleEvaluator
from distrl_tasks.runners.collector import collect_async, collect_sync
from distrl_tasks.runners.inference import InferenceServer
from distrl_tasks.runners.policies import ScriptedPolicy
from distrl_tasks.runners.trajectory import Episode
from distrl_tasks.sim.serving import RunningFarm
from distrl_tasks.stages.curriculum import plan_goals as sample_goals
from distrl_tasks.tasks.goal_farms import running_farm
from distrl_tasks.tasks.taskset import load_goals


@dataclass
class DeviceClock:
    """Latency-model seconds charged to each device, read off the farm's own draws."""

    charged: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, rf: RunningFarm) -> None:
        """Wrap each device's ``command_delay`` so every drawn delay is added up per serial."""
        for serial, dev in rf.farm.devices.items():
            self.charged[serial] = 0.0
            dev.realism.command_delay = self._wrap(serial, dev.realism.command_delay)

    def _wrap(self, serial: str, draw: Callable[..., float]) -> Callable[..., float]:
        def counted(categories: object) -> float:
            delay = draw(categories)
            with self.lock:
                self.charged[serial] += delay
            return delay

        return counted

    def snapshot(self, serial: str) -> float:
        with self.lock:
            return self.charged[serial]


@dataclass
class ModeResult:
    """One collection run and what the devices were charged during it."""

    mode: str
    devices: int
    trajectories: int
    steps: int
    successes: int
    wall_s: float
    device_s: list[float]  # latency-model seconds charged per episode
    episode_steps: list[int]  # steps per episode, same order
    finish_s: dict[str, float]  # when each device completed its last episode

    @property
    def per_min(self) -> float:
        return 60.0 * self.trajectories / self.wall_s

    @property
    def back_to_back_per_min(self) -> float:
        """Trajectories over the mean device finish time: the rate without the plan's tail
        (devices idle once their own episodes are done), comparable with the ideal, which
        also averages episode times over devices."""
        return 60.0 * self.trajectories / statistics.fmean(self.finish_s.values())

    def ideal_per_min(self, overhead_per_step: float = 0.0) -> float:
        """``devices / mean episode time``, an episode costing its device time plus the
        client's ``overhead_per_step`` seconds per step."""
        times = [
            t + overhead_per_step * n
            for t, n in zip(self.device_s, self.episode_steps, strict=True)
        ]
        return 60.0 * self.devices / statistics.fmean(times)


def make_envs(rf: RunningFarm, horizon: int) -> list[AndroidEnv]:
    env_cfg = dataclasses.replace(EnvConfig(), horizon_general=horizon)
    encoder = SmallImageEncoder()  # what the collect stage uses for the tiny model
    return [
        AndroidEnv(AdbDevice(s, rf.host, rf.port, timeout_s=60.0), encoder, env_cfg)
        for s in rf.serials
    ]


def run_mode(
    mode: str,
    devices: int,
    plan: dict[str, list[str]],
    sim_cfg: SimConfig,
    *,
    mistake_rate: float,
    horizon: int,
    seed: int,
) -> ModeResult:
    """Collect ``plan`` on a fresh farm in ``mode`` and account device time per episode."""
    clock = DeviceClock()
    charged: list[float] = []
    lengths: list[int] = []
    finish: dict[str, float] = {}
    last_charge: dict[str, float] = {}
    lock = threading.Lock()
    with running_farm(devices, seed=seed, sim_cfg=sim_cfg) as rf:
        envs = make_envs(rf, horizon)
        clock.attach(rf)
        last_charge.update({s: clock.snapshot(s) for s in rf.serials})
        t0 = time.monotonic()

        def on_episode(ep: Episode) -> None:
            now = clock.snapshot(ep.device)  # a device is idle between its episodes
            with lock:
                charged.append(now - last_charge[ep.device])
                lengths.append(ep.steps)
                last_charge[ep.device] = now
                finish[ep.device] = time.monotonic() - t0

        policy = ScriptedPolicy(mistake_rate=mistake_rate, seed=seed)
        common = dict(round_=0, oracle=OracleEvaluator(), progress=False, on_episode=on_episode)
        if mode == "async":
            with InferenceServer(policy, 0, max_batch=devices, max_wait_ms=5.0) as server:
                res = collect_async(envs, server, plan, **common)
        else:
            res = collect_sync(envs, policy, plan, **common)
    stats = res.stats
    if stats.failures or stats.devices_lost:
        raise RuntimeError(f"{mode}: {stats.failures} failed episodes although faults are off")
    return ModeResult(
        mode=mode,
        devices=devices,
        trajectories=stats.trajectories,
        steps=stats.steps,
        successes=stats.successes,
        wall_s=stats.wall_s,
        device_s=charged,
        episode_steps=lengths,
        finish_s=finish,
    )


def client_overhead(
    plan: dict[str, list[str]], sim_cfg: SimConfig, *, mistake_rate: float, horizon: int, seed: int
) -> float:
    """Seconds per step an episode takes beyond its device time on an otherwise idle host.

    Runs device 0's plan on a one-device farm: device 0 has the same phone and latency stream
    as in the big farm, so these are the very episodes it ran there.
    """
    first = next(iter(plan))
    one = run_mode(
        "async",
        1,
        {first: plan[first]},
        sim_cfg,
        mistake_rate=mistake_rate,
        horizon=horizon,
        seed=seed,
    )
    return (one.wall_s - sum(one.device_s)) / one.steps


def compare(
    devices: int, episodes: int, sim_cfg: SimConfig, *, mistake_rate: float, horizon: int, seed: int
) -> tuple[ModeResult, ModeResult, float]:
    """Async and sync on the same plan, plus the client overhead per step (calibration)."""
    goals = load_goals("general", "train")
    serials = [f"emulator-{5554 + 2 * i}" for i in range(devices)]
    plan = sample_goals(goals, serials, episodes, f"bench/{seed}/{devices}")
    kw = dict(mistake_rate=mistake_rate, horizon=horizon, seed=seed)
    overhead = client_overhead(plan, sim_cfg, **kw)
    a = run_mode("async", devices, plan, sim_cfg, **kw)
    s = run_mode("sync", devices, plan, sim_cfg, **kw)
    if a.steps != s.steps or a.successes != s.successes:
        print(f"  note: the modes ran different episodes (steps {a.steps} vs {s.steps})")
    return a, s, overhead


def report(a: ModeResult, s: ModeResult, overhead: float) -> None:
    ideal = a.ideal_per_min(overhead)
    mean_dev = statistics.fmean(a.device_s)
    print(f"--- {a.devices} devices, {a.trajectories} trajectories, {a.steps} steps per mode ---")
    print(
        f"  mean episode: {a.steps / a.trajectories:.1f} steps, device time {mean_dev:.2f} s "
        f"+ client {overhead * 1000:.0f} ms/step; success {a.successes / a.trajectories:.0%}"
    )
    for r in (a, s):
        print(f"  {r.mode:5s}: {r.per_min:7.1f} traj/min (wall {r.wall_s:6.1f} s)")
    print(f"  async/sync ratio: {a.per_min / s.per_min:.2f}x")
    print(f"  ideal (devices / mean episode time): {ideal:.1f} traj/min")
    print(f"  async efficiency, whole run: {a.per_min / ideal:.0%}")
    print(
        f"  async efficiency, back to back: {a.back_to_back_per_min / ideal:.0%} "
        f"({a.back_to_back_per_min:.1f} traj/min)"
    )
    print(f"  sync efficiency, whole run: {s.per_min / ideal:.0%}")
    print(f"  device-only ideal (client free): {a.ideal_per_min():.1f} traj/min")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, nargs="+", default=None)
    parser.add_argument("--episodes", type=int, default=None, help="episodes per device")
    parser.add_argument(
        "--time-scale", type=float, default=None, help="default 0.5 (--quick: 0.25)"
    )
    parser.add_argument("--mistake-rate", type=float, default=0.3)
    parser.add_argument("--horizon", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="4 and 8 devices, 3 episodes each")
    args = parser.parse_args()
    devices = args.devices or ([4, 8] if args.quick else [8, 32])
    episodes = args.episodes or (3 if args.quick else 5)
    if any(d < 1 for d in devices) or episodes < 1:
        parser.error("--devices and --episodes must be >= 1")
    if not 0.0 <= args.mistake_rate < 1.0:
        parser.error(f"--mistake-rate must be in [0, 1), got {args.mistake_rate}")
    if args.time_scale is None:
        args.time_scale = 0.25 if args.quick else 0.5
    if args.time_scale <= 0:
        parser.error(f"--time-scale must be > 0, got {args.time_scale}")
    torch.set_num_threads(1)
    sim_cfg = SimConfig(latency=LatencyConfig(enabled=True, time_scale=args.time_scale))
    machine = machine_info()
    print(
        f"machine: nproc={machine['nproc']}, {machine['cpu']} ({machine['cpu_family']}), "
        f"Python {machine['python']}; "
        f"time_scale={args.time_scale}, mistake_rate={args.mistake_rate}, "
        f"horizon={args.horizon}, episodes/device={episodes}"
    )
    for d in devices:
        a, s, overhead = compare(
            d,
            episodes,
            sim_cfg,
            mistake_rate=args.mistake_rate,
            horizon=args.horizon,
            seed=args.seed,
        )
        report(a, s, overhead)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
