"""The VLM policy on a few-MB Qwen2-VL: behaviour log-probs, LoRA-only training, checkpoints."""

from __future__ import annotations

import datetime as dt
import io
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.agents.vlm import (
    VLM_FILE,
    VLMCheckpointError,
    VLMPolicy,
    base_digest,
    is_vlm_checkpoint,
    load_vlm_policy,
    new_vlm_policy,
)
from distrl_tasks.agents.vlm_tiny import write_tiny_vlm
from distrl_tasks.algorithms.group_relative import GroupRelative
from distrl_tasks.config import AgentConfig, ConfigError, config_from_dict
from distrl_tasks.data.replay import ReplayBuffer
from distrl_tasks.data.schema import table_from_rows
from distrl_tasks.protocol.actions import format_action, tap
from distrl_tasks.protocol.observation import Observation, format_prompt

pytestmark = [
    pytest.mark.usefixtures("one_torch_thread"),
    # peft 0.21 asks transformers 5 an API it deprecates; not ours to fix
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_vlm(tmp_path_factory.mktemp("vlm") / "base")


def screen(color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (270, 600), color).save(buf, "PNG")
    return buf.getvalue()


def observations(n: int) -> list[Observation]:
    goals = ["Open the clock", "What's the weather in Paris?", "Install the Uber app"]
    return [
        Observation(format_prompt(goals[i % 3]), np.zeros(8, np.float16), screen((40 * i, 90, 20)))
        for i in range(n)
    ]


def test_behaviour_log_probs_are_the_learners_teacher_forced_ones(base: Path) -> None:
    policy = new_vlm_policy(base, rank=4, alpha=8, max_new_tokens=16, temperature=1.3)
    obs = observations(4)
    sample = policy.sample(obs, generator=torch.Generator().manual_seed(1))
    assert len(sample.texts) == 4 and all(len(r) <= 16 for r in sample.token_ids)
    scores = policy.score(obs, sample.texts)
    torch.testing.assert_close(scores.log_prob.detach(), sample.log_probs, rtol=0, atol=1e-4)
    assert bool((scores.lengths > 0).all()) and bool((scores.entropy > 0).all())
    # the same generator seed gives the same actions; greedy ignores the seed
    again = policy.sample(obs, generator=torch.Generator().manual_seed(1))
    assert again.texts == sample.texts
    greedy = [policy.act(obs, greedy=True)[0] for _ in range(2)]
    assert greedy[0] == greedy[1]
    # padding: one observation at a time scores as in the batch
    action = format_action(tap(0.25, 0.5), plan="")
    one = torch.cat([policy.log_prob([o], [action]).detach() for o in obs])
    torch.testing.assert_close(one, policy.log_prob(obs, [action] * 4).detach(), atol=1e-4, rtol=0)


def test_only_the_adapters_train_and_a_checkpoint_names_its_base(base: Path, tmp_path) -> None:
    policy = new_vlm_policy(base, rank=4, alpha=8)
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    frozen = {n: p.detach().clone() for n, p in policy.model.named_parameters()
              if not p.requires_grad}  # fmt: skip
    obs, action = observations(2), [format_action(tap(0.25, 0.5), plan="")] * 2
    before = policy.log_prob(obs, action).detach()
    params = [p for p in policy.model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-2)
    for _ in range(5):
        opt.zero_grad()
        (-policy.log_prob(obs, action).sum()).backward()
        opt.step()
    after = policy.log_prob(obs, action).detach()
    assert bool((after > before + 0.5).all())  # the adapters learnt the action
    for n, p in policy.model.named_parameters():
        if n in frozen:
            assert torch.equal(p.detach(), frozen[n]), n
    out = policy.save(tmp_path / "ckpt", metadata={"round": 1})
    assert is_vlm_checkpoint(out) and (out / "adapter_model.safetensors").is_file()
    assert not list(out.glob("*.bin")) and not (out / "model.safetensors").exists()
    loaded = load_vlm_policy(out)
    torch.testing.assert_close(loaded.log_prob(obs, action).detach(), after, atol=1e-5, rtol=0)
    assert base_digest(base) in (out / VLM_FILE).read_text()
    # build_policy recognises the checkpoint whatever agent.model says
    assert isinstance(build_policy(AgentConfig(), checkpoint_dir=out), VLMPolicy)


def test_adapters_refuse_another_base(base: Path, tmp_path) -> None:
    out = new_vlm_policy(base, rank=4, alpha=8).save(tmp_path / "ckpt")
    other = tmp_path / "other"
    shutil.copytree(base, other)
    write_tiny_vlm(other, seed=1)  # same class and shapes, other weights
    with pytest.raises(VLMCheckpointError, match="digest"):
        load_vlm_policy(out, base_dir=other)
    with pytest.raises(VLMCheckpointError, match=r"no distrl_vlm\.json"):
        load_vlm_policy(base)
    with pytest.raises(VLMCheckpointError, match=r"config\.json"):
        base_digest(tmp_path / "nothing")
    with pytest.raises(ValueError, match="screenshot"):
        new_vlm_policy(base).act([Observation("p", np.zeros(8, np.float16))])


def test_config_needs_a_base_directory_for_the_vlm() -> None:
    with pytest.raises(ConfigError, match="vlm_base_dir"):
        config_from_dict({"agent": {"model": "vlm"}})


@pytest.mark.parametrize("variant", ["grpo", "gigpo"])
def test_group_relative_updates_move_the_adapters_toward_the_better_attempt(
    base: Path, variant: str
) -> None:
    """One goal, two attempts from the same screen with the VLM's own (on-policy) actions: the
    rewarded tap gains probability over the other (the two share all but their digits, so the
    shared tokens' advantages cancel and the margin is what moves)."""
    policy = new_vlm_policy(base, rank=4, alpha=8, temperature=1.0)
    png = screen((10, 120, 200))
    good, bad = format_action(tap(0.25, 0.5), plan=""), format_action(tap(0.75, 0.5), plan="")
    obs = [Observation(format_prompt("Open the clock"), np.zeros(1408, np.float16), png)] * 2
    with torch.no_grad():
        mu = policy.log_prob(obs, [good, bad]).tolist()
    t0 = dt.datetime(2026, 11, 27, tzinfo=dt.UTC)
    rows = []
    for tid, action, reward, lp in (("a", good, 1.0, mu[0]), ("b", bad, 0.0, mu[1])):
        rows.append({
            "trajectory_id": tid, "step": 0, "round": 1, "task": "Open the clock",
            "task_set": "general", "split": "train", "device": "emulator-5554",
            "policy_version": 0, "prompt": obs[0].prompt, "action": action,
            "action_type": "DUAL_POINT", "invalid": False, "screenshot_png": png,
            "final_screenshot_png": png, "image_features": np.zeros(1408),
            "final_image_features": np.zeros(1408), "behavior_log_prob": lp,
            "reward": reward, "penalty": 0.0, "done": True, "mc_return": reward,
            "trajectory_reward": reward, "evaluator": "oracle", "label_status": "labeled",
            "started_at": t0, "ended_at": t0, "state_key": "S0",
        })  # fmt: skip
    replay = ReplayBuffer(10, seed=0)
    replay.extend(table_from_rows(rows, 1408))
    algo = GroupRelative(policy, variant=variant)
    assert algo.prepare_round(replay)["train/groups_with_signal"] == 1.0
    params = [p for p in policy.model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=5e-3)
    for _ in range(3):
        out = algo.loss(algo.sample(replay, 2, np.random.default_rng(0)))
        opt.zero_grad()
        out.loss.backward()
        opt.step()
    with torch.no_grad():
        after = policy.log_prob(obs, [good, bad]).tolist()
    assert after[0] - after[1] > mu[0] - mu[1] + 0.1
