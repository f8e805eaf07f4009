"""The learner loop: metrics, determinism, accumulation, clipping, bf16, checkpoint and resume.

The algorithm here is a small behaviour-cloning learner with a value head (the Algorithm
protocol, real AutoUIPolicy scoring), so the loop is tested apart from DistRL/DigiRL.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from safetensors.torch import load_file

from distrl_tasks.agents.autoui import AutoUIModel, tiny_t5_config
from distrl_tasks.agents.checkpoint import load_checkpoint, read_metadata
from distrl_tasks.agents.policy import AutoUIPolicy, Observation
from distrl_tasks.agents.tokenizer import ByteTokenizer
from distrl_tasks.algorithms.algorithm import LossOutput
from distrl_tasks.algorithms.learner import METRIC_NAMES, Learner, rank_rng
from distrl_tasks.algorithms.train_state import TrainStateError, latest_checkpoint
from distrl_tasks.config import Config, config_from_dict
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.protocol.actions import ActionType, format_action, key, tap

DIM = 8  # image feature size of the test policy


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def small_policy(seed: int = 0) -> AutoUIPolicy:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoUIModel(tiny_t5_config(d_model=64, layers=1), image_dim=DIM)
    return AutoUIPolicy(model, ByteTokenizer(), max_new_tokens=24, max_prompt_tokens=48)


def replay_of(n_traj: int = 4, steps: int = 3) -> ReplayBuffer:
    rng = np.random.default_rng(0)
    actions = [format_action(key(ActionType.PRESS_HOME)), format_action(tap(0.5, 0.25))]
    replay = ReplayBuffer(100, seed=0)
    for t in range(n_traj):
        feats = rng.standard_normal((steps, DIM)).astype(np.float16)
        replay.add(
            pa.table(
                {
                    "trajectory_id": [f"t{t}"] * steps,
                    "step": pa.array(range(steps), pa.int32()),
                    "round": pa.array([0] * steps, pa.int32()),
                    "prompt": [f"Goal: open app {t}"] * steps,
                    "action": [actions[(t + s) % 2] for s in range(steps)],
                    "image_features": pa.array(list(feats), pa.list_(pa.float16(), DIM)),
                    "mc_return": pa.array([0.5**s for s in range(steps)], pa.float32()),
                }
            )
        )
    return replay


@dataclasses.dataclass
class BCBatch:
    observations: list[Observation]
    actions: list[str]
    returns: torch.Tensor
    features: torch.Tensor


class BehaviourCloning:
    """Protocol-conforming test algorithm: BC on the stored actions + a value regression."""

    name = "bc"

    def __init__(self, policy: AutoUIPolicy, seed: int = 0, fixed: list[int] | None = None):
        self.policy = policy
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 1)
            self.critic = torch.nn.Linear(DIM, 1)
        self.fixed = fixed  # global row indices to serve instead of drawing (reference runs)
        self.prepared = 0

    def modules(self) -> dict[str, torch.nn.Module]:
        return {"policy": self.policy.model, "critic": self.critic}

    def param_groups(self, lr_policy: float, lr_critic: float) -> list[dict]:
        return [
            {"params": list(self.policy.model.parameters()), "lr": lr_policy, "name": "policy"},
            {"params": list(self.critic.parameters()), "lr": lr_critic, "name": "critic"},
        ]

    def prepare_round(self, replay: ReplayBuffer) -> dict[str, float]:
        self.prepared += 1
        self.table = pa.concat_tables([replay.trajectory(s) for s in replay.slots])
        return {"train/kept_frac": 1.0}

    def sample(self, replay: ReplayBuffer, batch_size: int, rng: np.random.Generator) -> BCBatch:
        if self.fixed is not None:
            idx, self.fixed = self.fixed[:batch_size], self.fixed[batch_size:]
        else:  # doubles: one uint64 per draw, so two draws of 2 equal one draw of 4
            idx = (rng.random(batch_size) * self.table.num_rows).astype(int).tolist()
        rows = self.table.take(idx).to_pylist()
        feats = torch.tensor(np.array([r["image_features"] for r in rows], dtype=np.float32))
        return BCBatch(
            [Observation(r["prompt"], f) for r, f in zip(rows, feats, strict=True)],
            [r["action"] for r in rows],
            torch.tensor([r["mc_return"] for r in rows]),
            feats,
        )

    def loss(self, batch: BCBatch) -> LossOutput:
        scores = self.policy.score(batch.observations, batch.actions)
        policy_loss = -scores.log_prob.float().mean()
        value = self.critic(batch.features.to(self.critic.weight.device)).squeeze(-1)
        self.value_dtype = value.dtype  # bf16 under autocast
        value_loss = (value.float() - batch.returns).pow(2).mean()
        entropy = scores.entropy.float().mean()
        return LossOutput(
            policy_loss + value_loss - 0.01 * entropy,
            {"losses/policy": policy_loss, "losses/value": value_loss, "losses/entropy": entropy},
            {"train/ess": 1.0, "train/clip_frac": 0.0, "train/staleness": 0.0},
            critic_loss=value_loss,
        )


def config(**algorithm) -> Config:
    base = {"batch_size": 4, "lm_lr": 3e-3, "critic_lr": 1e-2, "max_grad_norm": 1.0}
    return config_from_dict({"algorithm": {**base, **algorithm}})


def learner(tmp_path: Path, *, policy_seed: int = 0, cfg: Config | None = None, **kw) -> Learner:
    return Learner(
        cfg or config(), BehaviourCloning(small_policy(policy_seed)), out_dir=tmp_path, **kw
    )


def params(lrn: Learner) -> dict[str, torch.Tensor]:
    return {
        f"{role}.{k}": v.detach().clone()
        for role, m in lrn.modules.items()
        for k, v in m.state_dict().items()
    }


def assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_round_reports_namespaced_metrics_and_learns(tmp_path: Path) -> None:
    replay = replay_of()
    lrn = learner(tmp_path)
    first = lrn.train_round(replay, steps=4)
    for _ in range(3):
        began = time.perf_counter()
        last = lrn.train_round(replay, steps=4)
        wall = time.perf_counter() - began
    reported = set(METRIC_NAMES) - {"train/kept_frac"}
    assert reported <= set(last), reported - set(last)
    assert "train/kept_frac" in last  # prepare_round's metric is passed through
    assert all(math.isfinite(v) for v in last.values())
    assert last["losses/policy"] < 0.8 * first["losses/policy"]  # BC actually fits
    assert last["train/steps"] == 16 and last["train/policy_version"] == 4
    assert lrn.policy_version == 4 and lrn.algorithm.prepared == 4
    assert last["train/samples_per_s"] > 0 and last["train/lr"] == pytest.approx(3e-3)
    # the phases' times are parts of the round's wall time, and the steps took some
    phases = [last[f"perf/{p}_s"] for p in ("prepare", "critic", "actor", "calibration")]
    assert min(phases) >= 0 and last["perf/actor_s"] > 0
    assert sum(phases) <= wall


def test_same_seed_same_parameters_other_seed_differs(tmp_path: Path) -> None:
    runs = []
    for seed in (0, 0, 1):
        lrn = learner(tmp_path, seed=seed)
        lrn.train_round(replay_of(), steps=3)
        runs.append(params(lrn))
    assert_same(runs[0], runs[1])
    assert not torch.equal(runs[0]["critic.weight"], runs[2]["critic.weight"])


def test_rank_rng_streams_are_independent_and_reproducible() -> None:
    assert rank_rng(3, 1).random() == rank_rng(3, 1).random()
    assert rank_rng(3, 0).random() != rank_rng(3, 1).random()


def test_gradient_accumulation_equals_one_big_batch(tmp_path: Path) -> None:
    one = learner(tmp_path, grad_accum_steps=1)
    two = learner(tmp_path, grad_accum_steps=2)
    assert (one.micro_batch_size, two.micro_batch_size) == (4, 2)
    one.train_round(replay_of(), steps=2)
    two.train_round(replay_of(), steps=2)
    # The last step's (clipped) gradients agree to float rounding (an absolute 2e-7 seen on AMD
    # EPYC, where the summation order differs from Intel's); Adam divides by sqrt(v), so
    # parameters may differ by rounding amplified to a small fraction of the learning rate.
    for p, q in zip(one.params, two.params, strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)
    a, b = params(one), params(two)
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=1e-2 * 1e-2)


def test_gradients_are_clipped_to_max_grad_norm(tmp_path: Path) -> None:
    lrn = learner(tmp_path, cfg=config(max_grad_norm=0.01))
    metrics = lrn.train_round(replay_of(), steps=1)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in lrn.params]))
    assert metrics["train/grad_norm"] > 0.01  # the raw norm is reported
    assert float(norm) == pytest.approx(0.01, rel=1e-4)


def test_warmup_scales_the_learning_rate_linearly(tmp_path: Path) -> None:
    lrn = learner(tmp_path, warmup_steps=4)
    assert lrn.optimizer.param_groups[1]["lr"] == pytest.approx(1e-2 / 4)
    metrics = lrn.train_round(replay_of(), steps=2)  # next step is the 3rd of 4
    assert metrics["train/lr"] == pytest.approx(3e-3 * 3 / 4)
    lrn.train_round(replay_of(), steps=3)
    assert lrn.optimizer.param_groups[1]["lr"] == pytest.approx(1e-2)


def test_checkpoint_resume_gives_the_same_next_update(tmp_path: Path) -> None:
    replay = replay_of()
    straight = learner(tmp_path / "a", warmup_steps=5)
    straight.train_round(replay, steps=3)
    saved = straight.save_checkpoint()
    straight.train_round(replay, steps=1)

    resumed = learner(tmp_path / "b", policy_seed=7, seed=99, warmup_steps=5)  # all overwritten
    resumed.load_checkpoint(saved)
    assert (resumed.step, resumed.policy_version) == (3, 1)
    resumed.train_round(replay, steps=1)
    assert_same(params(straight), params(resumed))
    sa, sb = straight.optimizer.state_dict(), resumed.optimizer.state_dict()
    for i in sa["state"]:
        for name in sa["state"][i]:
            assert torch.equal(sa["state"][i][name], sb["state"][i][name])
    assert [g["lr"] for g in sa["param_groups"]] == [g["lr"] for g in sb["param_groups"]]


def test_checkpoint_layout_is_pickle_free_and_servable(tmp_path: Path) -> None:
    lrn = learner(tmp_path)
    lrn.train_round(replay_of(), steps=2)
    path = lrn.save_checkpoint()
    assert path == tmp_path / "checkpoints" / "step-00000002"
    assert latest_checkpoint(tmp_path / "checkpoints") == path
    names = {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()}
    assert names == {
        "policy/config.json",
        "policy/model.safetensors",
        "modules/critic.safetensors",
        "optimizer.safetensors",
        "rng-rank0.safetensors",
        "rng-rank0.json",
        "train_state.json",
    }
    assert not list(tmp_path.rglob(".tmp-*"))
    state = json.loads((path / "train_state.json").read_text())
    assert (state["step"], state["policy_version"], state["algorithm"]) == (2, 1, "bc")
    assert state["optimizer"]["param_groups"][0]["betas"] == [0.9, 0.999]
    opt = load_file(str(path / "optimizer.safetensors"))
    assert "0.exp_avg" in opt and "0.exp_avg_sq" in opt
    served, tokenizer = load_checkpoint(path / "policy")  # what build_policy loads
    assert isinstance(tokenizer, ByteTokenizer)
    assert read_metadata(path / "policy") == {"policy_version": 1, "step": 2, "algorithm": "bc"}
    assert_same(
        dict(served.state_dict()),
        {k: v for k, v in lrn.algorithm.policy.model.state_dict().items()},
    )
    # Saving again under the same name replaces the directory atomically.
    lrn.train_round(replay_of(), steps=1)
    again = lrn.save_checkpoint("step-00000002")
    assert json.loads((again / "train_state.json").read_text())["step"] == 3


def test_only_the_newest_learner_states_stay_on_disk(tmp_path: Path) -> None:
    lrn = learner(tmp_path / "two", cfg=config(keep_states=2))
    saved = []
    for _ in range(4):
        lrn.train_round(replay_of(), steps=1)
        saved.append(lrn.save_checkpoint())
    root = tmp_path / "two" / "checkpoints"
    assert sorted(d.name for d in root.iterdir() if d.is_dir()) == [p.name for p in saved[2:]]
    assert latest_checkpoint(root) == saved[-1]
    resumed = learner(tmp_path / "r")
    resumed.load_checkpoint(latest_checkpoint(root))
    assert resumed.step == 4
    # 0 keeps every state
    keep_all = learner(tmp_path / "all", cfg=config(keep_states=0))
    for _ in range(3):
        keep_all.train_round(replay_of(), steps=1)
        keep_all.save_checkpoint()
    assert len([d for d in (tmp_path / "all" / "checkpoints").iterdir() if d.is_dir()]) == 3


def test_pruning_never_deletes_the_state_latest_names(tmp_path: Path) -> None:
    from distrl_tasks.algorithms.train_state import prune_checkpoints, write_latest

    root = tmp_path / "checkpoints"
    for name, step in (("a", 1), ("b", 5), ("c", 3)):
        (root / name).mkdir(parents=True)
        (root / name / "train_state.json").write_text(json.dumps({"step": step}))
    (root / ".tmp-d").mkdir()  # a writer's half-finished state is not ours to delete
    (root / "half").mkdir()  # no train_state.json: not a checkpoint
    write_latest(root, "a")  # e.g. a resumed run re-saved an older name
    deleted = prune_checkpoints(root, keep=1)
    assert sorted(d.name for d in deleted) == ["c"]
    assert sorted(d.name for d in root.iterdir() if d.is_dir()) == [".tmp-d", "a", "b", "half"]
    assert prune_checkpoints(root, keep=0) == []
    with pytest.raises(ValueError, match="keep"):
        prune_checkpoints(root, keep=-1)


def test_resume_rejects_mismatched_checkpoints(tmp_path: Path) -> None:
    lrn = learner(tmp_path)
    path = lrn.save_checkpoint()
    with pytest.raises(TrainStateError, match="checkpoint file missing"):
        lrn.load_checkpoint(tmp_path / "nowhere")
    state = json.loads((path / "train_state.json").read_text())
    state["world_size"] = 2
    (path / "train_state.json").write_text(json.dumps(state))
    with pytest.raises(TrainStateError, match="saved by 2 processes"):
        lrn.load_checkpoint(path)
    state["world_size"], state["modules"] = 1, ["critic", "policy", "target"]
    (path / "train_state.json").write_text(json.dumps(state))
    with pytest.raises(TrainStateError, match="modules"):
        lrn.load_checkpoint(path)


def test_a_truncated_state_file_is_named_in_the_error(tmp_path: Path) -> None:
    lrn = learner(tmp_path)
    path = lrn.save_checkpoint()
    optimizer = path / "optimizer.safetensors"
    optimizer.write_bytes(optimizer.read_bytes()[:20])
    with pytest.raises(TrainStateError, match="unreadable safetensors file") as err:
        lrn.load_checkpoint(path)
    assert str(optimizer) in str(err.value)


def test_weights_of_another_shape_are_a_named_error(tmp_path: Path) -> None:
    from distrl_tasks.algorithms.train_state import load_module, save_module

    path = tmp_path / "state" / "model.safetensors"
    path.parent.mkdir()
    save_module(torch.nn.Linear(5, 3), path)  # e.g. a pointer head's fit before a feature was added
    with pytest.raises(TrainStateError, match="another shape") as err:
        load_module(torch.nn.Linear(6, 3), path)
    assert "size mismatch" in str(err.value) and str(path.parent) in str(err.value)


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="divisible"):
        learner(tmp_path, cfg=config(batch_size=3), grad_accum_steps=2)
    with pytest.raises(ValueError, match="mixed_precision"):
        learner(tmp_path, mixed_precision="fp16")
    with pytest.raises(ValueError, match="steps >= 1"):
        learner(tmp_path).train_round(replay_of(), steps=0)


def test_bf16_autocast_trains(tmp_path: Path) -> None:
    AcceleratorState._reset_state(reset_partial_state=True)
    try:
        acc = Accelerator(mixed_precision="bf16", cpu=True)
        lrn = Learner(config(), BehaviourCloning(small_policy()), accelerator=acc, out_dir=tmp_path)
        before = params(lrn)
        metrics = lrn.train_round(replay_of(), steps=2)
        assert all(math.isfinite(v) for v in metrics.values())
        assert lrn.algorithm.value_dtype == torch.bfloat16  # autocast was on
        assert lrn.modules["critic"].weight.dtype == torch.float32  # master weights stay fp32
        assert not torch.equal(before["critic.weight"], params(lrn)["critic.weight"])
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)


def test_critic_warmup_moves_only_the_critic(tmp_path: Path) -> None:
    lrn = learner(tmp_path)
    before = params(lrn)
    replay = replay_of()
    lrn.algorithm.prepare_round(replay)
    assert lrn._optimizer_step(replay, lambda values: None, critic_only=True)
    after = params(lrn)
    moved = {k for k in before if not torch.equal(before[k], after[k])}
    assert moved == {"critic.weight", "critic.bias"}


def test_round_with_warmup_reports_it_and_no_critic_skips_it(tmp_path: Path) -> None:
    lrn = learner(tmp_path)
    metrics = lrn.train_round(replay_of(), steps=2, critic_steps=3)
    assert lrn.step == 5 and metrics["losses/critic_warmup"] > 0
    assert "train/critic_grad_norm" in metrics

    class NoCritic(BehaviourCloning):
        def loss(self, batch: BCBatch) -> LossOutput:
            out = super().loss(batch)
            return LossOutput(out.loss, out.terms, out.metrics)

    plain = Learner(config(), NoCritic(small_policy(0)), out_dir=tmp_path / "plain")
    metrics = plain.train_round(replay_of(), steps=2, critic_steps=3)
    assert plain.step == 2 and "losses/critic_warmup" not in metrics
    with pytest.raises(ValueError, match="critic_steps"):
        plain.train_round(replay_of(), steps=1, critic_steps=-1)
