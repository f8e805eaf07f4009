"""The trajectory-analysis functions behind the notebook, on hand-built steps with known answers."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from PIL import Image

from distrl_tasks.analysis import episodes as A
from distrl_tasks.analysis.queries import typed_queries
from distrl_tasks.analysis.screenshots import episode_rows
from distrl_tasks.config import load_config
from distrl_tasks.data.shards import write_shard
from distrl_tasks.data.trajectories import discounted_returns
from distrl_tasks.tracking.runs import Tracker

T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
SEARCH = "Search for hotels in Los Angeles"
ALARM = "Set an alarm for 6pm"


def png(color: tuple[int, int, int], size: tuple[int, int] = (10, 20)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def step_frame() -> pd.DataFrame:
    """Three trajectories: a 2-step search success (r1), a 3-step alarm failure (r1), and a
    1-step unlabeled search (r2)."""
    rows = [
        ("a", 0, 1, SEARCH, "DUAL_POINT", [0.5, 0.5], 0.0, "labeled"),
        ("a", 1, 1, SEARCH, "TYPE", None, 1.0, "labeled"),
        ("b", 0, 1, ALARM, "DUAL_POINT", [0.0, 0.0], 0.0, "labeled"),
        ("b", 1, 1, ALARM, "PRESS_BACK", None, 0.0, "labeled"),
        ("b", 2, 1, ALARM, "DUAL_POINT", [0.99, 0.01], 0.0, "labeled"),
        ("c", 0, 2, SEARCH, "PRESS_HOME", None, None, "unlabeled"),
    ]
    cols = ["trajectory_id", "step", "round", "task", "action_type", "touch_point", "reward"]
    frame = pd.DataFrame([r[:7] for r in rows], columns=cols)
    frame["label_status"] = [r[7] for r in rows]
    totals = {"a": 1.0, "b": 0.0, "c": None}
    frame["trajectory_reward"] = frame["trajectory_id"].map(totals)
    return frame.sample(frac=1.0, random_state=0)  # functions must not rely on row order


def shard_rows(tid: str, task: str, shades: list[int], success: bool, rnd: int) -> list[dict]:
    """Schema-complete rows of one labeled trajectory (screens coloured by ``shades``)."""
    n = len(shades)
    rewards = [0.0] * (n - 1) + [1.0 if success else 0.0]
    mc = discounted_returns(np.array(rewards), 0.5)
    rows = []
    for t, shade in enumerate(shades):
        last = t == n - 1
        rows.append(
            {
                "trajectory_id": tid,
                "step": t,
                "round": rnd,
                "task": task,
                "task_set": "general",
                "split": "train",
                "device": "emulator-5554",
                "policy_version": 0,
                "prompt": f"Goal: {task}",
                "action": '"action_type": "DUAL_POINT", "touch_point": "[0.5, 0.25]"',
                "action_type": "DUAL_POINT",
                "invalid": False,
                "touch_point": [0.5, 0.25],
                "screenshot_png": png((shade, 0, 0)),
                "final_screenshot_png": png((0, 0, 250)) if last else None,
                "behavior_log_prob": 0.0,
                "reward": rewards[t],
                "penalty": 0.0,
                "done": last,
                "mc_return": float(mc[t]),
                "trajectory_reward": float(sum(rewards)),
                "evaluator": "oracle",
                "label_status": "labeled",
                "started_at": T0 + dt.timedelta(seconds=t),
                "ended_at": T0 + dt.timedelta(seconds=t, milliseconds=500),
            }
        )
    return rows


def test_task_family_known_and_unknown() -> None:
    assert A.task_family(SEARCH) == "web_search"
    assert A.task_family(ALARM) == "set_alarm"
    assert A.task_family("zzz qqq") == A.UNKNOWN_FAMILY


def test_episodes_length_success_and_unlabeled() -> None:
    eps = A.episodes(step_frame()).set_index("trajectory_id")
    assert eps["length"].to_dict() == {"a": 2, "b": 3, "c": 1}
    assert eps["round"].to_dict() == {"a": 1, "b": 1, "c": 2}
    assert eps["family"].to_dict() == {"a": "web_search", "b": "set_alarm", "c": "web_search"}
    assert eps.loc["a", "success"] is True or eps.loc["a", "success"] == True  # noqa: E712
    assert eps.loc["b", "success"] == False  # noqa: E712
    assert pd.isna(eps.loc["c", "success"])


def test_episodes_names_missing_columns() -> None:
    with pytest.raises(ValueError, match=r"episodes: missing column\(s\) \['label_status'\]"):
        A.episodes(step_frame().drop(columns=["label_status"]))


def test_success_table_and_pivot_hand_computed() -> None:
    eps = A.episodes(step_frame())
    table = A.success_table(eps)
    assert table.loc[("web_search", 1)].tolist() == [1, 1, 1, 1.0]
    assert table.loc[("set_alarm", 1)].tolist() == [1, 1, 0, 0.0]
    # round 2 has one episode and no label: no rate rather than a made-up 0
    assert table.loc[("web_search", 2), ["episodes", "labeled", "successes"]].tolist() == [1, 0, 0]
    assert np.isnan(table.loc[("web_search", 2), "success_rate"])
    pivot = A.success_pivot(eps)
    assert list(pivot.columns) == ["round 1", "round 2"]
    assert pivot.loc["all", "round 1"] == pytest.approx(0.5)
    assert pivot.loc["web_search", "round 1"] == 1.0
    assert pd.isna(pivot.loc["set_alarm", "round 2"])


def test_typed_queries_separate_text_from_navigation_failures() -> None:
    """Round 1: one exact query that succeeded, one typo that failed, one that typed nothing;
    the alarm goal names no query and the unlabeled round-2 search is left out."""
    query_goal = "Search for flights from NYC to Buenos aires"
    rows = [
        ("a", 0, 1, SEARCH, "TYPE", "Hotels in  Los Angeles!", 1.0),  # same words: exact
        ("b", 0, 1, query_goal, "TYPE", "flights from NYC to Buenos airs", 0.0),
        ("b", 1, 1, query_goal, "TYPE", "flights from NYC to Buenos aires", 0.0),  # not first
        ("c", 0, 1, SEARCH, "PRESS_HOME", None, 0.0),
        ("d", 0, 1, ALARM, "TYPE", "6pm", 0.0),
        ("e", 0, 2, SEARCH, "TYPE", "hotels in Los Angeles", None),
    ]
    cols = ["trajectory_id", "step", "round", "task", "action_type", "typed_text", "reward"]
    frame = pd.DataFrame(rows, columns=cols)
    frame["label_status"] = np.where(frame["reward"].isna(), "unlabeled", "labeled")
    frame["trajectory_reward"] = frame.groupby("trajectory_id")["reward"].transform("sum")
    table = typed_queries(frame.sample(frac=1.0, random_state=1))
    assert list(table.index) == [1]
    row = table.loc[1]
    assert row[["trajectories", "typed", "exact"]].tolist() == [3, 2, 1]
    assert row["exact_rate"] == pytest.approx(1 / 3)
    assert row["success_if_exact"] == 1.0
    assert row["success_otherwise"] == 0.0
    with pytest.raises(ValueError, match=r"typed_queries: missing column\(s\) \['typed_text'\]"):
        typed_queries(frame.drop(columns=["typed_text"]))


def test_action_type_counts() -> None:
    counts = A.action_type_counts(step_frame())
    assert counts.loc["DUAL_POINT"].to_dict() == {1: 3, 2: 0}
    assert counts.loc["PRESS_HOME"].to_dict() == {1: 0, 2: 1}
    assert int(counts.to_numpy().sum()) == 6


def test_tap_pixels_convert_yx_to_screen_xy_and_histogram() -> None:
    px = A.tap_pixels(step_frame().sort_values(["trajectory_id", "step"]))
    np.testing.assert_allclose(px, [[540.0, 1200.0], [0.0, 0.0], [10.8, 2376.0]])
    counts = A.tap_histogram(px, bins=(2, 2))  # rows = top/bottom half, columns = left/right
    np.testing.assert_array_equal(counts, [[1, 0], [1, 1]])


def test_tap_pixels_rejects_unnormalized_points() -> None:
    frame = pd.DataFrame({"touch_point": [[0.5, 540.0]]})
    with pytest.raises(ValueError, match="normalized to \\[0, 1\\]"):
        A.tap_pixels(frame)
    assert A.tap_pixels(pd.DataFrame({"touch_point": [None]})).shape == (0, 2)


def test_pick_episodes_alternates_successes_and_failures() -> None:
    eps = pd.DataFrame(
        {"trajectory_id": list("pqrst"), "success": [False, True, pd.NA, True, False]}
    )
    eps["success"] = eps["success"].astype("boolean")
    # successes q, s; the rest (failures and unlabeled) p, r, t
    assert A.pick_episodes(eps, 4) == ["q", "p", "s", "r"]
    assert A.pick_episodes(eps, 10) == ["q", "p", "s", "r", "t"]
    with pytest.raises(ValueError, match="n must be >= 1"):
        A.pick_episodes(eps, 0)


def test_final_labels_and_agreement_by_id() -> None:
    labels = A.final_labels(step_frame())
    assert labels == {"a": "success", "b": "failure", "c": "unlabeled"}
    other = {"a": "success", "b": "success", "c": "failure", "d": "failure"}
    report = A.compare_labels(labels, other, name_a="oracle", name_b="gemini")
    assert report.total == 4  # a, b, c, and d (unlabeled on the oracle side)
    assert report.compared == 2 and report.accuracy == pytest.approx(0.5)
    assert report.unlabeled_a == 2
    assert "oracle \\ gemini" in report.to_markdown()


def test_shards_round_trip_and_episode_rows(tmp_path: Path) -> None:
    write_shard(
        shard_rows("t1", SEARCH, [10, 20], True, 1), tmp_path, round=1, name="s1", feature_dim=0
    )
    write_shard(
        shard_rows("t2", ALARM, [30, 40, 50], False, 2), tmp_path, round=2, name="s2", feature_dim=0
    )
    steps = A.load_steps(tmp_path)
    assert "screenshot_png" not in steps.columns and len(steps) == 5
    eps = A.episodes(steps).set_index("trajectory_id")
    assert eps["length"].to_dict() == {"t1": 2, "t2": 3}
    assert eps["success"].astype(bool).to_dict() == {"t1": True, "t2": False}
    rows = episode_rows(tmp_path, "t2")
    frames = [r["screenshot_png"] for r in rows] + [rows[-1]["final_screenshot_png"]]
    shades = [Image.open(io.BytesIO(f)).getpixel((0, 0)) for f in frames]
    assert shades == [(30, 0, 0), (40, 0, 0), (50, 0, 0), (0, 0, 250)]  # final frame last
    with pytest.raises(KeyError, match="'nope' is not in"):
        episode_rows(tmp_path, "nope")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        A.load_steps(tmp_path / "missing")


def test_resolve_inputs_from_env(tmp_path: Path) -> None:
    (tmp_path / "gem").mkdir()
    inputs = A.resolve_inputs(
        {"DISTRL_WORKDIR": str(tmp_path), "DISTRL_SECOND_LABELS": "gem", "DISTRL_FIGURES": "f"}
    )
    assert inputs.workdir == tmp_path.resolve()
    assert inputs.labeled_dir == tmp_path.resolve() / "data/trajectories/labeled"
    assert inputs.raw_dir == tmp_path.resolve() / "data/trajectories/raw"
    assert inputs.second_labels_dir == tmp_path.resolve() / "gem"
    assert inputs.figures_dir == tmp_path.resolve() / "f"
    (tmp_path / "params.yaml").write_text("data:\n  root: elsewhere\n")
    assert A.resolve_inputs({}, default_workdir=tmp_path).raw_dir == tmp_path.resolve() / (
        "elsewhere/raw"
    )
    with pytest.raises(FileNotFoundError, match="DISTRL_SECOND_LABELS"):
        A.resolve_inputs({"DISTRL_WORKDIR": str(tmp_path), "DISTRL_SECOND_LABELS": "none"})
    with pytest.raises(FileNotFoundError, match="DISTRL_WORKDIR"):
        A.resolve_inputs({"DISTRL_WORKDIR": str(tmp_path / "absent")})


def test_metrics_from_mlflow_and_learning_curves(tmp_path: Path) -> None:
    cfg = load_config(None)
    assert A.load_metrics(cfg, tmp_path).empty
    assert not (tmp_path / "runs" / "mlflow.db").exists()  # looking must not create a store
    tracker = Tracker.from_config(cfg, root=tmp_path)
    for rnd, rate, loss in ((1, 0.25, 2.0), (2, 0.75, 1.5)):
        with tracker.round_run(rnd) as parent, parent.stage_run("train") as run:
            run.log_metrics({"rollout/success_rate": rate, "losses/actor": loss}, step=rnd)
            run.log_metrics({"perf/steps_per_s": 9.0, "critic/brier": 0.3 / rnd}, step=rnd)
    metrics = A.load_metrics(cfg, tmp_path)
    assert set(metrics["stage"]) == {"train"} and set(metrics["round"]) == {1, 2}
    curves = A.learning_curves(metrics)
    # perf/ left out; the critic's calibration in
    assert list(curves.columns) == ["critic/brier", "losses/actor", "rollout/success_rate"]
    assert curves["rollout/success_rate"].to_dict() == {1: 0.25, 2: 0.75}
    # the headline panels hold what has data; the table keeps the rest (critic/brier)
    panels = A.curve_panels(curves)
    assert panels == {"success rate": ["rollout/success_rate"], "policy loss": ["losses/actor"]}
    fig, axes = plt.subplots(1, 2)
    drawn = A.plot_learning_curves(list(axes), curves)
    np.testing.assert_allclose(drawn[1].lines[0].get_ydata(), [2.0, 1.5])
    assert [t.get_text() for t in drawn[0].get_xticklabels()] == ["1", "2"]
    assert drawn[0].get_title() == "success rate"
    with pytest.raises(ValueError, match="2 panels need as many axes, got 1"):
        A.plot_learning_curves([axes[0]], curves)
    plt.close(fig)


def test_learning_curves_read_at_one_round_and_at_fifty() -> None:
    one = pd.DataFrame({"eval/success_rate": [0.5], "rollout/success_rate": [0.4]}, index=[1])
    fig, ax = plt.subplots()
    A.plot_learning_curves([ax], one)
    fig.canvas.draw()
    # one round is one tick at that round, not a dot over fractional ticks (0.945 ... 1.050)
    assert list(ax.get_xticks()) == [1] and ax.get_xlim() == (0.5, 1.5)
    assert [line.get_marker() for line in ax.lines] == ["o", "o"]
    assert ax.get_legend() is not None  # two metrics share the panel
    plt.close(fig)
    rounds = np.arange(1, 51)
    fifty = pd.DataFrame({"eval/success_rate": rounds / 100}, index=rounds)
    fig, ax = plt.subplots()
    A.plot_learning_curves([ax], fifty)
    fig.canvas.draw()
    ticks = [t for t in ax.get_xticks() if 1 <= t <= 50]
    assert 3 <= len(ticks) <= 12 and all(float(t).is_integer() for t in ticks)
    assert ax.lines[0].get_marker() in (None, "None", "")  # fifty points: a line, no dots
    plt.close(fig)


def test_plots_draw_the_computed_numbers(tmp_path: Path) -> None:
    steps = step_frame()
    eps = A.episodes(steps)
    fig, axes = plt.subplots(1, 4)
    heat = A.plot_tap_heatmap(axes[0], steps, bins=(2, 2))
    np.testing.assert_array_equal(heat.images[0].get_array(), [[1, 0], [1, 1]])
    assert heat.images[0].get_extent() == [0, 1080, 2400, 0]  # phone-shaped, top-left origin
    bars = A.plot_success(axes[1], eps)
    # bars per round, families alphabetical; a missing rate draws as an empty bar
    heights = [0.0 if np.isnan(h) else h for h in (p.get_height() for p in bars.patches)]
    assert heights == [0.0, 1.0, 0.0, 0.0]
    assert [t.get_text() for t in bars.texts] == ["0/1", "1/1", "", "0/0"]
    hist = A.plot_lengths(axes[2], eps)
    assert sum(p.get_height() for p in hist.patches) == 3
    shares = A.plot_action_types(axes[3], steps)
    assert sum(p.get_height() for p in shares.patches) == pytest.approx(2.0)  # 1 per round
    saved = A.save_figure(fig, "all", tmp_path / "figs")
    assert saved is not None and saved.stat().st_size > 1000
    assert A.save_figure(fig, "all", None) is None
    plt.close(fig)


@pytest.mark.parametrize(("n", "rows", "cols"), [(1, 1, 1), (4, 1, 4), (5, 2, 4), (20, 5, 4)])
def test_panel_grid_wraps_panels_into_rows_of_four(n, rows, cols) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = A.panel_grid(n)
    try:
        assert len(axes) == n and all(ax.get_visible() for ax in axes)
        hidden = [ax for ax in fig.axes if not ax.get_visible()]
        assert len(fig.axes) == rows * cols and len(hidden) == rows * cols - n
        width, height = fig.get_size_inches()
        assert width == pytest.approx(3.6 * cols) and height == pytest.approx(2.6 * rows)
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="at least one panel"):
        A.panel_grid(0)
