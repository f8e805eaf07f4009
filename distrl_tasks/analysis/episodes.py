"""Trajectory analysis behind ``notebooks/trajectory_analysis.ipynb``: tables and plots.

The notebook stays a thin sequence of calls into this module so that every number it shows is
computed by tested code. Inputs are a pipeline working directory (see
:mod:`distrl_tasks.stages.common` for its layout): Parquet shards under ``<data.root>/labeled``
(and ``raw``) and the MLflow store of ``cfg.tracking``.

Plot helpers draw on a matplotlib ``Axes`` passed in and return it, so they work headless
(``Agg``) and can be checked in tests. Choosing example episodes and laying out their screenshots
live in :mod:`distrl_tasks.analysis.screenshots` and are re-exported here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from distrl_tasks.analysis.screenshots import (
    pick_episodes,  # noqa: F401
    show_episode,  # noqa: F401
)
from distrl_tasks.config import Config, load_config
from distrl_tasks.data.schema import COLUMN_NAMES
from distrl_tasks.data.shards import read_shards
from distrl_tasks.evaluators.agreement import AgreementReport, agreement
from distrl_tasks.stages.common import labeled_dir, raw_dir, resolve
from distrl_tasks.tasks.parse import parse_goal
from distrl_tasks.tasks.task import GoalParseError

SCREEN_W, SCREEN_H = 1080, 2400  # logical screen of the simulated (and AitW) phones, pixels
UNKNOWN_FAMILY = "unknown"
# Images, encoder features and prompts are heavy and read per episode only, when shown.
HEAVY_COLUMNS = frozenset(
    {"prompt", "screenshot_png", "final_screenshot_png", "image_features", "final_image_features"}
)
STEP_COLUMNS = tuple(c for c in COLUMN_NAMES if c not in HEAVY_COLUMNS)


@dataclass(frozen=True)
class Inputs:
    """Where the notebook reads from.

    Attributes:
        workdir: the pipeline working directory.
        config: the configuration the run used.
        labeled_dir: shards after labeling (what the learner trains on).
        raw_dir: shards as collected.
        second_labels_dir: shards of a second labeling of the same trajectories, or ``None``.
        figures_dir: where figures are also saved as PNG, or ``None``.
    """

    workdir: Path
    config: Config
    labeled_dir: Path
    raw_dir: Path
    second_labels_dir: Path | None
    figures_dir: Path | None


def resolve_inputs(
    env: Mapping[str, str] | None = None, default_workdir: str | Path = "."
) -> Inputs:
    """Read the notebook's inputs from environment variables.

    ``DISTRL_WORKDIR`` (default ``default_workdir``), ``DISTRL_CONFIG`` (default
    ``<workdir>/params.yaml`` when it exists, else the built-in defaults) and
    ``DISTRL_SECOND_LABELS`` (a shard directory, relative to the workdir; optional) and
    ``DISTRL_FIGURES`` (a directory to save every figure to as PNG; optional).

    Raises:
        FileNotFoundError: the workdir or the second-labels directory does not exist.
    """

    env = os.environ if env is None else env
    workdir = Path(env.get("DISTRL_WORKDIR") or default_workdir).resolve()
    if not workdir.is_dir():
        raise FileNotFoundError(f"DISTRL_WORKDIR: {workdir} is not a directory")
    cfg_path = env.get("DISTRL_CONFIG") or (
        workdir / "params.yaml" if (workdir / "params.yaml").is_file() else None
    )
    cfg = load_config(resolve(workdir, cfg_path) if cfg_path else None)
    second = env.get("DISTRL_SECOND_LABELS") or None
    second_dir = resolve(workdir, second) if second else None
    if second_dir is not None and not second_dir.is_dir():
        raise FileNotFoundError(f"DISTRL_SECOND_LABELS: {second_dir} is not a directory")
    figures = env.get("DISTRL_FIGURES") or None
    return Inputs(
        workdir,
        cfg,
        labeled_dir(cfg, workdir),
        raw_dir(cfg, workdir),
        second_dir,
        resolve(workdir, figures) if figures else None,
    )


def load_steps(directory: str | os.PathLike) -> pd.DataFrame:
    """One row per step (no images or features) from the verified shards of ``directory``.

    Raises:
        FileNotFoundError: the directory does not exist.
    """
    if not Path(directory).is_dir():
        raise FileNotFoundError(f"shard directory {directory} does not exist")
    return read_shards(directory, columns=list(STEP_COLUMNS)).to_pandas()


def task_family(goal: str) -> str:
    """The task family of a goal text, or ``"unknown"`` for text no family parses."""
    try:
        return parse_goal(goal).family
    except GoalParseError:
        return UNKNOWN_FAMILY


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: missing column(s) {missing}; got {list(frame.columns)}")


def episodes(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per trajectory: round, task, family, length, label and success.

    ``success`` is True/False for labeled trajectories and missing (``pd.NA``) otherwise, so
    rates are computed over labeled trajectories only.
    """
    _require(steps, ("trajectory_id", "step", "round", "task", "label_status"), "episodes")
    if steps.empty:
        cols = ["trajectory_id", "round", "task", "family", "length", "label_status", "success"]
        return pd.DataFrame(columns=cols)
    ordered = steps.sort_values(["trajectory_id", "step"])
    last = ordered.groupby("trajectory_id", sort=True).tail(1).set_index("trajectory_id")
    out = pd.DataFrame(
        {
            "round": last["round"].astype(int),
            "task": last["task"],
            "family": last["task"].map(task_family),
            "length": ordered.groupby("trajectory_id", sort=True).size(),
            "label_status": last["label_status"],
        }
    )
    for extra in ("policy_version", "device", "evaluator"):
        if extra in last.columns:
            out[extra] = last[extra]
    reward = last["trajectory_reward"] if "trajectory_reward" in last else last["reward"]
    labeled = out["label_status"] == "labeled"
    out["success"] = pd.Series(pd.NA, index=out.index, dtype="boolean")
    out.loc[labeled, "success"] = reward[labeled].fillna(0).astype(float) > 0
    return out.reset_index().sort_values(["round", "trajectory_id"], ignore_index=True)


def success_table(eps: pd.DataFrame, by: Sequence[str] = ("family", "round")) -> pd.DataFrame:
    """Episodes, labeled episodes, successes and success rate per group of ``by``.

    The rate is over labeled episodes (NaN where none is labeled).
    """
    _require(eps, (*by, "success"), "success_table")
    grouped = eps.groupby(list(by), sort=True)["success"]
    table = pd.DataFrame(
        {
            "episodes": grouped.size().astype(int),
            "labeled": grouped.count().astype(int),
            "successes": grouped.sum().astype(int),
        }
    )
    # plain float with NaN (not pd.NA) where nothing is labeled, so plots and isnan just work
    rate = table["successes"] / table["labeled"].where(table["labeled"] > 0).astype(float)
    table["success_rate"] = rate.astype(float)
    return table


def success_pivot(eps: pd.DataFrame) -> pd.DataFrame:
    """Success rate with families as rows and rounds as columns, plus an ``all`` row."""
    by_family = success_table(eps)["success_rate"].unstack("round")
    overall = success_table(eps, by=("round",))["success_rate"]
    by_family.loc["all"] = overall
    by_family.columns = [f"round {r}" for r in by_family.columns]
    return by_family


def action_type_counts(steps: pd.DataFrame) -> pd.DataFrame:
    """Step counts per action type (rows) and round (columns)."""
    _require(steps, ("action_type", "round"), "action_type_counts")
    return pd.crosstab(steps["action_type"], steps["round"]).rename_axis(
        index="action_type", columns="round"
    )


def tap_pixels(steps: pd.DataFrame, screen: tuple[int, int] = (SCREEN_W, SCREEN_H)) -> np.ndarray:
    """Touch points of tap-like steps as ``[N, 2]`` screen pixels ``(x, y)``.

    ``touch_point`` is stored ``[y, x]`` normalized to [0, 1]; steps without one are skipped.
    """
    _require(steps, ("touch_point",), "tap_pixels")
    points = [p for p in steps["touch_point"] if p is not None and len(p) == 2]
    if not points:
        return np.zeros((0, 2))
    yx = np.asarray(points, dtype=np.float64)
    if not np.isfinite(yx).all() or (yx < 0).any() or (yx > 1).any():
        raise ValueError("touch_point values must be finite and normalized to [0, 1]")
    return np.stack([yx[:, 1] * screen[0], yx[:, 0] * screen[1]], axis=1)


def tap_histogram(
    pixels: np.ndarray,
    bins: tuple[int, int] = (18, 40),
    screen: tuple[int, int] = (SCREEN_W, SCREEN_H),
) -> np.ndarray:
    """Counts of taps on a ``bins = (columns, rows)`` grid; row 0 is the top of the screen."""
    counts, _, _ = np.histogram2d(
        pixels[:, 1], pixels[:, 0], bins=(bins[1], bins[0]), range=((0, screen[1]), (0, screen[0]))
    )
    return counts


def plot_tap_heatmap(ax: Any, steps: pd.DataFrame, bins: tuple[int, int] = (18, 40)) -> Any:
    """Tap density on a phone-shaped canvas (1080x2400, origin top-left, as on the device)."""
    pixels = tap_pixels(steps)
    counts = tap_histogram(pixels, bins)
    image = ax.imshow(
        counts,
        extent=(0, SCREEN_W, SCREEN_H, 0),
        cmap="magma",
        interpolation="nearest",
        aspect="equal",
    )
    ax.figure.colorbar(image, ax=ax, label="taps")
    ax.set_title(f"Tap heat map ({len(pixels)} taps)")
    ax.set_xlabel("x (px)")
    ax.set_ylabel("y (px)")
    return ax


def plot_success(ax: Any, eps: pd.DataFrame) -> Any:
    """Grouped bars: success rate per family, one bar per round, labeled ``successes/labeled``."""
    table = success_table(eps)
    pivot = table["success_rate"].unstack("round")
    pivot.plot.bar(ax=ax, rot=30, ylim=(0, 1.15))
    for container, rnd in zip(ax.containers, pivot.columns, strict=True):
        labels = []
        for family in pivot.index:
            row = table.loc[(family, rnd)] if (family, rnd) in table.index else None
            labels.append("" if row is None else f"{int(row['successes'])}/{int(row['labeled'])}")
        ax.bar_label(container, labels=labels, fontsize="small")
    ax.set_ylabel("success rate")
    ax.set_title("Success by task family and round")
    ax.legend(title="round")
    return ax


def plot_lengths(ax: Any, eps: pd.DataFrame) -> Any:
    """Histogram of episode lengths, one series per round."""
    top = int(eps["length"].max()) if len(eps) else 1
    edges = np.arange(0.5, top + 1.5)
    for rnd, group in eps.groupby("round", sort=True):
        ax.hist(group["length"], bins=edges, alpha=0.6, label=f"round {rnd}")
    ax.set_xlabel("steps")
    ax.set_ylabel("episodes")
    ax.set_title("Episode length")
    ax.legend()
    return ax


def plot_action_types(ax: Any, steps: pd.DataFrame) -> Any:
    """Stacked bars of action-type shares per round."""
    counts = action_type_counts(steps)
    (counts / counts.sum()).T.plot.bar(ax=ax, stacked=True, rot=0)
    ax.set_ylabel("share of steps")
    ax.set_title("Action types")
    ax.legend(fontsize="small", bbox_to_anchor=(1.0, 1.0), loc="upper left")
    return ax


def final_labels(steps: pd.DataFrame) -> dict[str, str]:
    """``{trajectory_id: "success" | "failure" | "unlabeled"}`` from the last step's label."""
    eps = episodes(steps)
    return {
        tid: "unlabeled" if pd.isna(ok) else ("success" if ok else "failure")
        for tid, ok in zip(eps["trajectory_id"], eps["success"], strict=True)
    }


def compare_labels(
    a: Mapping[str, str], b: Mapping[str, str], *, name_a: str = "a", name_b: str = "b"
) -> AgreementReport:
    """Agreement of two labelings of the same trajectories, matched by id.

    A trajectory only one side has counts as ``unlabeled`` on the other side.
    """
    ids = sorted(set(a) | set(b))
    return agreement(
        [a.get(i, "unlabeled") for i in ids],
        [b.get(i, "unlabeled") for i in ids],
        name_a=name_a,
        name_b=name_b,
    )


def load_metrics(cfg: Config, workdir: str | os.PathLike) -> pd.DataFrame:
    """Every metric point of the run's MLflow experiment, one row each.

    Columns: ``run_id, run_name, round, stage, key, step, value``. Empty when a local store or
    the experiment does not exist yet (nothing is created).
    """
    from distrl_tasks.tracking.runs import (  # lazy: mlflow
        ROUND_TAG,
        RUN_NAME_TAG,
        STAGE_TAG,
        Tracker,
    )

    cols = ["run_id", "run_name", "round", "stage", "key", "step", "value"]
    uri = cfg.tracking.tracking_uri
    if uri.startswith("sqlite:///"):
        db = Path(uri[len("sqlite:///") :].partition("?")[0])
        if not (db if db.is_absolute() else Path(workdir) / db).is_file():
            return pd.DataFrame(columns=cols)
    tracker = Tracker.from_config(cfg, root=workdir)
    experiment = tracker.client.get_experiment_by_name(cfg.tracking.experiment)
    if experiment is None:
        return pd.DataFrame(columns=cols)
    rows = []
    for run in tracker.client.search_runs([experiment.experiment_id], max_results=5000):
        tags = run.data.tags
        rnd = int(tags[ROUND_TAG]) if ROUND_TAG in tags else None
        for key in run.data.metrics:
            for m in tracker.client.get_metric_history(run.info.run_id, key):
                name, stage = tags.get(RUN_NAME_TAG, ""), tags.get(STAGE_TAG, "")
                rows.append((run.info.run_id, name, rnd, stage, key, int(m.step), float(m.value)))
    frame = pd.DataFrame(rows, columns=cols)
    return frame.sort_values(["key", "step", "run_name"], ignore_index=True)


def learning_curves(metrics: pd.DataFrame, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """Metric values by step (the round, for stage metrics): rows = step, columns = key.

    ``keys`` may hold exact names or namespace prefixes ending in ``/`` (default: success
    rates, losses, train metrics and the critic's calibration). The last logged value of a step
    wins.
    """
    keys = keys or (
        "rollout/success_rate",
        "eval/success_rate",
        "losses/",
        "train/",
        "critic/",  # calibration: V against its targets and the measured success
    )
    _require(metrics, ("key", "step", "value"), "learning_curves")
    wanted = metrics[
        metrics["key"].map(
            lambda k: any(k == w or (w.endswith("/") and k.startswith(w)) for w in keys)
        )
    ]
    return wanted.pivot_table(index="step", columns="key", values="value", aggfunc="last")


def panel_grid(
    n: int, columns: int = 4, panel: tuple[float, float] = (3.6, 2.6)
) -> tuple[Any, list]:
    """A figure of ``n`` panels in rows of at most ``columns`` (a screen's width), unused ones
    hidden; returns ``(figure, axes)`` with ``len(axes) == n``."""
    if n < 1:
        raise ValueError(f"panel_grid: need at least one panel, got {n}")
    cols = min(columns, n)
    rows = -(-n // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(panel[0] * cols, panel[1] * rows), squeeze=False)
    axes = list(grid.flat)
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


# The headline figure: a few panels, each a few comparable metrics (the full table has the rest).
CURVE_PANELS: dict[str, tuple[str, ...]] = {
    "success rate": ("eval/success_rate", "rollout/success_rate", "critic/success_rate"),
    "policy loss": ("losses/policy", "losses/actor"),
    "critic loss": ("losses/value", "losses/critic_step", "losses/critic_instruction"),
    "entropy": ("train/entropy", "losses/entropy"),
    "update health": ("train/clip_frac", "train/kept_frac", "train/ess"),
    "critic calibration": ("critic/v0_mean", "critic/v0_target_mean"),
}
MARKED_POINTS = 12  # up to this many rounds a curve shows its points and every round's tick


def curve_panels(curves: pd.DataFrame) -> dict[str, list[str]]:
    """The :data:`CURVE_PANELS` that have data in ``curves``, each with its present keys."""
    present = {k for k in curves.columns if curves[k].notna().any()}
    panels = {t: [k for k in keys if k in present] for t, keys in CURVE_PANELS.items()}
    return {t: keys for t, keys in panels.items() if keys}


def plot_learning_curves(
    axes: Sequence[Any], curves: pd.DataFrame, panels: Mapping[str, Sequence[str]] | None = None
) -> list[Any]:
    """One panel per entry of ``panels`` (default :func:`curve_panels`), a line per metric.

    The x axis is the round: integer ticks at every round while there are few (one round
    reads as one point at its round, not as a dot over fractional ticks), automatic beyond.
    """
    panels = curve_panels(curves) if panels is None else panels
    if len(axes) < len(panels):
        raise ValueError(f"{len(panels)} panels need as many axes, got {len(axes)}")
    used = []
    for ax, (title, keys) in zip(axes, panels.items(), strict=False):
        rounds: set[int] = set()
        for key in keys:
            series = curves[key].dropna()
            rounds |= {int(r) for r in series.index}
            few = len(series) <= MARKED_POINTS
            ax.plot(series.index, series.values, marker="o" if few else None, label=key)
        ax.set_title(title)
        ax.set_xlabel("round")
        if rounds and len(rounds) <= MARKED_POINTS:
            ax.set_xticks(sorted(rounds))
            ax.set_xlim(min(rounds) - 0.5, max(rounds) + 0.5)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if len(keys) > 1:
            ax.legend(fontsize="small")
        used.append(ax)
    return used


def save_figure(fig: Any, name: str, directory: str | os.PathLike | None) -> Path | None:
    """Write ``fig`` as ``<directory>/<name>.png`` when a directory is given (else do nothing)."""
    if directory is None:
        return None
    path = Path(directory) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80, bbox_inches="tight")
    return path


def save_image(image: Any, name: str, directory: str | os.PathLike | None) -> Path | None:
    """Write a PIL image as ``<directory>/<name>.png`` when a directory is given."""
    if directory is None:
        return None
    path = Path(directory) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG", optimize=True)
    return path
