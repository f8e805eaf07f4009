"""A-RIDE's critic side of a batch: values, bootstraps, the critic's BCE and DPER priorities.

Pure functions of a critic and a :class:`~distrl_tasks.algorithms.batch.Batch` (and the
policy's log-probs where they are needed), shared by :class:`~distrl_tasks.algorithms.distrl.
DistRL`'s loss, its critic-only pre-fit, its priority scoring and its calibration report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from distrl_tasks.agents.critics import StepCritic, weighted_bce
from distrl_tasks.algorithms import functional as F
from distrl_tasks.algorithms.batch import Batch


@dataclass
class Evaluated:
    """Critic and policy quantities of a batch needed by both the loss and the priorities."""

    logits: torch.Tensor  # [B*T, 2] critic logits at s_t (with gradient)
    values: torch.Tensor  # [B, T] V(s_t) = min over the heads, detached
    bootstrap: torch.Tensor  # [B] V after each row's last real step, detached
    rewards: torch.Tensor  # [B, T] reward + penalty
    discounts: torch.Tensor  # [B, T] gamma, 0 after a terminal step


def evaluate(critic: StepCritic, batch: Batch, gamma: float) -> Evaluated:
    """Run the double critic on ``batch``'s ``B`` windows of ``T`` steps.

    ``V(s_t)`` keeps the logits' graph (the critic's loss); the next-state values that give
    each row's bootstrap ``V(s_{last+1})`` are computed without one.
    """
    b, t = batch.batch_size, batch.length
    dim = batch.features.shape[-1]
    device = critic.heads[0][0].weight.device
    logits = critic(
        batch.prompts, batch.prev_features.reshape(-1, dim), batch.features.reshape(-1, dim)
    )
    values = torch.sigmoid(logits.detach()).min(dim=1).values.reshape(b, t)
    with torch.no_grad():
        next_values = critic.values(
            batch.next_prompts,
            batch.features.reshape(-1, dim),
            batch.next_features.reshape(-1, dim),
        ).reshape(b, t)
    last = (batch.mask.sum(dim=1) - 1).clamp(min=0).to(device)
    bootstrap = next_values.gather(1, last.unsqueeze(1)).squeeze(1)
    rewards = (batch.rewards + batch.penalties).to(device)
    discounts = F.discounts_from_dones(batch.dones.to(device), gamma, torch.float32)
    return Evaluated(logits, values, bootstrap, rewards, discounts)


def critic_bce(ev: Evaluated, vs: torch.Tensor, batch: Batch, mask: torch.Tensor) -> torch.Tensor:
    """Weighted BCE of both heads toward ``clip(vs, 0, 1)`` (``vs``: ``[B, T]`` Retrace
    targets) on the critic rows' real steps, each weighted by its window's importance weight."""
    device = mask.device
    sel = (mask & batch.critic_rows.to(device).unsqueeze(1)).reshape(-1)
    step_w = batch.weights.to(device).unsqueeze(1).expand_as(mask).reshape(-1)[sel]
    return weighted_bce(ev.logits[sel], vs.reshape(-1)[sel].clamp(0.0, 1.0), step_w)


def priorities(
    ev: Evaluated,
    log_probs: torch.Tensor,
    batch: Batch,
    mask: torch.Tensor,
    *,
    weights: tuple[float, float, float],
    rho_clip: float,
) -> np.ndarray:
    """``[B]`` DPER priorities ``w1 mean|delta| + w2 mean rho + w3 mean(-log pi)`` of the rows
    (:func:`functional.dper_priority`), from one-step TD errors under ``ev``'s values."""
    deltas = F.td_errors(ev.rewards, ev.values, ev.bootstrap, ev.discounts, mask=mask)
    w1, w2, w3 = weights
    prio = F.dper_priority(
        deltas,
        log_probs.detach(),
        batch.behavior_log_probs.to(deltas.device),
        w1=w1,
        w2=w2,
        w3=w3,
        rho_clip=rho_clip,
        mask=mask,
    )
    return prio.cpu().numpy().astype(np.float64)
