"""Single episodes to look at: which to show, and their screens with the actions drawn.

:func:`pick_episodes` chooses a few trajectories (successes and failures in turn),
:func:`episode_rows` reads one episode's shard rows, :func:`show_episode` draws it with its
actions (:mod:`distrl_tasks.data.episode_drawing`, shared with the evaluate stage), and
:func:`write_round_episodes` writes a round's episodes as PNG sheets or GIFs (``distrl episodes
show``). These look at single episodes rather than aggregate over all of them, so they live apart
from :mod:`distrl_tasks.analysis.episodes` (which re-exports what the notebook uses).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
from PIL import Image

from distrl_tasks.data.episode_drawing import (
    DRAWN_COLUMNS,
    draw_episode,
    episode_sheet,
    episode_title,
    save_episode,
)
from distrl_tasks.data.shards import read_shards


def pick_episodes(eps: pd.DataFrame, n: int = 3) -> list[str]:
    """Up to ``n`` trajectory ids, alternating successes and failures, oldest first."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    wins = eps.loc[eps["success"].fillna(False).astype(bool), "trajectory_id"].tolist()
    rest = eps.loc[~eps["success"].fillna(False).astype(bool), "trajectory_id"].tolist()
    chosen: list[str] = []
    while len(chosen) < n and (wins or rest):
        for pool in (wins, rest):
            if pool and len(chosen) < n:
                chosen.append(pool.pop(0))
    return chosen


def episode_rows(directory: str | os.PathLike, trajectory_id: str) -> list[dict]:
    """The shard rows of one trajectory (the columns drawing needs), by step.

    Raises:
        KeyError: no such trajectory in the shards.
    """
    table = read_shards(directory, columns=list(DRAWN_COLUMNS)).to_pandas()
    rows = table[table["trajectory_id"] == trajectory_id].sort_values("step")
    if rows.empty:
        raise KeyError(f"trajectory {trajectory_id!r} is not in {directory}")
    return _records(rows)


def _records(frame: pd.DataFrame) -> list[dict]:
    out = frame.to_dict("records")
    for row in out:  # Arrow list columns arrive as numpy arrays; drawing wants plain values
        for key in ("touch_point", "lift_point"):
            value = row.get(key)
            row[key] = None if value is None else [float(v) for v in value]
        if row.get("reward") is not None and pd.isna(row["reward"]):
            row["reward"] = None
    return out


def show_episode(directory: str | os.PathLike, trajectory_id: str, columns: int = 6) -> Image.Image:
    """One episode as a sheet: each screen with its action marked, captioned, then the verdict."""
    rows = episode_rows(directory, trajectory_id)
    return episode_sheet(draw_episode(rows), episode_title(rows), columns=columns)


def write_round_episodes(
    directory: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    round_: int,
    failed_only: bool = False,
    limit: int = 8,
    gif: bool = False,
) -> list[Path]:
    """Write round ``round_``'s episodes (successes and failures in turn, or failures only) as
    ``<out_dir>/r<round>-<trajectory_id>.png`` sheets or ``.gif`` animations.

    Returns:
        The files written, in the order chosen.

    Raises:
        ValueError: ``limit`` < 1.
        LookupError: the round has no episodes here (or none failed, with ``failed_only``).
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    table = read_shards(directory, rounds=[round_], columns=list(DRAWN_COLUMNS)).to_pandas()
    if table.empty:
        raise LookupError(f"round {round_} has no episodes in {directory}")
    by_id = {tid: _records(group) for tid, group in table.groupby("trajectory_id", sort=False)}
    success = {tid: any((r["reward"] or 0) > 0 for r in rows) for tid, rows in by_id.items()}
    eps = pd.DataFrame({"trajectory_id": list(success), "success": list(success.values())})
    if failed_only:
        chosen = [t for t in eps["trajectory_id"] if not success[t]][:limit]
        if not chosen:
            raise LookupError(f"round {round_} has no failed episodes in {directory}")
    else:
        chosen = pick_episodes(eps, limit)
    suffix = ".gif" if gif else ".png"
    return [
        save_episode(by_id[t], Path(out_dir) / f"r{round_:06d}-{t}{suffix}", success=success[t])
        for t in chosen
    ]
