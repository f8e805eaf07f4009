"""The one typed configuration of the project, loaded from ``params.yaml``.

Every stage receives a :class:`Config` explicitly; nothing else reads YAML. Sections are frozen
dataclasses, one per concern; they and their value checks live in
:mod:`distrl_tasks.config.sections` (the package re-exports both). Loading validates strictly: an
unknown key, a value of the wrong type or an impossible value raises :class:`ConfigError` naming
the dotted key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from distrl_tasks.config.sections import (
    AgentConfig,
    AlgorithmConfig,
    DataConfig,
    EnvConfig,
    EvaluatorConfig,
    OrchestrationConfig,
    TrackingConfig,
)
from distrl_tasks.config.sim_sections import SimConfig
from distrl_tasks.config.typed_yaml import (
    ConfigError,
    apply_override,
    build_dataclass,
    parse_override,
)

TASK_SETS = ("general", "webshop")


@dataclass(frozen=True)
class Config:
    """The whole configuration; one field per section of ``params.yaml``."""

    sim: SimConfig = field(default_factory=SimConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    data: DataConfig = field(default_factory=DataConfig)
    evaluator: EvaluatorConfig = field(default_factory=EvaluatorConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    orchestration: OrchestrationConfig = field(default_factory=OrchestrationConfig)

    def validate(self, key: str = "") -> None:
        """Validate every section, nested sections included (each checks its own fields)."""

        def walk(obj: Any, prefix: str) -> None:
            for f in dataclasses.fields(obj):
                value = getattr(obj, f.name)
                if dataclasses.is_dataclass(value):
                    value.validate(f"{prefix}{f.name}")
                    walk(value, f"{prefix}{f.name}.")

        walk(self, "")

    def in_world(self, profile: str) -> Config:
        """This config with ``sim.dynamics.profile`` set to ``profile``, validated.

        The one way code picks another live-world profile (the bootstrap's demonstrations, an
        evaluation's ``--dynamics``): stages read ``cfg.sim.dynamics.profile`` and nothing else.

        Raises:
            ConfigError: ``profile`` is not a known profile.
        """
        tree = self.to_flat_dict()
        tree["sim.dynamics.profile"] = profile
        return load_config(None, tree)

    def to_flat_dict(self) -> dict[str, Any]:
        """Dotted-key view, e.g. for logging as run parameters (holds no secrets)."""
        out: dict[str, Any] = {}

        def walk(obj: Any, prefix: str) -> None:
            for f in dataclasses.fields(obj):
                value = getattr(obj, f.name)
                name = f"{prefix}{f.name}"
                if dataclasses.is_dataclass(value):
                    walk(value, name + ".")
                else:
                    out[name] = list(value) if isinstance(value, tuple) else value

        walk(self, "")
        return out


def config_from_dict(data: Mapping[str, Any] | None) -> Config:
    """Build and validate a :class:`Config` from a plain nested mapping."""
    cfg = build_dataclass(Config, dict(data or {}), "")
    cfg.validate()
    return cfg


def load_config(
    path: str | Path | None = "params.yaml",
    overrides: Mapping[str, Any] | Sequence[str] | None = None,
) -> Config:
    """Load ``params.yaml`` (or defaults when ``path`` is None) and apply dotted overrides.

    Args:
        path: YAML file; ``None`` means the built-in defaults.
        overrides: ``{"sim.devices": 4}`` or ``["sim.devices=4"]``; applied after the file.

    Raises:
        ConfigError: on a missing file, malformed YAML, unknown key, wrong type or bad value.
    """
    tree: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        try:
            loaded = yaml.safe_load(p.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{p}: top level must be a mapping of sections")
        tree = loaded
    items = (
        overrides.items()
        if isinstance(overrides, Mapping)
        else (parse_override(o) for o in (overrides or ()))
    )
    for key, value in items:
        apply_override(tree, key, value)
    return config_from_dict(tree)
