"""A round trained by RL with the VLM policy: bootstrap, collect, label, train, register, evaluate.

The few-MB Qwen2-VL of ``distrl_tasks.agents.vlm_tiny`` (random weights) plays every part a real
Qwen2-VL / Qwen2.5-VL checkpoint would: it clones the expert's demonstrations from the
screenshots, acts on the simulator through the inference server, is trained with LoRA, and its
adapters go to the registry and back into an evaluation.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from distrl_tasks.agents.policy import build_policy
from distrl_tasks.agents.vlm import VLM_FILE, VLMPolicy, base_digest
from distrl_tasks.agents.vlm_tiny import write_tiny_vlm
from distrl_tasks.config import config_from_dict
from distrl_tasks.data.shards import read_shards
from distrl_tasks.stages import bootstrap, collect, common, evaluate, label, register, train

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"),
    pytest.mark.filterwarnings("ignore:.*``noload`` loader strategy is deprecated"),
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_vlm(tmp_path_factory.mktemp("vlm") / "base")


# The random-weight VLM never succeeds, so Filtered BC, which clones successes, learns from a
# round the expert collected (50% mistakes). The group-relative methods need attempts of the
# VLM's own that differ in return, which a random model does not produce: their update of the
# adapters is tested on constructed groups (tests/unit/test_vlm_policy.py).
@pytest.mark.parametrize(("algorithm", "actor"), [("distrl", None), ("filtered_bc", "scripted")])
def test_a_vlm_round_from_bootstrap_to_registered_evaluated_adapters(
    tmp_path: Path, base: Path, algorithm: str, actor: str | None
) -> None:
    torch.set_num_threads(1)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    cfg = config_from_dict(
        {
            "sim": {"port": 0, "expert_mistake_rate": 0.5},
            "env": {"horizon_general": 5},
            "agent": {
                "model": "vlm",
                "vlm_base_dir": str(base),
                "vlm_lora_rank": 4,
                "vlm_lora_alpha": 8,
                "max_new_tokens": 24,
                "sft": {
                    "episodes_per_device": 2,
                    "mistake_rate": 0.0,
                    "steps": 2,
                    "batch_size": 2,
                },
            },
            "algorithm": {
                "name": algorithm,
                "mode": "online",
                "actor_epochs": 1,
                "critic_epochs": 1,
                "batch_size": 2,
                "critic_prefit": {"enabled": False},
                "distrl": {"windows": 2, "top_p": 1.0},
                "filter_top_fraction": 1.0,
                "group": {"size": 2},
            },
            "orchestration": {"devices_per_worker": 2, "episodes_per_device": 4, "eval_tasks": 2},
        }
    )
    boot = bootstrap.run(cfg, workdir=tmp_path, eval_tasks=2, threads=1)
    assert boot["tokenizer"] == "vlm" and (Path(boot["policy_dir"]) / VLM_FILE).is_file()

    request = collect.CollectRequest(round=1, policy=actor, progress=False)
    c = collect.run(cfg, request, workdir=tmp_path)
    assert c["trajectories"] == 8
    rows = read_shards(common.raw_dir(cfg, tmp_path)).to_pylist()
    assert all(r["screenshot_png"] for r in rows) and all(r["state_key"] for r in rows)
    lab = label.run(cfg, round=1, workdir=tmp_path)
    assert lab["labeled"] == 8

    tr = train.run(cfg, round=1, workdir=tmp_path, data_version="")
    assert tr["policy_version"] == 1 and tr["steps"] >= 1
    ckpt = Path(tr["checkpoint_dir"])
    info = json.loads((ckpt / VLM_FILE).read_text())
    assert info["base_digest"] == base_digest(base) and info["metadata"]["round"] == 1
    trained = build_policy(cfg.agent, checkpoint_dir=ckpt)
    assert isinstance(trained, VLMPolicy)
    # the adapters moved (or, for a filter that kept nothing to clone, the loss says why)
    start = build_policy(cfg.agent, checkpoint_dir=boot["policy_dir"])
    moved = any(
        not torch.equal(a, b)
        for (n, a), (_, b) in zip(
            trained.model.named_parameters(), start.model.named_parameters(), strict=True
        )
        if "lora_" in n
    )
    assert moved, tr["metrics"]

    res = evaluate.run(cfg, round=1, checkpoint_dir=ckpt, workdir=tmp_path, n_tasks=2)
    assert res["episodes"] == 2 and 0.0 <= res["success_rate"] <= 1.0
    reg = register.run(
        cfg,
        round=1,
        checkpoint_dir=str(ckpt),
        data_version="",
        evaluation={"success_rate": res["success_rate"], "tasks_key": res["tasks_key"]},
        workdir=tmp_path,
    )
    registry = common.registry(cfg, tmp_path)
    with common.checkout(cfg, tmp_path, registry, reg["version"]) as path:
        assert (Path(path) / "adapter_model.safetensors").is_file()
        assert isinstance(build_policy(cfg.agent, checkpoint_dir=path), VLMPolicy)
