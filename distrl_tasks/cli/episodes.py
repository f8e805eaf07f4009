"""``distrl episodes show``: a round's episodes drawn with their actions, as PNG sheets or GIFs."""

from __future__ import annotations

import argparse
from pathlib import Path

from distrl_tasks.cli.common import add_config_flags, config_path
from distrl_tasks.config import load_config
from distrl_tasks.stages import common


def add_episodes_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``episodes show`` on the top-level parser."""
    eps = sub.add_parser("episodes", help="look at collected episodes")
    epsub = eps.add_subparsers(dest="episodes_command", required=True, metavar="{show}")
    show = epsub.add_parser(
        "show",
        help="draw a round's episodes with each step's action marked (PNG sheets or GIFs)",
    )
    show.add_argument("--round", type=int, required=True, help="the collection round")
    show.add_argument("--workdir", default=".", help="project working directory")
    show.add_argument("--failed", action="store_true", help="failed episodes only")
    show.add_argument("--limit", type=int, default=8, help="at most this many episodes (8)")
    show.add_argument("--gif", action="store_true", help="one animated GIF per episode")
    show.add_argument("--out", help="output directory (default: <workdir>/runs/episodes/r<round>)")
    show.add_argument(
        "--raw",
        action="store_true",
        help="read the shards as collected (default: labeled, else raw when not yet labeled)",
    )
    add_config_flags(show)
    show.set_defaults(func=_cmd_show)


def _cmd_show(args: argparse.Namespace) -> int:
    from distrl_tasks.analysis.screenshots import write_round_episodes  # lazy: pandas + PIL
    from distrl_tasks.data.shards import verify_shards  # lazy: pyarrow + pandas

    cfg = load_config(config_path(args), list(args.overrides or []))
    workdir = Path(args.workdir)
    directory = common.raw_dir(cfg, workdir)
    labeled = common.labeled_dir(cfg, workdir)
    if not args.raw and labeled.is_dir():
        if any(args.round in s.rounds for s in verify_shards(labeled).shards):
            directory = labeled
    out = Path(args.out) if args.out else workdir / "runs" / "episodes" / f"r{args.round:06d}"
    written = write_round_episodes(
        directory,
        out,
        round_=args.round,
        failed_only=args.failed,
        limit=args.limit,
        gif=args.gif,
    )
    for path in written:
        print(path)
    return 0
