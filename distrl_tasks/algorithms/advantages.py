"""DigiRL advantages and filters, and the DistRL replay priority; pure tensor functions.

Re-exported by :mod:`distrl_tasks.algorithms.functional`; the conventions there (``[B, T]``
batch-first tensors, right-padded ``mask``, padding ignored and 0 in outputs) hold here too.

* DigiRL (Bai et al. 2024, https://arxiv.org/abs/2406.11896): doubly-robust step advantage with
  the ``1/H`` filter, instruction advantage ``r_H - V_instr(c)`` and the top-p curriculum filter
  (also the trajectory filter of Filtered BC).
* DistRL (Wang et al. 2024, https://arxiv.org/abs/2410.14803): the DPER trajectory priority and
  the sampled policy entropy it uses.

Advantages, filters and priorities are computed under ``torch.no_grad()`` (they select or weight
data, they are not differentiated through); :func:`sampled_entropy` keeps the graph because it is
also a loss term.
"""

from __future__ import annotations

import torch
from torch import Tensor

from distrl_tasks.algorithms._validation import (
    check_float_b,
    check_float_bt,
    check_mask,
    check_non_negative,
    check_positive,
    check_unit_interval,
    masked_mean,
)


def _valid_or_all(mask: Tensor | None, like: Tensor) -> Tensor:
    """Validated bool mask; all-valid when ``mask`` is None."""
    if mask is None:
        return torch.ones(like.shape, dtype=torch.bool, device=like.device)
    return check_mask(mask, like)


def _check_horizon(horizon: object) -> int:
    """A horizon must be a positive int (bools rejected)."""
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"horizon must be a positive int, got {horizon!r}")
    return horizon


@torch.no_grad()
def step_advantage(
    values: Tensor,
    next_values: Tensor,
    rewards: Tensor,
    *,
    lam: float,
    final_rewards: Tensor | None = None,
    horizon: int | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """DigiRL's doubly-robust step-level advantage.

    Bai et al. 2024, https://arxiv.org/abs/2406.11896::

        A(s_h, a_h, c) = lam^(H-h) r_H + (1 - lam^(H-h) r_H) (V(s_{h+1}) + r_h - V(s_h))

    Steps are numbered ``h = 1..L`` (``h = t + 1`` for column ``t``), so with the default
    ``H = L`` (each row's own number of valid steps) the final step gets the full Monte-Carlo
    weight ``lam^0 = 1`` and earlier steps lean progressively on the one-step critic estimate.
    Pass ``horizon`` to use a fixed episode horizon ``H`` instead (every valid step needs
    ``h <= H``). Computed without gradient.

    Args:
        values: ``[B, T]`` step-critic values ``V(s_h, c)``.
        next_values: ``[B, T]`` step-critic values of the next states ``V(s_{h+1}, c)``.
        rewards: ``[B, T]`` per-step rewards ``r_h``.
        lam: ``lambda`` in ``[0, 1]``: how fast the Monte-Carlo term fades away from the end.
        final_rewards: ``[B]`` final reward ``r_H`` of each trajectory; defaults to the reward at
            each row's last valid step (0 for an empty row).
        horizon: Fixed ``H``; defaults to each row's number of valid steps.
        mask: Optional ``[B, T]`` right-padded validity mask.

    Returns:
        ``[B, T]`` advantages (dtype/device of ``values``); 0 at padded steps.

    Raises:
        ValueError: On bad shapes, dtypes, devices, masks, ``lam``, or a ``horizon`` shorter
            than a trajectory.
    """
    check_float_bt("values", values)
    check_float_bt("next_values", next_values, like=values)
    check_float_bt("rewards", rewards, like=values)
    lam = check_unit_interval("lam", lam)
    valid = _valid_or_all(mask, values)
    lengths = valid.sum(dim=1)
    if final_rewards is None:
        last = (lengths - 1).clamp(min=0).unsqueeze(1)
        final_rewards = torch.where(lengths > 0, rewards.gather(1, last).squeeze(1), 0.0)
    else:
        check_float_b("final_rewards", final_rewards, like=values[:, 0])
    if horizon is None:
        big_h = lengths.to(values.dtype)
    else:
        horizon = _check_horizon(horizon)
        if int(lengths.max()) > horizon:
            raise ValueError(
                f"horizon={horizon} is shorter than a trajectory of {int(lengths.max())} steps"
            )
        big_h = torch.full_like(values[:, 0], float(horizon))
    steps = torch.arange(1, values.shape[1] + 1, device=values.device, dtype=values.dtype)
    # Clamp keeps the padded columns (h > H) from producing lam^-k blow-ups before masking.
    mc_weight = lam ** (big_h.unsqueeze(1) - steps).clamp(min=0) * final_rewards.unsqueeze(1)
    advantages = mc_weight + (1.0 - mc_weight) * (next_values + rewards - values)
    return torch.where(valid, advantages, 0.0)


@torch.no_grad()
def step_advantage_filter(
    advantages: Tensor, horizon: int, *, mask: Tensor | None = None
) -> Tensor:
    """DigiRL's hard filter on step advantages: keep ``A(s_h, a_h) > 1 / H``.

    Replaces AWR's ``exp(A / beta)`` weights with a 0/1 selection (Bai et al. 2024,
    https://arxiv.org/abs/2406.11896); the actor is then trained by log-likelihood on the kept
    steps.

    Args:
        advantages: ``[B, T]`` step advantages from :func:`step_advantage`.
        horizon: The episode horizon ``H`` (a positive int).
        mask: Optional ``[B, T]`` right-padded validity mask; padded steps are never kept.

    Returns:
        ``[B, T]`` bool selection.

    Raises:
        ValueError: On a bad shape, mask or horizon.
    """
    check_float_bt("advantages", advantages)
    horizon = _check_horizon(horizon)
    valid = _valid_or_all(mask, advantages)
    return valid & (advantages > 1.0 / horizon)


@torch.no_grad()
def instruction_advantage(final_rewards: Tensor, instruction_values: Tensor) -> Tensor:
    """DigiRL's instruction-level advantage ``A(c) = r_H - V_instr(c)``.

    Bai et al. 2024, https://arxiv.org/abs/2406.11896: how much better a trajectory did than the
    instruction critic expected for its task; fed to :func:`top_p_filter` as the curriculum
    score. Computed without gradient.

    Args:
        final_rewards: ``[B]`` final reward ``r_H`` of each trajectory.
        instruction_values: ``[B]`` instruction-critic values ``V_instr(c)``.

    Returns:
        ``[B]`` advantages.

    Raises:
        ValueError: On mismatched shapes, dtypes or devices.
    """
    check_float_b("final_rewards", final_rewards)
    check_float_b("instruction_values", instruction_values, like=final_rewards)
    return final_rewards - instruction_values


@torch.no_grad()
def top_p_filter(scores: Tensor, p: float) -> Tensor:
    """Keep the top fraction ``p`` of trajectories: ``score >= quantile(scores, 1 - p)``.

    The curriculum filter of DigiRL (scores = :func:`instruction_advantage`) and the trajectory
    filter of Filtered BC (scores = trajectory rewards), Bai et al. 2024,
    https://arxiv.org/abs/2406.11896. The quantile is linear-interpolated in float64, matching
    ``numpy.quantile(scores, 1 - p)``. Ties at the threshold are all kept, so with binary rewards
    more than a fraction ``p`` may pass (every success, for instance).

    Args:
        scores: ``[B]`` float per-trajectory scores (B may be 0); NaN is rejected.
        p: Fraction to keep, in ``(0, 1]``; ``p = 1`` keeps everything.

    Returns:
        ``[B]`` bool selection on ``scores.device``.

    Raises:
        ValueError: On a bad shape or dtype, NaN scores, or ``p`` outside ``(0, 1]``.
    """
    check_float_b("scores", scores)
    p = check_unit_interval("p", p)
    if p == 0.0:
        raise ValueError("p must be a number in (0, 1], got 0")
    if bool(torch.isnan(scores).any()):
        raise ValueError("scores must not contain NaN")
    if scores.numel() == 0:
        return torch.zeros(0, dtype=torch.bool, device=scores.device)
    scores64 = scores.to(torch.float64)
    threshold = torch.quantile(scores64, 1.0 - p)
    return scores64 >= threshold


def sampled_entropy(log_probs: Tensor, *, mask: Tensor | None = None) -> Tensor:
    """Per-trajectory mean of ``H_t = -log pi(a_t|s_t)``, the sampled policy entropy.

    ``-log pi(a_t|s_t)`` is a one-sample estimate of ``H(pi(.|s_t))``, unbiased when ``a_t`` was
    drawn from ``pi`` itself; for replayed actions from an older policy it is the surprisal term
    DistRL's DPER uses (Wang et al. 2024, https://arxiv.org/abs/2410.14803). Keeps the autograd
    graph, so it can serve as a (naive) entropy bonus in a loss.

    Args:
        log_probs: ``[B, T]`` log-probabilities ``log pi(a_t|s_t)`` of the taken actions.
        mask: Optional ``[B, T]`` right-padded validity mask; a row with no valid step gives 0.

    Returns:
        ``[B]`` masked means over valid steps.

    Raises:
        ValueError: On a bad shape, dtype or mask.
    """
    check_float_bt("log_probs", log_probs)
    valid = None if mask is None else check_mask(mask, log_probs)
    return masked_mean(-log_probs, valid)


@torch.no_grad()
def dper_priority(
    td_errors: Tensor,
    target_log_probs: Tensor,
    behavior_log_probs: Tensor,
    *,
    w1: float = 1.0,
    w2: float = 1.0,
    w3: float = 1.0,
    rho_clip: float | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """DistRL's Distributed Prioritized Experience Replay (DPER) trajectory priority.

    Wang et al. 2024, https://arxiv.org/abs/2410.14803::

        p(tau) = w1 * mean_t |delta_t| + w2 * mean_t rho_t + w3 * mean_t H_t

    with ``rho_t = exp(target_log_probs_t - behavior_log_probs_t)`` and
    ``H_t = -target_log_probs_t``; means run over each row's valid steps. The paper's grid-searched
    weights are unpublished, hence the neutral defaults of 1. Computed without gradient.

    Args:
        td_errors: ``[B, T]`` TD errors ``delta_t`` (e.g. from ``functional.td_errors``).
        target_log_probs: ``[B, T]`` ``log pi(a_t|s_t)`` under the current policy.
        behavior_log_probs: ``[B, T]`` ``log mu(a_t|s_t)`` stored at collection time.
        w1: Weight of the mean absolute TD error (>= 0).
        w2: Weight of the mean importance ratio (>= 0).
        w3: Weight of the mean sampled entropy (>= 0).
        rho_clip: Optional upper bound on ``rho_t`` so one stale step cannot dominate; > 0.
        mask: Optional ``[B, T]`` right-padded validity mask; an empty row gets priority 0.

    Returns:
        ``[B]`` priorities (dtype/device of ``td_errors``).

    Raises:
        ValueError: On bad shapes, dtypes, devices, masks, weights or ``rho_clip``.
    """
    check_float_bt("td_errors", td_errors)
    check_float_bt("target_log_probs", target_log_probs, like=td_errors)
    check_float_bt("behavior_log_probs", behavior_log_probs, like=td_errors)
    w1 = check_non_negative("w1", w1)
    w2 = check_non_negative("w2", w2)
    w3 = check_non_negative("w3", w3)
    valid = None if mask is None else check_mask(mask, td_errors)
    rhos = torch.exp(target_log_probs - behavior_log_probs)
    if rho_clip is not None:
        rhos = rhos.clamp(max=check_positive("rho_clip", rho_clip))
    return (
        w1 * masked_mean(td_errors.abs(), valid)
        + w2 * masked_mean(rhos, valid)
        + w3 * masked_mean(-target_log_probs, valid)
    )
