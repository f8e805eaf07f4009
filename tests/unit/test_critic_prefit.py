"""Critic pre-fit, calibration and A-RIDE's released form on hand-built replays (issue 21).

The pure pieces (plateau rule, calibration, targets) are checked against hand-computed values;
the pre-fit runs the real :class:`Learner` on a real tiny policy and critic.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math

import numpy as np
import pytest
import torch

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.algorithms import critic_fit
from distrl_tasks.algorithms import distrl as distrl_module
from distrl_tasks.algorithms.algorithm import score_steps
from distrl_tasks.algorithms.batch import batch_from_trajectories
from distrl_tasks.algorithms.factory import build_algorithm
from distrl_tasks.algorithms.learner import Learner
from distrl_tasks.config import AgentConfig, ConfigError, CriticPrefitConfig, config_from_dict
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.schema import table_from_rows
from distrl_tasks.protocol.actions import ActionType, format_action, key

torch.set_num_threads(1)
DIM = 1408  # the tiny policy's image feature size
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
HOME, BACK = format_action(key(ActionType.PRESS_HOME)), format_action(key(ActionType.PRESS_BACK))


def trajectory(tid: str, n: int, success: bool, *, seed: int, task: str = "Open the clock"):
    """``n`` steps; the last one is rewarded 1 when ``success`` (rows of the shard schema)."""
    rng = np.random.default_rng(seed)
    action = HOME if success else BACK
    return [
        {
            "trajectory_id": tid,
            "step": t,
            "round": 0,
            "task": task,
            "task_set": "general",
            "split": "train",
            "device": "emulator-5554",
            "policy_version": 0,
            "prompt": f"Previous Actions: {action if t else ''} Goal: {task}",
            "action": action,
            "action_type": "PRESS_HOME" if success else "PRESS_BACK",
            "invalid": False,
            "screenshot_png": None,
            "final_screenshot_png": None,
            "image_features": rng.normal(size=DIM) + (1.0 if success else -1.0),
            "final_image_features": rng.normal(size=DIM) if t == n - 1 else None,
            "behavior_log_prob": -2.0,
            "reward": float(success and t == n - 1),
            "penalty": 0.0,
            "done": t == n - 1,
            "mc_return": 0.0,
            "trajectory_reward": float(success),
            "evaluator": "oracle",
            "label_status": "labeled",
            "started_at": T0,
            "ended_at": T0,
        }
        for t in range(n)
    ]


def replay_of(successes: int = 2, failures: int = 6, n: int = 3) -> ReplayBuffer:
    rows = []
    for i in range(successes):
        rows += trajectory(f"s{i}", n, True, seed=i)
    for i in range(failures):
        rows += trajectory(f"f{i}", n, False, seed=100 + i)
    buf = ReplayBuffer(1000, seed=0)
    buf.extend(table_from_rows(rows, DIM))
    return buf


@pytest.fixture
def policy():
    return build_policy(AgentConfig(), seed=0)


def config(**distrl) -> object:
    algorithm = {
        "batch_size": 4,
        "critic_lr": 1e-3,
        "distrl": {"top_p": 1.0, "window_start": "fit", **distrl},
    }
    return config_from_dict({"algorithm": algorithm})


# --- pure functions -------------------------------------------------------------------------


def test_plateau_rule_compares_the_last_two_windows():
    assert not critic_fit.plateaued([1.0, 0.9, 0.8], window=2, rel_tol=0.1)  # too short
    # before = mean(1.0, 0.8) = 0.9, last = mean(0.5, 0.4) = 0.45: improved by 50% > 10%
    assert not critic_fit.plateaued([1.0, 0.8, 0.5, 0.4], window=2, rel_tol=0.1)
    # before = 0.5, last = 0.48: improved by 4% < 10%
    assert critic_fit.plateaued([0.5, 0.5, 0.49, 0.47], window=2, rel_tol=0.1)
    assert critic_fit.plateaued([0.4, 0.4, 0.5, 0.5], window=2, rel_tol=0.0)  # got worse
    with pytest.raises(ValueError, match="window"):
        critic_fit.plateaued([1.0], window=0, rel_tol=0.1)


def test_calibration_hand_computed():
    values = torch.tensor([0.1, 0.15, 0.8, 0.9])
    targets = torch.tensor([0.0, 1.0, 1.0, 1.0])
    out = critic_fit.calibration(values, targets, bins=2)
    # bins [0, .5): v sum .25, y sum 1 -> .75; [.5, 1]: v sum 1.7, y sum 2 -> .3; ece = 1.05 / 4
    assert out["ece"] == pytest.approx(1.05 / 4)
    brier = (0.1**2 + 0.85**2 + 0.2**2 + 0.1**2) / 4
    assert out["brier"] == pytest.approx(brier)
    assert out["value_mean"] == pytest.approx(0.4875)
    assert out["target_mean"] == pytest.approx(0.75)
    # the base rate, predicted everywhere, is perfectly calibrated
    flat = critic_fit.calibration(torch.full((4,), 0.75), targets)
    assert flat["ece"] == pytest.approx(0.0, abs=1e-12)
    assert flat["brier"] == pytest.approx(0.1875)  # var of the targets
    with pytest.raises(ValueError, match="values must lie"):
        critic_fit.calibration(torch.tensor([1.5]), torch.tensor([1.0]))


def test_step_targets_are_clipped_discounted_returns():
    rewards = torch.tensor([[0.0, -0.4, 1.0], [0.0, 0.0, -1.0]])
    dones = torch.tensor([[False, False, True], [False, False, True]])
    out = critic_fit.step_targets(rewards, dones, 0.5)
    # row 0: G = [0 + .5(-.4 + .5), -.4 + .5, 1] = [.05, .1, 1]; row 1: [-.25, -.5, -1] -> 0
    assert torch.allclose(out, torch.tensor([[0.05, 0.1, 1.0], [0.0, 0.0, 0.0]]))
    assert critic_fit.logit(0.5) == 0.0
    assert math.isfinite(critic_fit.logit(0.0))


# --- critic-only loss, bias init, pre-fit ---------------------------------------------------


def test_critic_loss_scores_no_policy_and_bias_starts_at_the_mean_target(policy):
    replay = replay_of()
    algo = build_algorithm(config(), policy)
    metrics = algo.init_critic_bias(replay)
    # 2 of 8 trajectories succeed at step 3: targets per success [.25, .5, 1], others 0
    assert metrics["critic/init_target_mean"] == pytest.approx(2 * 1.75 / 24)
    values = algo.calibration(replay)["critic/value_mean"]
    assert values == pytest.approx(2 * 1.75 / 24, abs=0.03)
    batch = batch_from_trajectories(replay, replay.slots[:4])
    out = algo.critic_loss(batch)
    out.loss.backward()
    assert all(p.grad is None for p in policy.model.parameters())
    assert any(p.grad is not None for p in algo.critic.parameters())


def learner_for(policy, tmp_path, **distrl) -> Learner:
    cfg = config(**distrl)
    return Learner(cfg, build_algorithm(cfg, policy), out_dir=tmp_path, seed=0)


def test_prefit_stops_at_a_plateau_and_calibrates_the_critic(policy, tmp_path):
    replay = replay_of()
    learner = learner_for(policy, tmp_path)
    before = learner.algorithm.calibration(replay)
    rule = CriticPrefitConfig(min_steps=5, max_steps=200, window=5, rel_tol=0.05)
    out = learner.prefit_critic(replay, rule)
    after = learner.algorithm.calibration(replay)
    assert 10 <= out["critic/prefit_steps"] < 200  # the plateau, not the cap, stopped it
    assert out["critic/prefit_loss_last"] < out["critic/prefit_loss_first"]
    assert after["critic/brier"] < before["critic/brier"]
    assert learner.step == out["critic/prefit_steps"]


def test_prefit_cap_and_train_round_logs_calibration(policy, tmp_path):
    replay = replay_of()
    learner = learner_for(policy, tmp_path)
    rule = CriticPrefitConfig(min_steps=3, max_steps=3, window=1, rel_tol=0.0)
    metrics = learner.train_round(replay, 1, prefit=rule)
    assert metrics["critic/prefit_steps"] == 3
    assert learner.step == 4
    for name in ("critic/brier", "critic/ece", "critic/v0_mean", "critic/success_rate"):
        assert name in metrics
    assert metrics["critic/success_rate"] == pytest.approx(0.25)


# --- released form ---------------------------------------------------------------------------


def test_top_p_actor_windows_come_from_filtered_trajectories(policy):
    replay = replay_of(successes=2, failures=18)
    algo = build_algorithm(config(top_p=0.1, window_start="step"), policy)
    metrics = algo.prepare_round(replay)
    assert metrics["train/kept_frac"] == pytest.approx(0.1)
    assert metrics["train/kept_success"] == 1.0
    batch = algo.sample(replay, 8, np.random.default_rng(0))
    assert batch.batch_size == 16 and int(batch.actor_rows.sum()) == 8
    kept = set(algo.kept_slots.tolist())
    assert set(batch.slots[batch.actor_rows.numpy()].tolist()) <= kept
    out = algo.loss(batch)
    assert 0.0 <= out.metrics["train/adv_pos_frac"] <= 1.0


def test_critic_rows_are_scored_without_gradient_and_change_nothing(policy, monkeypatch):
    """The filtered form scores its critic-only windows under no_grad: the loss, the policy's
    gradient and the priorities are those of scoring every window with autograd."""
    replay = replay_of(successes=2, failures=18)
    algo = build_algorithm(config(top_p=0.1, window_start="step"), policy)
    algo.prepare_round(replay)
    batch = algo.sample(replay, 4, np.random.default_rng(0))
    assert 0 < int(batch.actor_rows.sum()) < batch.batch_size

    def run(score=None):
        if score is not None:
            # the unsplit reference: every row with autograd
            monkeypatch.setattr(distrl_module, "score_actor_rows", score)
        policy.model.zero_grad()
        saved = []  # what autograd keeps for the backward pass
        pack = lambda t: saved.append(t.numel()) or t  # noqa: E731
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = algo.loss(batch)
        out.loss.backward()
        grads = [p.grad.clone() for p in policy.model.parameters() if p.grad is not None]
        return out.loss.detach(), grads, algo.book.pending[1], sum(saved)

    loss, grads, prio, saved = run()
    ref_loss, ref_grads, ref_prio, ref_saved = run(lambda pol, b, **_: score_steps(pol, b)[:2])
    assert saved < 0.75 * ref_saved  # half the windows keep no activations
    assert torch.allclose(loss, ref_loss, atol=1e-6)
    assert len(grads) == len(ref_grads) > 0
    assert any(bool(g.abs().sum() > 0) for g in grads)  # the actor rows do train the policy
    for g, r in zip(grads, ref_grads, strict=True):
        assert torch.allclose(g, r, atol=1e-6, rtol=1e-4)
    np.testing.assert_allclose(prio, ref_prio, rtol=1e-5, atol=1e-7)


def test_windows_become_micro_batches(policy, tmp_path):
    learner = learner_for(policy, tmp_path, windows=10)
    assert learner.micro_batches == 3  # ceil(10 windows / 4 per micro-batch)
    replay = replay_of()
    learner.train_round(replay, 1)
    assert learner.step == 1


def test_entropy_per_token_divides_by_the_action_length(policy):
    batch = batch_from_trajectories(replay_of(), [0, 2])
    _, summed, index = score_steps(policy, batch)
    _, mean, _ = score_steps(policy, batch, entropy_per_token=True)
    scores = policy.score(batch.observations(index), batch.action_texts(index))
    flat_sum, flat_mean = summed.reshape(-1)[index], mean.reshape(-1)[index]
    assert torch.allclose(flat_mean, flat_sum / scores.lengths.float(), atol=1e-5)


def test_distrl_form_is_validated(policy):
    with pytest.raises(ConfigError, match=r"algorithm\.distrl\.windows"):
        config_from_dict({"algorithm": {"distrl": {"windows": 0}}})
    algo = build_algorithm(config_from_dict({}), policy)
    released = dataclasses.asdict(config_from_dict({}).algorithm.distrl)
    assert released["advantage"] == "positive" and algo.positive_only
    assert algo.top_p == 0.1 and algo.window_start == "step" and algo.entropy == "off"


def test_digirl_critic_loss_scores_no_policy(policy):
    replay = replay_of()
    cfg = config_from_dict({"algorithm": {"name": "digirl", "filter_top_fraction": 0.5}})
    algo = build_algorithm(cfg, policy)
    algo.prepare_round(replay)
    batch = algo.sample(replay, 4, np.random.default_rng(0))
    out = algo.critic_loss(batch)
    out.loss.backward()
    assert all(p.grad is None for p in policy.model.parameters())
    full = algo.loss(batch)  # the same critic terms as the full loss
    for name in ("losses/critic_step", "losses/critic_instruction"):
        assert out.terms[name].item() == pytest.approx(full.terms[name].item(), rel=1e-5)


# --- DPER re-scoring ------------------------------------------------------------------------


def test_rescore_new_scores_only_trajectories_without_a_priority(policy):
    replay = replay_of(successes=2, failures=6)
    algo = build_algorithm(config(rescore="new"), policy)
    assert algo.prepare_round(replay)["train/rescored"] == 8
    known = dict(algo.known_priorities)
    assert sorted(known) == sorted(replay.trajectory_ids())
    with torch.no_grad():  # a different critic: a full re-score would change every priority
        for p in algo.critic.parameters():
            p.add_(0.5)
    extra = trajectory("late0", 3, True, seed=50) + trajectory("late1", 3, False, seed=51)
    new_slots = replay.extend(table_from_rows(extra, DIM))
    metrics = algo.prepare_round(replay)
    assert metrics["train/rescored"] == 2 and metrics["train/trajectories"] == 10
    now = dict(zip(replay.trajectory_ids(), replay.priorities().tolist(), strict=True))
    assert all(now[tid] == pytest.approx(p) for tid, p in known.items())  # kept, not re-scored
    assert {"late0", "late1"} <= set(algo.known_priorities)
    rescored = algo.score_trajectories(replay, np.asarray(new_slots))
    np.testing.assert_allclose(rescored, [now["late0"], now["late1"]], rtol=1e-6)
    # under "all" the same call re-scores everything, with the changed critic
    full = build_algorithm(config(), policy)
    full.critic.load_state_dict(algo.critic.state_dict())
    assert full.prepare_round(replay)["train/rescored"] == 10
    assert replay.priorities()[0] != pytest.approx(known[replay.trajectory_ids()[0]])
    assert full.known_priorities == {}  # "all" keeps nothing between rounds


def test_rescore_new_priorities_travel_with_the_learner_checkpoint(policy, tmp_path):
    replay = replay_of()
    learner = learner_for(policy, tmp_path / "a", rescore="new")
    learner.train_round(replay, 2)
    known = dict(learner.algorithm.known_priorities)
    assert len(known) == replay.num_trajectories
    # the round's last losses re-prioritized the windows they trained on: those are kept too
    assert known == dict(zip(replay.trajectory_ids(), replay.priorities().tolist(), strict=True))
    saved = learner.save_checkpoint("round-0")
    assert (saved / "priorities-rank0.parquet").is_file()
    resumed = learner_for(build_policy(AgentConfig(), seed=1), tmp_path / "b", rescore="new")
    resumed.load_checkpoint(saved)
    assert resumed.algorithm.known_priorities == pytest.approx(known)
    fresh = replay_of()  # the same trajectories, read again (as the next round does)
    assert resumed.algorithm.prepare_round(fresh)["train/rescored"] == 0
    restored = dict(zip(fresh.trajectory_ids(), fresh.priorities().tolist(), strict=True))
    assert restored == pytest.approx(known)  # the kept priorities, not the placeholders
    # under "all" a checkpoint carries no priorities
    plain = learner_for(policy, tmp_path / "c")
    plain.train_round(replay, 1)
    assert not (plain.save_checkpoint("round-0") / "priorities-rank0.parquet").exists()


def test_unreadable_priorities_are_a_clear_error(tmp_path):
    from distrl_tasks.algorithms import train_state as ts

    path = tmp_path / "priorities-rank0.parquet"
    ts.save_priorities({"a": 1.5, "b": 0.25}, path)
    assert ts.load_priorities(path) == {"a": 1.5, "b": 0.25}
    path.write_bytes(b"not parquet")
    with pytest.raises(ts.TrainStateError, match="unreadable priorities"):
        ts.load_priorities(path)
