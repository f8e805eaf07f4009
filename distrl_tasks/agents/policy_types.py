"""What comes out of :class:`~distrl_tasks.agents.policy.AutoUIPolicy`: samples and scores.

What goes in (:class:`~distrl_tasks.protocol.observation.Observation` and the prompt format)
is on the ground floor, :mod:`distrl_tasks.protocol`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


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
