"""The shipped base policy: it loads, its card matches today's model config, bad bases fail."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from distrl_tasks.agents.autoui import tiny_t5_config
from distrl_tasks.agents.checkpoint import CheckpointError, load_checkpoint
from distrl_tasks.agents.shipped_base import (
    CARD_FILE,
    REBUILD,
    SHIPPED_DIR,
    BaseCheckpointError,
    card_model_config,
    load_base,
    recorded_model_config,
)
from distrl_tasks.config import Config, ConfigError, load_config
from distrl_tasks.stages import bootstrap


def test_shipped_base_loads_and_its_card_matches_the_code() -> None:
    loaded = load_base("shipped")
    assert loaded is not None
    model, tokenizer, card = loaded
    today = card_model_config(tiny_t5_config(tokenizer.size))
    recorded = recorded_model_config(card)
    assert {k: v for k, v in recorded.items() if k != "pointer"} == {
        k: v for k, v in today.items() if k != "pointer"
    }
    assert card_model_config(model.config) == recorded
    # the shipped base carries the tap-target pointer's head, fitted onto its weights
    assert recorded["pointer"] is True and model.pointer_head is not None
    assert card["pointer"]["corpus_sha256"] == card["corpus"]["sha256"]  # fitted on its corpus
    assert model.copy_match > 0 and tokenizer.kind == "sentencepiece"
    for key in ("command", "corpus", "seed", "training", "skills", "wall_s"):
        assert key in card, key
    assert len(card["corpus"]["sha256"]) == 64
    size = sum(p.stat().st_size for p in SHIPPED_DIR.iterdir() if p.is_file())
    assert size <= 30 * 2**20


def test_no_base_means_none() -> None:
    assert load_base("") is None


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "base"
    shutil.copytree(SHIPPED_DIR, out)
    return out


def test_missing_base_names_the_directory_and_the_rebuild(tmp_path: Path) -> None:
    with pytest.raises(BaseCheckpointError, match="does not exist") as err:
        load_base(str(tmp_path / "nowhere"))
    assert str(tmp_path / "nowhere") in str(err.value) and REBUILD in str(err.value)


def test_corrupt_card_and_weights_are_refused(tmp_path: Path) -> None:
    base = _copy(tmp_path)
    (base / CARD_FILE).write_text("{not json")
    with pytest.raises(BaseCheckpointError, match="unreadable") as err:
        load_base(str(base))
    assert str(base / CARD_FILE) in str(err.value) and REBUILD in str(err.value)
    shutil.copy(SHIPPED_DIR / CARD_FILE, base / CARD_FILE)
    weights = base / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(BaseCheckpointError, match="cannot be loaded") as err:
        load_base(str(base))
    assert REBUILD in str(err.value)


def test_card_for_another_model_config_is_refused(tmp_path: Path) -> None:
    base = _copy(tmp_path)
    card = json.loads((base / CARD_FILE).read_text())
    card["model_config"]["d_model"] = 512
    (base / CARD_FILE).write_text(json.dumps(card))
    with pytest.raises(BaseCheckpointError, match="d_model: card 512") as err:
        load_base(str(base))
    assert REBUILD in str(err.value)


def test_a_checkpoint_saved_with_the_retired_copy_word_ends_is_refused(tmp_path: Path) -> None:
    # the shipped base's files still say copy_word_ends: false (written before the retirement):
    # off, the key is harmless and the base loads as it always did
    assert json.loads((SHIPPED_DIR / "config.json").read_text())["copy_word_ends"] is False
    base = _copy(tmp_path)
    config = json.loads((base / "config.json").read_text())
    config["copy_word_ends"] = True
    (base / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="copy_word_ends is on") as err:
        load_checkpoint(base)
    assert "retired" in str(err.value) and str(base / "config.json") in str(err.value)
    with pytest.raises(BaseCheckpointError, match="retired") as err:
        load_base(str(base))  # the card still says off: the weights' config is refused
    assert REBUILD in str(err.value)
    card = json.loads((base / CARD_FILE).read_text())
    card["model_config"]["copy_word_ends"] = True
    (base / CARD_FILE).write_text(json.dumps(card))
    with pytest.raises(BaseCheckpointError, match="copy_word_ends is on") as err:
        load_base(str(base))  # the card is checked first and names itself
    assert str(base / CARD_FILE) in str(err.value) and REBUILD in str(err.value)


def test_bootstrap_with_a_missing_base_stops_before_writing(tmp_path: Path) -> None:
    cfg = Config()
    cfg = dataclasses.replace(
        cfg, agent=dataclasses.replace(cfg.agent, base_checkpoint=str(tmp_path / "gone"))
    )
    with pytest.raises(BaseCheckpointError, match="gone"):
        bootstrap.run(cfg, workdir=tmp_path)
    assert not (tmp_path / "runs" / "bootstrap").exists()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("agent.pretrain.goals", "0"),
        ("agent.pretrain.mistake_rate", "1.0"),
        ("agent.pretrain.steps", "0"),
        ("agent.pretrain.time_budget_s", "-1"),
    ],
)
def test_bad_pretrain_settings_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(None, [f"{key}={value}"])
