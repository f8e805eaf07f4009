"""The typed config: params.yaml round-trips, and every kind of bad input names its key."""

from __future__ import annotations

from pathlib import Path

import pytest

from distrl_tasks.config import (
    MOVED_KEYS,
    RETIRED_KEYS,
    Config,
    ConfigError,
    load_config,
    parse_override,
)

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


def test_the_nested_sections_load_and_validate(tmp_path: Path) -> None:
    path = tmp_path / "params.yaml"
    path.write_text(
        "agent:\n  sft:\n    lr: 3.0e-4\n    goal_mix: balanced\n"
        "  pretrain:\n    steps: 50\n    threads: 2\n"
        "algorithm:\n  distrl:\n    priority_alpha: 0.6\n    priority_weights: [1, 0, 0]\n"
    )
    cfg = load_config(path, ["agent.sft.steps=7", "agent.pretrain.lr=1e-4"])
    assert (cfg.agent.sft.lr, cfg.agent.sft.goal_mix, cfg.agent.sft.steps) == (3e-4, "balanced", 7)
    assert (cfg.agent.pretrain.steps, cfg.agent.pretrain.threads) == (50, 2)
    assert cfg.agent.pretrain.lr == 1e-4
    assert cfg.algorithm.distrl.priority_alpha == 0.6
    assert cfg.algorithm.distrl.priority_weights == (1.0, 0.0, 0.0)
    assert cfg.to_flat_dict()["agent.sft.lr"] == 3e-4
    for override, message in [
        ({"agent.sft.lr": 0}, r"agent\.sft\.lr: must be > 0"),
        ({"agent.sft.vocab_size": 10}, r"agent\.sft\.vocab_size: must be >= 300"),
        ({"agent.sft.goal_mix": "mixed"}, r"agent\.sft\.goal_mix: must be one of"),
        ({"agent.pretrain.patience": 0}, r"agent\.pretrain\.patience: must be >= 1"),
        ({"agent.pretrain.search_share": 1.0}, r"agent\.pretrain\.search_share: must be in"),
        ({"agent.pretrain.stepz": 1}, r"unknown key agent\.pretrain\.stepz"),
        ({"algorithm.distrl.priority_beta": 2.0}, r"algorithm\.distrl\.priority_beta: must be"),
        ({"algorithm.distrl.priority_rho_clip": 0}, r"priority_rho_clip: must be > 0"),
    ]:
        with pytest.raises(ConfigError, match=message):
            load_config(None, override)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("agent.pretrain_steps", "agent.pretrain.steps"),
        ("agent.sft_lr", "agent.sft.lr"),
        ("algorithm.priority_alpha", "algorithm.distrl.priority_alpha"),
    ],
)
def test_an_old_key_names_its_new_place(tmp_path: Path, old: str, new: str) -> None:
    message = rf"^{old} moved to {new}$".replace(".", r"\.")
    with pytest.raises(ConfigError, match=message):
        load_config(None, [f"{old}=1"])  # a --set override (and an Airflow Param's)
    section, key = old.split(".")
    path = tmp_path / "params.yaml"
    path.write_text(f"{section}:\n  {key}: 1\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path)  # a params.yaml of before the move


def test_every_moved_key_maps_to_a_real_new_key() -> None:
    flat = Config().to_flat_dict()
    assert len(MOVED_KEYS) == 15 + 8 + 4
    for old, new in MOVED_KEYS.items():
        assert new in flat, (old, new)
        assert old not in flat, old  # a moved key is gone from the config
    assert len(set(MOVED_KEYS.values())) == len(MOVED_KEYS)  # no two old keys share a place


@pytest.mark.parametrize(
    ("key", "value"),
    [("agent.observation", "elements"), ("agent.observation", "screenshot"),
     ("agent.observation_elements", 6)],
)  # fmt: skip
def test_a_retired_key_says_it_was_retired_and_what_replaces_it(
    tmp_path: Path, key: str, value: object
) -> None:
    # even the retired mode's old default is an error: nothing would read the key any more
    with pytest.raises(ConfigError) as err:
        load_config(None, [f"{key}={value}"])  # a --set override (and an Airflow Param's)
    message = str(err.value)
    assert message.startswith(f"{key}: the elements observation mode was retired")
    assert "the tap-target pointer (agent.pointer, agent.pointer_elements) replaces it" in message
    section, name = key.split(".")
    path = tmp_path / "params.yaml"
    path.write_text(f"{section}:\n  {name}: {value}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)  # a params.yaml written before the retirement
    assert str(err.value) == message


@pytest.mark.parametrize("value", [False, True])
def test_the_retired_copy_word_ends_says_it_was_retired(tmp_path: Path, value: bool) -> None:
    # off (its old default) too: no model reads word starts from word ends any more
    key = "agent.pretrain.copy_word_ends"
    with pytest.raises(ConfigError) as err:
        load_config(None, [f"{key}={str(value).lower()}"])
    message = str(err.value)
    assert message.startswith(f"{key}: the copy's word starts read from word ends were retired")
    path = tmp_path / "params.yaml"
    path.write_text(f"agent:\n  pretrain:\n    copy_word_ends: {str(value).lower()}\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)  # a params.yaml written before the retirement
    assert str(err.value) == message


def test_retired_keys_are_gone_from_the_config() -> None:
    flat = Config().to_flat_dict()
    assert set(RETIRED_KEYS) == {
        "agent.observation",
        "agent.observation_elements",
        "agent.pretrain.copy_word_ends",
    }
    assert not set(RETIRED_KEYS) & set(flat)
    assert not set(RETIRED_KEYS) & set(MOVED_KEYS)
