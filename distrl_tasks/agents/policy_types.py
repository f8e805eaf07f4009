"""What goes into and comes out of :class:`~distrl_tasks.agents.policy.AutoUIPolicy`.

Plain data types and the prompt format, kept apart from the policy so that data code (replay
batches, collectors) can build observations without the model's imports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Observation:
    """What the policy sees at one step: the AutoUI prompt and the last frame's features."""

    prompt: str  # "Previous Actions: ... Goal: ..." (see format_prompt)
    image_features: np.ndarray | torch.Tensor  # [D], one screenshot's encoder output


def format_prompt(goal: str, previous_actions: Sequence[str] = (), history: int = 1) -> str:
    """AutoUI's prompt: the last ``history`` actions (the papers keep 1), then the goal."""
    if history < 0:
        raise ValueError(f"history must be >= 0, got {history}")
    recent = list(previous_actions)[-history:] if history else []
    return "Previous Actions: " + " ".join(recent) + " Goal: " + goal


@dataclass(frozen=True)
class Sample:
    """Result of :meth:`AutoUIPolicy.sample`."""

    texts: list[str]  # decoded actions, eos removed
    token_ids: list[list[int]]  # the exact sampled ids (eos included when produced)
    log_probs: torch.Tensor  # [B] behaviour log-probs (see the module docstring)
    canonical: list[bool]  # sampled ids == the tokenizer's encoding of the text


@dataclass(frozen=True)
class Scores:
    """Result of :meth:`AutoUIPolicy.score`; every tensor carries gradient."""

    log_prob: torch.Tensor  # [B] sum of token log-probs
    entropy: torch.Tensor  # [B] sum over the action's positions of the per-token entropy
    token_log_probs: torch.Tensor  # [B, T] zero beyond each action's length
    lengths: torch.Tensor  # [B] scored tokens per action
