"""The typed configuration: ``load_config(path) -> Config``, the only code that reads YAML.

- :mod:`~distrl_tasks.config.loader`: the :class:`Config` root, loading and ``--set`` overrides.
- :mod:`~distrl_tasks.config.sections`: one frozen dataclass per section, with its value checks;
  :mod:`~distrl_tasks.config.sim_sections` (``sim.*``) and
  :mod:`~distrl_tasks.config.rl_sections` (nested RL settings) hold the larger nested ones.
- :mod:`~distrl_tasks.config.typed_yaml`: building dataclasses from YAML against their annotations.

Everything a stage needs is importable from here: ``from distrl_tasks.config import Config``.
"""

from distrl_tasks.config.loader import TASK_SETS, Config, config_from_dict, load_config
from distrl_tasks.config.rl_sections import (
    ContinuousConfig,
    CriticPrefitConfig,
    CurriculumConfig,
    DistRLConfig,
    GroupConfig,
)
from distrl_tasks.config.sections import (
    AgentConfig,
    AlgorithmConfig,
    DataConfig,
    EnvConfig,
    EvaluatorConfig,
    ExplorationConfig,
    OrchestrationConfig,
    PretrainConfig,
    SFTConfig,
    TrackingConfig,
)
from distrl_tasks.config.sim_sections import (
    DynamicsConfig,
    DynamicsRatesConfig,
    FaultConfig,
    LatencyConfig,
    SimConfig,
)
from distrl_tasks.config.typed_yaml import MOVED_KEYS, RETIRED_KEYS, ConfigError, parse_override

__all__ = [
    "MOVED_KEYS",
    "RETIRED_KEYS",
    "TASK_SETS",
    "AgentConfig",
    "AlgorithmConfig",
    "Config",
    "ConfigError",
    "ContinuousConfig",
    "CriticPrefitConfig",
    "CurriculumConfig",
    "DataConfig",
    "DistRLConfig",
    "DynamicsConfig",
    "DynamicsRatesConfig",
    "EnvConfig",
    "EvaluatorConfig",
    "ExplorationConfig",
    "FaultConfig",
    "GroupConfig",
    "LatencyConfig",
    "OrchestrationConfig",
    "PretrainConfig",
    "SFTConfig",
    "SimConfig",
    "TrackingConfig",
    "config_from_dict",
    "load_config",
    "parse_override",
]
