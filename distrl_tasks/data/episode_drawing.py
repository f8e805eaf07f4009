"""Episodes drawn with their actions: each screenshot marked with what the policy did on it.

One function family serves every place a person looks at an episode: the notebook, ``distrl
episodes show`` (PNGs or an animated GIF) and the evaluate stage's MLflow images. A frame shows
the observation at a readable width, the tap point (a ring), a swipe (an arrow from touch to
lift), typed text and pressed buttons (a banner over the screen's bottom), and a caption with
the step's action; the final screenshot closes the episode with its verdict.

Inputs are shard rows (:mod:`distrl_tasks.data.schema` columns) as plain dicts, so the same code
draws stored shards and the rows an evaluation holds in memory.
"""

from __future__ import annotations

import io
import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from distrl_tasks.protocol.actions import TAP_DISTANCE

# What drawing reads of an episode's rows: no encoder features or prompts, which are heavy.
DRAWN_COLUMNS = (
    "trajectory_id",
    "round",
    "step",
    "task",
    "action",
    "action_type",
    "invalid",
    "touch_point",
    "lift_point",
    "typed_text",
    "reward",
    "done",
    "screenshot_png",
    "final_screenshot_png",
)
FRAME_WIDTH = 360  # px: a 1080-wide phone screen at a third, where its text stays legible
CAPTION_LINES = 3
COLUMNS = 6  # frames per row of an episode sheet
_TAP = (230, 30, 60)  # marks: a red that stands out on the light app themes
_SWIPE = (20, 110, 230)
_BANNER = (20, 20, 20, 210)
_KEY_NAMES = {
    "PRESS_BACK": "BACK",
    "PRESS_HOME": "HOME",
    "PRESS_ENTER": "ENTER",
    "STATUS_TASK_COMPLETE": "DONE (task complete)",
    "TASK_IMPOSSIBLE": "GIVE UP (task impossible)",
}


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def describe_action(row: Mapping[str, Any]) -> str:
    """One line saying what a step did, e.g. ``TAP (y 0.52, x 0.30)`` or ``TYPE "kindle"``."""
    if row.get("invalid"):
        raw = str(row.get("action") or "").replace("\n", " ")
        return f"INVALID output: {raw[:80]}"
    kind = str(row.get("action_type") or "")
    touch, lift = row.get("touch_point"), row.get("lift_point")
    if kind == "DUAL_POINT" and touch is not None:
        if lift is None or _is_tap(touch, lift):
            return f"TAP (y {touch[0]:.2f}, x {touch[1]:.2f})"
        return f"SWIPE (y {touch[0]:.2f}, x {touch[1]:.2f}) -> (y {lift[0]:.2f}, x {lift[1]:.2f})"
    if kind == "TYPE":
        return f'TYPE "{row.get("typed_text") or ""}"'
    return _KEY_NAMES.get(kind, kind or "?")


def _is_tap(touch: Sequence[float], lift: Sequence[float]) -> bool:
    """The parser's tap rule, on stored ``[y, x]`` points."""
    return math.hypot(lift[0] - touch[0], lift[1] - touch[1]) < TAP_DISTANCE


def _open(png: bytes, width: int) -> Image.Image:
    try:
        img = Image.open(io.BytesIO(png)).convert("RGB")
    except Exception as exc:  # PIL raises several types for bad data
        raise ValueError(f"not a readable screenshot: {exc}") from exc
    height = max(1, round(img.height * width / img.width))
    return img.resize((width, height), Image.Resampling.LANCZOS)


def _arrow(draw: ImageDraw.ImageDraw, a: tuple[float, float], b: tuple[float, float]) -> None:
    draw.line([a, b], fill=_SWIPE, width=6)
    angle = math.atan2(b[1] - a[1], b[0] - a[0])
    for side in (-0.5, 0.5):
        tip = (b[0] - 22 * math.cos(angle + side), b[1] - 22 * math.sin(angle + side))
        draw.line([b, tip], fill=_SWIPE, width=6)


def _banner(img: Image.Image, text: str) -> None:
    """A dark band with white text over the screen's bottom (typed text, pressed key)."""
    overlay = Image.new("RGBA", img.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    font = _font(18)
    lines = textwrap.wrap(text, width=max(10, img.width // 10))[:3] or [""]
    band = 12 + 24 * len(lines)
    top = img.height - band - 40
    draw.rectangle([0, top, img.width, top + band], fill=_BANNER)
    for i, line in enumerate(lines):
        draw.text((10, top + 6 + 24 * i), line, font=font, fill=(255, 255, 255, 255))
    img.paste(Image.alpha_composite(img.convert("RGBA"), overlay).convert("RGB"))


def mark_action(screen: Image.Image, row: Mapping[str, Any]) -> Image.Image:
    """``screen`` (a copy) with the step's action drawn on it."""
    img = screen.copy()
    draw = ImageDraw.Draw(img)
    w, h = img.size
    if row.get("invalid"):
        draw.rectangle([0, 0, w - 1, h - 1], outline=_TAP, width=8)
        _banner(img, "invalid model output")
        return img
    kind = str(row.get("action_type") or "")
    touch, lift = row.get("touch_point"), row.get("lift_point")
    if kind == "DUAL_POINT" and touch is not None:
        a = (touch[1] * w, touch[0] * h)  # stored points are [y, x] in [0, 1]
        if lift is None or _is_tap(touch, lift):
            r = max(10, w // 22)
            draw.ellipse([a[0] - r, a[1] - r, a[0] + r, a[1] + r], outline=_TAP, width=5)
            draw.line([a[0] - r // 2, a[1], a[0] + r // 2, a[1]], fill=_TAP, width=3)
            draw.line([a[0], a[1] - r // 2, a[0], a[1] + r // 2], fill=_TAP, width=3)
        else:
            _arrow(draw, a, (lift[1] * w, lift[0] * h))
    elif kind == "TYPE":
        _banner(img, f'typed: "{row.get("typed_text") or ""}"')
    elif kind in _KEY_NAMES:
        _banner(img, f"pressed: {_KEY_NAMES[kind]}")
    return img


def _captioned(img: Image.Image, caption: str, *, colour: tuple[int, int, int]) -> Image.Image:
    font = _font(15)
    lines = textwrap.wrap(caption, width=max(12, img.width // 8))[:CAPTION_LINES]
    out = Image.new("RGB", (img.width, img.height + 8 + 20 * CAPTION_LINES), "white")
    out.paste(img, (0, 0))
    draw = ImageDraw.Draw(out)
    for i, line in enumerate(lines):
        draw.text((4, img.height + 4 + 20 * i), line, font=font, fill=colour)
    return out


def draw_episode(
    rows: Sequence[Mapping[str, Any]],
    *,
    success: bool | None = None,
    width: int = FRAME_WIDTH,
) -> list[Image.Image]:
    """One captioned frame per step, the action marked, then the final screen with the verdict.

    Args:
        rows: the episode's shard rows (any order; sorted by ``step``).
        success: the verdict to print on the final frame (default: from the rows' ``reward``).
        width: frame width in pixels.

    Raises:
        ValueError: no rows, or a screenshot that is not an image.
    """
    if not rows:
        raise ValueError("draw_episode needs at least one step")
    steps = sorted(rows, key=lambda r: int(r.get("step", 0)))
    frames = []
    for row in steps:
        screen = _open(row["screenshot_png"], width)
        caption = f"step {int(row.get('step', 0))}: {describe_action(row)}"
        frames.append(_captioned(mark_action(screen, row), caption, colour=(0, 0, 0)))
    final = steps[-1].get("final_screenshot_png")
    if success is None:
        success = any((r.get("reward") or 0) > 0 for r in steps)
    if final:
        verdict = "final screen: SUCCESS" if success else "final screen: FAILURE"
        colour = (0, 120, 40) if success else _TAP
        frames.append(_captioned(_open(final, width), verdict, colour=colour))
    return frames


def episode_sheet(
    frames: Sequence[Image.Image], title: str = "", columns: int = COLUMNS
) -> Image.Image:
    """Frames in rows of ``columns`` under a title line (the goal and its outcome)."""
    if not frames:
        raise ValueError("episode_sheet needs at least one frame")
    fw = max(f.width for f in frames)
    fh = max(f.height for f in frames)
    cols = min(columns, len(frames))
    rows = math.ceil(len(frames) / cols)
    head = 34 if title else 0
    gap = 6
    sheet = Image.new("RGB", (cols * fw + (cols - 1) * gap, head + rows * (fh + gap)), "white")
    draw = ImageDraw.Draw(sheet)
    if title:
        draw.text((6, 6), textwrap.shorten(title, width=cols * fw // 10), font=_font(20), fill=0)
    for i, frame in enumerate(frames):
        r, c = divmod(i, cols)
        sheet.paste(frame, (c * (fw + gap), head + r * (fh + gap)))
    return sheet


def episode_title(rows: Sequence[Mapping[str, Any]], success: bool | None = None) -> str:
    """``"SUCCESS | <goal> | 7 steps"`` for a sheet's first line."""
    first = rows[0]
    if success is None:
        success = any((r.get("reward") or 0) > 0 for r in rows)
    verdict = "SUCCESS" if success else "FAILURE"
    return f"{verdict} | {first.get('task', '')} | {len(rows)} steps"


def save_episode(
    rows: Sequence[Mapping[str, Any]],
    path: str | os.PathLike,
    *,
    success: bool | None = None,
    width: int = FRAME_WIDTH,
    gif_ms: int = 900,
    title: str | None = None,
) -> Path:
    """Write one episode as a sheet (``.png``, under ``title``, default :func:`episode_title`)
    or an animation (``.gif``), atomically.

    Raises:
        ValueError: an unknown suffix, no rows, or an unreadable screenshot.
    """
    path = Path(path)
    frames = draw_episode(rows, success=success, width=width)
    tmp = path.with_name(f".{path.name}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".png":
        heading = title if title is not None else episode_title(rows, success)
        episode_sheet(frames, heading).save(tmp, format="PNG", optimize=True)
    elif path.suffix == ".gif":
        first, *rest = frames
        first.save(tmp, format="GIF", save_all=True, append_images=rest, duration=gif_ms, loop=0)
    else:
        raise ValueError(f"episodes are written as .png or .gif, not {path.suffix!r}")
    os.replace(tmp, path)
    return path
