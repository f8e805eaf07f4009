"""What a policy sees at one step: the AutoUI prompt and the screenshot's features.

Environments build observations and policies read them, so the type sits on the ground floor
where neither has to import the other (and no environment loads the model stack to make one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from distrl_tasks.protocol.ui_dump import Element

if TYPE_CHECKING:  # annotations only: the ground floor never loads torch
    import torch


@dataclass(frozen=True)
class Observation:
    """The AutoUI prompt and the last frame's features."""

    prompt: str  # "Previous Actions: ... Goal: ..." (see format_prompt)
    image_features: np.ndarray | torch.Tensor  # [D], one screenshot's encoder output
    screenshot_png: bytes | None = None  # the frame itself, for policies that read pixels (VLMs)
    # the screen's actionable elements a tap may point at (agent.pointer); () = write coordinates
    elements: tuple[Element, ...] = ()


def format_prompt(goal: str, previous_actions: Sequence[str] = (), history: int = 1) -> str:
    """AutoUI's prompt: the last ``history`` actions (the papers keep 1), then the goal."""
    if history < 0:
        raise ValueError(f"history must be >= 0, got {history}")
    recent = list(previous_actions)[-history:] if history else []
    return "Previous Actions: " + " ".join(recent) + " Goal: " + goal


def goal_of_prompt(prompt: str) -> str:
    """The goal inside a :func:`format_prompt` string: what follows the last ``" Goal: "``; the
    whole prompt when it has no goal mark (a caller's own prompt)."""
    _, mark, goal = prompt.rpartition(" Goal: ")
    return goal if mark else prompt
