"""DistRL, DigiRL and Filtered BC on a real tiny policy and hand-made replay data.

Each algorithm is shown to move the policy the way its paper intends on a constructed case, and
the loss terms are checked against hand-computed values.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import math

import numpy as np
import pytest
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from PIL import Image

from distrl_tasks.agents.policy import Observation, build_policy
from distrl_tasks.algorithms.algorithm import (
    Algorithm,
    LossOutput,
    score_actor_rows,
    score_steps,
)
from distrl_tasks.algorithms.batch import batch_from_trajectories
from distrl_tasks.algorithms.digirl import DigiRL
from distrl_tasks.algorithms.distrl import DistRL, actor_loss
from distrl_tasks.algorithms.factory import build_algorithm
from distrl_tasks.algorithms.filtered_bc import FilteredBC
from distrl_tasks.algorithms.learner import Learner
from distrl_tasks.config import AgentConfig, config_from_dict
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.schema import table_from_rows
from distrl_tasks.protocol.actions import ActionType, format_action, key, tap

torch.set_num_threads(1)
DIM = 1408  # the tiny policy's image feature size
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
GOOD, BAD, JUNK = '"action_type": "PRESS_HOME"', '"action_type": "PRESS_BACK"', "zz qq"
# the paper's A-RIDE (the configured default is the released form, see algorithm.distrl)
PAPER = {"advantage": "signed", "top_p": 1.0, "window_start": "fit", "entropy": "sum"}


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (2, 2)).save(buf, "PNG")
    return buf.getvalue()


PNG = _png()


def trajectory(
    tid: str,
    actions: list[str],
    rewards: list[float],
    *,
    task: str = "Open the clock",
    seed: int = 0,
    mu: float | list[float] = -3.0,
    penalties: list[float] | None = None,
    pv: int = 0,
) -> list[dict]:
    """Rows of one labeled trajectory with random (seeded) frame features."""
    rng = np.random.default_rng(seed)
    n = len(actions)
    mus = mu if isinstance(mu, list) else [mu] * n
    return [
        {
            "trajectory_id": tid,
            "step": t,
            "round": 0,
            "task": task,
            "task_set": "general",
            "split": "train",
            "device": "emulator-5554",
            "policy_version": pv,
            "prompt": f"Previous Actions: {actions[t - 1] if t else ''} Goal: {task}",
            "action": actions[t],
            "action_type": "TASK_IMPOSSIBLE" if actions[t] == JUNK else "PRESS_HOME",
            "invalid": actions[t] == JUNK,
            "screenshot_png": PNG,
            "final_screenshot_png": PNG if t == n - 1 else None,
            "image_features": rng.normal(size=DIM),
            "final_image_features": rng.normal(size=DIM) if t == n - 1 else None,
            "behavior_log_prob": mus[t],
            "reward": rewards[t],
            "penalty": penalties[t] if penalties else 0.0,
            "done": t == n - 1,
            "mc_return": 0.0,
            "trajectory_reward": float(sum(rewards)),
            "evaluator": "oracle",
            "label_status": "labeled",
            "started_at": T0,
            "ended_at": T0,
        }
        for t in range(n)
    ]


def make_replay(rows: list[dict], *, alpha: float = 0.5) -> ReplayBuffer:
    buf = ReplayBuffer(1000, alpha=alpha, seed=0)
    buf.extend(table_from_rows(rows, DIM))
    return buf


def on_policy(policy, rows: list[dict]) -> list[dict]:
    """Set behaviour log-probs to the current policy's (rho = 1)."""
    obs = [Observation(r["prompt"], np.asarray(r["image_features"], np.float16)) for r in rows]
    with torch.no_grad():
        lp = policy.log_prob(obs, [r["action"] for r in rows])
    return [{**r, "behavior_log_prob": min(float(x), 0.0)} for r, x in zip(rows, lp, strict=True)]


def log_prob_of(policy, rows: list[dict]) -> torch.Tensor:
    obs = [Observation(r["prompt"], np.asarray(r["image_features"], np.float16)) for r in rows]
    with torch.no_grad():
        return policy.log_prob(obs, [r["action"] for r in rows])


@pytest.fixture
def policy():
    # free decoding: these tests feed malformed actions (JUNK) that a constrained decoder
    # could never write; test_distrl_on_a_constrained_policy covers the default
    return build_policy(AgentConfig(constrained_decoding=False), seed=0)


def optimizer_for(algo: Algorithm, lr: float = 3e-3) -> torch.optim.Optimizer:
    return torch.optim.Adam(algo.param_groups(lr, lr))


def step(algo: Algorithm, opt, replay, batch_size: int, rng) -> LossOutput:
    opt.zero_grad()
    out = algo.loss(algo.sample(replay, batch_size, rng))
    out.loss.backward()
    opt.step()
    return out


# --- wiring ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cls", "roles"),
    [
        ("distrl", DistRL, ["critic", "policy"]),
        ("digirl", DigiRL, ["critic", "instruction_critic", "policy"]),
        ("filtered_bc", FilteredBC, ["policy"]),
    ],
)
def test_build_algorithm_wires_modules_and_param_groups(policy, name, cls, roles):
    cfg = config_from_dict({"algorithm": {"name": name}})
    algo = build_algorithm(cfg, policy)
    assert isinstance(algo, cls) and isinstance(algo, Algorithm) and algo.name == name
    assert sorted(algo.modules()) == roles
    groups = algo.param_groups(1e-4, 2e-4)
    ids = [{id(p) for p in g["params"]} for g in groups]
    assert groups[0]["name"] == "policy" and groups[0]["lr"] == 1e-4
    assert ids[0] == {id(p) for p in policy.model.parameters()}
    if len(groups) > 1:
        assert groups[1]["lr"] == 2e-4 and not ids[0] & ids[1]


def test_build_algorithm_rejects_unknown_name(policy):
    cfg = config_from_dict({})
    bad = dataclasses.replace(cfg, algorithm=dataclasses.replace(cfg.algorithm, name="ppo"))
    with pytest.raises(ValueError, match="unknown algorithm 'ppo'"):
        build_algorithm(bad, policy)


# --- hand-computed loss terms ---------------------------------------------------------------


def test_distrl_actor_loss_hand_computed():
    log_probs = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    mu = torch.tensor([[-1.0, -1.0]])  # rho = [1, e^-1]
    entropy = torch.tensor([[2.0, 4.0]])
    adv = torch.tensor([[0.5, -1.0]])  # already min(rho_bar, rho) * A
    invalid = torch.tensor([[False, True]])
    w = torch.tensor([0.5])
    mask = torch.ones(1, 2, dtype=torch.bool)
    loss, terms = actor_loss(
        log_probs, mu, entropy, adv, invalid, w, mask, entropy_coef=0.1, invalid_coef=2.0
    )
    # policy = mean(-w A log pi) = (0.25 - 1) / 2; entropy = mean(w H) = 1.5;
    # P_inv = mean(w 1[inv] rho) = 0.5 e^-1 / 2
    p_inv = 0.25 * math.exp(-1)
    assert terms["losses/policy"].item() == pytest.approx(-0.375)
    assert terms["losses/entropy"].item() == pytest.approx(1.5)
    assert terms["losses/invalid"].item() == pytest.approx(p_inv)
    assert loss.item() == pytest.approx(-0.375 - 0.15 + 2 * p_inv)
    loss.backward()
    # d/dlogpi_0 = -w A_0 / 2; d/dlogpi_1 = -w A_1 / 2 + lam w rho_1 / 2 (pushes invalid down)
    assert log_probs.grad[0, 0].item() == pytest.approx(-0.125)
    assert log_probs.grad[0, 1].item() == pytest.approx(0.25 + 0.5 * math.exp(-1))


def test_distrl_actor_loss_positive_only_hand_computed():
    log_probs = torch.tensor([[-0.5, -2.0, -1.0]], requires_grad=True)
    mu = torch.tensor([[-1.0, -1.0, -1.0]])  # rho = [e^0.5 -> clipped 1, e^-1, 1]
    entropy = torch.zeros(1, 3)
    adv = torch.tensor([[0.3, 0.2, -1.0]])  # only the sign matters
    invalid = torch.tensor([[False, False, True]])
    w = torch.tensor([0.5])
    mask = torch.ones(1, 3, dtype=torch.bool)
    loss, terms = actor_loss(
        log_probs,
        mu,
        entropy,
        adv,
        invalid,
        w,
        mask,
        entropy_coef=0.1,
        invalid_coef=2.0,
        positive_only=True,
    )
    # coef = min(1, rho) * 1[A > 0] = [1, e^-1, 0]; policy = mean(-w coef log pi)
    policy = (0.5 * 0.5 + 0.5 * math.exp(-1) * 2.0) / 3
    assert terms["losses/policy"].item() == pytest.approx(policy)
    assert terms["losses/invalid"].item() == pytest.approx(0.5 / 3)
    assert loss.item() == pytest.approx(policy + 2 * 0.5 / 3)
    loss.backward()
    # below-baseline step 2 gets no policy gradient, only the invalid-action push
    expected = [-0.5 / 3, -0.5 * math.exp(-1) / 3, 2 * 0.5 / 3]
    assert log_probs.grad[0].tolist() == pytest.approx(expected)


def test_distrl_actor_loss_ratio_clip_masks_steps_outside_the_trust_region():
    # rho = pi / mu = [e^0.5, e^0.5, e^-0.5, e^-0.5, 1]; eps = 0.2: [1.65 and 0.61 are outside]
    log_probs = torch.tensor([[-0.5, -0.5, -1.5, -1.5, -1.0]], requires_grad=True)
    mu = torch.full((1, 5), -1.0)
    adv = torch.tensor([[0.4, -0.4, 0.4, -0.4, -0.4]])
    mask = torch.ones(1, 5, dtype=torch.bool)
    loss, terms = actor_loss(
        log_probs,
        mu,
        torch.zeros(1, 5),
        adv,
        torch.zeros(1, 5, dtype=torch.bool),
        torch.ones(1),
        mask,
        entropy_coef=0.0,
        invalid_coef=0.0,
        ratio_clip=0.2,
    )
    loss.backward()
    # masked: A > 0 with rho > 1.2 (step 0), A < 0 with rho < 0.8 (step 3); the rest keep -A / 5
    assert log_probs.grad[0].tolist() == pytest.approx([0.0, 0.08, -0.08, 0.0, 0.08])
    # policy = mean(-coef log pi) over the kept steps 1, 2, 4: (-0.2 + 0.6 - 0.4) / 5
    assert terms["losses/policy"].item() == pytest.approx(0.0, abs=1e-7)


def test_distrl_rejects_unknown_policy_advantage(policy):
    critic = build_algorithm(config_from_dict({}), policy).critic
    with pytest.raises(ValueError, match="policy_advantage must be"):
        DistRL(policy, critic, policy_advantage="clipped")
    with pytest.raises(ValueError, match="ratio_clip must be"):
        DistRL(policy, critic, ratio_clip=1.5)


def test_distrl_reward_is_environment_reward_plus_penalty(policy):
    rows = on_policy(policy, trajectory("a", [GOOD], [1.0], penalties=[-0.4]))
    algo = DistRL(policy, build_algorithm(config_from_dict({}), policy).critic)
    out = algo.loss(batch_from_trajectories(make_replay(rows), [0]))
    # one terminal on-policy step: G = r + penalty = 0.6, no bootstrap, no mc_return mix
    assert out.metrics["train/target_mean"] == pytest.approx(0.6, abs=1e-6)
    v = out.metrics["train/value_mean"]
    assert out.metrics["train/adv_mean"] == pytest.approx(0.6 - v, abs=1e-5)
    assert out.metrics["train/ess"] == pytest.approx(1.0, abs=1e-5)


# --- DistRL ---------------------------------------------------------------------------------


@pytest.mark.parametrize("policy_advantage", ["positive", "signed"])
def test_distrl_actor_raises_positive_advantage_and_lowers_invalid_actions(
    policy, policy_advantage
):
    rows = []
    for i in range(3):
        rows += trajectory(f"g{i}", [GOOD], [1.0], seed=i)
        rows += trajectory(f"j{i}", [JUNK], [0.0], penalties=[-1.0], seed=10 + i)
    rows = on_policy(policy, rows)
    good = [r for r in rows if r["action"] == GOOD]
    junk = [r for r in rows if r["action"] == JUNK]
    before_good, before_junk = log_prob_of(policy, good), log_prob_of(policy, junk)
    # with "positive" the invalid-action term is the only force lowering JUNK, so it weighs more
    invalid_coef = 4.0 if policy_advantage == "positive" else 1.0
    algo_cfg = {
        "sequence_length": 1,
        "entropy_coef": 0.0,
        "invalid_coef": invalid_coef,
        "distrl": {"advantage": policy_advantage, "top_p": 1.0, "window_start": "fit"},
    }
    algo = build_algorithm(config_from_dict({"algorithm": algo_cfg}), policy)
    assert algo.positive_only == (policy_advantage == "positive")
    replay = make_replay(rows)
    opt = optimizer_for(algo, lr=1e-3)
    rng = np.random.default_rng(0)
    for _ in range(4):
        out = step(algo, opt, replay, 6, rng)
    assert out.terms["losses/invalid"].item() > 0
    assert (log_prob_of(policy, good) > before_good).all()
    assert (log_prob_of(policy, junk) < before_junk).all()


def test_distrl_on_a_constrained_policy():
    """The default policy decodes under the action grammar: DistRL's gradient reaches only the
    tokens the policy chooses (the format is forced), and still moves the right actions."""
    policy = build_policy(AgentConfig(), seed=0)
    assert policy.grammar is not None
    win, lose = format_action(tap(0.25, 0.75), plan=""), format_action(key(ActionType.PRESS_BACK))
    rows = []
    for i in range(3):
        rows += trajectory(f"w{i}", [win], [1.0], seed=i)
        rows += trajectory(f"l{i}", [lose], [0.0], seed=10 + i)
    rows = on_policy(policy, rows)
    won, lost = [r for r in rows if r["action"] == win], [r for r in rows if r["action"] == lose]
    before_win, before_lose = log_prob_of(policy, won), log_prob_of(policy, lost)
    cfg = {"algorithm": {"sequence_length": 1, "entropy_coef": 0.0, "distrl": PAPER}}
    algo = build_algorithm(config_from_dict(cfg), policy)
    replay, opt, rng = make_replay(rows), optimizer_for(algo, lr=1e-3), np.random.default_rng(0)
    for _ in range(4):
        step(algo, opt, replay, 6, rng)
    assert (log_prob_of(policy, won) > before_win).all()
    assert (log_prob_of(policy, lost) < before_lose).all()
    scores = policy.score([Observation(won[0]["prompt"], won[0]["image_features"])], [win])
    forced = scores.token_log_probs[0, :14]  # "Action Plan: [" is forced
    assert torch.equal(forced.detach(), torch.zeros_like(forced))


def test_distrl_critic_gets_gradient_and_fits_retrace_targets(policy):
    rows = []
    for i in range(2):
        rows += trajectory(f"s{i}", [BAD, GOOD], [0.0, 1.0], seed=i)
        rows += trajectory(f"f{i}", [BAD], [0.0], task="Open Chrome", seed=20 + i)
    rows = on_policy(policy, rows)
    cfg = {"algorithm": {"sequence_length": 2, "distrl": PAPER}}
    algo = build_algorithm(config_from_dict(cfg), policy)
    replay = make_replay(rows)
    batch = batch_from_trajectories(replay, replay.slots)
    out = algo.loss(batch)
    out.loss.backward()
    grads = [p.grad for p in algo.critic.parameters() if p.requires_grad]
    assert all(g is not None for g in grads) and sum(float(g.abs().sum()) for g in grads) > 0
    first = out.terms["losses/value"].item()
    critic_opt = torch.optim.Adam(algo.critic.parameters(), lr=3e-3)
    for _ in range(8):  # train only the critic: the targets move only through V
        critic_opt.zero_grad()
        algo.loss(batch).loss.backward()
        critic_opt.step()
    assert algo.loss(batch).terms["losses/value"].item() < 0.8 * first


def test_distrl_priorities_are_recomputed_and_drive_sampling(policy):
    fresh = on_policy(policy, trajectory("b-fresh", [GOOD, GOOD], [0.0, 1.0], seed=1))
    # the same steps collected by an older policy: log mu 5 nats lower, so rho = e^5 > 10
    stale = [{**r, "trajectory_id": "a-stale", "behavior_log_prob": r["behavior_log_prob"] - 5}
             for r in fresh]  # fmt: skip
    replay = make_replay(stale + fresh, alpha=1.0)
    base = build_algorithm(config_from_dict({}), policy)
    # w = (0, 1, 0): the priority is the mean rho, clipped at 10: 10 (stale) and 1 (fresh)
    algo = DistRL(policy, base.critic, sequence_length=2, priority_weights=(0.0, 1.0, 0.0))
    assert replay.priorities().tolist() == [1.0, 1.0]  # as added
    metrics = algo.prepare_round(replay)
    prio = replay.priorities()
    np.testing.assert_allclose(prio, [10.0, 1.0], rtol=1e-4)
    assert metrics["train/priority_max"] == pytest.approx(10.0, rel=1e-4)
    batch = algo.sample(replay, 400, np.random.default_rng(0))
    share = float(np.mean(batch.slots == 0))
    assert share == pytest.approx(10 / 11, abs=0.04)  # P ~ p^alpha with alpha = 1
    # importance weights (N P)^-beta / max: 1 for the rare trajectory, (1/10)^0.4 for the other
    assert batch.weights[batch.slots == 1].max() == pytest.approx(1.0)
    assert batch.weights[batch.slots == 0].max() == pytest.approx(0.1**0.4, rel=1e-4)
    # the loss records its windows' priorities; the next sample writes them to the replay
    replay.update_priorities([1], [123.0])
    algo.loss(batch_from_trajectories(replay, [1]))
    algo.sample(replay, 1, np.random.default_rng(0))
    assert replay.priorities()[1] == pytest.approx(1.0, rel=1e-4)


# --- DigiRL ---------------------------------------------------------------------------------


def digirl_rows() -> list[dict]:
    rows = []
    for i in range(3):
        rows += trajectory(f"ok{i}", [BAD, GOOD], [0.0, 1.0], seed=i)
        rows += trajectory(f"no{i}", [JUNK, JUNK], [0.0, 0.0], task="Open Chrome", seed=30 + i)
    return rows


def success_slots(replay: ReplayBuffer) -> set[int]:
    return {s for s, i in zip(replay.slots, replay.trajectory_ids(), strict=True) if "ok" in i}


def test_digirl_curriculum_keeps_top_instruction_advantage(policy):
    cfg = config_from_dict({"algorithm": {"name": "digirl", "filter_top_fraction": 0.5}})
    algo = build_algorithm(cfg, policy)
    replay = make_replay(digirl_rows())
    scores = algo.trajectory_scores(replay, np.asarray(replay.slots))
    v_ok, v_no = algo.instruction_critic.values(["Open the clock", "Open Chrome"]).tolist()
    ok = success_slots(replay)
    expected = [1 - v_ok if s in ok else -v_no for s in replay.slots]
    np.testing.assert_allclose(scores, expected, atol=1e-6)
    metrics = algo.prepare_round(replay)
    assert metrics["train/kept_frac"] == 0.5 and metrics["train/kept_success"] == 1.0
    assert set(algo.kept_slots.tolist()) == ok and len(ok) == 3
    batch = algo.sample(replay, 4, np.random.default_rng(0))
    assert set(batch.slots[batch.actor_rows.numpy()].tolist()) <= ok
    assert batch.critic_rows.sum() == 4


def test_digirl_trains_critics_and_clones_only_successful_steps(policy):
    rows = digirl_rows()
    good = [r for r in rows if r["action"] == GOOD]
    junk = [r for r in rows if r["action"] == JUNK]
    before_good, before_junk = log_prob_of(policy, good), log_prob_of(policy, junk)
    cfg = config_from_dict({"algorithm": {"name": "digirl", "filter_top_fraction": 0.5}})
    algo = build_algorithm(cfg, policy)
    replay = make_replay(rows)
    algo.prepare_round(replay)
    opt = optimizer_for(algo, lr=2e-3)
    rng = np.random.default_rng(0)
    everything = batch_from_trajectories(replay, replay.slots)
    first = algo.loss(everything)
    for _ in range(6):
        out = step(algo, opt, replay, 3, rng)
    assert out.metrics["train/kept_frac"] > 0
    last = algo.loss(everything)
    assert last.terms["losses/critic_instruction"] < first.terms["losses/critic_instruction"]
    assert last.terms["losses/critic_step"] < first.terms["losses/critic_step"]
    gain_good = (log_prob_of(policy, good) - before_good).mean()
    gain_junk = (log_prob_of(policy, junk) - before_junk).mean()
    assert gain_good > 0 and gain_good > gain_junk


def test_digirl_failed_final_step_is_never_imitated(policy):
    algo = build_algorithm(config_from_dict({"algorithm": {"name": "digirl"}}), policy)
    replay = make_replay(trajectory("no", [JUNK], [0.0]))
    batch = batch_from_trajectories(replay, [0])
    # r_H = 0 and no next state: A = 0 + 0 - V(s) <= 0 < 1/H, so nothing is kept
    out = algo.loss(batch)
    assert out.metrics["train/kept_frac"] == 0.0 and out.terms["losses/policy"].item() == 0.0


def test_score_actor_rows_scores_every_step_but_back_propagates_only_actor_rows(policy):
    replay = make_replay(digirl_rows())
    full = batch_from_trajectories(replay, replay.slots)
    actor = torch.tensor([i % 2 == 0 for i in range(full.batch_size)])
    batch = dataclasses.replace(full, actor_rows=actor)
    expected, expected_ent, _ = score_steps(policy, full)
    log_probs, entropy = score_actor_rows(policy, batch)
    torch.testing.assert_close(log_probs, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(entropy, expected_ent, rtol=1e-5, atol=1e-5)
    # a loss over the critic-only rows alone moves no weight; one over the actor rows does
    params = [p for p in policy.model.parameters() if p.requires_grad]
    mask = actor.unsqueeze(1).float()
    only_critic = torch.autograd.grad(
        (log_probs * (1 - mask)).sum(), params, allow_unused=True, retain_graph=True
    )
    only_actor = torch.autograd.grad((log_probs * mask).sum(), params, allow_unused=True)
    assert any(g is not None and g.abs().sum() > 0 for g in only_actor)
    assert all(g is None or g.abs().sum() == 0 for g in only_critic)


# --- Filtered BC ----------------------------------------------------------------------------


def test_filtered_bc_clones_only_the_top_trajectories(policy):
    rows = digirl_rows()
    good = [r for r in rows if r["action"] == GOOD]
    junk = [r for r in rows if r["action"] == JUNK]
    before_good, before_junk = log_prob_of(policy, good), log_prob_of(policy, junk)
    cfg = config_from_dict({"algorithm": {"name": "filtered_bc", "filter_top_fraction": 0.5}})
    algo = build_algorithm(cfg, policy)
    replay = make_replay(rows)
    metrics = algo.prepare_round(replay)
    assert metrics == {"train/kept_frac": 0.5, "train/kept_reward_mean": 1.0}
    opt = optimizer_for(algo, lr=2e-3)
    rng = np.random.default_rng(0)
    for _ in range(4):
        batch = algo.sample(replay, 3, rng)
        assert set(batch.slots.tolist()) <= success_slots(replay)
        opt.zero_grad()
        out = algo.loss(batch)
        out.loss.backward()
        opt.step()
    assert out.terms["losses/policy"].item() > 0
    gain_good = (log_prob_of(policy, good) - before_good).mean()
    gain_junk = (log_prob_of(policy, junk) - before_junk).mean()
    assert gain_good > 0 and gain_good > gain_junk


def test_filter_algorithms_need_prepare_round_first(policy):
    replay = make_replay(trajectory("a", [GOOD], [1.0]))
    for name in ("digirl", "filtered_bc"):
        algo = build_algorithm(config_from_dict({"algorithm": {"name": name}}), policy)
        with pytest.raises(ValueError, match="prepare_round"):
            algo.sample(replay, 1, np.random.default_rng(0))


@pytest.mark.parametrize("name", ["distrl", "digirl", "filtered_bc"])
def test_every_algorithm_updates_under_bf16_autocast(policy, tmp_path, name):
    # the critics' bf16 outputs once met float32 log-probs in the Retrace / advantage math,
    # which refuses mixed dtypes: every algorithm must run a real update under autocast
    rows = []
    for i in range(4):
        rows += trajectory(f"g{i}", [GOOD, GOOD], [0.0, 1.0], seed=i)
        rows += trajectory(f"f{i}", [GOOD, GOOD], [0.0, 0.0], seed=10 + i)
    AcceleratorState._reset_state(reset_partial_state=True)
    try:
        acc = Accelerator(mixed_precision="bf16", cpu=True)
        cfg = config_from_dict({"algorithm": {"name": name, "batch_size": 4}})
        learner = Learner(cfg, build_algorithm(cfg, policy), accelerator=acc, out_dir=tmp_path)
        before = [p.detach().clone() for p in policy.model.parameters()]
        metrics = learner.train_round(make_replay(rows), steps=1)
        losses = {k: v for k, v in metrics.items() if k.startswith("losses/")}
        assert losses and all(math.isfinite(v) for v in losses.values())
        after = list(policy.model.parameters())
        assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)


def _grouped_replay() -> tuple[ReplayBuffer, dict[str, int]]:
    """Group "Open the clock": a1 (R=1, 2 steps), a2 (R=0, 2 steps), a3 (R=1, 1 step), all
    starting from screen S0; "Open Maps": b1 alone (a group of one)."""
    spec = {
        "a1": ([0.0, 1.0], [0.5, 1.0], [b"S0", b"S1"], "Open the clock"),
        "a2": ([0.0, 0.0], [0.0, 0.0], [b"S0", b"S2"], "Open the clock"),
        "a3": ([1.0], [1.0], [b"S0"], "Open the clock"),
        "b1": ([1.0], [1.0], [b"S0"], "Open Maps"),
    }
    rows = []
    for i, (tid, (rewards, returns, shots, task)) in enumerate(spec.items()):
        traj = trajectory(tid, [GOOD] * len(rewards), rewards, task=task, seed=i)
        for row, ret, shot in zip(traj, returns, shots, strict=True):
            row.update(mc_return=ret, screenshot_png=shot)
        rows += traj
    replay = make_replay(rows)
    slot_of = {replay.trajectory(s).column("trajectory_id")[0].as_py(): s for s in replay.slots}
    return replay, slot_of


@pytest.mark.parametrize("variant", ["grpo", "gigpo"])
def test_group_relative_advantages_hand_computed(policy, variant) -> None:
    from distrl_tasks.algorithms.group_relative import GroupRelative

    replay, slot_of = _grouped_replay()
    algo = GroupRelative(policy, variant=variant, step_weight=1.0)
    metrics = algo.prepare_round(replay)
    # episode advantages of the clock group: returns (1, 0, 1), mean 2/3, sample std sqrt(1/3)
    s = math.sqrt(1 / 3)
    a_e = {"a1": (1 / 3) / s, "a2": (-2 / 3) / s, "a3": (1 / 3) / s}
    if variant == "grpo":
        expected = {"a1": [a_e["a1"]] * 2, "a2": [a_e["a2"]] * 2, "a3": [a_e["a3"]]}
    else:
        # the first steps share S0: returns (.5, 0, 1), mean .5, std .5 -> (0, -1, 1);
        # the second steps (S1, S2) are alone in their states -> 0
        expected = {
            "a1": [a_e["a1"], a_e["a1"]],
            "a2": [a_e["a2"] - 1.0, a_e["a2"]],
            "a3": [a_e["a3"] + 1.0],
        }
        assert metrics["train/steps_in_shared_states"] == pytest.approx(3 / 6)
    for tid, adv in expected.items():
        np.testing.assert_allclose(algo.advantages[slot_of[tid]], adv, rtol=1e-5)
    np.testing.assert_allclose(algo.advantages[slot_of["b1"]], [0.0])  # a group of one
    assert sorted(algo.trained_slots.tolist()) == sorted(slot_of[t] for t in ("a1", "a2", "a3"))
    assert metrics["train/groups"] == 2 and metrics["train/groups_with_signal"] == 1.0
    # one update runs, and only grouped trajectories are drawn
    batch = algo.sample(replay, 4, np.random.default_rng(0))
    assert set(batch.slots.tolist()) <= set(algo.trained_slots.tolist())
    out = algo.loss(batch)
    assert torch.isfinite(out.loss) and "train/clip_frac" in out.metrics


def test_group_relative_kl_term_uses_the_starting_policy(policy) -> None:
    from distrl_tasks.algorithms.group_relative import GroupRelative

    replay, _ = _grouped_replay()
    algo = GroupRelative(policy, variant="grpo", kl_coef=0.1)
    algo.prepare_round(replay)
    out = algo.loss(algo.sample(replay, 2, np.random.default_rng(0)))
    assert float(out.terms["losses/kl"]) == pytest.approx(0.0, abs=1e-6)  # pi == reference yet
    assert all(not p.requires_grad for p in algo.reference.model.parameters())


@pytest.mark.parametrize("name", ["grpo", "gigpo"])
def test_a_round_without_group_signal_skips_its_steps_and_keeps_the_weights(policy, tmp_path, name):
    # every attempt of each goal got the same return: no advantage anywhere, nothing to learn;
    # a zero-gradient Adam step would still move the weights (momentum), so none is taken
    rows = []
    for i in range(3):
        rows += trajectory(f"won{i}", [GOOD], [1.0], task="Open the clock", seed=i)
        rows += trajectory(f"lost{i}", [GOOD, GOOD], [0.0, 0.0], task="Open Maps", seed=9 + i)
    cfg = config_from_dict({"algorithm": {"name": name, "batch_size": 2}})
    learner = Learner(cfg, build_algorithm(cfg, policy), out_dir=tmp_path)
    before = [p.detach().clone() for p in policy.model.parameters()]
    metrics = learner.train_round(make_replay(rows), steps=3)
    assert metrics["train/skipped_steps"] == 3.0 and metrics["train/samples_per_s"] == 0.0
    assert metrics["train/groups_with_signal"] == 0.0 and learner.step == 0
    after = list(policy.model.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    # one mixed group: the steps run again
    rows += trajectory("lost-clock", [GOOD, GOOD], [0.0, 0.0], task="Open the clock", seed=20)
    metrics = learner.train_round(make_replay(rows), steps=2)
    assert metrics["train/skipped_steps"] == 0.0 and learner.step == 2


def test_plan_goals_deals_groups_round_robin() -> None:
    from distrl_tasks.stages.curriculum import plan_goals

    goals = ["g1", "g2", "g3", "g4", "g5"]
    plan = plan_goals(goals, ["d0", "d1", "d2"], 4, "seed", group_size=4)
    assert all(len(v) == 4 for v in plan.values())
    attempts = [g for i in range(4) for g in (plan["d0"][i], plan["d1"][i], plan["d2"][i])]
    # 12 attempts = 3 groups of 4, in runs of 4 over the devices
    assert [attempts[i : i + 4].count(attempts[i]) for i in (0, 4, 8)] == [4, 4, 4]
    assert plan == plan_goals(goals, ["d0", "d1", "d2"], 4, "seed", group_size=4)  # seeded
    with pytest.raises(ValueError, match="group_size"):
        plan_goals(goals, ["d0"], 1, "s", group_size=0)
