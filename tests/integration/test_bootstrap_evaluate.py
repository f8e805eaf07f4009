"""The evaluate and bootstrap stages on the simulator, and the SFT loop on a tiny constructed set.

Budgets are tiny (2-step horizons, a handful of tasks, a few optimizer steps): these tests check
the protocol and the plumbing; benchmarks/sft.py measures how well the SFT policy plays.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

from distrl_tasks.agents.image_encoders import SmallImageEncoder
from distrl_tasks.agents.policy import build_policy
from distrl_tasks.agents.shipped_base import SHIPPED_DIR
from distrl_tasks.algorithms.sft import Demo, SFTSettings, demos_from_rows, train_sft
from distrl_tasks.config import Config
from distrl_tasks.protocol.actions import parse_action
from distrl_tasks.runners.evaluation import EpisodeResult, evaluation_plan, summarize
from distrl_tasks.stages import bootstrap, evaluate
from distrl_tasks.tasks.taskset import goal_file
from distrl_tasks.tracking.registry import BEHAVIOR, CHAMPION, ModelRegistry
from distrl_tasks.tracking.versions import eval_tasks_key

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:.*``noload`` loader strategy is deprecated"),
]
torch.set_num_threads(1)
DIM = SmallImageEncoder.dim


def small_cfg(devices: int = 2, horizon: int = 2) -> Config:
    cfg = Config()
    return dataclasses.replace(
        cfg,
        orchestration=dataclasses.replace(
            cfg.orchestration, devices_per_worker=devices, eval_devices=devices
        ),
        env=dataclasses.replace(cfg.env, horizon_general=horizon),
    )


def file_lines(task_set: str, split: str) -> list[str]:
    text = goal_file(task_set, split).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def test_test_split_takes_the_first_n_goals_in_file_order_duplicates_kept() -> None:
    lines = file_lines("general", "test")
    chosen = evaluate.select_goals(lines, "test", 96)
    assert chosen == lines[:96]
    shop = file_lines("webshop", "test")
    shop_chosen = evaluate.select_goals(shop, "test", 96)
    assert shop_chosen == shop[:96] and len(set(shop_chosen)) == 67  # repeats kept, as listed
    sample = evaluate.select_goals(lines, "train", 10, seed=3)
    assert sample == evaluate.select_goals(lines, "train", 10, seed=3)
    assert sample != evaluate.select_goals(lines, "train", 10, seed=4)
    with pytest.raises(ValueError, match="split"):
        evaluate.select_goals(lines, "dev", 3)
    with pytest.raises(ValueError, match=">= 1"):
        evaluate.select_goals(lines, "test", 0)


def test_evaluation_plan_runs_each_task_once_round_robin() -> None:
    plan = evaluation_plan(["a", "b", "c", "d", "e"], ["s1", "s2"])
    assert plan == {"s1": [0, 2, 4], "s2": [1, 3]}
    with pytest.raises(ValueError, match="device"):
        evaluation_plan(["a"], [])


def test_summary_counts_invalid_actions_among_all_steps() -> None:
    def ep(i: int, family: str, success: bool, steps: int, invalid: int) -> EpisodeResult:
        return EpisodeResult(i, f"goal {i}", family, "d", success, steps, "horizon", "", invalid)

    s = summarize([ep(0, "web", True, 4, 1), ep(1, "web", False, 10, 9), ep(2, "app", False, 6, 0)])
    assert s["success_rate"] == pytest.approx(1 / 3) and s["mean_steps"] == pytest.approx(20 / 3)
    assert s["invalid_rate"] == pytest.approx(10 / 20)  # per step, not per episode
    assert s["per_family"]["web"]["invalid_rate"] == pytest.approx(10 / 14)
    assert s["per_family"]["app"]["invalid_rate"] == 0.0


def test_evaluate_stage_plays_the_first_n_test_goals_once_and_is_idempotent(tmp_path) -> None:
    cfg = small_cfg(devices=2, horizon=1)  # one step per task: the protocol, not the policy
    # free decoding, so that the untrained policy's invalid output is counted (constrained, it
    # would write valid if random actions)
    cfg = dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, constrained_decoding=False))
    ckpt = build_policy(cfg.agent, seed=0).save(tmp_path / "ckpt")
    torch.set_num_threads(2)  # what an Airflow task starts with on 2 cores
    try:
        m = evaluate.run(cfg, round=4, checkpoint_dir=ckpt, workdir=tmp_path, n_tasks=3)
        # the configured threads while it played, the caller's again after
        assert m["torch_threads"] == cfg.orchestration.threads == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)
    expected = file_lines("general", "test")[:3]
    assert m["episodes"] == 3 and m["tasks_key"] == eval_tasks_key(expected)
    assert m["round"] == 4 and m["decoding"] == "greedy" and not m["reused"]
    assert m["success_rate"] == 0.0 and m["mean_steps"] == 1.0 and m["errors"] == 0
    # an untrained policy writes no parseable action: every step counts as invalid
    assert m["invalid_rate"] == 1.0
    assert sum(f["episodes"] for f in m["per_family"].values()) == 3
    episodes = json.loads(Path(m["episodes_file"]).read_text())
    assert [e["goal"] for e in episodes] == expected  # result order = file order
    assert [e["device"] for e in episodes] == ["emulator-5554", "emulator-5556", "emulator-5554"]
    assert Path(tmp_path, "runs", "eval").is_dir()
    again = evaluate.run(cfg, round=4, checkpoint_dir=ckpt, workdir=tmp_path, n_tasks=3)
    assert again["reused"] and {**again, "reused": False} == m
    # the same weights with the pointer on act otherwise: not the cached result
    pointing = dataclasses.replace(
        cfg, agent=dataclasses.replace(cfg.agent, pointer=True, constrained_decoding=True)
    )
    other = evaluate.run(pointing, round=4, checkpoint_dir=ckpt, workdir=tmp_path, n_tasks=3)
    assert not other["reused"]
    # nor on another seed's live world, which draws other dialogs and moved targets
    assert m["dynamics"] == "live" and m["world"] == "live-s0"
    seeded = dataclasses.replace(cfg, sim=dataclasses.replace(cfg.sim, seed=1))
    elsewhere = evaluate.run(seeded, round=4, checkpoint_dir=ckpt, workdir=tmp_path, n_tasks=3)
    assert not elsewhere["reused"] and elsewhere["world"] == "live-s1"
    assert evaluate.run(seeded, round=4, checkpoint_dir=ckpt, workdir=tmp_path, n_tasks=3)["reused"]


def test_more_evaluation_devices_change_no_verdict(tmp_path) -> None:
    # orchestration.eval_devices only spreads the tasks wider (bigger policy batches); every
    # episode starts from a reset device, so each task's outcome is the same on 1 or 4 devices
    cfg = small_cfg(devices=1, horizon=2)
    ckpt = build_policy(cfg.agent, seed=0).save(tmp_path / "ckpt")
    outcomes = {}
    for n in (1, 4):
        wide = dataclasses.replace(
            cfg, orchestration=dataclasses.replace(cfg.orchestration, eval_devices=n)
        )
        m = evaluate.run(wide, round=0, checkpoint_dir=ckpt, workdir=tmp_path / str(n), n_tasks=4)
        episodes = json.loads(Path(m["episodes_file"]).read_text())
        assert len({e["device"] for e in episodes}) == n
        outcomes[n] = [(e["goal"], e["success"], e["steps"], e["reason"]) for e in episodes]
    assert outcomes[1] == outcomes[4]


def constructed_demos(history: int = 1) -> list[Demo]:
    """Three screens with different expert actions (a tap, typing, a key press)."""
    rows = _rows_of_the_constructed_run()
    failed = {**rows[0], "trajectory_id": "t1", "reward": 0.0}
    return demos_from_rows([*rows, failed], history=history)


def test_demos_are_rewritten_mistakes_dropped_failures_skipped() -> None:
    demos = constructed_demos()
    assert [d.action_type for d in demos] == ["DUAL_POINT", "TYPE", "PRESS_ENTER"]
    assert demos[0].prompt == "Previous Actions:  Goal: What's the news?"
    assert demos[0].target.startswith("Action Plan: [DUAL_POINT] ; Action Decision: ")
    # The prompt shows the (rewritten) previous action, mistakes included: they are states.
    assert demos[2].prompt.startswith("Previous Actions: Action Plan: [PRESS_BACK] ;")
    with pytest.raises(ValueError, match="missing columns"):
        demos_from_rows([{"trajectory_id": "x"}])


def test_unfinished_expert_runs_are_kept_only_when_asked_and_false_claims_never() -> None:
    """A run that hit the step budget is imitated with ``unfinished`` (its mistake still not);
    one that declared success without a reward never is."""
    done = constructed_demos()
    rows = []
    for demo_row in _rows_of_the_constructed_run():
        rows.append({**demo_row, "trajectory_id": "out-of-steps", "reward": 0.0})
    claim = {
        **rows[0],
        "trajectory_id": "false-claim",
        "step": 1,
        "action": 'Action Plan: [task complete] ; Action Decision: "action_type": '
        '"STATUS_TASK_COMPLETE", "touch_point": "[-1.0000, -1.0000]", "lift_point": '
        '"[-1.0000, -1.0000]", "typed_text": ""',
    }
    claimed = [{**rows[0], "trajectory_id": "false-claim"}, claim]
    assert demos_from_rows(rows + claimed) == []
    kept = demos_from_rows(rows + claimed, unfinished=True)
    assert [d.target for d in kept] == [d.target for d in done]  # the mistake still dropped
    assert demos_from_rows(rows, successes_only=False) == kept


def _rows_of_the_constructed_run() -> list[dict]:
    rng = np.random.default_rng(0)
    actions = [
        'Action Plan: [open Chrome] ; Action Decision: "action_type": "DUAL_POINT", '
        '"touch_point": "[0.7933, 0.5602]", "lift_point": "[0.7933, 0.5602]", "typed_text": ""',
        'Action Plan: [type] ; Action Decision: "action_type": "TYPE", "touch_point": '
        '"[-1.0000, -1.0000]", "lift_point": "[-1.0000, -1.0000]", "typed_text": "news"',
        'Action Plan: [mistake: back] ; Action Decision: "action_type": "PRESS_BACK", '
        '"touch_point": "[-1.0000, -1.0000]", "lift_point": "[-1.0000, -1.0000]", '
        '"typed_text": ""',
        'Action Plan: [submit] ; Action Decision: "action_type": "PRESS_ENTER", "touch_point": '
        '"[-1.0000, -1.0000]", "lift_point": "[-1.0000, -1.0000]", "typed_text": ""',
    ]
    return [
        {
            "trajectory_id": "t0",
            "step": step,
            "task": "What's the news?",
            "action": action,
            "reward": 1.0 if step == len(actions) - 1 else 0.0,
            "image_features": rng.normal(size=DIM).astype(np.float16),
        }
        for step, action in enumerate(actions)
    ]


def test_demo_prompts_show_as_many_previous_actions_as_asked() -> None:
    one, two = constructed_demos(), constructed_demos(history=2)
    assert [d.target for d in one] == [d.target for d in two]
    # The third kept step (ENTER) follows TAP, TYPE and the (not imitated) BACK mistake.
    prev_type, prev_back = two[2].prompt.split(" Goal: ")[0].split("Action Plan: ")[1:]
    assert prev_type.startswith("[TYPE]") and prev_back.startswith("[PRESS_BACK]")
    assert one[2].prompt.count("Action Plan:") == 1


def key_demos() -> list[Demo]:
    """Three screens, each answered by a different key action (the decision sits in the plan).

    Each comes after a previous action (the episode opens with a BACK that is not used): a
    from-scratch policy's copy head reads the action keys off that history. On a screen with no
    history the policy was left at an even split between ``point`` and ``text`` after
    ``lift_`` and ``typed_`` (measured on 2026-11-25: log-prob -ln 4 at 150 and at 300 steps),
    so the greedy decoding of that screen depended on how the CPU rounded a tie.
    """
    rng = np.random.default_rng(1)
    kinds = ("PRESS_BACK", "PRESS_HOME", "PRESS_ENTER", "STATUS_TASK_COMPLETE")
    rows = [
        {
            "trajectory_id": "k",
            "step": i,
            "task": "Open the clock",
            "action": f'Action Plan: [x] ; Action Decision: "action_type": "{kind}"',
            "reward": float(i == len(kinds) - 1),
            "image_features": rng.normal(size=DIM).astype(np.float16),
        }
        for i, kind in enumerate(kinds)
    ]
    return demos_from_rows(rows)[1:]


def test_sft_loss_decreases_and_greedy_actions_match_the_expert_types(tmp_path) -> None:
    demos = key_demos()
    assert [d.action_type for d in demos] == ["PRESS_HOME", "PRESS_ENTER", "STATUS_TASK_COMPLETE"]
    fresh = dataclasses.replace(
        Config(), agent=dataclasses.replace(Config().agent, base_checkpoint="")
    )
    policy = bootstrap.initial_policy(fresh, demos, "sentencepiece", tmp_path, seed=0)
    assert policy.tokenizer.kind == "sentencepiece" and (tmp_path / "tokenizer").is_dir()
    # whole actions fit: 128 subword tokens (the configured budget), 256 bytes
    assert evaluate.decode_budget(policy) == Config().agent.max_new_tokens == 128
    policy.max_new_tokens = 32
    assert evaluate.decode_budget(policy) == 128
    policy.max_new_tokens = 128
    assert evaluate.decode_budget(build_policy(Config().agent)) == 256
    for d in demos:  # the fitted vocabulary spells every target exactly
        assert policy.tokenizer.decode(policy.tokenizer.encode(d.target)) == d.target
    untrained, _ = policy.act([d.observation() for d in demos], greedy=True)
    assert all(parse_action(t).invalid for t in untrained)
    # 150 steps fit the three targets decisively (log-prob ~ -0.03 each); at 60 steps the fit
    # was marginal and the greedy outputs depended on the CPU's float rounding (Intel vs AMD)
    settings = SFTSettings(steps=150, batch_size=3, lr=1e-3, warmup_steps=5, lr_floor=1.0)
    result = train_sft(policy, demos, settings, log_every=10)
    assert result.steps == 150 and result.examples == 450 and len(result.losses) == 15
    assert result.losses[-1] < 0.25 * result.losses[0]
    texts, _ = policy.act([d.observation() for d in demos], greedy=True)
    assert [parse_action(t).action_type.value for t in texts] == [d.action_type for d in demos]
    with pytest.raises(ValueError, match="batch_size"):
        SFTSettings(batch_size=0)


def test_bootstrap_starts_from_the_shipped_base_by_default(tmp_path) -> None:
    policy = bootstrap.initial_policy(Config(), key_demos(), "sentencepiece", tmp_path, seed=0)
    assert not (tmp_path / "tokenizer").exists()  # the base's own vocabulary, nothing fitted
    assert policy.model.copy_match > 0
    assert policy.tokenizer.path.parent == SHIPPED_DIR


@pytest.mark.parametrize(("evaluator", "unfinished"), [("oracle", False), ("gemini", True)])
def test_bootstrap_registers_behavior_and_is_skipped_on_rerun(
    tmp_path, evaluator, unfinished
) -> None:
    cfg = small_cfg(devices=2, horizon=5)  # room for the expert's web searches (3 steps)
    # with Gemini configured the demos are still the simulator oracle's to label (no key is
    # needed, no request is made): bootstrap.DEMO_LABELS
    cfg = dataclasses.replace(cfg, evaluator=dataclasses.replace(cfg.evaluator, kind=evaluator))
    sft_cfg = dataclasses.replace(cfg.agent.sft, unfinished_demos=unfinished)
    cfg = dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, sft=sft_cfg))
    m = bootstrap.run(
        cfg,
        workdir=tmp_path,
        episodes_per_device=2,
        sft=SFTSettings(steps=2, batch_size=2, warmup_steps=0),
        eval_tasks=2,
        threads=1,
    )
    assert not m["skipped"] and m["sft_steps"] == 2 and m["demos"] >= 1
    assert m["demo_labels"] == "oracle" and m["unfinished_demos"] is unfinished
    assert set(m["sft_success"]) == {"test"} and 0.0 <= m["sft_success"]["test"] <= 1.0
    registry = ModelRegistry.from_config(cfg, root=tmp_path)
    behavior = registry.alias_version(BEHAVIOR)
    assert behavior is not None and behavior.version == m["version"]
    assert behavior.round == 0 and behavior.algorithm == "sft"
    assert registry.alias_version(CHAMPION).version == m["version"]
    assert (Path(m["policy_dir"]) / "config.json").is_file()
    again = bootstrap.run(cfg, workdir=tmp_path, episodes_per_device=1, eval_tasks=2)
    assert again["skipped"] and again["version"] == m["version"]
    assert len(registry.compare_versions()) == 1
