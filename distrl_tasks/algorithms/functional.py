"""Pure tensor functions for RL targets: returns, V-trace, Retrace and (re-exported) advantages.

Conventions (the RL-math contract in docs/architecture.md, "Contracts"):

* Tensors are batch-first: ``[B, T]`` for per-step quantities, ``[B]`` for per-trajectory ones.
* ``discounts[b, t] = gamma * (1 - done[b, t])`` (see :func:`discounts_from_dones`): a zero
  discount ends the trajectory at step ``t``, so one row may hold several episodes back to back.
* ``bootstrap_value[b]`` is ``V(s_T)``, the value of the state after the last valid step of row
  ``b``; it only matters when that step is not terminal.

Padding. Functions taking ``mask`` accept a ``[B, T]`` validity mask (bool or 0/1), 1 for real
steps and 0 for padding. Rows must be right-padded (ones then zeros). Padded entries of every
input are ignored entirely (they may hold garbage, even NaN); where a function takes
``bootstrap_value``, the last valid step of a row bootstraps from it exactly as if the row had
been cut there; and every ``[B, T]`` output is exactly 0 at padded positions.

Gradients. Returns, V-trace/Retrace outputs and advantages are regression or policy-gradient
*targets*: they are computed under ``torch.no_grad()`` and come back detached, so a loss never
back-propagates through its own target.

The backward recursions loop over ``T`` in Python (vectorised over ``B``); horizons here are short
(10 to 20 steps) so this costs microseconds, and it keeps the code a line-for-line match of the
equations. The unit tests check it against independent scalar sum-of-products references.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from distrl_tasks.algorithms._validation import (
    as_float_like,
    check_batch,
    check_float_bt,
    check_mask,
    check_positive,
    check_unit_interval,
)
from distrl_tasks.algorithms.advantages import (
    dper_priority,
    instruction_advantage,
    sampled_entropy,
    step_advantage,
    step_advantage_filter,
    top_p_filter,
)

__all__ = [
    "OffPolicyReturns",
    "discounts_from_dones",
    "dper_priority",
    "instruction_advantage",
    "mc_returns",
    "retrace",
    "sampled_entropy",
    "step_advantage",
    "step_advantage_filter",
    "td_errors",
    "top_p_filter",
    "vtrace",
]


class OffPolicyReturns(NamedTuple):
    """Targets produced by :func:`vtrace` and :func:`retrace`; every field is ``[B, T]``.

    Attributes:
        vs: Value targets (V-trace ``v_s`` / Retrace ``G_t``) for the critic regression.
        pg_advantages: Importance-weighted advantages for the policy-gradient term.
        clipped_rhos: The truncated importance weights ``min(rho_bar, rho_t)`` (0 on padding).
    """

    vs: Tensor
    pg_advantages: Tensor
    clipped_rhos: Tensor


def discounts_from_dones(dones: Tensor, gamma: float, dtype: torch.dtype | None = None) -> Tensor:
    """Per-step discounts ``d_t = gamma * (1 - done_t)``.

    Args:
        dones: ``[B, T]`` bool or 0/1 tensor; ``done_t`` means the episode ended at step ``t``.
        gamma: Discount factor in ``[0, 1]``.
        dtype: Output dtype; defaults to ``dones.dtype`` when floating point, else torch's
            default float dtype.

    Returns:
        ``[B, T]`` discounts on ``dones.device``.

    Raises:
        ValueError: If ``dones`` is not ``[B, T]`` or ``gamma`` is outside ``[0, 1]``.
    """
    if not isinstance(dones, Tensor) or dones.dim() != 2:
        shape = list(dones.shape) if isinstance(dones, Tensor) else type(dones).__name__
        raise ValueError(f"dones must be a [B, T] tensor, got {shape}")
    gamma = check_unit_interval("gamma", gamma)
    if dtype is None:
        dtype = dones.dtype if dones.is_floating_point() else torch.get_default_dtype()
    return gamma * (1.0 - dones.to(dtype))


def _prepare_mask(mask: Tensor | None, like: Tensor) -> Tensor:
    """Validated bool mask; all-valid when ``mask`` is None."""
    if mask is None:
        return torch.ones(like.shape, dtype=torch.bool, device=like.device)
    return check_mask(mask, like)


def _next_valid(mask: Tensor) -> Tensor:
    """``[B, T]`` bool: whether step ``t + 1`` exists and is valid."""
    return torch.cat([mask[:, 1:], torch.zeros_like(mask[:, :1])], dim=1)


def _shift_left(x: Tensor, next_valid: Tensor, fill: Tensor) -> Tensor:
    """``x[:, t + 1]`` where that step is valid, else ``fill[b]`` (the bootstrap)."""
    shifted = torch.cat([x[:, 1:], x[:, :1]], dim=1)
    return torch.where(next_valid, shifted, fill.unsqueeze(1).expand_as(x))


@torch.no_grad()
def mc_returns(
    rewards: Tensor, dones: Tensor, gamma: float, *, mask: Tensor | None = None
) -> Tensor:
    """Discounted Monte-Carlo reward-to-go that resets at episode ends.

    ``G_t = r_t + gamma * (1 - done_t) * G_{t+1}`` with ``G_T = 0``, i.e.
    ``G_t = sum_{k=t}^{end} gamma^{k-t} r_k`` where ``end`` is the first done step at or after
    ``t`` (or the last valid step). No bootstrapping: a row cut short without a done is treated
    as ending there (DigiRL stores ``mc_return`` this way, https://arxiv.org/abs/2406.11896).
    Computed without gradient (it is a regression target).

    Args:
        rewards: ``[B, T]`` float rewards ``r_t``.
        dones: ``[B, T]`` bool or 0/1 episode-end flags.
        gamma: Discount factor in ``[0, 1]``.
        mask: Optional ``[B, T]`` right-padded validity mask; padded steps are ignored.

    Returns:
        ``[B, T]`` returns, dtype and device of ``rewards``; 0 at padded steps.

    Raises:
        ValueError: On bad shapes, dtypes, devices, masks or ``gamma``.
    """
    check_float_bt("rewards", rewards)
    discounts = discounts_from_dones(as_float_like("dones", dones, rewards), gamma)
    valid = _prepare_mask(mask, rewards)
    rewards = torch.where(valid, rewards, 0.0)
    discounts = torch.where(valid, discounts, 0.0)
    out = torch.empty_like(rewards)
    acc = torch.zeros_like(rewards[:, 0])
    for t in range(rewards.shape[1] - 1, -1, -1):
        acc = rewards[:, t] + discounts[:, t] * acc
        out[:, t] = acc
    return out


@torch.no_grad()
def td_errors(
    rewards: Tensor,
    values: Tensor,
    bootstrap_value: Tensor,
    discounts: Tensor,
    *,
    mask: Tensor | None = None,
) -> Tensor:
    """One-step temporal-difference errors ``delta_t = r_t + d_t * V_{t+1} - V_t``.

    ``V_{t+1}`` is ``bootstrap_value`` after the last valid step. These are the ``|delta|`` of
    the DistRL DPER priority (see :func:`dper_priority`). Computed without gradient.

    Args:
        rewards: ``[B, T]`` float rewards.
        values: ``[B, T]`` critic values ``V(s_t)``, same dtype/device as ``rewards``.
        bootstrap_value: ``[B]`` value of the state after each row's last valid step.
        discounts: ``[B, T]`` discounts ``gamma * (1 - done_t)``.
        mask: Optional ``[B, T]`` right-padded validity mask.

    Returns:
        ``[B, T]`` TD errors; 0 at padded steps.

    Raises:
        ValueError: On bad shapes, dtypes, devices or masks.
    """
    check_float_bt("rewards", rewards)
    check_float_bt("values", values, like=rewards)
    check_float_bt("discounts", discounts, like=rewards)
    check_batch("bootstrap_value", bootstrap_value, like=rewards)
    valid = _prepare_mask(mask, rewards)
    rewards, values, discounts = (torch.where(valid, x, 0.0) for x in (rewards, values, discounts))
    next_values = _shift_left(values, _next_valid(valid), bootstrap_value)
    return torch.where(valid, rewards + discounts * next_values - values, 0.0)


def _check_off_policy_inputs(
    log_rhos: Tensor,
    rewards: Tensor,
    values: Tensor,
    bootstrap_value: Tensor,
    discounts: Tensor,
    mask: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Validate, then zero the padding of every per-step input; returns them with the mask."""
    check_float_bt("values", values)
    check_float_bt("log_rhos", log_rhos, like=values)
    check_float_bt("rewards", rewards, like=values)
    check_float_bt("discounts", discounts, like=values)
    check_batch("bootstrap_value", bootstrap_value, like=values)
    valid = _prepare_mask(mask, values)
    # Zeroing padding (r = V = d = 0) makes every padded TD error exactly 0 and cuts the
    # traces there, so the recursions below need no special cases for ragged rows.
    log_rhos, rewards, values, discounts = (
        torch.where(valid, x, 0.0) for x in (log_rhos, rewards, values, discounts)
    )
    return log_rhos, rewards, values, discounts, valid


def _backward_scan(weighted_deltas: Tensor, discounts: Tensor, traces: Tensor) -> Tensor:
    """Solve ``a_t = weighted_deltas_t + discounts_t * traces_t * a_{t+1}`` with ``a_T = 0``."""
    out = torch.empty_like(weighted_deltas)
    acc = torch.zeros_like(weighted_deltas[:, 0])
    for t in range(weighted_deltas.shape[1] - 1, -1, -1):
        acc = weighted_deltas[:, t] + discounts[:, t] * traces[:, t] * acc
        out[:, t] = acc
    return out


@torch.no_grad()
def vtrace(
    log_rhos: Tensor,
    rewards: Tensor,
    values: Tensor,
    bootstrap_value: Tensor,
    discounts: Tensor,
    *,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float = 1.0,
    mask: Tensor | None = None,
) -> OffPolicyReturns:
    """V-trace off-policy value targets and policy-gradient advantages (IMPALA).

    Espeholt et al. 2018, https://arxiv.org/abs/1802.01561, eq. (1) and Remark 1. With
    ``rho_t = exp(log_rhos_t) = pi(a_t|s_t) / mu(a_t|s_t)``, ``rhō_t = min(rho_bar, rho_t)``,
    ``c_t = min(c_bar, rho_t)`` and ``delta_t = r_t + d_t * V_{t+1} - V_t``::

        vs_t = V_t + sum_{k>=t} (prod_{i=t}^{k-1} d_i c_i) rhō_k delta_k
             computed backwards as  vs_t - V_t = rhō_t delta_t + d_t c_t (vs_{t+1} - V_{t+1})
        pg_advantages_t = min(pg_rho_bar, rho_t) * (r_t + d_t * vs_{t+1} - V_t)

    with ``V_T = vs_T = bootstrap_value``. On-policy (``log_rhos = 0``) with clips >= 1 this is
    the n-step bootstrapped return. Outputs are targets: computed without gradient.

    Args:
        log_rhos: ``[B, T]`` log importance ratios ``log pi(a_t|s_t) - log mu(a_t|s_t)``.
        rewards: ``[B, T]`` rewards ``r_t``.
        values: ``[B, T]`` critic values ``V(s_t)``.
        bootstrap_value: ``[B]`` ``V(s_T)`` after each row's last valid step.
        discounts: ``[B, T]`` ``gamma * (1 - done_t)``.
        rho_bar: Truncation of the importance weight on the TD error (fixed point); > 0,
            ``math.inf`` disables it.
        c_bar: Truncation of the trace coefficients (contraction speed); > 0.
        pg_rho_bar: Truncation of the policy-gradient importance weight; > 0.
        mask: Optional ``[B, T]`` right-padded validity mask (see module docstring).

    Returns:
        :class:`OffPolicyReturns` of ``[B, T]`` tensors (dtype/device of ``values``):
        ``vs``, ``pg_advantages`` and ``clipped_rhos = min(rho_bar, rho_t)``; all 0 on padding.

    Raises:
        ValueError: On bad shapes, dtypes, devices, masks or clipping thresholds.
    """
    rho_bar = check_positive("rho_bar", rho_bar)
    c_bar = check_positive("c_bar", c_bar)
    pg_rho_bar = check_positive("pg_rho_bar", pg_rho_bar)
    log_rhos, rewards, values, discounts, valid = _check_off_policy_inputs(
        log_rhos, rewards, values, bootstrap_value, discounts, mask
    )
    rhos = torch.exp(log_rhos)
    clipped_rhos = torch.clamp(rhos, max=rho_bar)
    cs = torch.clamp(rhos, max=c_bar)
    next_valid = _next_valid(valid)
    deltas = rewards + discounts * _shift_left(values, next_valid, bootstrap_value) - values
    vs = values + _backward_scan(clipped_rhos * deltas, discounts, cs)
    next_vs = _shift_left(vs, next_valid, bootstrap_value)
    pg_advantages = torch.clamp(rhos, max=pg_rho_bar) * (rewards + discounts * next_vs - values)
    return OffPolicyReturns(
        vs=torch.where(valid, vs, 0.0),
        pg_advantages=torch.where(valid, pg_advantages, 0.0),
        clipped_rhos=torch.where(valid, clipped_rhos, 0.0),
    )


@torch.no_grad()
def retrace(
    log_rhos: Tensor,
    rewards: Tensor,
    values: Tensor,
    bootstrap_value: Tensor,
    discounts: Tensor,
    *,
    lambda_: float = 1.0,
    c_bar: float = 1.0,
    rho_bar: float = 1.0,
    mask: Tensor | None = None,
) -> OffPolicyReturns:
    """Retrace(lambda) targets on state values, as DistRL applies it.

    Munos et al. 2016, https://arxiv.org/abs/1606.02647 (traces ``c_i = lambda * min(c_bar,
    rho_i)``); DistRL (Wang et al. 2024, https://arxiv.org/abs/2410.14803) uses them on ``V``.
    With ``delta_t = r_t + d_t * V_{t+1} - V_t``::

        G_t - V_t = delta_t + d_t * c_{t+1} * (G_{t+1} - V_{t+1})
                  = sum_{k>=t} (prod_{i=t}^{k-1} d_i) (prod_{i=t+1}^{k} c_i) delta_k
        pg_advantages_t = min(rho_bar, rho_t) * (r_t + d_t * G_{t+1} - V_t)

    with ``V_T = G_T = bootstrap_value``. Unlike V-trace the first TD error is not importance
    weighted (the trace starts at ``t + 1``); the action at ``t`` is corrected only in the
    policy-gradient term. ``lambda_ = 0`` gives one-step TD targets ``r_t + d_t V_{t+1}``;
    ``lambda_ = 1`` on-policy gives the same ``vs`` as :func:`vtrace`. Computed without
    gradient (targets).

    Args:
        log_rhos: ``[B, T]`` log importance ratios ``log pi(a_t|s_t) - log mu(a_t|s_t)``.
        rewards: ``[B, T]`` rewards ``r_t``.
        values: ``[B, T]`` critic values ``V(s_t)``.
        bootstrap_value: ``[B]`` ``V(s_T)`` after each row's last valid step.
        discounts: ``[B, T]`` ``gamma * (1 - done_t)``.
        lambda_: Trace decay in ``[0, 1]``.
        c_bar: Truncation of the trace coefficients; > 0 (``math.inf`` disables it).
        rho_bar: Truncation of the policy-gradient importance weight; > 0.
        mask: Optional ``[B, T]`` right-padded validity mask (see module docstring).

    Returns:
        :class:`OffPolicyReturns` of ``[B, T]`` tensors (dtype/device of ``values``):
        ``vs = G_t``, ``pg_advantages`` and ``clipped_rhos = min(rho_bar, rho_t)``; all 0 on
        padding.

    Raises:
        ValueError: On bad shapes, dtypes, devices, masks, ``lambda_`` or clipping thresholds.
    """
    lambda_ = check_unit_interval("lambda_", lambda_)
    c_bar = check_positive("c_bar", c_bar)
    rho_bar = check_positive("rho_bar", rho_bar)
    log_rhos, rewards, values, discounts, valid = _check_off_policy_inputs(
        log_rhos, rewards, values, bootstrap_value, discounts, mask
    )
    rhos = torch.exp(log_rhos)
    clipped_rhos = torch.clamp(rhos, max=rho_bar)
    cs = lambda_ * torch.clamp(rhos, max=c_bar)
    next_valid = _next_valid(valid)
    # Step t's trace is c_{t+1}; past the last valid step the accumulator is 0 anyway.
    next_cs = torch.where(next_valid, torch.cat([cs[:, 1:], cs[:, :1]], dim=1), 0.0)
    deltas = rewards + discounts * _shift_left(values, next_valid, bootstrap_value) - values
    vs = values + _backward_scan(deltas, discounts, next_cs)
    next_vs = _shift_left(vs, next_valid, bootstrap_value)
    pg_advantages = clipped_rhos * (rewards + discounts * next_vs - values)
    return OffPolicyReturns(
        vs=torch.where(valid, vs, 0.0),
        pg_advantages=torch.where(valid, pg_advantages, 0.0),
        clipped_rhos=torch.where(valid, clipped_rhos, 0.0),
    )


# ----- group-relative objectives (GRPO, GiGPO) ----------------------------------------------


def group_normalize(
    values: Tensor, groups: Tensor, *, scale: bool = True, eps: float = 1e-6
) -> Tensor:
    """Each value against its group: ``(x_i - mean_g) / (std_g + eps)``.

    GRPO's episode advantage (``values`` = trajectory returns, ``groups`` = the goal's group) and
    GiGPO's step advantage (``values`` = discounted returns of steps, ``groups`` = anchor
    states). ``std_g`` is the sample (Bessel) standard deviation, as verl's GRPO computes it; a
    group of one has no relative information and gets 0; ``scale=False`` only centres (Dr.
    GRPO's form).

    Args:
        values: ``[N]`` floats.
        groups: ``[N]`` integer group ids (any values; equal ids form a group).
        scale: divide by the group's standard deviation.
        eps: added to the standard deviation (a group of equal values gives 0, not nan).

    Returns:
        ``[N]`` advantages, in ``values``' dtype.
    """
    if values.dim() != 1 or groups.shape != values.shape:
        raise ValueError(
            f"values and groups must be matching [N] tensors, got {tuple(values.shape)} and "
            f"{tuple(groups.shape)}"
        )
    if not values.is_floating_point():
        raise ValueError(f"values must be floating point, got {values.dtype}")
    _, inverse, counts = torch.unique(groups, return_inverse=True, return_counts=True)
    k = counts.shape[0]
    sums = torch.zeros(k, dtype=values.dtype, device=values.device).index_add_(0, inverse, values)
    n = counts.to(values.dtype)
    mean = sums / n
    centred = values - mean[inverse]
    if not scale:
        out = centred
    else:
        sq = torch.zeros_like(sums).index_add_(0, inverse, centred * centred)
        std = torch.sqrt(sq / (n - 1).clamp(min=1))
        out = centred / (std[inverse] + eps)
    return torch.where(counts[inverse] > 1, out, torch.zeros_like(out))


def clipped_surrogate(
    log_probs: Tensor,
    behavior_log_probs: Tensor,
    advantages: Tensor,
    mask: Tensor,
    *,
    clip_eps: float,
) -> tuple[Tensor, Tensor]:
    """PPO's clipped surrogate on ``[B, T]`` steps, averaged over the real ones.

        L = -mean_t min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t),  rho_t = pi / mu

    Returns:
        ``(loss, clip_frac)``: the scalar loss (gradient through ``log_probs``) and the share
        of real steps whose ratio left ``[1 - eps, 1 + eps]``.
    """
    if not 0.0 < clip_eps < 1.0:
        raise ValueError(f"clip_eps must be in (0, 1), got {clip_eps}")
    ratio = torch.exp(log_probs - behavior_log_probs)
    adv = advantages.detach()
    surrogate = torch.minimum(ratio * adv, ratio.clamp(1 - clip_eps, 1 + clip_eps) * adv)
    real = mask.to(log_probs.dtype)
    n = real.sum().clamp(min=1)
    loss = -(surrogate * real).sum() / n
    clipped = ((ratio.detach() - 1).abs() > clip_eps).to(log_probs.dtype)
    return loss, (clipped * real).sum() / n


KL_LOG_RATIO_CLAMP = 20.0  # |r_t| cap before exp, so a step the policy has left never overflows
KL_STEP_CLAMP = 10.0  # cap on one step's estimate: such a step stops pulling instead of exploding


def kl_k3(log_probs: Tensor, reference_log_probs: Tensor, mask: Tensor) -> Tensor:
    """Schulman's unbiased, non-negative estimator of KL(pi || ref) on sampled actions:
    ``mean_t min(exp(r_t) - r_t - 1, 10)`` with ``r_t = clamp(log ref - log pi, -20, 20)``
    (``[B, T]``, real steps).

    An action's log-prob sums its tokens, so ``r_t`` of a step the policy has moved away from
    reaches tens of nats and ``exp(r_t)`` would dominate (or overflow) the loss; the clamps (as
    verl's ``low_var_kl``) bound each step's term and leave ordinary steps exactly as before.
    """
    r = (reference_log_probs.detach() - log_probs).clamp(-KL_LOG_RATIO_CLAMP, KL_LOG_RATIO_CLAMP)
    real = mask.to(log_probs.dtype)
    per_step = (torch.exp(r) - r - 1).clamp(max=KL_STEP_CLAMP)
    return (per_step * real).sum() / real.sum().clamp(min=1)
