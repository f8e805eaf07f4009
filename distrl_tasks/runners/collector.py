"""Asynchronous (DistRL) and synchronous (DigiRL) trajectory collection over many devices.

* :func:`collect_async`: one thread per device runs its episodes back to back; every policy call
  goes through the batching :class:`~distrl_tasks.runners.inference.InferenceServer`, so a slow
  device never holds the others up.
* :func:`collect_sync`: the devices step in lockstep; each step waits for the slowest device and
  each wave of episodes waits for the slowest episode.

Faults never stop collection: a device error truncates the episode (its steps are kept, see
:mod:`.trajectory`), the device is reset (waiting out offline spells), and the next episode
starts. A device that fails ``max_consecutive_failures`` resets in a row is given up for the run.
Episodes are returned per device in goal order, whatever the timing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from distrl_tasks.envs.android_env import AndroidEnv, EnvObservation
from distrl_tasks.envs.device import DeviceError
from distrl_tasks.evaluators.oracle import OracleEvaluator
from distrl_tasks.protocol.progress import progress_bar
from distrl_tasks.runners.gate import EpisodeGate, GateClosed
from distrl_tasks.runners.inference import InferenceServer
from distrl_tasks.runners.policies import CollectPolicy, as_collect_policy
from distrl_tasks.runners.trajectory import Episode, EpisodeMeta, EpisodeRunner

# How long an interrupted collection waits for each device thread: one step at most, i.e. one
# policy call and one device command (bounded by env.command_timeout_s, 20 s by default).
STOP_JOIN_S = 30.0


@dataclass
class CollectStats:
    """Counters of one collection run (thread-safe through :meth:`add`)."""

    trajectories: int = 0
    steps: int = 0
    successes: int = 0
    labeled: int = 0
    failures: int = 0  # episodes cut short or lost by device errors
    devices_lost: int = 0
    resumed: int = 0  # episodes taken from a journal (collected by an earlier attempt)
    resumed_steps: int = 0
    wall_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, ep: Episode) -> None:
        with self._lock:
            if ep.rows:
                self.trajectories += 1
                self.steps += ep.steps
            if ep.success is not None:
                self.labeled += 1
                self.successes += int(ep.success)
            if ep.error:
                self.failures += 1

    def add_resumed(self, ep: Episode) -> None:
        """Count an episode an earlier attempt finished: in the totals, not in the rates."""
        self.add(ep)
        with self._lock:
            self.resumed += 1
            self.resumed_steps += ep.steps

    def as_dict(self) -> dict[str, float]:
        rate = self.successes / self.labeled if self.labeled else 0.0
        new_steps, new_trajectories = (
            self.steps - self.resumed_steps,
            self.trajectories - self.resumed,
        )
        per_s = new_steps / self.wall_s if self.wall_s > 0 else 0.0
        per_min = 60 * new_trajectories / self.wall_s if self.wall_s > 0 else 0.0
        return {
            "trajectories": self.trajectories,
            "steps": self.steps,
            "successes": self.successes,
            "labeled": self.labeled,
            "success_rate": rate,
            "failures": self.failures,
            "devices_lost": self.devices_lost,
            "resumed": self.resumed,
            "wall_s": self.wall_s,
            "steps_per_s": per_s,
            "trajectories_per_min": per_min,
        }


@dataclass
class CollectResult:
    """Episodes per device serial (goal order) and the run's counters."""

    episodes: dict[str, list[Episode]]
    stats: CollectStats

    def rows(self, serial: str | None = None) -> list[dict]:
        """Rows of every kept trajectory (of one device when ``serial`` is given)."""
        serials = [serial] if serial is not None else list(self.episodes)
        return [r for s in serials for ep in self.episodes[s] for r in ep.rows]


def recover(env: AndroidEnv, attempts: int = 5, wait_s: float = 0.5) -> bool:
    """Bring a failed device back to a clean state; False when it stays unusable."""
    for i in range(attempts):
        try:
            env.device.reset()
            return True
        except DeviceError:
            time.sleep(wait_s * (i + 1))  # offline spells and restarts take a while
    return False


def trajectory_id(round_: int, serial: str, index: int, prefix: str = "") -> str:
    """Deterministic id, so re-running a round produces the same names."""
    return f"{prefix}r{round_}-{serial}-e{index:04d}"


class PlannedTrajectories(Mapping[str, str]):
    """Trajectory id -> goal of every episode a plan (goals per device serial) holds.

    What :meth:`~distrl_tasks.runners.journal.EpisodeJournal.load` matches a journal against.
    Ids are parsed on lookup rather than built upfront: a budgeted continuous round plans far
    more episodes than its budget lets it run.
    """

    def __init__(self, goals: Mapping[str, Sequence[str]], round_: int, prefix: str = "") -> None:
        self._goals, self._round, self._prefix = goals, round_, prefix
        self._head = f"{prefix}r{round_}-"

    def __getitem__(self, tid: str) -> str:
        head, _, index = tid.rpartition("-e")
        serial = head[len(self._head) :] if head.startswith(self._head) else ""
        planned = self._goals.get(serial, ())
        k = int(index) if index.isdigit() else len(planned)
        # the id must be the one trajectory_id writes ("e7" is not episode "e0007")
        if k >= len(planned) or trajectory_id(self._round, serial, k, self._prefix) != tid:
            raise KeyError(tid)
        return planned[k]

    def __iter__(self) -> Iterator[str]:
        for serial, planned in self._goals.items():
            for k in range(len(planned)):
                yield trajectory_id(self._round, serial, k, self._prefix)

    def __len__(self) -> int:
        return sum(len(planned) for planned in self._goals.values())


class _Progress:
    def __init__(self, total: int, devices: int, enabled: bool, desc: str) -> None:
        self.bar = progress_bar(total=total, desc=desc, unit="traj", enabled=enabled)
        self.devices = devices
        self.start = time.monotonic()
        self.lock = threading.Lock()

    def update(self, stats: CollectStats) -> None:
        with self.lock:
            self.bar.update(1)
            elapsed = max(time.monotonic() - self.start, 1e-9)
            self.bar.set_postfix(
                devices=self.devices - stats.devices_lost,
                steps_s=f"{stats.steps / elapsed:.1f}",
                failures=stats.failures,
                refresh=False,
            )

    def close(self) -> None:
        self.bar.close()


def collect_async(
    envs: Sequence[AndroidEnv],
    server: InferenceServer,
    goals: Mapping[str, Sequence[str]],
    *,
    round_: int,
    split: str = "train",
    oracle: OracleEvaluator | None = None,
    gamma: float = 0.5,
    id_prefix: str = "",
    max_consecutive_failures: int = 3,
    recover_attempts: int = 5,
    recover_wait_s: float = 0.5,
    progress: bool | str = True,
    on_episode: Callable[[Episode], None] | None = None,
    board: EpisodeGate | None = None,
    halt: threading.Event | None = None,
    done: Mapping[str, Episode] | None = None,
) -> CollectResult:
    """DistRL-style collection: every device runs ``goals[serial]`` back to back.

    Each episode is pinned to the server's policy version at its start (see
    :meth:`InferenceServer.lease`), so a :meth:`~InferenceServer.swap` mid-run applies to the
    episodes that start after it. Episodes whose trajectory id is in ``done`` (an
    :class:`~distrl_tasks.runners.journal.EpisodeJournal` of an earlier attempt) are taken as
    they are and not run again, also past where a device stopped (halted, its gate closed, the
    device lost); ``on_episode`` sees only new ones. With a ``board`` (a
    continuous learner's version board, seen as an :class:`~distrl_tasks.runners.gate.EpisodeGate`)
    every episode is dispatched through it: the device waits at its staleness gate, the newest
    published version is swapped into the server between episodes, and the episode's
    transitions are reported when it ends (whatever its staleness by then: no episode is
    dropped). Setting ``halt`` starts no further episode while letting the running ones finish.
    ``progress`` shows a bar; a string is the bar's label (default "collect[async]").
    """
    stats = CollectStats()
    out: dict[str, list[Episode]] = {e.device.serial: [] for e in envs}
    label = progress if isinstance(progress, str) else "collect[async]"
    bar = _Progress(sum(len(goals.get(s, ())) for s in out), len(envs), bool(progress), label)
    start = time.monotonic()
    stop = threading.Event()  # the caller is unwinding: devices drop their episode and return
    swap_lock = threading.Lock()

    finished = {e.device.serial: threading.Event() for e in envs}

    def device_loop(env: AndroidEnv) -> None:
        try:
            stopped_at = run_device(env)
            if not stop.is_set():  # halted, gate closed or device lost: journaled rows stay
                for k in range(stopped_at, len(goals.get(env.device.serial, ()))):
                    take_earlier(env.device.serial, k)
        finally:
            finished[env.device.serial].set()

    def take_earlier(serial: str, k: int) -> bool:
        """Take episode ``k`` from ``done`` if an earlier attempt journaled it."""
        earlier = (done or {}).get(trajectory_id(round_, serial, k, id_prefix))
        if earlier is None:
            return False
        out[serial].append(earlier)
        stats.add_resumed(earlier)
        bar.update(stats)
        return True

    def run_device(env: AndroidEnv) -> int:
        """Run the device's episodes; returns the index of the first one it did not reach."""
        serial, failures = env.device.serial, 0
        for k, goal in enumerate(goals.get(serial, ())):
            if stop.is_set() or (halt is not None and halt.is_set()):
                return k
            if take_earlier(serial, k):
                continue
            if board is not None:
                try:
                    newest = board.dispatch(stop, halt)  # the budget's end frees the gate too
                except GateClosed:
                    return k
                with swap_lock:  # the first device to see a new version installs it
                    if newest.version > server.version:
                        server.swap(newest.policy, newest.version)
            version = server.lease()
            meta = EpisodeMeta(round_, env.task_set, split, version)
            runner = EpisodeRunner(env, meta, oracle=oracle, gamma=gamma)
            ep = None
            try:
                obs = runner.begin(goal, trajectory_id(round_, serial, k, id_prefix))
                while obs is not None:
                    if stop.is_set():
                        return k
                    decision = server.act(obs, version)
                    obs = runner.advance(decision.text, decision.log_prob)
                ep = runner.finish()
            finally:
                server.release(version)
                if board is not None:
                    board.finished(version, ep.steps if ep is not None else 0)
            out[serial].append(ep)
            stats.add(ep)
            if on_episode is not None:
                on_episode(ep)
            bar.update(stats)
            if ep.error:
                ok = recover(env, recover_attempts, recover_wait_s)
                failures = 0 if ok else failures + 1
                if failures >= max_consecutive_failures:
                    with stats._lock:
                        stats.devices_lost += 1
                    return k + 1
        return len(goals.get(serial, ()))

    threads = [
        threading.Thread(target=device_loop, args=(e,), name=f"collect-{e.device.serial}")
        for e in envs
    ]
    for t in threads:
        t.start()
    try:
        # wait on the devices' own events, waking up often: an interrupt sent without a signal
        # (_thread.interrupt_main, as notebooks do) is acted on at once, and it never lands
        # inside Thread.join, which on Python 3.11 can then mark a running thread as stopped
        pending = list(finished.values())
        while pending:
            pending = [flag for flag in pending if not flag.wait(0.2)]
    except BaseException:
        # Ctrl-C or SIGTERM while waiting: stop every device at its next step while the
        # inference server and the farm are still up (the caller closes them next), so no
        # thread outlives them and fails on a closed server or a vanished ADB port.
        stop.set()
        deadline = time.monotonic() + STOP_JOIN_S
        for flag in finished.values():
            flag.wait(max(0.0, deadline - time.monotonic()))
        for t in threads:
            t.join(timeout=1.0)  # past its event: only the thread's own exit is left
        bar.close()
        raise
    for t in threads:
        t.join()
    stats.wall_s = time.monotonic() - start
    bar.close()
    return CollectResult(out, stats)


def _begin(runner: EpisodeRunner, goal: str, traj_id: str) -> EnvObservation | None:
    return runner.begin(goal, traj_id)


def _advance(runner: EpisodeRunner, text: str, log_prob: float) -> EnvObservation | None:
    return runner.advance(text, log_prob)


def collect_sync(
    envs: Sequence[AndroidEnv],
    policy: object,
    goals: Mapping[str, Sequence[str]],
    *,
    round_: int,
    policy_version: int = 0,
    split: str = "train",
    oracle: OracleEvaluator | None = None,
    gamma: float = 0.5,
    id_prefix: str = "",
    recover_attempts: int = 5,
    recover_wait_s: float = 0.5,
    progress: bool = True,
    on_episode: Callable[[Episode], None] | None = None,
    done: Mapping[str, Episode] | None = None,
) -> CollectResult:
    """DigiRL-style collection: waves of one episode per device, stepped in lockstep.

    Each step batches the observations of all running episodes into one policy call, then
    performs the actions on all devices in parallel and waits for every one of them. Episodes
    in ``done`` (by trajectory id) are taken as they are, as in :func:`collect_async`.
    """
    act: CollectPolicy = as_collect_policy(policy)
    stats = CollectStats()
    out: dict[str, list[Episode]] = {e.device.serial: [] for e in envs}
    bar = _Progress(sum(len(goals.get(s, ())) for s in out), len(envs), progress, "collect[sync]")
    start = time.monotonic()
    waves = max((len(goals.get(s, ())) for s in out), default=0)
    with ThreadPoolExecutor(max_workers=max(1, len(envs))) as pool:
        for k in range(waves):
            jobs = []
            for e in envs:
                if k >= len(goals.get(e.device.serial, ())):
                    continue
                earlier = (done or {}).get(trajectory_id(round_, e.device.serial, k, id_prefix))
                if earlier is None:
                    jobs.append((e, goals[e.device.serial][k]))
                    continue
                out[e.device.serial].append(earlier)
                stats.add_resumed(earlier)
                bar.update(stats)
            if not jobs:
                continue
            runners = [
                EpisodeRunner(
                    e,
                    EpisodeMeta(round_, e.task_set, split, policy_version),
                    oracle=oracle,
                    gamma=gamma,
                )
                for e, _ in jobs
            ]
            ids = [trajectory_id(round_, e.device.serial, k, id_prefix) for e, _ in jobs]
            obs = list(pool.map(_begin, runners, [g for _, g in jobs], ids))
            while any(o is not None for o in obs):
                live = [i for i, o in enumerate(obs) if o is not None]
                texts, logps = act.act([obs[i] for i in live])
                stepped = pool.map(_advance, [runners[i] for i in live], texts, logps)
                for i, o in zip(live, list(stepped), strict=True):
                    obs[i] = o
            episodes = list(pool.map(lambda r: r.finish(), runners))
            failed = []
            for (env, _), ep in zip(jobs, episodes, strict=True):
                out[env.device.serial].append(ep)
                stats.add(ep)
                if on_episode is not None:
                    on_episode(ep)
                bar.update(stats)
                if ep.error:
                    failed.append(env)
            for ok in pool.map(lambda e: recover(e, recover_attempts, recover_wait_s), failed):
                if not ok:
                    with stats._lock:
                        stats.devices_lost += 1
    stats.wall_s = time.monotonic() - start
    bar.close()
    return CollectResult(out, stats)
