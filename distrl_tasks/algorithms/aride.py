"""A-RIDE's actor loss as a pure tensor function (used by :mod:`distrl_tasks.algorithms.distrl`).

See that module's docstring for the algorithm; this holds the loss so that it can be tested
against hand-computed values without a policy or a critic.
"""

from __future__ import annotations

import torch

from distrl_tasks.algorithms.base import masked_average

__all__ = ["actor_loss"]


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
