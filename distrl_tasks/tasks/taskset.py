"""AitW task sets: the goal lists of the "general" and "webshop" subsets, train and test splits."""

from __future__ import annotations

from pathlib import Path

from distrl_tasks.tasks.task import TASK_SETS

SPLITS = ("train", "test")
AITW_DIR = Path(__file__).resolve().parent / "aitw"


def goal_file(task_set: str, split: str, data_dir: str | Path = "") -> Path:
    """Path of ``<task_set>_<split>.txt`` in ``data_dir`` (default: the packaged AitW files).

    Raises:
        ValueError: unknown task set or split.
    """
    if task_set not in TASK_SETS:
        raise ValueError(f"unknown task set {task_set!r}; expected one of {', '.join(TASK_SETS)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return Path(data_dir or AITW_DIR) / f"{task_set}_{split}.txt"


def load_goals(task_set: str, split: str, data_dir: str | Path = "") -> list[str]:
    """The goals of one task set and split, in file order, duplicates kept (they are sampled).

    Args:
        task_set: "general" or "webshop".
        split: "train" or "test".
        data_dir: folder holding ``<task_set>_<split>.txt``; empty for the packaged files.

    Raises:
        ValueError: unknown task set or split, or the file holds no goals.
        FileNotFoundError: the goal file does not exist.
    """
    path = goal_file(task_set, split, data_dir)
    if not path.is_file():
        raise FileNotFoundError(f"goal file for {task_set}/{split} not found: {path}")
    goals = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    goals = [g for g in goals if g]
    if not goals:
        raise ValueError(f"goal file {path} holds no goals")
    return goals


def unique_goals(goals: list[str]) -> list[str]:
    """``goals`` without repeats, first occurrence order kept."""
    return list(dict.fromkeys(goals))
