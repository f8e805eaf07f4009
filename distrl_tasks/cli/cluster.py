"""``distrl airflow`` (the UI on one machine) and ``distrl cluster up|down|status``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from distrl_tasks.cluster import launcher
from distrl_tasks.cluster.local_airflow import LocalAirflow, default_port, serve
from distrl_tasks.cluster.services import Paths

# the checkout's dags/ (an editable install, as `make install` makes)
DEFAULT_DAGS = Path(__file__).resolve().parents[2] / "dags"


def _add_project_flags(p: argparse.ArgumentParser, home_default: str, home_help: str) -> None:
    p.add_argument(
        "--workdir", default=".", help="project whose params.yaml and data the tasks use (.)"
    )
    p.add_argument("--dags", default=str(DEFAULT_DAGS), help="the DAGs folder (the repo's dags/)")
    p.add_argument("--root", default=home_default, help=home_help)
    p.add_argument("--pool-slots", type=int, default=2, help="slots of the `devices` pool (2)")


def add_cluster_commands(sub: argparse._SubParsersAction) -> None:
    airflow = sub.add_parser(
        "airflow", help="the Airflow UI on this machine (127.0.0.1, auth on; Ctrl-C stops it)"
    )
    _add_project_flags(airflow, "runs/airflow", "AIRFLOW_HOME, relative to --workdir")
    airflow.add_argument("--port", type=int, help="api-server port (default 8080, else free)")
    airflow.set_defaults(func=_cmd_airflow)

    cluster = sub.add_parser(
        "cluster", help="Postgres, Redis, MLflow, Airflow and Celery workers on this machine"
    )
    csub = cluster.add_subparsers(dest="cluster_command", required=True, metavar="ACTION")
    up = csub.add_parser("up", help="start every service on loopback (free ports)")
    _add_project_flags(up, "runs/cluster", "state, data and secrets, relative to --workdir")
    up.set_defaults(func=_cmd_up)
    for name, func, text in (
        ("down", _cmd_down, "stop exactly what `up` started"),
        ("status", _cmd_status, "what runs where (pid, port, alive)"),
    ):
        p = csub.add_parser(name, help=text)
        _add_project_flags(p, "runs/cluster", "state, data and secrets, relative to --workdir")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(func=func)


def _paths(args: argparse.Namespace):
    if args.pool_slots < 1:
        raise ValueError(f"--pool-slots: must be >= 1, got {args.pool_slots}")
    workdir = Path(args.workdir).resolve()
    dags = Path(args.dags).resolve()
    if not dags.is_dir():
        raise FileNotFoundError(f"--dags: {dags} is not a directory")
    root = Path(args.root)
    return Paths(root=(root if root.is_absolute() else workdir / root), workdir=workdir, dags=dags)


def _cmd_airflow(args: argparse.Namespace) -> int:
    paths = _paths(args)
    port = args.port or default_port()
    airflow = LocalAirflow(home=paths.root, workdir=paths.workdir, dags=paths.dags, port=port)
    return serve(airflow, pool_slots=args.pool_slots)


def _cmd_up(args: argparse.Namespace) -> int:
    paths = _paths(args)
    launcher.up(paths, pool_slots=args.pool_slots)
    print(launcher.format_status(launcher.status(paths)))
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    stopped = launcher.down(_paths(args))
    if args.json:
        print(json.dumps(dict(stopped)))
    for name, was_running in stopped:
        print(f"{name:<15} {'stopped' if was_running else 'was not running'}")
    if not stopped:
        print("nothing was running")
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    state = launcher.status(_paths(args))
    print(json.dumps(state, indent=2) if args.json else launcher.format_status(state))
    services = state.get("services") or []
    return 0 if services and all(s["alive"] for s in services) else 3
