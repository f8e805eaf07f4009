"""A finished collect round is reused only under the settings that recorded it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distrl_tasks.config import Config, config_from_dict
from distrl_tasks.stages import collect


def _request(out: Path, **kw) -> collect.CollectRequest:
    fields = {"round": 0, "policy": "scripted", "episodes_per_device": 2, "out_dir": out}
    return collect.CollectRequest(**{**fields, **kw, "progress": False})


def _finished_round(cfg: Config, out: Path, *, noted: bool = True) -> Path:
    """A round's manifest and its one shard, as a finished collect run leaves them."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "r000000-w00-emulator-5554.parquet").write_bytes(b"shard")
    manifest = {"round": 0, "worker": 0, "shards": ["r000000-w00-emulator-5554.parquet"]}
    if noted:
        req = _request(out).resolved(cfg)
        manifest["recorded_under"] = collect.recorded_under(cfg, req)
    path = collect.manifest_path(out, 0, 0)
    path.write_text(json.dumps(manifest))
    return path


def test_the_settings_name_world_expert_episodes_and_goals() -> None:
    cfg = config_from_dict({"sim": {"expert_mistake_rate": 0.2}})
    req = _request(Path("x"), goal_mix="balanced").resolved(cfg)
    assert collect.recorded_under(cfg, req) == {
        "task_set": cfg.env.task_set,
        "split": "train",
        "episodes_per_device": 2,
        "goal_mix": "balanced",
        "policy": "scripted",
        "world": cfg.sim.dynamics.profile,
        "expert_mistake_rate": 0.2,
    }
    behavior = _request(Path("x"), policy=None).resolved(cfg)
    # only the scripted expert makes the configured mistakes
    assert collect.recorded_under(cfg, behavior)["expert_mistake_rate"] is None


def test_the_same_settings_reuse_the_round_without_a_device(tmp_path: Path) -> None:
    cfg = Config()
    _finished_round(cfg, tmp_path)
    again = collect.run(cfg, _request(tmp_path))  # no farm is started: it would take seconds
    assert again["reused"] and again["shards"] == [
        str(tmp_path.resolve() / "r000000-w00-emulator-5554.parquet")
    ]


def test_a_round_recorded_in_another_world_is_refused_naming_what_differs(
    tmp_path: Path,
) -> None:
    static = config_from_dict({"sim": {"dynamics": {"profile": "static"}}})
    path = _finished_round(static, tmp_path)
    live = config_from_dict({"sim": {"dynamics": {"profile": "live"}}})
    with pytest.raises(ValueError) as err:
        collect.run(live, _request(tmp_path))
    message = str(err.value)
    assert "world 'static' there, 'live' asked" in message and path.name in message
    assert "episodes_per_device" not in message  # only what differs is named
    with pytest.raises(ValueError, match="episodes_per_device 2 there, 3 asked"):
        collect.run(static, _request(tmp_path, episodes_per_device=3))


def test_a_round_finished_before_settings_were_kept_is_reused(tmp_path: Path) -> None:
    _finished_round(Config(), tmp_path, noted=False)
    live = config_from_dict({"sim": {"dynamics": {"profile": "live"}}})
    # nothing says what recorded it, so nothing is claimed about it either way
    assert collect.run(live, _request(tmp_path, episodes_per_device=5))["reused"]
