"""The typed config: params.yaml round-trips, and every kind of bad input names its key."""

from __future__ import annotations

from pathlib import Path

import pytest

from distrl_tasks.config import Config, ConfigError, load_config, parse_override

ROOT = Path(__file__).resolve().parents[2]


def test_params_yaml_matches_defaults() -> None:
    # params.yaml documents the defaults; drift between the two would mislead every reader
    assert load_config(ROOT / "params.yaml") == Config()


def test_every_field_in_params_yaml_has_a_comment() -> None:
    for line in (ROOT / "params.yaml").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            assert "  # " in line, f"uncommented line in params.yaml: {line!r}"


def test_overrides_as_mapping_and_strings(tmp_path: Path) -> None:
    cfg = load_config(ROOT / "params.yaml", {"sim.devices": 3, "algorithm.name": "digirl"})
    assert cfg.sim.devices == 3 and cfg.algorithm.name == "digirl"
    cfg = load_config(None, ["sim.latency.enabled=true", "sim.latency.screenshot=[0.5, 0.1]"])
    assert cfg.sim.latency.enabled is True
    assert cfg.sim.latency.screenshot == (0.5, 0.1)
    assert cfg.sim.devices == Config().sim.devices


def test_ints_are_accepted_for_floats_but_not_the_reverse() -> None:
    assert load_config(None, {"algorithm.gamma": 1}).algorithm.gamma == 1.0
    with pytest.raises(ConfigError, match=r"sim\.devices: expected an integer"):
        load_config(None, {"sim.devices": 2.5})


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"sim.devies": 3}, r"unknown key sim\.devies"),
        ({"simulator.devices": 3}, r"unknown key simulator"),
        ({"sim.devices": "many"}, r"sim\.devices: expected an integer"),
        ({"sim.latency.enabled": "yes"}, r"sim\.latency\.enabled: expected true/false"),
        ({"algorithm.name": "ppo"}, r"algorithm\.name: must be one of"),
        ({"algorithm.gamma": 1.5}, r"algorithm\.gamma: must be in \[0, 1\]"),
        ({"sim.faults.crash_prob": -0.1}, r"sim\.faults\.crash_prob: probability"),
        ({"sim.port": 70000}, r"sim\.port: must be a TCP port"),
        ({"sim.port": -1}, r"sim\.port: must be a TCP port"),
        ({"sim.latency.screenshot": [0.1]}, r"sim\.latency\.screenshot: expected 2 values"),
        ({"agent.image_encoder": "blip2"}, r"agent\.image_encoder_path: needed for blip2"),
        ({"sim": 3}, r"sim: expected a mapping"),
        ({"orchestration.eval_devices": 0}, r"orchestration\.eval_devices: must be >= 1"),
        ({"env.prompt_history": -1}, r"env\.prompt_history: must be >= 0"),
        ({"sim.dynamics.profile": "wild"}, r"sim\.dynamics\.profile: must be one of"),
        ({"sim.dynamics.rates.popups": 0.1}, r"unknown key sim\.dynamics\.rates\.popups"),
        ({"sim.dynamics.rates.anr": 1.5}, r"sim\.dynamics\.rates\.anr: rate must be in \[0, 1\]"),
        ({"sim.dynamics.rates.heads_up": -0.1}, r"sim\.dynamics\.rates\.heads_up: rate must be"),
    ],
)
def test_bad_values_name_the_key(override: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, override)


def test_file_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("sim: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="top level must be a mapping"):
        load_config(listy)


def test_override_parsing() -> None:
    assert parse_override("sim.devices=4") == ("sim.devices", 4)
    assert parse_override("tracking.experiment=a=b") == ("tracking.experiment", "a=b")
    with pytest.raises(ConfigError, match=r"expected section\.key=value"):
        parse_override("sim.devices")


def test_config_is_frozen_and_flattens() -> None:
    cfg = Config()
    with pytest.raises(AttributeError):
        cfg.sim.devices = 2  # type: ignore[misc]
    flat = cfg.to_flat_dict()
    assert flat["sim.devices"] == cfg.sim.devices
    assert flat["sim.latency.screenshot"] == list(cfg.sim.latency.screenshot)
    assert all(not isinstance(v, dict) for v in flat.values())


def test_exponent_without_dot_is_a_number_but_words_are_not() -> None:
    # YAML 1.1 reads "1e-5" as a string; a float field accepts it, a word is still an error.
    assert load_config(None, ["algorithm.lm_lr=1e-5"]).algorithm.lm_lr == 1e-5
    assert load_config(None, {"algorithm.critic_lr": "3E-4"}).algorithm.critic_lr == 3e-4
    with pytest.raises(ConfigError, match=r"algorithm\.lm_lr: expected a number"):
        load_config(None, ["algorithm.lm_lr=fast"])


def test_an_unquoted_yaml_boolean_spelling_means_the_allowed_word(tmp_path) -> None:
    # DVC's `exp run --set-param` writes params.yaml back as YAML 1.2, which leaves `no`
    # unquoted; PyYAML (YAML 1.1) then reads it as False
    path = tmp_path / "params.yaml"
    path.write_text("algorithm:\n  mixed_precision: no\n")
    assert load_config(path).algorithm.mixed_precision == "no"
    path.write_text("algorithm:\n  name: no\n")  # no allowed word spells False: still refused
    with pytest.raises(ConfigError, match="quote it"):
        load_config(path)
