"""Episodes drawn with their actions: where the marks land, the captions, sheets, GIFs, the CLI."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageChops

from distrl_tasks.analysis.screenshots import write_round_episodes
from distrl_tasks.cli.main import main
from distrl_tasks.data.episode_drawing import (
    FRAME_WIDTH,
    describe_action,
    draw_episode,
    episode_sheet,
    mark_action,
    save_episode,
)
from distrl_tasks.data.shards import write_shard
from distrl_tasks.data.trajectories import discounted_returns

T0 = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
W, H = 360, 800  # a phone-shaped screen already at the frame width: marks land on exact pixels


def png(color=(255, 255, 255), size=(W, H)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def blank() -> Image.Image:
    return Image.new("RGB", (W, H), "white")


def changed_box(before: Image.Image, after: Image.Image) -> tuple[int, int, int, int] | None:
    return ImageChops.difference(before, after).getbbox()


def tap(y: float, x: float, **kw) -> dict:
    return {"action_type": "DUAL_POINT", "touch_point": [y, x], "lift_point": [y, x], **kw}


def test_a_tap_is_a_ring_centred_on_its_point() -> None:
    box = changed_box(blank(), mark_action(blank(), tap(0.5, 0.25)))
    assert box is not None
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    assert abs(cx - 0.25 * W) <= 2 and abs(cy - 0.5 * H) <= 2  # points are [y, x]
    assert box[2] - box[0] < W / 5  # a mark, not a repaint of the screen
    assert describe_action(tap(0.5, 0.25)) == "TAP (y 0.50, x 0.25)"


def test_a_swipe_is_an_arrow_from_touch_to_lift() -> None:
    row = {"action_type": "DUAL_POINT", "touch_point": [0.8, 0.5], "lift_point": [0.2, 0.5]}
    box = changed_box(blank(), mark_action(blank(), row))
    assert box is not None
    assert box[1] <= 0.2 * H + 4 and box[3] >= 0.8 * H - 4  # spans the whole stroke
    assert box[2] - box[0] < 60  # a vertical arrow: narrow
    assert describe_action(row) == "SWIPE (y 0.80, x 0.50) -> (y 0.20, x 0.50)"


@pytest.mark.parametrize(
    ("row", "caption"),
    [
        ({"action_type": "TYPE", "typed_text": "kindle paperwhite"}, 'TYPE "kindle paperwhite"'),
        ({"action_type": "PRESS_BACK"}, "BACK"),
        ({"action_type": "PRESS_ENTER"}, "ENTER"),
        ({"action_type": "STATUS_TASK_COMPLETE"}, "DONE (task complete)"),
    ],
)
def test_typed_text_and_buttons_are_a_banner_at_the_bottom(row, caption) -> None:
    box = changed_box(blank(), mark_action(blank(), row))
    assert box is not None and box[1] > H / 2 and box[3] <= H  # over the screen's bottom half
    assert describe_action(row) == caption


def test_an_invalid_output_is_framed_and_quoted() -> None:
    row = {"invalid": True, "action": "Action Decision: garbage", "action_type": "TASK_IMPOSSIBLE"}
    marked = np.asarray(mark_action(blank(), row))
    assert tuple(marked[2, W // 2]) == (230, 30, 60)  # a red frame around the screen
    assert describe_action(row) == "INVALID output: Action Decision: garbage"


def episode(tid: str, success: bool, n: int = 3, rnd: int = 1) -> list[dict]:
    """Schema-complete shard rows: taps, then a TYPE, on screens of distinct greys."""
    rewards = [0.0] * (n - 1) + [1.0 if success else 0.0]
    returns = discounted_returns(np.array(rewards), 0.5)
    rows = []
    for t in range(n):
        last = t == n - 1
        typed = last and n > 1
        rows.append(
            {
                "trajectory_id": tid,
                "step": t,
                "round": rnd,
                "task": f"Search for item {tid}",
                "task_set": "general",
                "split": "train",
                "device": "emulator-5554",
                "policy_version": 0,
                "prompt": "Goal",
                "action": "raw",
                "action_type": "TYPE" if typed else "DUAL_POINT",
                "invalid": False,
                "touch_point": None if typed else [0.5, 0.5],
                "lift_point": None if typed else [0.5, 0.5],
                "typed_text": f"item {tid}" if typed else None,
                "screenshot_png": png((200 - 20 * t,) * 3),
                "final_screenshot_png": png((0, 0, 250)) if last else None,
                "behavior_log_prob": 0.0,
                "reward": rewards[t],
                "penalty": 0.0,
                "done": last,
                "mc_return": float(returns[t]),
                "trajectory_reward": float(sum(rewards)),
                "evaluator": "oracle",
                "label_status": "labeled",
                "started_at": T0 + dt.timedelta(seconds=t),
                "ended_at": T0 + dt.timedelta(seconds=t, milliseconds=500),
            }
        )
    return rows


def test_an_episode_is_one_captioned_frame_per_step_then_the_verdict() -> None:
    rows = episode("a", success=True, n=3)
    frames = draw_episode(list(reversed(rows)))  # any order: drawn by step
    assert len(frames) == 4 and {f.width for f in frames} == {FRAME_WIDTH}
    assert len({f.height for f in frames}) == 1  # same size: a GIF and a sheet need it
    grey = [np.asarray(f)[10, 10].tolist() for f in frames]
    assert grey == [[200] * 3, [180] * 3, [160] * 3, [0, 0, 250]]  # by step, final last
    final_caption = np.asarray(frames[-1])[H:, :, :]
    green = (final_caption == (0, 120, 40)).all(axis=-1).any()
    assert green  # "SUCCESS" written in green under the final screen
    failed = draw_episode(episode("b", success=False, n=2))
    assert (np.asarray(failed[-1])[H:] == (230, 30, 60)).all(axis=-1).any()
    with pytest.raises(ValueError, match="at least one step"):
        draw_episode([])
    with pytest.raises(ValueError, match="not a readable screenshot"):
        draw_episode([{**rows[0], "screenshot_png": b"nope"}])


def test_sheet_png_and_gif_files(tmp_path: Path) -> None:
    rows = episode("a", success=False, n=7)
    sheet = episode_sheet(draw_episode(rows), "FAILURE | goal", columns=5)
    assert sheet.width == 5 * FRAME_WIDTH + 4 * 6
    path = save_episode(rows, tmp_path / "ep.png")
    with Image.open(path) as img:
        assert img.size[0] == 6 * FRAME_WIDTH + 5 * 6  # eight frames: rows of six
    gif = save_episode(rows, tmp_path / "ep.gif")
    with Image.open(gif) as img:
        assert img.n_frames == 8 and img.info["loop"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ep.gif", "ep.png"]  # no temp left
    with pytest.raises(ValueError, match=r"\.png or \.gif"):
        save_episode(rows, tmp_path / "ep.jpg")


def test_distrl_episodes_show_writes_a_rounds_failures(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data" / "trajectories" / "raw"
    rows = episode("win", True) + episode("lose1", False) + episode("lose2", False)
    write_shard(rows, data, round=1, name="s1", feature_dim=0)
    write_shard(episode("later", False, rnd=2), data, round=2, name="s2", feature_dim=0)
    both = write_round_episodes(data, tmp_path / "all", round_=1, limit=2)
    assert [p.name for p in both] == ["r000001-win.png", "r000001-lose1.png"]  # one of each
    code = main(
        ["episodes", "show", "--round", "1", "--failed", "--gif", "--workdir", str(tmp_path)]
    )
    assert code == 0
    printed = capsys.readouterr().out.split()
    out = tmp_path / "runs" / "episodes" / "r000001"
    assert printed == [str(out / "r000001-lose1.gif"), str(out / "r000001-lose2.gif")]
    with Image.open(printed[0]) as img:
        assert img.n_frames == 4
    with pytest.raises(LookupError, match="round 3 has no episodes"):
        write_round_episodes(data, tmp_path / "x", round_=3)
    write_shard(episode("only-win", True, rnd=4), data, round=4, name="s4", feature_dim=0)
    with pytest.raises(LookupError, match="round 4 has no failed episodes"):
        write_round_episodes(data, tmp_path / "x", round_=4, failed_only=True)
    with pytest.raises(ValueError, match="limit must be >= 1"):
        write_round_episodes(data, tmp_path / "x", round_=1, limit=0)
