"""Run Params -> config overrides (pure; no Airflow needed)."""

from __future__ import annotations

import pytest

from distrl_tasks.config import ConfigError, load_config
from distrl_tasks.orchestration.airflow_params import (
    PARAM_KEYS,
    PARAM_SPECS,
    config_overrides,
    load_run_config,
    newest_trajectories,
    next_round_conf,
    next_run_id,
    resolve_round,
    workdir,
)

DEFAULTS = {name: spec["default"] for name, spec in PARAM_SPECS.items()}


def test_default_params_override_nothing() -> None:
    assert config_overrides(DEFAULTS) == {}
    assert config_overrides({}) == {}


def test_named_params_map_to_config_keys_and_win_over_free_overrides() -> None:
    params = {
        **DEFAULTS,
        "algorithm": "digirl",
        "workers": 2,
        "devices_per_worker": 3,
        "episodes_per_device": 1,
        "task_set": "webshop",
        "device_kind": "sim",
        "rounds": 5,
        "overrides": ["algorithm.name=filtered_bc", "algorithm.actor_epochs=2", "sim.seed=7"],
    }
    assert config_overrides(params) == {
        "algorithm.name": "digirl",  # the named Param beats the free-form override
        "algorithm.actor_epochs": 2,
        "sim.seed": 7,
        "orchestration.workers": 2,
        "orchestration.devices_per_worker": 3,
        "orchestration.episodes_per_device": 1,
        "env.task_set": "webshop",
        "env.device_kind": "sim",
        "orchestration.rounds": 5,
    }
    assert set(PARAM_KEYS) == set(PARAM_SPECS) - {"round", "overrides"}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"algorithm": "ppo"}, "'algorithm' must be one of"),
        ({"workers": 0}, r"'workers' must be in \[1, 64\]"),
        ({"workers": True}, "'workers' must be an integer"),
        ({"episodes_per_device": 2.5}, "'episodes_per_device' must be an integer"),
        ({"round": -1}, r"'round' must be in \[0, None\]"),
        ({"round": "1"}, "'round' must be an integer"),
        ({"overrides": "sim.seed=1"}, "'overrides' must be a list"),
        ({"overrides": ["no-equals"]}, "bad entry 'no-equals'"),
        ({"devices": 4}, r"unknown Params \['devices'\]"),
    ],
)
def test_bad_params_are_named_in_the_error(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        config_overrides(params)


def test_load_run_config_reads_params_yaml_and_sizes_the_farm(tmp_path) -> None:
    (tmp_path / "params.yaml").write_text(
        "sim:\n  devices: 8\n  seed: 4\norchestration:\n  workers: 1\n  devices_per_worker: 8\n"
    )
    cfg = load_run_config({**DEFAULTS, "workers": 3, "devices_per_worker": 2}, tmp_path)
    assert cfg.sim.seed == 4  # from the file
    assert (cfg.orchestration.workers, cfg.orchestration.devices_per_worker) == (3, 2)
    assert cfg.sim.devices == 6  # the farm holds every worker's devices
    cfg = load_run_config({**DEFAULTS, "overrides": ["sim.devices=5"]}, tmp_path)
    assert cfg.sim.devices == 5  # an explicit override is respected
    cfg = load_run_config({**DEFAULTS, "device_kind": "emulator"}, tmp_path)
    assert cfg.sim.devices == 8  # emulators: the sim farm size is irrelevant and left alone


def test_load_run_config_without_a_file_uses_builtin_defaults(tmp_path) -> None:
    cfg = load_run_config({**DEFAULTS, "algorithm": "filtered_bc"}, tmp_path)
    assert cfg.algorithm.name == "filtered_bc"
    assert cfg.sim.devices == cfg.orchestration.workers * cfg.orchestration.devices_per_worker


def test_load_run_config_reports_bad_override_values(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"algorithm\.gamma"):
        load_run_config({**DEFAULTS, "overrides": ["algorithm.gamma=2.0"]}, tmp_path)
    # a key that moved into a section (issue 54) names its new place
    with pytest.raises(ConfigError, match=r"agent\.sft_lr moved to agent\.sft\.lr"):
        load_run_config({**DEFAULTS, "overrides": ["agent.sft_lr=0.001"]}, tmp_path)


def test_next_round_conf_chains_until_the_last_round() -> None:
    online = load_config(None, {"algorithm.mode": "online"})
    params = resolve_round({**DEFAULTS, "algorithm": "digirl"}, online)
    assert params["round"] == 1  # an empty Param is the mode's first round
    conf = next_round_conf(params, rounds=3)
    assert conf == {**params, "round": 2, "rounds": 3}
    assert next_round_conf(conf, rounds=3) == {**params, "round": 3, "rounds": 3}
    assert next_round_conf({**params, "round": 3}, rounds=3) is None
    assert next_round_conf(params, rounds=1) is None
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        next_round_conf(params, rounds=0)
    with pytest.raises(ValueError, match="must be resolved"):
        next_round_conf(DEFAULTS, rounds=3)


def test_the_offline_phase_is_round_zero_of_the_chain() -> None:
    off2on = load_config(None, {"algorithm.mode": "off2on"})
    params = resolve_round(DEFAULTS, off2on)
    assert params["round"] == 0
    assert next_round_conf(params, rounds=2) == {**params, "round": 1, "rounds": 2}
    assert next_round_conf(params, rounds=2, offline_only=True) is None
    assert resolve_round({**DEFAULTS, "round": 2}, off2on)["round"] == 2  # given: kept
    with pytest.raises(ValueError, match=r"algorithm\.mode is 'online'"):
        resolve_round({**DEFAULTS, "round": 0}, load_config(None, {"algorithm.mode": "online"}))
    with pytest.raises(ValueError, match="trains round 0 only"):
        resolve_round({**DEFAULTS, "round": 1}, load_config(None, {"algorithm.mode": "offline"}))


def test_next_run_id_is_deterministic_and_short() -> None:
    a = next_run_id("distrl_round", "manual__2026-01-01T00:00:00+00:00", 1)
    assert a == next_run_id("distrl_round", "manual__2026-01-01T00:00:00+00:00", 1)
    assert a.startswith("distrl_round__round1__") and len(a) == len("distrl_round__round1__") + 12
    assert a != next_run_id("distrl_round", "manual__2026-01-02T00:00:00+00:00", 1)
    long_chain = next_run_id("distrl_round", a * 10, 2)
    assert len(long_chain) == len("distrl_round__round2__") + 12


def test_workdir_prefers_the_environment(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("DISTRL_WORKDIR", raising=False)
    assert workdir(tmp_path) == tmp_path.resolve()
    monkeypatch.setenv("DISTRL_WORKDIR", str(tmp_path / "elsewhere"))
    assert workdir("/ignored") == (tmp_path / "elsewhere").resolve()


def test_newest_trajectories_picks_the_highest_round() -> None:
    extras = [
        {"round": 3, "data_version": "abc", "params": {"round": 3}},
        {"round": 5, "data_version": "def", "params": {"round": 5, "algorithm": "digirl"}},
        {"unrelated": True},
        {"round": 4, "data_version": "ghi"},
    ]
    assert newest_trajectories(extras) == {
        "round": 5,
        "data_version": "def",
        "params": {"round": 5, "algorithm": "digirl"},
    }
    assert newest_trajectories([{"round": 0, "data_version": "x"}])["params"] == {}
    with pytest.raises(ValueError, match="trigger distrl_actor"):
        newest_trajectories([{"unrelated": True}])
    with pytest.raises(ValueError, match="has none"):
        newest_trajectories([])


def test_gemini_key_comes_from_an_airflow_connection_only_when_needed(monkeypatch) -> None:
    from distrl_tasks.config import load_config
    from distrl_tasks.orchestration.airflow_params import gemini_api_key

    gemini = load_config(None, {"evaluator.kind": "gemini"})
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("AIRFLOW_CONN_GEMINI_DEFAULT", raising=False)
    assert gemini_api_key(gemini) is None  # no connection: the evaluator reports the missing key
    monkeypatch.setenv(
        "AIRFLOW_CONN_GEMINI_DEFAULT", '{"conn_type": "generic", "password": "conn-key"}'
    )
    assert gemini_api_key(gemini) == "conn-key"
    assert gemini_api_key(load_config(None, {})) is None  # the oracle needs no key
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    assert gemini_api_key(gemini) is None  # the environment wins; the evaluator reads it
