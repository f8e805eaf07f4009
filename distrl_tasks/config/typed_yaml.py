"""Strict conversion of YAML mappings into (nested, frozen) dataclasses.

What :mod:`distrl_tasks.config` builds on: every value is checked against its field's annotation
(``bool``, ``int``, ``float``, ``str``, ``None``, ``Literal``, unions, fixed-length tuples, nested
dataclasses) and a mismatch raises :class:`ConfigError` naming the dotted key. No value is ever
guessed into shape, except the two YAML quirks a user cannot see: lists become tuples, and
``1e-5`` (which YAML 1.1 reads as a string) becomes a float.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import yaml


class ConfigError(ValueError):
    """A configuration value is missing, unknown, mistyped or impossible."""


def check(ok: bool, key: str, msg: str) -> None:
    """Raise a :class:`ConfigError` naming the dotted ``key`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{key}: {msg}")


_SFT_KEYS = ("tokenizer", "vocab_size", "episodes_per_device", "mistake_rate", "steps",
             "batch_size", "lr", "goal_mix")  # fmt: skip
_PRETRAIN_KEYS = ("goals", "webshop_goals", "search_share", "heldout_per_family",
                  "episodes_per_device", "webshop_episodes_per_device",
                  "heldout_episodes_per_device", "mistake_rate", "steps", "eval_every",
                  "patience", "batch_size", "lr", "time_budget_s", "threads")  # fmt: skip
_PRIORITY_KEYS = ("weights", "alpha", "beta", "rho_clip")

# Keys that moved into a section (issue 54): old dotted key -> its new place. Loading one (in a
# YAML file, a --set override or an Airflow Param) is an error naming the new place, not a
# silent default; the bench's cache keys hash the old names so that cached runs stay found.
MOVED_KEYS: dict[str, str] = {
    **{f"agent.sft_{k}": f"agent.sft.{k}" for k in _SFT_KEYS},
    **{f"agent.pretrain_{k}": f"agent.pretrain.{k}" for k in _PRETRAIN_KEYS},
    **{f"algorithm.priority_{k}": f"algorithm.distrl.priority_{k}" for k in _PRIORITY_KEYS},
}

# Keys of features that were removed: old dotted key -> why, and what to use instead. Loading
# one is an error that says so, rather than an "unknown key" that leaves the reader guessing.
_POINTER_INSTEAD = (
    "the elements observation mode was retired, so the prompt is always AutoUI's "
    "screenshot-only one; the tap-target pointer (agent.pointer, agent.pointer_elements) "
    "replaces it as the way the policy sees the screen's elements"
)
RETIRED_KEYS: dict[str, str] = {
    "agent.observation": _POINTER_INSTEAD,
    "agent.observation_elements": _POINTER_INSTEAD,
    "agent.pretrain.copy_word_ends": (
        "the copy's word starts read from word ends were retired (they lost their A/Bs): every "
        "model's copy reads word starts as the shipped base's does, not after a trailing space"
    ),
}


_YAML11_TRUE = frozenset({"yes", "on", "true"})
_YAML11_FALSE = frozenset({"no", "off", "false"})


def coerce(value: Any, tp: Any, key: str) -> Any:
    """Check ``value`` against the annotation ``tp`` and convert YAML shapes (list -> tuple)."""
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a mapping, got {type(value).__name__}")
        return build_dataclass(tp, value, key)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if isinstance(value, bool):
            # PyYAML reads YAML 1.1, where unquoted no/off/yes/on are booleans; YAML 1.2 writers
            # (DVC's `exp run --set-param` rewrites params.yaml) leave them unquoted. One allowed
            # word with that spelling is what the file meant.
            words = _YAML11_TRUE if value else _YAML11_FALSE
            meant = [a for a in allowed if isinstance(a, str) and a.lower() in words]
            if len(meant) == 1:
                return meant[0]
        if value not in allowed:
            hint = " (YAML reads unquoted no/yes/on/off as booleans: quote it)"
            raise ConfigError(
                f"{key}: must be one of {list(allowed)}, got {value!r}"
                + (hint if isinstance(value, bool) else "")
            )
        return value
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            try:
                return coerce(value, arg, key)
            except ConfigError:
                continue
        raise ConfigError(f"{key}: {value!r} does not match {tp}")
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise ConfigError(f"{key}: expected a list of {len(args)} values, got {value!r}")
        if len(value) != len(args):
            raise ConfigError(f"{key}: expected {len(args)} values, got {len(value)}")
        return tuple(
            coerce(v, a, f"{key}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True))
        )
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str) and _FLOAT_TEXT.fullmatch(value.strip()):
            return float(value)  # YAML 1.1 reads "1e-5" (no dot) as a string
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return value
    if tp is type(None):
        if value is not None:
            raise ConfigError(f"{key}: expected null, got {value!r}")
        return None
    raise ConfigError(f"{key}: unsupported annotation {tp}")  # a bug in this module, not the YAML


def build_dataclass(cls: type, data: Mapping[str, Any], prefix: str) -> Any:
    """An instance of dataclass ``cls`` from ``data``; ``prefix`` is the dotted key of ``data``
    (error messages name the full key). Unknown keys are errors; missing ones take defaults."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    where = f"{prefix}." if prefix else ""
    for name in unknown:
        if f"{where}{name}" in MOVED_KEYS:
            raise ConfigError(f"{where}{name} moved to {MOVED_KEYS[where + name]}")
        if f"{where}{name}" in RETIRED_KEYS:
            raise ConfigError(f"{where}{name}: {RETIRED_KEYS[where + name]}")
    if unknown:
        raise ConfigError(
            f"unknown key {where}{unknown[0]} (valid keys here: {', '.join(sorted(names))})"
        )
    kwargs = {
        name: coerce(value, hints[name], f"{prefix}.{name}" if prefix else name)
        for name, value in data.items()
    }
    return cls(**kwargs)


def apply_override(tree: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``tree[a][b][c] = value`` for ``dotted = "a.b.c"``, creating sections as needed."""
    parts = dotted.split(".")
    node = tree
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {dotted}: {part} is not a section")
        node = child
    node[parts[-1]] = value


def parse_override(text: str) -> tuple[str, Any]:
    """Parse a ``section.key=value`` command-line override; the value is read as YAML."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected section.key=value")
    key, raw = text.split("=", 1)
    return key.strip(), yaml.safe_load(raw)


_FLOAT_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
