"""A-RIDE's actor loss as a pure tensor function (used by :mod:`distrl_tasks.algorithms.distrl`).

See that module's docstring for the algorithm; this holds the loss so that it can be tested
against hand-computed values without a policy or a critic.
"""

from __future__ import annotations

import torch

from distrl_tasks.algorithms.base import masked_average

__all__ = ["actor_loss", "loss_diagnostics"]


def actor_loss(
    log_probs: torch.Tensor,
    behavior_log_probs: torch.Tensor,
    entropy: torch.Tensor,
    pg_advantages: torch.Tensor,
    invalid: torch.Tensor,
    weights: torch.Tensor,
    mask: torch.Tensor,
    *,
    entropy_coef: float,
    invalid_coef: float,
    rho_bar: float = 1.0,
    positive_only: bool = False,
    ratio_clip: float = 0.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """A-RIDE's actor loss (see the module docstring); averages run over real steps.

    Args:
        log_probs: ``[B, T]`` ``log pi(a_t|s_t)`` with gradient.
        behavior_log_probs: ``[B, T]`` ``log mu(a_t|s_t)``.
        entropy: ``[B, T]`` policy entropy at ``s_t`` with gradient.
        pg_advantages: ``[B, T]`` ``min(rho_bar, rho_t) * A_t`` (treated as constants).
        invalid: ``[B, T]`` bool, action failed to parse.
        weights: ``[B]`` prioritized-replay importance weights.
        mask: ``[B, T]`` bool, real steps.
        entropy_coef: ``beta``.
        invalid_coef: ``lambda_inv``.
        rho_bar: Truncation of the importance ratio (invalid-action term, ``positive_only``).
        positive_only: Replace ``min(rho_bar, rho) * A`` by ``min(rho_bar, rho) * 1[A > 0]``.
        ratio_clip: ``eps`` of the trust-region mask (0 = off).

    Returns:
        ``(loss, terms)`` with ``terms`` holding ``losses/policy``, ``losses/entropy`` (the
        mean entropy, a bonus) and ``losses/invalid`` (the estimated ``P_inv``).
    """
    w = weights.to(log_probs.dtype).unsqueeze(1).expand_as(log_probs)
    lp_const = log_probs.detach()
    ratio = torch.exp(lp_const - behavior_log_probs)
    rho = ratio.clamp(max=rho_bar)
    # sign(min(rho_bar, rho) * A) = sign(A) since rho > 0, so the sign of coef is A's
    coef = pg_advantages.detach()
    if ratio_clip > 0:
        gone = ((coef > 0) & (ratio > 1 + ratio_clip)) | ((coef < 0) & (ratio < 1 - ratio_clip))
        coef = torch.where(gone, torch.zeros_like(coef), coef)
    if positive_only:
        coef = rho * (coef > 0).to(rho.dtype)
    policy = masked_average(-w * coef * log_probs, mask)
    ent = masked_average(w * entropy, mask)
    rho_tilde = torch.exp(log_probs - lp_const) * rho
    p_invalid = masked_average(w * invalid.to(log_probs.dtype) * rho_tilde, mask)
    loss = policy - entropy_coef * ent + invalid_coef * p_invalid
    return loss, {"losses/policy": policy, "losses/entropy": ent, "losses/invalid": p_invalid}


@torch.no_grad()
def loss_diagnostics(
    log_probs: torch.Tensor,
    behavior_log_probs: torch.Tensor,
    pg_advantages: torch.Tensor,
    targets: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    actor_mask: torch.Tensor,
    *,
    rho_bar: float,
) -> dict[str, float]:
    """What one A-RIDE loss saw, all ``[B, T]`` inputs (``mask``: real steps, ``actor_mask``:
    the actor rows' real steps).

    ``train/ess`` is the normalised effective sample size of the truncated ratios
    ``(sum c)^2 / (n sum c^2)`` with ``c = min(rho_bar, rho)``; ``train/clip_frac`` the share of
    steps with ``rho > rho_bar``; ``train/adv_mean`` and ``train/adv_pos_frac`` the advantages
    the actor was given; ``train/value_mean`` and ``train/target_mean`` the critic's ``V`` and
    its Retrace targets.
    """
    rhos = torch.exp(log_probs - behavior_log_probs)[mask]
    clipped = rhos.clamp(max=rho_bar)
    ess = clipped.sum() ** 2 / (len(clipped) * (clipped**2).sum()).clamp(min=1e-12)
    return {
        "train/ess": float(ess),
        "train/clip_frac": float((rhos > rho_bar).float().mean()),
        "train/adv_mean": float(masked_average(pg_advantages, actor_mask)),
        "train/adv_pos_frac": float(masked_average((pg_advantages > 0).float(), actor_mask)),
        "train/value_mean": float(masked_average(values, mask)),
        "train/target_mean": float(masked_average(targets, mask)),
    }
