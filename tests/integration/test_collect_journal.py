"""The collect stage's episode journal: a SIGKILLed collection keeps what it had finished.

The stage runs in a child process on a private simulator farm (latency on, so episodes take
seconds), is SIGKILLed once the journal holds finished episodes, then runs again in this process:
every journaled trajectory must be in the round's shards exactly once and unchanged (its
timestamps are the first attempt's), the rest collected anew, and the journal gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from distrl_tasks.agents.image_encoders import image_feature_dim
from distrl_tasks.config import Config, config_from_dict
from distrl_tasks.data.shards import read_shards
from distrl_tasks.runners.journal import EpisodeJournal, journal_dir
from distrl_tasks.stages import collect

pytestmark = pytest.mark.integration
EPISODES = 4  # per device; 2 devices
SETTINGS = {
    "orchestration": {"devices_per_worker": 2},
    "sim": {"port": 0, "latency": {"enabled": True, "time_scale": 0.25}},
}
CHILD = """
import json, sys
from distrl_tasks.config import config_from_dict
from distrl_tasks.stages import collect
cfg = config_from_dict(json.loads(sys.argv[1]))
request = collect.CollectRequest(round=1, policy="scripted", mode=sys.argv[3],
                                 episodes_per_device=int(sys.argv[4]), progress=False)
collect.run(cfg, request, workdir=sys.argv[2])
"""


def _journaled(directory: Path) -> dict[str, str]:
    """trajectory id -> its first step's started_at, for every complete journal entry."""
    table = read_shards(directory, columns=["trajectory_id", "step", "started_at"])
    rows = table.to_pylist()
    return {r["trajectory_id"]: str(r["started_at"]) for r in rows if r["step"] == 0}


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_retry_after_sigkill_keeps_every_finished_trajectory_exactly_once(
    mode, tmp_path, capsys
) -> None:
    cfg = config_from_dict(SETTINGS)
    journal = journal_dir(collect.raw_dir(cfg, tmp_path), 1, 0, "train")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(SETTINGS), str(tmp_path), mode, str(EPISODES)],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    deadline = time.monotonic() + 120
    try:
        while not list(journal.glob("*.parquet")):
            assert child.poll() is None, (
                f"the collection ended before any episode: {child.returncode}"
            )
            assert time.monotonic() < deadline, "no episode journaled within 120 s"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert not collect.manifest_path(collect.raw_dir(cfg, tmp_path), 1, 0).exists()
    before = _journaled(journal)
    assert 1 <= len(before) < 2 * EPISODES, before

    torch.set_num_threads(1)
    manifest = collect.run(
        cfg,
        collect.CollectRequest(
            round=1, policy="scripted", mode=mode, episodes_per_device=EPISODES, progress=False
        ),
        workdir=tmp_path,
    )
    assert manifest["resumed"] == len(before)
    said = capsys.readouterr().err
    assert f"resuming an interrupted attempt, {len(before)} of {2 * EPISODES} episodes kept" in said
    assert manifest["trajectories"] == 2 * EPISODES
    steps = []
    first_started: dict[str, str] = {}
    for path in manifest["shards"]:
        table = pq.read_table(path, columns=["trajectory_id", "step", "started_at"])
        for row in table.to_pylist():
            steps.append((row["trajectory_id"], row["step"]))
            if row["step"] == 0:
                first_started[row["trajectory_id"]] = str(row["started_at"])
    assert len(steps) == len(set(steps)), "a (trajectory, step) row appears twice"
    assert len(first_started) == 2 * EPISODES
    # kept as the killed attempt collected them, not collected again
    assert {tid: first_started[tid] for tid in before} == before
    assert not journal.parent.exists(), "the journal outlived the round's manifest"


def _one_episode(
    tmp_path: Path, cfg: Config, goal: str, directory: Path | None = None, settings=None
):
    """A real finished episode (the scripted expert on the simulator) and its journal."""
    from distrl_tasks.agents.image_encoders import build_image_encoder
    from distrl_tasks.envs.adb_device import AdbDevice
    from distrl_tasks.envs.android_env import AndroidEnv
    from distrl_tasks.evaluators.oracle import OracleEvaluator
    from distrl_tasks.runners.collector import collect_sync
    from distrl_tasks.runners.policies import ScriptedPolicy
    from distrl_tasks.tasks.goal_farms import running_farm

    dim = image_feature_dim(cfg.agent)
    directory = directory if directory is not None else tmp_path / "journal"
    journal = EpisodeJournal(directory, 2, dim, cfg.algorithm.gamma, settings)
    with running_farm(1, seed=0) as farm:
        env = AndroidEnv(
            AdbDevice(farm.serials[0], farm.host, farm.port),
            build_image_encoder(cfg.agent),
            cfg.env,
        )
        result = collect_sync(
            [env],
            ScriptedPolicy(),
            {farm.serials[0]: [goal]},
            round_=2,
            oracle=OracleEvaluator(),
            progress=False,
            on_episode=journal.record,
        )
    (episode,) = result.episodes[farm.serials[0]]
    return episode, journal


def test_journal_gives_back_planned_episodes_and_drops_the_rest(tmp_path) -> None:
    cfg = config_from_dict({})
    goal = "Open a new tab in Chrome"
    episode, journal = _one_episode(tmp_path, cfg, goal)
    assert journal.recorded == 1 and episode.success is True
    assert journal.recorded_settings() is None  # none given: a retry takes it as it is
    tid = episode.trajectory_id

    loaded = journal.load({tid: goal})
    again = loaded[tid]
    assert (again.goal, again.device, again.success, again.error) == (
        goal,
        episode.device,
        True,
        "",
    )
    assert [r["action"] for r in again.rows] == [r["action"] for r in episode.rows]
    assert [r["mc_return"] for r in again.rows] == [r["mc_return"] for r in episode.rows]
    assert again.rows[0]["screenshot_png"] == episode.rows[0]["screenshot_png"]

    # the same slot planned with another goal: the entry is not used, and it is deleted
    assert journal.load({tid: "Set an alarm for 6pm"}) == {}
    assert journal.load({tid: goal}) == {}
    assert not list(journal.directory.glob("*.parquet"))


def test_a_damaged_journal_entry_is_collected_again_not_read(tmp_path) -> None:
    cfg = config_from_dict({})
    goal = "Open a new tab in Chrome"
    episode, journal = _one_episode(tmp_path, cfg, goal)
    (entry,) = journal.directory.glob("*.parquet")
    entry.write_bytes(
        entry.read_bytes()[:-40]
    )  # damaged after it was written (a bad disk, a stray copy)
    assert journal.load({episode.trajectory_id: goal}) == {}
    assert list((journal.directory / "quarantine").glob("*.parquet"))
    journal.clear()
    assert not journal.directory.exists()


def test_a_retry_under_other_settings_is_refused_and_the_journal_kept(tmp_path) -> None:
    static = config_from_dict({"sim": {"dynamics": {"profile": "static"}}})
    out = tmp_path / "raw"
    request = collect.CollectRequest(
        round=2, policy="scripted", episodes_per_device=1, out_dir=out, progress=False
    )
    settings = collect.recorded_under(static, request.resolved(static))
    directory = journal_dir(out, 2, 0, "train")
    _, journal = _one_episode(tmp_path, static, "Open a new tab in Chrome", directory, settings)
    assert journal.recorded_settings() == settings

    live = config_from_dict({"sim": {"dynamics": {"profile": "live"}}})
    with pytest.raises(ValueError) as err:
        collect.run(live, request)  # refused before a device starts
    message = str(err.value)
    assert "world 'static' there, 'live' asked" in message and str(directory) in message
    assert "episodes_per_device" not in message  # only what differs is named
    assert len(list(directory.glob("*.parquet"))) == 1  # the journaled episode is not lost
