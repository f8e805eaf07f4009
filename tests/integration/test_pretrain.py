"""`distrl pretrain` end to end on a small corpus: goal files, demos, checkpoint, card, rerun."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from distrl_tasks.agents.checkpoint import save_checkpoint
from distrl_tasks.agents.shipped_base import CARD_FILE, load_base
from distrl_tasks.config import Config
from distrl_tasks.data.shards import read_shards
from distrl_tasks.protocol.files import TEMP_MARKER
from distrl_tasks.stages import pretrain
from distrl_tasks.tasks.generators import HeldOut, normalise


def small_cfg() -> Config:
    cfg = Config()
    return dataclasses.replace(
        cfg,
        orchestration=dataclasses.replace(cfg.orchestration, devices_per_worker=2, eval_devices=2),
        agent=dataclasses.replace(
            cfg.agent,
            pretrain=dataclasses.replace(
                cfg.agent.pretrain,
                goals=30,
                webshop_goals=10,
                heldout_per_family=1,
                heldout_episodes_per_device=1,
                eval_every=2,
                episodes_per_device=2,
                webshop_episodes_per_device=1,
                steps=3,
                batch_size=2,
                threads=1,
            ),
        ),
    )


def test_pretrain_writes_a_loadable_base_with_its_card(tmp_path: Path) -> None:
    cfg = small_cfg()
    out = tmp_path / "base"
    card = pretrain.run(cfg, workdir=tmp_path, out=out, seed=1, command="distrl pretrain test")
    goals = tmp_path / "runs" / "pretrain" / "goals"
    train = (goals / "general_train.txt").read_text().splitlines()
    held = (goals / "general_test.txt").read_text().splitlines()
    assert len(train) == 30 and len(held) == 15  # one held-out goal of each General family
    tests = HeldOut(match_tasks=False)
    assert not any(g in tests for g in train + held)
    assert not {normalise(g) for g in held} & {normalise(g) for g in train}
    assert card["corpus"]["goals"]["general"]["families"]["web_search"]["train"] == 6
    assert card["command"] == "distrl pretrain test" and card["seed"] == 1
    assert card["training"]["steps"] == 3 and card["corpus"]["examples"] >= 1
    assert card["training"]["heldout_loss"][0][0] == 2  # measured every 2 steps
    assert card["training"]["stopped"] == "steps"  # 3 steps are too few to plateau
    assert set(card["skills"]) == {"heldout_general", "heldout_webshop"}
    general = card["skills"]["heldout_general"]
    assert 0.0 <= general["success_rate"] <= 1.0
    assert sum(f["episodes"] for f in general["per_family"].values()) == general["episodes"]
    assert len(general["per_family"]) == 15
    assert json.loads((out / CARD_FILE).read_text())["corpus"] == card["corpus"]
    assert not list(out.parent.glob(f".{out.name}{TEMP_MARKER}*"))  # no scratch left beside it
    loaded = load_base(str(out))
    assert loaded is not None and loaded[2]["corpus"]["sha256"] == card["corpus"]["sha256"]
    # the retired copy_word_ends is neither recorded nor saved: a new base reads word starts one way
    assert "copy_word_ends" not in card["model_config"]
    assert "copy_word_ends" not in json.loads((out / "config.json").read_text())
    # rerun: goal files and demonstrations are reused, so the corpus is the same
    again = pretrain.run(cfg, workdir=tmp_path, out=out, seed=1)
    assert again["corpus"]["sha256"] == card["corpus"]["sha256"]


def test_pretrain_with_the_pointer_trains_and_ships_the_head(tmp_path: Path) -> None:
    cfg = small_cfg()
    cfg = dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, pointer=True))
    out = tmp_path / "base"
    card = pretrain.run(cfg, workdir=tmp_path, out=out, seed=1, command="distrl pretrain test")
    assert card["model_config"]["pointer"] is True
    demos = read_shards(tmp_path / "runs" / "pretrain" / "demos" / "general")
    listed = [e for e in demos["elements"].to_pylist() if e]
    assert listed, "the corpus stores the elements each demonstration step offered"
    loaded = load_base(str(out))
    assert loaded is not None and loaded[0].pointer_head is not None
    # the same base loads where the configuration leaves the pointer off (an optional head)
    assert loaded[2]["model_config"]["pointer"] is True
    # the head was fitted after the token model, on the same corpus
    assert card["pointer"]["steps"] == 3 and card["pointer"]["heldout_loss"][0][0] == 2
    assert card["pointer"]["corpus_sha256"] == card["corpus"]["sha256"]


def _headless_shipped_base(directory: Path) -> Path:
    """The shipped base's weights and card without its pointer head (a base that predates it)."""
    model, tokenizer, card = load_base("shipped")  # type: ignore[misc]
    model.pointer_head = None
    model.config.pointer = False
    save_checkpoint(model, tokenizer, directory)
    card["model_config"]["pointer"] = False
    (directory / CARD_FILE).write_text(json.dumps(card))
    return directory


def test_pretrain_onto_fits_the_pointer_and_keeps_the_bases_weights(tmp_path: Path) -> None:
    cfg = small_cfg()  # the pointer is on by default
    headless = _headless_shipped_base(tmp_path / "headless")
    off = dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, pointer=False))
    with pytest.raises(ValueError, match=r"agent\.pointer: true"):
        pretrain.run_onto(off, headless, workdir=tmp_path)
    free = dataclasses.replace(cfg.agent, constrained_decoding=False)  # no grammar to point with
    with pytest.raises(ValueError, match="constrained_decoding"):
        pretrain.run_onto(dataclasses.replace(cfg, agent=free), headless, workdir=tmp_path)
    out = tmp_path / "with-pointer"
    card = pretrain.run_onto(cfg, headless, workdir=tmp_path, out=out, command="onto test")
    base, _, base_card = load_base(str(headless))  # type: ignore[misc]
    assert base.pointer_head is None
    model, _, saved_card = load_base(str(out))  # type: ignore[misc]
    assert model.pointer_head is not None and saved_card["pointer"]["command"] == "onto test"
    assert set(card["skills_without_pointer"]) == set(card["skills"]) == set(base_card["skills"])
    assert card["training"] == base_card["training"] and card["pointer"]["steps"] == 3
    assert set(card["skills"]) == {"heldout_general", "heldout_webshop"}
    weights = model.state_dict()
    for name, value in base.state_dict().items():
        torch.testing.assert_close(weights[name], value, msg=name)
    assert card["pointer"]["replaced_head"] is False
    assert card["pointer"]["corpus_dynamics"] == "live"  # sim.dynamics.bootstrap_profile
    # the corpus there was recorded live: a static fit in the same workdir is refused, not fed it
    still = dataclasses.replace(
        cfg,
        sim=dataclasses.replace(
            cfg.sim, dynamics=dataclasses.replace(cfg.sim.dynamics, bootstrap_profile="static")
        ),
    )
    with pytest.raises(ValueError, match="world 'live' there, 'static' asked"):
        pretrain.run_onto(still, headless, workdir=tmp_path, out=tmp_path / "still")
    assert not (tmp_path / "still").exists()
    # a base that carries a head (this one) gets a new one: the same fit, resumed from its state
    again = pretrain.run_onto(cfg, out, workdir=tmp_path, out=tmp_path / "refit")
    assert again["pointer"]["replaced_head"] is True and again["pointer"]["steps"] == 3
    refit, _, _ = load_base(str(tmp_path / "refit"))  # type: ignore[misc]
    for name, value in model.state_dict().items():
        torch.testing.assert_close(refit.state_dict()[name], value, msg=name)
