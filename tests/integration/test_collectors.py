"""Async and sync collectors on the simulator: policies, shards, oracle labels and faults."""

from __future__ import annotations

import _thread
import dataclasses
import json
import math
import signal
import threading

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import torch

from distrl_tasks.agents.image_encoders import SmallImageEncoder
from distrl_tasks.agents.policy import build_policy
from distrl_tasks.algorithms.group_relative import state_key, step_keys
from distrl_tasks.algorithms.sft import demos_from_rows
from distrl_tasks.config import AgentConfig, Config, EnvConfig, FaultConfig, SimConfig
from distrl_tasks.data.manifest import sha256_file
from distrl_tasks.data.schema import table_from_rows, validate_table
from distrl_tasks.data.shards import read_shards, verify_shards, write_shard
from distrl_tasks.envs.adb_device import AdbDevice
from distrl_tasks.envs.android_env import AndroidEnv
from distrl_tasks.evaluators.oracle import OracleEvaluator
from distrl_tasks.protocol.ui_dump import elements_from_rows
from distrl_tasks.runners.collector import collect_async, collect_sync
from distrl_tasks.runners.inference import InferenceServer
from distrl_tasks.runners.policies import RandomPolicy, ScriptedPolicy, random_vocabulary
from distrl_tasks.runners.trajectory import TRUNCATED
from distrl_tasks.stages import collect
from distrl_tasks.stages.label import pointer_fallbacks
from distrl_tasks.tasks.goal_farms import running_farm

pytestmark = pytest.mark.integration
torch.set_num_threads(1)
DIM = SmallImageEncoder.dim
GOALS = ["Set an alarm for 6pm", "Open a new tab in Chrome", "What's the news in India?"]


def small_cfg(devices: int = 2, horizon: int = 10) -> Config:
    cfg = Config()
    return dataclasses.replace(
        cfg,
        orchestration=dataclasses.replace(cfg.orchestration, devices_per_worker=devices),
        env=dataclasses.replace(cfg.env, horizon_general=horizon),
    )


def read_df(paths) -> pd.DataFrame:
    """Shards through plain pandas, as a user outside this package would read them."""
    return pd.concat(pd.read_parquet(p) for p in paths)


def envs_for(farm, cfg: EnvConfig | None = None, timeout_s: float = 10.0) -> list[AndroidEnv]:
    cfg = cfg or EnvConfig()
    enc = SmallImageEncoder()
    return [
        AndroidEnv(AdbDevice(s, farm.host, farm.port, timeout_s=timeout_s), enc, cfg)
        for s in farm.serials
    ]


def test_async_stage_with_scripted_policy_writes_valid_idempotent_shards(tmp_path) -> None:
    cfg = small_cfg(devices=2)
    m = collect.run(
        cfg,
        collect.CollectRequest(
            round=3,
            policy="scripted",
            out_dir=tmp_path,
            mode="async",
            episodes_per_device=2,
            policy_version=7,
            progress=False,
        ),
    )
    assert m["trajectories"] == 4 and m["failures"] == 0 and m["success_rate"] == 1.0
    assert len(m["shards"]) == 2 and not m["reused"]
    df = read_df(m["shards"])
    assert set(df["policy_version"]) == {7} and set(df["round"]) == {3}
    assert (df["behavior_log_prob"] == 0.0).all() and set(df["evaluator"]) == {"oracle"}
    last = df[df["done"]]
    assert len(last) == 4 and (last["reward"] == 1.0).all()
    assert last["final_screenshot_png"].map(lambda b: b[:4] == b"\x89PNG").all()
    assert df[~df["done"]]["final_screenshot_png"].isna().all()
    assert m["steps"] == len(df)
    before = {p: pq.read_metadata(p).num_rows for p in m["shards"]}
    again = collect.run(
        cfg,
        collect.CollectRequest(
            round=3,
            policy="scripted",
            out_dir=tmp_path,
            mode="async",
            episodes_per_device=2,
            progress=False,
        ),
    )
    assert again["reused"] and again["shards"] == m["shards"]
    assert {p: pq.read_metadata(p).num_rows for p in m["shards"]} == before
    assert read_shards(tmp_path, rounds=[3]).num_rows == len(df)


def test_sync_stage_with_random_policy_labels_failures_with_exact_log_probs(tmp_path) -> None:
    m = collect.run(
        small_cfg(devices=2, horizon=4),
        collect.CollectRequest(
            round=1,
            policy="random",
            out_dir=tmp_path,
            mode="sync",
            episodes_per_device=2,
            progress=False,
        ),
    )
    df = read_df(m["shards"])
    assert m["trajectories"] == 4 == df["trajectory_id"].nunique()
    assert df["behavior_log_prob"].to_numpy() == pytest.approx(-math.log(len(random_vocabulary())))
    assert (df.groupby("trajectory_id")["step"].count() <= 4).all()
    # rewards are the oracle's: 1 on the last step of a success, else 0; mc_return follows
    for _, traj in df.groupby("trajectory_id"):
        assert traj["label_status"].eq("labeled").all()
        assert traj["reward"].iloc[:-1].eq(0).all()
        assert traj["mc_return"].iloc[-1] == traj["reward"].iloc[-1]


def test_oracle_labels_match_an_independent_check() -> None:
    with running_farm(devices=2, seed=1) as farm:
        envs = envs_for(farm)
        goals = {s: GOALS[:2] for s in farm.serials}
        res = collect_sync(
            envs,
            ScriptedPolicy(mistake_rate=0.0),
            goals,
            round_=0,
            oracle=OracleEvaluator(),
            progress=False,
        )
        assert all(ep.success for eps in res.episodes.values() for ep in eps)
        # the device keeps the final state of its last episode: check it directly
        assert all(e.device.check_task()["success"] for e in envs)
        res = collect_sync(
            envs,
            RandomPolicy(seed=3),
            {s: GOALS[:1] for s in farm.serials},
            round_=0,
            oracle=OracleEvaluator(),
            progress=False,
        )
        for e in envs:
            ep = res.episodes[e.device.serial][0]
            assert ep.success == e.device.check_task()["success"]
            assert ep.rows[-1]["reward"] == float(ep.success)


def test_async_with_tiny_autoui_policy_and_a_swap_records_versions() -> None:
    # the action grammar forces the first 14 bytes ("Action Plan: ["); the 15th is a choice
    agent = dataclasses.replace(AgentConfig(), max_new_tokens=16)
    cfg = dataclasses.replace(EnvConfig(), horizon_general=2)
    with running_farm(devices=2, seed=0) as farm:
        envs = envs_for(farm, cfg)
        server = InferenceServer(build_policy(agent, seed=0), 0, max_batch=4, max_wait_ms=20)
        swapped = []

        def on_episode(ep) -> None:
            if not swapped:
                swapped.append(ep.trajectory_id)
                server.swap(build_policy(agent, seed=1), 1)

        with server:
            res = collect_async(
                envs,
                server,
                {s: GOALS[:2] for s in farm.serials},
                round_=0,
                oracle=OracleEvaluator(),
                progress=False,
                on_episode=on_episode,
            )
    rows = res.rows()
    table = validate_table(table_from_rows(rows, DIM), DIM)
    assert table.num_rows == res.stats.steps and res.stats.trajectories == 4
    logps = table.column("behavior_log_prob").to_pylist()
    assert all(lp < 0 for lp in logps)  # every sampled action made at least one choice
    versions = {r["trajectory_id"]: r["policy_version"] for r in rows}
    assert versions[swapped[0]] == 0 and 1 in versions.values()
    assert max(server.batch_sizes) >= 1 and set(server.batch_versions) <= {0, 1}


class KillingPolicy(ScriptedPolicy):
    """The expert, plus sabotage: crash one device and unplug another mid-episode."""

    def __init__(self, farm, crash: str, unplug: str) -> None:
        super().__init__()
        self.farm, self.crash, self.unplug = farm, crash, unplug

    def act(self, observations):
        for o in observations:
            if o.step == 1 and o.episode_id.endswith(f"{self.crash}-e0000"):
                self.farm.call(lambda: setattr(self.farm.farm[self.crash].phone, "crashed", True))
            if o.step == 1 and o.episode_id.endswith(f"{self.unplug}-e0001"):
                self.farm.call(lambda: self.farm.farm.devices.pop(self.unplug))
        return super().act(observations)


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_killed_and_crashed_devices_never_lose_finished_trajectories(mode, tmp_path) -> None:
    with running_farm(devices=3, seed=0) as farm:
        a, b, c = farm.serials
        envs = envs_for(farm, timeout_s=2.0)
        policy = KillingPolicy(farm, crash=a, unplug=b)
        goals = {s: GOALS for s in farm.serials}
        kw = dict(
            round_=2,
            oracle=OracleEvaluator(),
            progress=False,
            recover_attempts=2,
            recover_wait_s=0.05,
        )
        if mode == "async":
            with InferenceServer(policy, max_batch=3, max_wait_ms=5) as server:
                res = collect_async(envs, server, goals, max_consecutive_failures=2, **kw)
        else:
            res = collect_sync(envs, policy, goals, **kw)
    eps = res.episodes
    # the crashed device lost one episode (truncated after 1 step) and recovered
    assert [ep.steps > 0 for ep in eps[a]] == [True, True, True]
    assert eps[a][0].error and eps[a][0].steps == 1 and eps[a][0].rows[0]["evaluator"] == TRUNCATED
    assert all(ep.success for ep in eps[a][1:])
    # the unplugged device keeps its finished episode and the truncated one
    assert eps[b][0].success and eps[b][1].error and eps[b][1].steps == 1
    assert all(ep.success for ep in eps[c]) and len(eps[c]) == 3
    assert res.stats.failures >= 2
    info = write_shard(res.rows(), tmp_path, round=2, gamma=0.5)
    df = read_df([info.path])
    truncated = df[df["evaluator"] == TRUNCATED]
    assert truncated["label_status"].eq("unlabeled").all() and truncated["reward"].isna().all()
    assert df["trajectory_id"].nunique() == sum(1 for s in eps for ep in eps[s] if ep.rows)


def test_injected_faults_do_not_stop_collection(tmp_path) -> None:
    faults = FaultConfig(
        enabled=True,
        offline_prob=0.01,
        offline_seconds=0.2,
        hang_prob=0.01,
        hang_seconds=1.0,
        crash_prob=0.01,
        blank_frame_prob=0.5,
    )
    with running_farm(devices=3, seed=4, sim_cfg=SimConfig(faults=faults)) as farm:
        envs = envs_for(farm, timeout_s=0.5)
        goals = {s: GOALS for s in farm.serials}
        with InferenceServer(ScriptedPolicy(), max_batch=3, max_wait_ms=5) as server:
            res = collect_async(
                envs,
                server,
                goals,
                round_=0,
                oracle=OracleEvaluator(),
                progress=False,
                recover_wait_s=0.1,
            )
        counts = {s: d.realism.faults.counts for s, d in farm.farm.devices.items()}
    assert sum(sum(c.values()) for c in counts.values()) > 0
    assert all(len(res.episodes[s]) == 3 for s in goals)  # every planned episode ran
    assert all(ep.rows or ep.error for s in goals for ep in res.episodes[s])
    assert res.stats.trajectories >= 1
    info = write_shard(res.rows(), tmp_path, round=0, gamma=0.5)
    assert info.rows == res.stats.steps
    assert len(read_df([info.path])) == res.stats.steps


class InterruptingPolicy(ScriptedPolicy):
    """The expert, which interrupts the main thread (as Ctrl-C would) at its ``at``-th call."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.calls = at, 0

    def act(self, observations):
        self.calls += 1
        if self.calls == self.at:
            _thread.interrupt_main()
        return super().act(observations)


def test_interrupted_async_collection_stops_its_devices_before_unwinding() -> None:
    goals = GOALS * 4  # far more work than happens before the interrupt
    policy = InterruptingPolicy(at=3)
    # Ctrl-C's meaning, whatever the process started with: interrupt_main does nothing unless
    # Python handles SIGINT, and a background job of a non-interactive shell (CI started with
    # `&`) starts with SIGINT ignored, so Python installs no handler of its own
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with running_farm(devices=2, seed=0) as farm:
            envs = envs_for(farm)
            server = InferenceServer(policy, 0, max_batch=2, max_wait_ms=5)
            interrupted = False
            with server:
                try:
                    plan = {s: goals for s in farm.serials}
                    collect_async(envs, server, plan, round_=0, progress=False)
                except KeyboardInterrupt:
                    interrupted = True
            assert interrupted, (
                f"no KeyboardInterrupt: the policy was called {policy.calls} times "
                f"(interrupts at call {policy.at}); SIGINT handler before the test: {previous!r}"
            )
            # every device thread returned while the server and the farm were still up
            assert not [t.name for t in threading.enumerate() if t.name.startswith("collect-")]
    finally:
        signal.signal(signal.SIGINT, previous)
    assert policy.calls < 2 * len(goals), "the interrupt did not stop the collection early"


def test_shards_with_the_retired_screen_elements_column_still_read(tmp_path) -> None:
    # shards of schema versions 2-3 carry a screen_elements column (the retired elements
    # observation filled it): they read as today's shards, without it, and still make demos
    collect.run(
        small_cfg(devices=1),
        collect.CollectRequest(
            round=1, policy="scripted", out_dir=tmp_path, episodes_per_device=1, progress=False
        ),
    )
    today = read_shards(tmp_path)
    (info,) = verify_shards(tmp_path).shards
    stored = pq.read_table(info.path)
    listed = pa.array(["Clock [0.5000, 0.5000]"] * stored.num_rows)
    where = stored.column_names.index("prompt") + 1  # where version 3 kept it
    pq.write_table(
        stored.add_column(where, "screen_elements", listed),
        info.path,
        compression="zstd",
        store_schema=False,
    )
    manifest = json.loads(info.manifest_path.read_text())
    manifest.update(schema_version=3, sha256=sha256_file(info.path))
    info.manifest_path.write_text(json.dumps(manifest))
    assert "screen_elements" in pq.read_schema(info.path).names
    back = read_shards(tmp_path)
    assert "screen_elements" not in back.column_names and back.equals(today)
    # demonstrations from the shard as read and from its raw rows (which hold the old column)
    raw = read_df([info.path]).sort_values(["trajectory_id", "step"]).to_dict("records")
    assert raw[0]["screen_elements"] == "Clock [0.5000, 0.5000]"
    demos = [(d.prompt, d.target) for d in demos_from_rows(back.to_pylist(), successes_only=False)]
    assert demos == [(d.prompt, d.target) for d in demos_from_rows(raw, successes_only=False)]
    goal = str(back.column("task")[0])
    assert demos and all(prompt.endswith(" Goal: " + goal) for prompt, _ in demos)


def test_pointer_steps_store_the_elements_offered_in_shards(tmp_path) -> None:
    cfg = small_cfg(devices=2)
    agent = dataclasses.replace(cfg.agent, pointer=True, pointer_elements=5)
    cfg = dataclasses.replace(cfg, agent=agent)
    m = collect.run(
        cfg,
        collect.CollectRequest(
            round=1, policy="scripted", out_dir=tmp_path, episodes_per_device=2, progress=False
        ),
    )
    table = read_shards(tmp_path)
    cells = [elements_from_rows(r) for r in table.column("elements").to_pylist()]
    assert len(cells) == m["steps"] and all(1 <= len(c) <= 5 for c in cells)
    assert pointer_fallbacks(table) == 0  # every simulated dump is readable
    # the expert's taps mostly land on an offered element's centre
    taps = [
        (tuple(round(v, 4) for v in p), c)
        for p, c in zip(table.column("touch_point").to_pylist(), cells, strict=True)
        if p is not None
    ]
    assert taps and sum(p in {e.point for e in c} for p, c in taps) / len(taps) >= 0.5
    # the prompts stay AutoUI's: nothing follows the goal
    prompts = zip(table.column("prompt").to_pylist(), table.column("task").to_pylist(), strict=True)
    assert all(p.endswith(" Goal: " + goal) for p, goal in prompts)


def test_steps_record_the_simulators_exact_state_as_their_key(tmp_path) -> None:
    cfg = small_cfg(devices=2)
    cfg = dataclasses.replace(
        cfg,
        algorithm=dataclasses.replace(cfg.algorithm, name="gigpo"),  # attempts in groups of 4
        env=dataclasses.replace(cfg.env, horizon_general=4),
    )
    m = collect.run(
        cfg,
        collect.CollectRequest(
            round=1, policy="scripted", out_dir=tmp_path, episodes_per_device=4, progress=False
        ),
    )
    df = read_df(m["shards"])
    assert df["state_key"].notna().all()
    firsts = df[df["step"] == 0]
    # every attempt of a goal starts in the same exact state, different goals in different ones
    assert firsts.groupby("task")["state_key"].nunique().max() == 1
    assert firsts["state_key"].nunique() == firsts["task"].nunique()
    # and the expert's next step is in another state
    seconds = df[df["step"] == 1].set_index("trajectory_id")["state_key"]
    starts = firsts.set_index("trajectory_id")["state_key"]
    assert (seconds != starts.loc[seconds.index]).all()
    # GiGPO reads the recorded keys; a shard without them falls back to the screenshot's hash
    table = read_shards(tmp_path)
    one = table.filter(pc.equal(table.column("trajectory_id"), firsts["trajectory_id"].iloc[0]))
    assert step_keys(one) == one.column("state_key").to_pylist()
    old = one.drop_columns(["state_key"])
    shots = old.column("screenshot_png").to_pylist()
    prompts = old.column("prompt").to_pylist()
    assert step_keys(old) == [state_key(s, p) for s, p in zip(shots, prompts, strict=True)]
