"""`kill -9` in the middle of an asynchronous `distrl round`, then the same command again.

``distrl round --rounds 2`` (DistRL's asynchronous round learner, ``replay_ratio: 0``: the
actor thread collects while the learner trains) runs as a child process on the tiny project and
is SIGKILLed once while an actor is collecting (an episode journaled, its collection unfinished)
and once in the learner's train stage (the round's learner state saved, its manifest not yet
written: the narrowest window a resume must handle). The actors are threads of that process, so
killing it is killing the actors and the learner at once. The same command then runs to the
end, and the run must hold:

- no trajectory lost: every trajectory the killed run had collected (its shards and its
  journal) is in the raw shards afterwards;
- none twice: every raw trajectory of a round up to the last one learned is in the labeled
  shards exactly once;
- no round trained twice: the resumed run learns the batches the killed one had learned or
  merged, so it ends with ``--rounds`` learned rounds, as an uninterrupted run does; their
  policy versions count 1, 2, ... (each train stage one version more than the last) and the
  registry holds one version per learned round, numbered consecutively;
- the staleness bound: no trajectory a round trained on is older than the learner's version
  minus the actor's lead (``orchestration.actor_max_pending``, or ``data.replay_window_rounds``).

In continuous mode (DistRL's default: actors and a learner side by side, one continuous round)
the learner process, or the whole run, is SIGKILLed once an episode is journaled: the round
fails, and its rerun keeps every journaled trajectory as it was, once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fakes.projects import TINY_PARAMS, register_initial_policy

from distrl_tasks.config import load_config
from distrl_tasks.runners.journal import journal_dir
from distrl_tasks.stages import common
from distrl_tasks.tracking.registry import ModelRegistry

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROUNDS = 2


def _command(project: Path) -> list[str]:
    return [
        sys.executable, "-m", "distrl_tasks.cli", "round", "--workdir", str(project),
        "--config", str(project / "params.yaml"), "--rounds", str(ROUNDS),
    ]  # fmt: skip


# the asynchronous round learner (DistRL's continuous learner is the default: its own test below)
ROUND_LEARNER = "orchestration.continuous.replay_ratio=0"


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def _collecting(project: Path, raw: Path) -> bool:
    """An actor is mid-collection after the first: an episode of an unfinished collection of
    round 2 or later is journaled (the learner is busy with round 1 or done with it)."""
    try:
        entries = list(raw.glob(".journal/r*-w*-train/*.parquet"))
    except FileNotFoundError:  # a collection committed (its journal left) mid-listing: poll again
        return False
    for entry in entries:
        round_ = int(entry.parent.name[1:7])
        if round_ > 1 and not (raw / f"collect-r{round_:06d}-w00.json").exists():
            return True
    return False


def _training(project: Path, raw: Path) -> bool:
    """The learner is in its second round's train stage: the round's state is saved, its
    manifest not yet (that round may have merged several collections)."""
    for state in (common.learner_dir(project) / "checkpoints").glob("round-*"):
        round_ = int(state.name.split("-")[1])
        if round_ > 1 and common.read_manifest(project, round_, "train") is None:
            return True
    return False


def _trajectories(paths: list[Path]) -> list[tuple[str, int, int]]:
    """(trajectory id, round, policy version) of every trajectory in ``paths`` (a list that
    holds one entry per occurrence, so a duplicate shows twice)."""
    out = []
    for path in paths:
        rows = pq.read_table(path, columns=["trajectory_id", "step", "round", "policy_version"])
        for row in rows.to_pylist():
            if row["step"] == 0:
                out.append((row["trajectory_id"], row["round"], row["policy_version"]))
    return out


def _kill_when(command: list[str], raw: Path, ready, timeout_s: float = 600) -> str:
    """Start the round, SIGKILL it when ``ready(project, raw)``; returns its stderr."""
    project = Path(command[command.index("--workdir") + 1])
    log = project.parent / "killed.stderr"
    with log.open("w") as err:
        child = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + timeout_s
        try:
            while not ready(project, raw):
                assert child.poll() is None, (
                    f"the run ended before the kill: {log.read_text()[-3000:]}"
                )
                assert time.monotonic() < deadline, "the moment to kill never came"
                time.sleep(0.01)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
    return log.read_text()


@pytest.mark.parametrize("moment", ["collect", "train"])
def test_sigkilled_round_resumes_with_every_trajectory_once(tmp_path: Path, moment: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "params.yaml").write_text(TINY_PARAMS)
    register_initial_policy(project)
    cfg = load_config(project / "params.yaml", [ROUND_LEARNER])
    raw, labeled = common.raw_dir(cfg, project), common.labeled_dir(cfg, project)
    command = [*_command(project), "--set", ROUND_LEARNER]

    started = time.monotonic()
    _kill_when(command, raw, _collecting if moment == "collect" else _training)
    killed_s = time.monotonic() - started
    collected = {t for t, _, _ in _trajectories(sorted(raw.glob("r*.parquet")))}
    journaled = {t for t, _, _ in _trajectories(sorted(raw.glob(".journal/*/*.parquet")))}
    assert collected | journaled, "the killed run had collected nothing"

    proc = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    resumed_s = time.monotonic() - started - killed_s
    print(f"{moment}: killed after {killed_s:.0f} s, resumed in {resumed_s:.0f} s")

    # no trajectory lost: what the killed run had collected or journaled is in the raw shards
    raw_rows = _trajectories(sorted(raw.glob("r*.parquet")))
    raw_ids = [t for t, _, _ in raw_rows]
    assert len(raw_ids) == len(set(raw_ids))
    assert collected | journaled <= set(raw_ids)

    # none twice: every raw trajectory of a learned round is labeled exactly once
    trained = sorted(
        int(d.name[1:])
        for d in common.rounds_dir(project).iterdir()
        if (d / "train.json").is_file()
    )
    assert len(trained) == ROUNDS, trained  # as many learner rounds as an uninterrupted run
    labeled_rows = _trajectories(sorted(labeled.glob("r*.parquet")))
    labeled_ids = [t for t, _, _ in labeled_rows]
    assert len(labeled_ids) == len(set(labeled_ids)), "a trajectory is labeled twice"
    assert {t for t, r, _ in raw_rows if r <= trained[-1]} <= set(labeled_ids)
    assert set(labeled_ids) <= set(raw_ids)

    # no round trained twice: one policy version per learned round, one registry version each
    versions = [common.read_manifest(project, r, "train")["policy_version"] for r in trained]
    assert versions == list(range(1, len(trained) + 1)), (trained, versions)
    registry = ModelRegistry.from_config(cfg, root=project)
    registered = [v for v in registry.compare_versions() if v.round]
    assert [v.round for v in registered] == trained
    numbers = [v.version for v in registered]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))

    # the staleness bound: the learner was never more versions ahead than the actor's lead
    lead = cfg.orchestration.actor_max_pending or cfg.data.replay_window_rounds
    window = cfg.data.replay_window_rounds
    for r, version in zip(trained, versions, strict=True):
        used = [v for _, rr, v in labeled_rows if r - window < rr <= r]
        assert used and (version - 1) - min(used) <= lead, (r, version, used)


CONTINUOUS = (
    "orchestration.continuous.replay_ratio=0.5",
    "orchestration.continuous.publish_every_updates=2",
    "orchestration.continuous.max_staleness=2",
)


def _learner_child(parent: int) -> int | None:
    """The pid of ``parent``'s spawned learner process (multiprocessing's ``spawn_main``)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):  # a process that ended meanwhile
            continue
        if ppid == parent and b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            return int(stat.parent.name)
    return None


def _steps(paths: list[Path], ids: set[str]) -> dict[tuple[str, int], tuple[str, object]]:
    """(trajectory id, step) -> (action, start time) of the steps of ``ids`` in ``paths``."""
    out = {}
    for path in paths:
        table = pq.read_table(path, columns=["trajectory_id", "step", "action", "started_at"])
        for row in table.to_pylist():
            if row["trajectory_id"] in ids:
                out[row["trajectory_id"], row["step"]] = (row["action"], row["started_at"])
    return out


@pytest.mark.parametrize("killed", ["learner_process", "whole_run"])
def test_sigkilled_continuous_round_resumes_with_every_trajectory_once(
    tmp_path: Path, killed: str
) -> None:
    """Continuous mode (DistRL's default), SIGKILLed once an episode is journaled: the learner
    in a process of its own, or the whole run (the default: actors and learner are threads of
    one process, so this is killing the actors and the learner at once).

    The round fails (a killed learner process with its exit code) and trains nothing. Its rerun
    keeps every episode the killed attempt journaled as it was collected (not run again), so no
    trajectory is lost: each is in the raw shards and labeled exactly once, the rest is
    collected anew, the journal is gone, and the round is trained and registered once.
    """
    project = tmp_path / "project"
    project.mkdir()
    (project / "params.yaml").write_text(TINY_PARAMS)
    register_initial_policy(project)
    overrides = [*CONTINUOUS, f"orchestration.continuous.learner_process={killed != 'whole_run'}"]
    command = _command(project)
    for override in overrides:
        command += ["--set", override]
    cfg = load_config(project / "params.yaml", overrides)
    started = common.learner_dir(project) / "continuous-start"  # exported before its hello
    raw = common.raw_dir(cfg, project)
    journal = journal_dir(raw, 1, 0, "train")

    def ready(round_: subprocess.Popen) -> int | None:
        """The pid to kill once the round is mid-way (an episode journaled), else None."""
        if not any(journal.glob("*.parquet")):
            return None
        if killed == "whole_run":
            return round_.pid
        learner = _learner_child(round_.pid)
        return learner if learner is not None and started.is_dir() else None

    round_ = subprocess.Popen(
        command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 600
    try:
        # mid-round: an episode is journaled, the actors collect the rest, the learner trains
        while (victim := ready(round_)) is None:
            assert round_.poll() is None, f"the round ended first: {round_.stderr.read()[-3000:]}"
            assert time.monotonic() < deadline, "the moment to kill never came"
            time.sleep(0.05)
        os.kill(victim, signal.SIGKILL)
        _, err = round_.communicate(timeout=300)
    finally:
        if round_.poll() is None:
            round_.kill()
            round_.wait()
    assert round_.returncode != 0
    if killed == "learner_process":  # a clear error: the learner process, its exit code
        assert "the learner process exited (exit code -9) before its report" in err, err[-3000:]
    assert common.read_manifest(project, 1, "train") is None
    assert not list(raw.glob("r000001-*.parquet"))  # the round writes its shards at its end
    journaled = {t for t, _, _ in _trajectories(sorted(journal.glob("*.parquet")))}
    assert journaled, "the killed attempt journaled nothing"
    kept = _steps(sorted(journal.glob("*.parquet")), journaled)

    if killed == "whole_run":  # a resume in another world is refused, and the journal kept
        world = cfg.sim.dynamics.profile
        other = "static" if world != "static" else "live"
        refused = subprocess.run(
            [*command, "--set", f"sim.dynamics.profile={other}"],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert refused.returncode != 0
        said = refused.stderr
        assert "round 1 was interrupted after journaling episodes" in said, said[-3000:]
        assert f"world {world!r} there, {other!r} asked" in said
        assert _steps(sorted(journal.glob("*.parquet")), journaled) == kept

    proc = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"resuming an interrupted attempt, {len(journaled)} episodes" in proc.stderr
    raw_rows = _trajectories(sorted(raw.glob("r*.parquet")))
    labeled_rows = _trajectories(sorted(common.labeled_dir(cfg, project).glob("r*.parquet")))
    raw_ids, labeled_ids = [t for t, _, _ in raw_rows], [t for t, _, _ in labeled_rows]
    episodes = ROUNDS * cfg.orchestration.episodes_per_device * cfg.orchestration.devices_per_worker
    assert len(raw_ids) == episodes and sorted(labeled_ids) == sorted(set(raw_ids))
    # no trajectory lost: each journaled one is in the raw shards as collected, labeled once
    assert journaled <= set(raw_ids)
    assert all(labeled_ids.count(t) == 1 for t in journaled)
    assert _steps(sorted(raw.glob("r*.parquet")), journaled) == kept  # not collected again
    assert common.read_manifest(project, 1, "collect")["resumed"] == len(journaled)
    assert not journal.exists()
    train = common.read_manifest(project, 1, "train")
    registry = ModelRegistry.from_config(cfg, root=project)
    assert [v.round for v in registry.compare_versions() if v.round] == [1]
    # the staleness bound: at each episode's start, and against the round's final version
    bound = cfg.orchestration.continuous.max_staleness
    assert train["metrics"]["async/staleness_max"] <= bound
    assert all(0 <= v <= train["policy_version"] for _, _, v in raw_rows)

    # the same command once more: the round is done, so nothing is collected or trained again
    again = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-4000:]
    assert common.read_manifest(project, 1, "train") == train
    assert _trajectories(sorted(common.raw_dir(cfg, project).glob("r*.parquet"))) == raw_rows
    assert len([v for v in registry.compare_versions() if v.round]) == 1
