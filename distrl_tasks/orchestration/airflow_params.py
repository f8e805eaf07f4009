"""Airflow run Params of the DistRL DAGs and their translation into config overrides.

The DAG files wrap :data:`PARAM_SPECS` into ``airflow.sdk.Param`` objects (JSON-schema validated
by Airflow when a run is triggered from the UI or the REST API). Every tuning Param defaults to
``null``, meaning "keep the value from ``params.yaml``": the YAML stays the single source of truth
and a Param only overrides it for one run. This module imports nothing from Airflow and does no
I/O except :func:`load_run_config`, so it is unit-testable on its own.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from distrl_tasks.config import Config, ConfigError, load_config, modes, parse_override
from distrl_tasks.config.algorithm_specs import ALGORITHMS
from distrl_tasks.evaluators.evaluator import API_KEY_ENV, GEMINI_CONNECTION

WORKDIR_ENV = "DISTRL_WORKDIR"
ENV_OVERRIDE_PREFIX = "DISTRL_SET_"  # DISTRL_SET_<NAME>=section.key=value (docker/compose.yaml)

TASK_SETS = ("general", "webshop")
DEVICE_KINDS = ("sim", "emulator")


def _nullable_int(title: str, description: str, minimum: int, maximum: int) -> dict[str, Any]:
    return {
        "default": None,
        "type": ["null", "integer"],
        "minimum": minimum,
        "maximum": maximum,
        "title": title,
        "description": description,
    }


def _nullable_enum(title: str, description: str, values: tuple[str, ...]) -> dict[str, Any]:
    return {
        "default": None,
        "type": ["null", "string"],
        "enum": [None, *values],
        "values_display": {"null": "(params.yaml)"},  # label of null in the UI's select
        "title": title,
        "description": description,
    }


# name -> keyword arguments of airflow.sdk.Param (``default`` plus JSON-schema keys).
PARAM_SPECS: dict[str, dict[str, Any]] = {
    "round": {
        "default": None,
        "type": ["null", "integer"],
        "minimum": 0,
        "title": "Round",
        "description": "Round this run processes, numbered like `distrl round` and dvc.yaml: "
        "0 is the offline phase of algorithm.mode off2on / offline, online rounds count from 1 "
        "(empty: the mode's first round).",
    },
    "rounds": _nullable_int(
        "Rounds",
        "Total rounds of the chain; a run of round r triggers round r+1 while r < rounds "
        "(empty: orchestration.rounds).",
        1,
        10_000,
    ),
    "algorithm": _nullable_enum(
        "Algorithm", "Training algorithm (empty: algorithm.name).", ALGORITHMS
    ),
    "workers": _nullable_int(
        "Workers", "Collection workers, one mapped task each (empty: orchestration.workers).", 1, 64
    ),
    "devices_per_worker": _nullable_int(
        "Devices per worker",
        "Devices each worker drives (empty: orchestration.devices_per_worker).",
        1,
        256,
    ),
    "episodes_per_device": _nullable_int(
        "Episodes per device",
        "Episodes each device runs per round (empty: orchestration.episodes_per_device).",
        1,
        10_000,
    ),
    "task_set": _nullable_enum("Task set", "AitW task set (empty: env.task_set).", TASK_SETS),
    "device_kind": _nullable_enum(
        "Device kind", "Simulator farm or emulator fleet (empty: env.device_kind).", DEVICE_KINDS
    ),
    "overrides": {
        "default": [],
        "type": "array",
        "items": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_.]*=.*$"},
        "title": "Config overrides",
        "description": "Extra 'section.key=value' overrides (value read as YAML), applied before "
        "the Params above.",
    },
}

# Param name -> dotted config key it overrides.
PARAM_KEYS: dict[str, str] = {
    "rounds": "orchestration.rounds",
    "algorithm": "algorithm.name",
    "workers": "orchestration.workers",
    "devices_per_worker": "orchestration.devices_per_worker",
    "episodes_per_device": "orchestration.episodes_per_device",
    "task_set": "env.task_set",
    "device_kind": "env.device_kind",
}


def _check_param(name: str, value: Any) -> None:
    """Re-check a Param against its schema: dag.test() and old runs bypass the UI's validation."""
    spec = PARAM_SPECS[name]
    if value is None:
        if "null" not in spec["type"]:
            raise ValueError(f"Param {name!r} must not be null")
        return
    if "integer" in spec["type"]:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"Param {name!r} must be an integer, got {value!r}")
        lo, hi = spec.get("minimum"), spec.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ValueError(f"Param {name!r} must be in [{lo}, {hi}], got {value}")
    elif "enum" in spec:
        if value not in spec["enum"]:
            allowed = [v for v in spec["enum"] if v is not None]
            raise ValueError(f"Param {name!r} must be one of {allowed}, got {value!r}")
    elif spec["type"] == "array":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"Param {name!r} must be a list of 'key=value' strings, got {value!r}")


def config_overrides(params: Mapping[str, Any]) -> dict[str, Any]:
    """Translate a run's Params into dotted config overrides.

    The free-form ``overrides`` come first, then the named Params (a named Param wins over an
    override of the same key). ``round`` is not a config key and is left out. When the topology
    is set and the fleet is the simulator, ``sim.devices`` follows ``workers * devices_per_worker``
    (see :func:`load_run_config`).

    Args:
        params: the run's Params (``context["params"]``); missing names count as null.

    Returns:
        ``{"algorithm.name": "digirl", ...}`` ready for :func:`distrl_tasks.config.load_config`.

    Raises:
        ValueError: an unknown Param, a value outside its schema, or a malformed override.
    """
    unknown = sorted(set(params) - set(PARAM_SPECS))
    if unknown:
        raise ValueError(f"unknown Params {unknown}; known: {sorted(PARAM_SPECS)}")
    for name, value in params.items():
        _check_param(name, value)
    out: dict[str, Any] = {}
    for text in params.get("overrides") or []:
        try:
            key, value = parse_override(text)
        except (ConfigError, ValueError) as exc:  # yaml errors are ValueErrors
            raise ValueError(f"Param 'overrides': bad entry {text!r}: {exc}") from exc
        out[key] = value
    for name, key in PARAM_KEYS.items():
        if params.get(name) is not None:
            out[key] = params[name]
    return out


def env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The deployment's config overrides from ``DISTRL_SET_*`` variables, in name order.

    A deployment (``distrl cluster``, docker/compose.yaml) states only the keys it changes, e.g.
    ``DISTRL_SET_TRACKING_URI=tracking.tracking_uri=http://127.0.0.1:5000``; empty ones are
    skipped. They apply on top of ``params.yaml`` and below a run's Params.

    Raises:
        ConfigError: a value that is not ``section.key=value`` (the message names the variable).
    """
    environ = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for name in sorted(environ):
        raw = environ[name]
        if not name.startswith(ENV_OVERRIDE_PREFIX) or not raw.strip():
            continue
        try:
            key, value = parse_override(raw)
        except (ConfigError, ValueError) as exc:
            raise ConfigError(f"environment variable {name}: {exc}") from exc
        if "." not in key:
            raise ConfigError(f"environment variable {name}: {key!r} is not a dotted section.key")
        out[key] = value
    return out


def workdir(default: str | os.PathLike) -> Path:
    """The project root the stages run in: ``$DISTRL_WORKDIR`` if set, else ``default``."""
    return Path(os.environ.get(WORKDIR_ENV) or default).resolve()


def load_run_config(params: Mapping[str, Any], root: str | os.PathLike) -> Config:
    """Load ``<root>/params.yaml`` (built-in defaults when absent) with the deployment's
    ``DISTRL_SET_*`` overrides (:func:`env_overrides`) and then the Params applied.

    For the simulator the farm must hold every worker's devices, so unless ``sim.devices`` is
    overridden explicitly it is set to ``workers * devices_per_worker`` of the resolved config.

    Raises:
        ValueError: bad Params (see :func:`config_overrides`).
        ConfigError: the YAML or an override is invalid.
    """
    overrides = {**env_overrides(), **config_overrides(params)}
    path = Path(root) / "params.yaml"
    cfg = load_config(path if path.is_file() else None, overrides)
    orch = cfg.orchestration
    if cfg.env.device_kind == "sim" and "sim.devices" not in overrides:
        needed = orch.workers * orch.devices_per_worker
        if cfg.sim.devices != needed:
            cfg = load_config(
                path if path.is_file() else None, {**overrides, "sim.devices": needed}
            )
    return cfg


def resolve_round(params: Mapping[str, Any], cfg: Config) -> dict[str, Any]:
    """``params`` with ``round`` set: an empty one becomes the mode's first round.

    Raises:
        ValueError: the configured ``algorithm.mode`` has no such round (e.g. round 0 online).
    """
    out = dict(params)
    if out.get("round") is None:
        out["round"] = modes.first_round(cfg)
    _check_param("round", out["round"])
    modes.check_round(cfg, out["round"])
    return out


def next_round_conf(
    params: Mapping[str, Any], rounds: int, *, offline_only: bool = False
) -> dict[str, Any] | None:
    """The conf of the run that processes the next round, or None when this was the last one.

    Args:
        params: this run's Params, resolved (``round`` is the round it processed).
        rounds: online rounds of the chain (the resolved ``orchestration.rounds``); they are
            numbered 1..rounds and follow round 0, the offline phase, when there is one.
        offline_only: ``algorithm.mode`` is offline: round 0 is the whole chain.

    Returns:
        A copy of ``params`` with ``round`` + 1 and ``rounds`` pinned (so a later edit of
        ``params.yaml`` does not change a chain in flight), or None.
    """
    current = params.get("round")
    if current is None:
        raise ValueError("Param 'round' must be resolved (resolve_round) before chaining")
    _check_param("round", current)
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if current >= rounds or offline_only:
        return None
    return {**dict(params), "round": current + 1, "rounds": rounds}


def next_run_id(dag_id: str, run_id: str, next_round: int) -> str:
    """A deterministic id for the run of ``next_round`` triggered by run ``run_id``.

    The same triggering run always names the same next run, so a retried trigger task finds
    the run it already created instead of starting a second copy of the round; the hash keeps
    ids short however long the chain gets.
    """
    digest = hashlib.sha1(run_id.encode()).hexdigest()[:12]
    return f"{dag_id}__round{next_round}__{digest}"


def newest_trajectories(extras: list[Mapping[str, Any]]) -> dict[str, Any]:
    """What a learner run trains on: the newest of the trajectories events that triggered it.

    Args:
        extras: the ``extra`` dicts of the triggering Asset events, as the actor emits them
            (``round``, ``data_version``, ``params``); events without them are ignored.

    Returns:
        ``{"round", "data_version", "params"}`` of the event with the highest round.

    Raises:
        ValueError: no usable event (e.g. the learner was triggered by hand).
    """
    usable = [x for x in extras if "round" in x and "data_version" in x]
    if not usable:
        raise ValueError(
            "distrl_learner trains on the trajectories Asset events distrl_actor emits, and this "
            "run has none: trigger distrl_actor instead"
        )
    newest = max(usable, key=lambda x: x["round"])
    return {
        "round": newest["round"],
        "data_version": newest["data_version"],
        "params": dict(newest.get("params") or {}),
    }


def gemini_api_key(cfg: Any, conn_id: str | None = None) -> str | None:
    """The Gemini key from an Airflow connection (default
    :data:`~distrl_tasks.evaluators.evaluator.GEMINI_CONNECTION`), when labeling needs one and the
    environment has none (``GEMINI_API_KEY`` wins). Call inside a task; returns None when not
    applicable. The key is only passed on to the evaluator, never logged or returned in XCom.
    """
    if cfg.evaluator.kind != "gemini" or os.environ.get(API_KEY_ENV):
        return None
    from airflow.sdk import Connection  # lazy: airflow, read outside Airflow too

    try:
        conn = Connection.get(conn_id or GEMINI_CONNECTION)
    except Exception:  # not defined: the evaluator then reports the missing key clearly
        return None
    return (conn.password or "") or None
