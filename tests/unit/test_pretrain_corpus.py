"""A pretraining corpus is reused only under the settings that recorded it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distrl_tasks.config import Config
from distrl_tasks.stages.pretrain import RECORDED_UNDER, check_recorded_under, corpus_settings


def test_corpus_settings_name_the_world_mistakes_and_episodes() -> None:
    cfg = Config()
    train = corpus_settings(cfg, heldout=False)
    assert train == {
        "dynamics": "live",
        "mistake_rate": 0.2,
        "episodes_per_device": {"general": 200, "webshop": 60},
    }
    assert corpus_settings(cfg, heldout=True) == {
        "dynamics": "live",
        "mistake_rate": 0.0,
        "episodes_per_device": 16,
    }


def test_a_fresh_corpus_is_noted_and_the_same_settings_reuse_it(tmp_path: Path) -> None:
    demos = tmp_path / "demos"
    settings = {"dynamics": "live", "mistake_rate": 0.2, "episodes_per_device": {"general": 2}}
    check_recorded_under(demos, settings)
    assert json.loads((demos / RECORDED_UNDER).read_text()) == settings
    (demos / "general").mkdir()
    (demos / "general" / "r000000-w00-emulator-5554.parquet").write_bytes(b"shard")
    check_recorded_under(demos, dict(settings))  # the same settings: reused, no error


def test_a_corpus_recorded_under_other_settings_is_refused(tmp_path: Path) -> None:
    demos = tmp_path / "demos"
    check_recorded_under(demos, {"dynamics": "static", "mistake_rate": 0.2})
    with pytest.raises(ValueError) as err:
        check_recorded_under(demos, {"dynamics": "live", "mistake_rate": 0.2})
    message = str(err.value)
    assert "dynamics 'static' there, 'live' asked" in message and str(demos) in message
    assert "mistake_rate" not in message  # only what differs is named


def test_a_corpus_recorded_before_the_note_is_reused_and_not_noted(tmp_path: Path) -> None:
    demos = tmp_path / "demos" / "general"
    demos.mkdir(parents=True)
    (demos / "r000000-w00-emulator-5554.parquet").write_bytes(b"shard")
    check_recorded_under(tmp_path / "demos", {"dynamics": "live"})
    # nothing says what recorded it, so nothing is claimed about it either
    assert not (tmp_path / "demos" / RECORDED_UNDER).exists()
