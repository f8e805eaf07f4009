"""Write a container's effective ``params.yaml``: the baked base file plus environment overrides.

Every image bakes the repository's ``params.yaml`` as the *base*. A deployment changes only a few
keys (the MLflow server address, absolute data paths, the device fleet of one worker), so
instead of a second full copy of the file each container states just those keys as environment
variables, one override each::

    DISTRL_SET_TRACKING_URI=tracking.tracking_uri=http://mlflow:5000
    DISTRL_SET_DEVICE_KIND=env.device_kind=emulator

Variables are applied in name order (a later name wins on the same key); an empty variable is
skipped, so ``.env`` can switch an override off. The result is validated with the package's own
loader before it is written (atomically), so a typo fails the container at start with the dotted
key in the message instead of failing a task hours later.

Run at container start by ``docker/entrypoint.sh``; paths come from ``DISTRL_PARAMS_BASE`` and
``DISTRL_PARAMS`` (or ``--base`` / ``--out``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from distrl_tasks.config import ConfigError, config_from_dict, parse_override

PREFIX = "DISTRL_SET_"
HEADER = (
    "# Generated at container start by docker/render_params.py from {base}\n"
    "# plus the DISTRL_SET_* environment variables; edits here are overwritten on restart.\n"
)


def overrides_from_env(environ: Mapping[str, str]) -> list[tuple[str, str, Any]]:
    """The ``(variable, dotted key, value)`` overrides named by ``DISTRL_SET_*``, in name order.

    Raises:
        ConfigError: a variable whose value is not ``section.key=value`` (the message names it).
    """
    out: list[tuple[str, str, Any]] = []
    for name in sorted(environ):
        raw = environ[name]
        if not name.startswith(PREFIX) or not raw.strip():
            continue
        try:
            key, value = parse_override(raw)
        except ConfigError as exc:
            raise ConfigError(f"environment variable {name}: {exc}") from exc
        if not key or "." not in key:
            raise ConfigError(
                f"environment variable {name}: {key!r} is not a dotted section.key "
                "(e.g. tracking.tracking_uri)"
            )
        out.append((name, key, value))
    return out


def apply_overrides(tree: dict[str, Any], overrides: Sequence[tuple[str, str, Any]]) -> None:
    """Set each dotted key in the nested ``tree`` (in place), creating sections as needed."""
    for name, dotted, value in overrides:
        node = tree
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"environment variable {name}: {part} in {dotted} is no section")
            node = child
        node[parts[-1]] = value


def render(base: Path, out: Path, environ: Mapping[str, str]) -> list[str]:
    """Write ``base`` with the environment's overrides applied to ``out``; return the keys set.

    Raises:
        ConfigError: an unreadable or non-mapping base file, a malformed override, or a result
            the package's config loader rejects (unknown key, wrong type, impossible value).
    """
    if not base.is_file():
        raise ConfigError(f"base params file {base} does not exist")
    try:
        tree = yaml.safe_load(base.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"base params file {base} is not valid YAML: {exc}") from exc
    if not isinstance(tree, dict):
        raise ConfigError(f"base params file {base} must hold a mapping of sections")
    overrides = overrides_from_env(environ)
    apply_overrides(tree, overrides)
    config_from_dict(tree)  # validate before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(
        HEADER.format(base=base) + yaml.safe_dump(tree, sort_keys=False), encoding="utf-8"
    )
    os.replace(tmp, out)  # a reader never sees half a file
    return [key for _, key, _ in overrides]


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Command-line entry point; returns 0, or 2 with a one-line error on stderr."""
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=env.get("DISTRL_PARAMS_BASE", "params.base.yaml"))
    parser.add_argument("--out", default=env.get("DISTRL_PARAMS", "params.yaml"))
    args = parser.parse_args(argv)
    try:
        keys = render(Path(args.base), Path(args.out), env)
    except ConfigError as exc:
        print(f"render_params: error: {exc}", file=sys.stderr)
        return 2
    # Keys only: values may be addresses a log reader need not see.
    print(f"render_params: wrote {args.out} (overrides: {', '.join(keys) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
