"""The algorithm specs are the one list every part of the system reads."""

from __future__ import annotations

import pytest

from distrl_tasks.algorithms.factory import IMPLEMENTATIONS
from distrl_tasks.config import ConfigError, load_config
from distrl_tasks.config.algorithm_specs import ALGORITHMS, SPECS, algorithm_spec
from distrl_tasks.orchestration.airflow_params import PARAM_SPECS
from distrl_tasks.stages.curriculum import attempts_per_goal


def test_every_spec_has_an_implementation_and_the_params_offer_every_spec() -> None:
    assert set(IMPLEMENTATIONS) == set(ALGORITHMS)
    assert len(set(ALGORITHMS)) == len(SPECS)  # names are unique
    assert [s.label for s in SPECS] == ["DistRL", "DigiRL", "Filtered BC", "GRPO", "GiGPO"]
    algorithm_param = PARAM_SPECS["algorithm"]
    offered = [v for v in algorithm_param["enum"] if v is not None]
    assert offered == list(ALGORITHMS)


def test_the_config_accepts_exactly_the_specs() -> None:
    for name in ALGORITHMS:
        assert load_config(None, [f"algorithm.name={name}"]).algorithm.name == name
    with pytest.raises(ConfigError, match=r"algorithm\.name: must be one of \['distrl'"):
        load_config(None, ["algorithm.name=ppo"])
    with pytest.raises(ValueError, match="unknown algorithm 'ppo'"):
        algorithm_spec("ppo")


def test_groups_follow_the_spec() -> None:
    for spec in SPECS:
        cfg = load_config(None, [f"algorithm.name={spec.name}", "algorithm.group.size=4"])
        assert attempts_per_goal(cfg) == (4 if spec.groups else 1), spec.name
    with pytest.raises(ConfigError, match=r"group\.size: must be >= 2 for grpo"):
        load_config(None, ["algorithm.name=grpo", "algorithm.group.size=1"])
    assert [s.name for s in SPECS if s.step_keys] == ["gigpo"]
