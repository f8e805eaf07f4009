"""One update of DistRL, DigiRL and Filtered BC on trajectories collected on the simulator.

The expert plays train goals over ADB with a high mistake rate and a short horizon, so the
oracle-labeled round mixes successes and failures. Each algorithm then trains the policy on that
round and must move it the way its paper intends: the correct steps of successful trajectories
gain log-probability relative to the mistakes of failed ones. DigiRL and Filtered BC only clone,
so their successful steps must also gain in absolute terms. DistRL's policy gradient pushes down
every sampled action whose advantage is negative; with a critic fitted on one small round most
advantages still are (measured: both groups lose probability), and successes losing less is the
direction the paper intends (asserted on the mean over three learner seeds: one is noisy).

The starting policy is the round's behaviour policy in miniature: a tiny model briefly cloned on
*every* step of the round (good and bad alike), so it knows the action format and the data is
on-policy (behaviour log-probs are its own). From a random init, any update raises every action
string at once and hides the direction.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from distrl_tasks.agents.policy import Observation, build_policy
from distrl_tasks.algorithms.factory import build_algorithm
from distrl_tasks.algorithms.learner import Learner
from distrl_tasks.algorithms.sft import Demo, SFTSettings, train_sft
from distrl_tasks.config import config_from_dict
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.schema import table_from_rows
from distrl_tasks.data.shards import read_shards
from distrl_tasks.stages import collect, common, label

pytestmark = pytest.mark.integration
DIM = 1408


def _scripted_round(workdir, sim_seed: int, algorithm: dict) -> tuple[list[dict], object, object]:
    """Oracle-labeled rows of one scripted round, its config, and a behaviour policy cloned on
    every step of it (good and bad alike: see the module docstring)."""
    torch.set_num_threads(1)
    cfg = config_from_dict(
        {
            "sim": {"port": 0, "expert_mistake_rate": 0.5, "seed": sim_seed},
            "env": {"horizon_general": 4},
            "orchestration": {"devices_per_worker": 4, "episodes_per_device": 3},
            "algorithm": algorithm,
            # free decoding: the expert's actions carry free-text plans ("[mistake: ...]") that
            # the action grammar does not admit, and the policy here plays the expert's role
            "agent": {"max_new_tokens": 160, "constrained_decoding": False},
        }
    )
    collect.run(
        cfg, collect.CollectRequest(round=1, policy="scripted", progress=False), workdir=workdir
    )
    label.run(cfg, round=1, workdir=workdir)
    rows = read_shards(common.labeled_dir(cfg, workdir)).to_pylist()
    behaviour = build_policy(cfg.agent, seed=0)
    demos = [
        Demo(r["prompt"], np.asarray(r["image_features"], np.float16), r["action"], "")
        for r in rows
    ]
    train_sft(behaviour, demos, SFTSettings(steps=40, batch_size=8, lr=1e-3, warmup_steps=5))
    weights = workdir / "behaviour"
    behaviour.save(weights)
    return rows, cfg, weights


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> tuple[list[dict], object, object]:
    """One scripted round: some trajectories succeed, some do not."""
    return _scripted_round(tmp_path_factory.mktemp("sim-round"), 3, {})


def _groups(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(correct steps of successful trajectories, mistake steps of failed trajectories)."""
    won = {r["trajectory_id"] for r in rows if (r["reward"] or 0) > 0}
    mistake = ["mistake" in r["action"].split(";")[0].lower() for r in rows]
    good = [r for r, m in zip(rows, mistake, strict=True) if r["trajectory_id"] in won and not m]
    bad = [r for r, m in zip(rows, mistake, strict=True) if r["trajectory_id"] not in won and m]
    return good, bad


def _observations(rows: list[dict]) -> list[Observation]:
    return [Observation(r["prompt"], np.asarray(r["image_features"], np.float16)) for r in rows]


def _log_probs(policy, rows: list[dict]) -> torch.Tensor:
    with torch.no_grad():
        return policy.log_prob(_observations(rows), [r["action"] for r in rows])


def test_the_round_mixes_successes_and_failures(collected) -> None:
    rows, _, _ = collected
    good, bad = _groups(rows)
    assert len(good) >= 3 and len(bad) >= 3
    assert {r["label_status"] for r in rows} == {"labeled"}


def _update(rows: list[dict], cfg, weights, name: str, seed: int, tmp_path) -> tuple[float, float]:
    """Mean log-prob gains of (successful steps, mistakes) after one round of ``name``."""
    torch.manual_seed(seed)  # critic init: independent of what ran earlier in the session
    policy = build_policy(cfg.agent, checkpoint_dir=weights)
    on_policy = _log_probs(policy, rows)  # the actor was this policy: rho = 1 at the start
    rows = [{**r, "behavior_log_prob": float(lp)} for r, lp in zip(rows, on_policy, strict=True)]
    good, bad = _groups(rows)
    before_good, before_bad = _log_probs(policy, good), _log_probs(policy, bad)
    # the filters keep exactly the successful trajectories, whatever share of this (thread-timed,
    # so run-dependent) collection succeeded: a fixed share could keep failures and imitate them
    trajectories = {r["trajectory_id"] for r in rows}
    won = {r["trajectory_id"] for r in rows if (r["reward"] or 0) > 0}

    algo_cfg = config_from_dict(
        {
            "algorithm": {
                "name": name,
                "sequence_length": 1,
                "entropy_coef": 0.0,
                "filter_top_fraction": len(won) / len(trajectories),
                "lm_lr": 1e-4,
                "critic_lr": 1e-2,
                "max_grad_norm": 1.0,
                "batch_size": 4,
            }
        }
    )
    replay = ReplayBuffer(1000, alpha=0.5, seed=seed)
    replay.extend(table_from_rows(rows, DIM))
    out = tmp_path / f"{name}-{seed}"
    learner = Learner(algo_cfg, build_algorithm(algo_cfg, policy), out_dir=out, seed=seed)
    metrics = learner.train_round(replay, steps=4, critic_steps=20)
    assert all(np.isfinite(v) for v in metrics.values())
    gain_good = (_log_probs(policy, good) - before_good).mean()
    gain_bad = (_log_probs(policy, bad) - before_bad).mean()
    return float(gain_good), float(gain_bad)


@pytest.mark.parametrize("name", ["distrl", "digirl", "filtered_bc"])
def test_update_favours_successful_behaviour(collected, name: str, tmp_path) -> None:
    rows, cfg, weights = collected
    if name != "distrl":  # the cloning algorithms only ever raise what they imitate
        gain_good, gain_bad = _update(rows, cfg, weights, name, 0, tmp_path)
        assert gain_good > gain_bad, f"{name}: {gain_good:.3f} vs mistakes {gain_bad:.3f}"
        assert gain_good > 0, f"{name}: successful steps lost probability ({gain_good:.3f})"
        return
    # DistRL's 16 sampled steps move every weight by about lm_lr in Adam's first steps, which
    # costs both groups tens of nats; the advantage's direction rides on top of that. One learner
    # seed favoured the successes in 9 of 10 measured runs (margins -1 to +12 nats), so the
    # direction is asserted on the mean over three seeds
    gains = [_update(rows, cfg, weights, name, seed, tmp_path) for seed in (0, 1, 2)]
    margin = float(np.mean([g - b for g, b in gains]))
    assert margin > 0, f"distrl: successes vs mistakes per seed {gains}"


@pytest.fixture(scope="module")
def grouped(tmp_path_factory) -> tuple[list[dict], object, object]:
    """A round planned in groups (GRPO / GiGPO): 3 goals x 4 attempts, spread over 4 devices."""
    algorithm = {"name": "grpo", "group": {"size": 4}}
    return _scripted_round(tmp_path_factory.mktemp("sim-groups"), 5, algorithm)


def test_collection_plans_each_goal_as_a_group_over_the_devices(grouped) -> None:
    rows, _, _ = grouped
    first = [r for r in rows if r["step"] == 0]
    attempts: dict[str, set[str]] = {}
    for r in first:
        attempts.setdefault(r["task"], set()).add(r["device"])
    assert len(first) == 12 and all(len(devices) >= 2 for devices in attempts.values())


@pytest.mark.parametrize("name", ["grpo", "gigpo"])
def test_group_relative_update_favours_successful_behaviour(grouped, name: str, tmp_path) -> None:
    rows, cfg, weights = grouped
    tasks = {r["task"] for r in rows}
    won_tasks = {r["task"] for r in rows if (r["reward"] or 0) > 0}
    assert won_tasks and len(won_tasks) <= len(tasks)
    gains = []
    for seed in (0, 1, 2):
        torch.manual_seed(seed)
        policy = build_policy(cfg.agent, checkpoint_dir=weights)
        on_policy = _log_probs(policy, rows)
        rows_mu = [
            {**r, "behavior_log_prob": float(lp)} for r, lp in zip(rows, on_policy, strict=True)
        ]
        good, bad = _groups(rows_mu)
        before_good, before_bad = _log_probs(policy, good), _log_probs(policy, bad)
        algo_cfg = config_from_dict(
            {
                "algorithm": {
                    "name": name,
                    "lm_lr": 1e-4,
                    "max_grad_norm": 1.0,
                    "batch_size": 4,
                    "group": {"size": 4},
                }
            }
        )
        replay = ReplayBuffer(1000, alpha=0.5, seed=seed)
        replay.extend(table_from_rows(rows_mu, DIM))
        learner = Learner(
            algo_cfg, build_algorithm(algo_cfg, policy), out_dir=tmp_path / f"{name}{seed}"
        )
        metrics = learner.train_round(replay, steps=4)
        assert all(np.isfinite(v) for v in metrics.values())
        assert metrics["train/groups_with_signal"] > 0
        gain_good = float((_log_probs(policy, good) - before_good).mean())
        gain_bad = float((_log_probs(policy, bad) - before_bad).mean())
        gains.append((gain_good, gain_bad))
    margin = float(np.mean([g - b for g, b in gains]))
    assert margin > 0, f"{name}: successes vs mistakes per seed {gains}"
