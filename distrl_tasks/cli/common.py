"""What every ``distrl`` command group shares: the config flags and how a config is found."""

from __future__ import annotations

import argparse
from pathlib import Path

EXIT_USAGE = 2
DEFAULT_CONFIG = "params.yaml"


def add_config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        help=f"YAML config to load (default: ./{DEFAULT_CONFIG} if present, else built-ins)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help="override one config key, e.g. --set sim.render_scale=0.5 (repeatable)",
    )


def config_path(args: argparse.Namespace) -> str | None:
    """--config if given; else ./params.yaml when the command runs in a project checkout."""
    if args.config:
        return args.config
    return DEFAULT_CONFIG if Path(DEFAULT_CONFIG).is_file() else None
