"""Example episodes for the trajectory notebook: which to show and their screenshots in a row.

:func:`pick_episodes` chooses a few trajectories (successes and failures in turn),
:func:`episode_frames` reads every screenshot of one from the shards (the final one included) and
:func:`screenshot_strip` lays frames side by side in one image. These look at single episodes
rather than aggregate over all of them, and they are the only image handling of the analysis, so
they live apart from :mod:`distrl_tasks.analysis.episodes` (which re-exports them for the notebook).
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

import pandas as pd
from PIL import Image

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


def episode_frames(directory: str | os.PathLike, trajectory_id: str) -> list[bytes]:
    """PNG bytes of every observation of one trajectory, the final one included.

    Raises:
        KeyError: no such trajectory in the shards.
    """
    table = read_shards(
        directory, columns=["trajectory_id", "step", "screenshot_png", "final_screenshot_png"]
    ).to_pandas()
    rows = table[table["trajectory_id"] == trajectory_id].sort_values("step")
    if rows.empty:
        raise KeyError(f"trajectory {trajectory_id!r} is not in {directory}")
    frames = list(rows["screenshot_png"])
    final = rows["final_screenshot_png"].iloc[-1]
    return frames + ([final] if final is not None else [])


def screenshot_strip(frames: Sequence[bytes], height: int = 240, gap: int = 4) -> Image.Image:
    """Frames scaled to ``height`` and laid side by side on a white strip."""
    if not frames:
        raise ValueError("screenshot_strip needs at least one frame")
    images = []
    for i, data in enumerate(frames):
        try:
            img = Image.open(io.BytesIO(data)).convert("RGB")
        except Exception as exc:
            raise ValueError(f"frame {i} is not a readable image: {exc}") from exc
        images.append(img.resize((max(1, round(img.width * height / img.height)), height)))
    width = sum(im.width for im in images) + gap * (len(images) - 1)
    strip = Image.new("RGB", (width, height), "white")
    x = 0
    for im in images:
        strip.paste(im, (x, 0))
        x += im.width + gap
    return strip
