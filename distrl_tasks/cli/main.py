"""The ``distrl`` command line: the parser, and the one place errors become exit codes.

Each command group lives in its own module of this package and adds itself to the parser with an
``add_<group>_command(s)(sub)`` function; a new group is one module and one line in
:func:`build_parser`. Configuration errors print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence

from distrl_tasks.cli.bench import add_bench_commands
from distrl_tasks.cli.cluster import add_cluster_commands
from distrl_tasks.cli.common import EXIT_USAGE
from distrl_tasks.cli.demo import add_demo_command
from distrl_tasks.cli.episodes import add_episodes_commands
from distrl_tasks.cli.models import add_model_commands
from distrl_tasks.cli.pipeline import add_pipeline_commands
from distrl_tasks.cli.sim import add_sim_commands
from distrl_tasks.config import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="distrl", description="Distributed RL for Android device-control agents."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_sim_commands(sub)
    add_demo_command(sub)
    add_pipeline_commands(sub)
    add_model_commands(sub)
    add_episodes_commands(sub)
    add_bench_commands(sub)
    add_cluster_commands(sub)
    return parser


def _exit_on_sigterm() -> None:
    """Turn SIGTERM (``kill``, Airflow, CI timeouts) into ``SystemExit(143)`` in the main thread.

    Python's default SIGTERM action ends the process without unwinding, so ``finally`` blocks
    never run and a simulator farm started by ``distrl round``/``demo``/``bench`` (its own
    session, by design) would outlive the command.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``distrl`` command; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _exit_on_sigterm()
    try:
        return int(args.func(args))
    except ConfigError as exc:
        print(f"distrl: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        # a newcomer gets one clear line; developers opt into the traceback
        if os.environ.get("DISTRL_DEBUG"):
            raise
        print(f"distrl: error: {exc}", file=sys.stderr)
        print("(set DISTRL_DEBUG=1 to see the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
