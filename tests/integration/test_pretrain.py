"""`distrl pretrain` end to end on a small corpus: goal files, demos, checkpoint, card, rerun."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from distrl_tasks.agents.base import CARD_FILE, load_base
from distrl_tasks.config import Config
from distrl_tasks.stages import pretrain
from distrl_tasks.tasks.generators import HeldOut, normalise


def small_cfg() -> Config:
    cfg = Config()
    return dataclasses.replace(
        cfg,
        orchestration=dataclasses.replace(cfg.orchestration, devices_per_worker=2, eval_devices=2),
        agent=dataclasses.replace(
            cfg.agent,
            pretrain_goals=30,
            pretrain_webshop_goals=10,
            pretrain_heldout_goals=2,
            pretrain_episodes_per_device=2,
            pretrain_webshop_episodes_per_device=1,
            pretrain_steps=3,
            pretrain_batch_size=2,
            pretrain_threads=1,
        ),
    )


def test_pretrain_writes_a_loadable_base_with_its_card(tmp_path: Path) -> None:
    cfg = small_cfg()
    out = tmp_path / "base"
    card = pretrain.run(cfg, workdir=tmp_path, out=out, seed=1, command="distrl pretrain test")
    goals = tmp_path / "runs" / "pretrain" / "goals"
    train = (goals / "general_train.txt").read_text().splitlines()
    held = (goals / "general_test.txt").read_text().splitlines()
    assert len(train) == 30 and len(held) == 2
    tests = HeldOut()
    assert not any(g in tests for g in train + held)
    assert not {normalise(g) for g in held} & {normalise(g) for g in train}
    assert card["command"] == "distrl pretrain test" and card["seed"] == 1
    assert card["training"]["steps"] == 3 and card["corpus"]["examples"] >= 1
    assert set(card["skills"]) == {"heldout_general", "heldout_webshop"}
    assert 0.0 <= card["skills"]["heldout_general"]["success_rate"] <= 1.0
    assert json.loads((out / CARD_FILE).read_text())["corpus"] == card["corpus"]
    assert not (tmp_path / "base.tmp").exists()
    loaded = load_base(str(out))
    assert loaded is not None and loaded[2]["corpus"]["sha256"] == card["corpus"]["sha256"]
    # rerun: goal files and demonstrations are reused, so the corpus is the same
    again = pretrain.run(cfg, workdir=tmp_path, out=out, seed=1)
    assert again["corpus"]["sha256"] == card["corpus"]["sha256"]
