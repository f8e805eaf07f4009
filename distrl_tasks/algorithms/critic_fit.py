"""Fitting a critic before the actor trusts it: bias initialisation, plateau rule, calibration.

Why: A-RIDE lost to Filtered BC because a fresh critic rates nearly every sampled step below
its value, successful trajectories' steps included, and takes dozens of updates to calibrate
(issue 21; benchmarks/results/2026-11-25-ablation.md). So a fresh critic is first
(1) given the output bias ``logit(mean target)``, which makes its first values right on average,
and (2) trained alone until its loss stops improving (:func:`plateaued`), with a step cap.
Its calibration is then logged every round (:func:`calibration`).

All functions here are pure (tensors or floats in, tensors or floats out).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor

from distrl_tasks.algorithms import functional as F


def logit(p: float, eps: float = 1e-4) -> float:
    """``log(p / (1 - p))`` with ``p`` clipped to ``[eps, 1 - eps]`` (a finite bias)."""
    if not 0.0 <= p <= 1.0 or math.isnan(p):
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    q = min(max(p, eps), 1.0 - eps)
    return math.log(q / (1.0 - q))


def plateaued(losses: Sequence[float], window: int, rel_tol: float) -> bool:
    """Whether a loss curve has stopped improving.

    With ``a = mean(losses[-2w:-w])`` and ``b = mean(losses[-w:])`` (``w = window``), the curve
    has plateaued when ``a - b < rel_tol * |a|``: the last window improved on the one before by
    less than the relative tolerance (or got worse). Fewer than ``2 w`` losses never plateau.

    Args:
        losses: The loss of every step so far, oldest first.
        window: ``w >= 1``.
        rel_tol: Relative improvement below which the curve is flat, in ``[0, 1)``.

    Returns:
        True when plateaued.

    Raises:
        ValueError: ``window < 1`` or ``rel_tol`` outside ``[0, 1)``.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if not 0.0 <= rel_tol < 1.0:
        raise ValueError(f"rel_tol must be in [0, 1), got {rel_tol}")
    if len(losses) < 2 * window:
        return False
    before = sum(losses[-2 * window : -window]) / window
    last = sum(losses[-window:]) / window
    return before - last < rel_tol * abs(before)


@torch.no_grad()
def step_targets(
    rewards: Tensor, dones: Tensor, gamma: float, *, mask: Tensor | None = None
) -> Tensor:
    """The value each step's critic should predict, on-policy: ``clip(G_t, 0, 1)``.

    ``G_t`` is the discounted Monte-Carlo return (:func:`functional.mc_returns`), which is the
    Retrace target with ``rho = 1`` and ``lambda = 1`` on a trajectory that ends in a done step,
    clipped like DistRL's targets (``V`` is a success probability).

    Args:
        rewards: ``[B, T]`` rewards (evaluator reward plus penalty).
        dones: ``[B, T]`` episode-end flags.
        gamma: Discount in ``[0, 1]``.
        mask: Optional ``[B, T]`` right-padded validity mask.

    Returns:
        ``[B, T]`` targets in ``[0, 1]``; 0 at padded steps.
    """
    return F.mc_returns(rewards, dones, gamma, mask=mask).clamp(0.0, 1.0)


@torch.no_grad()
def calibration(values: Tensor, targets: Tensor, *, bins: int = 10) -> dict[str, float]:
    """How well predicted success probabilities match what happened.

    With ``N`` predictions ``v_i`` in ``[0, 1]`` and outcomes ``y_i`` in ``[0, 1]`` (0/1 labels,
    or soft targets such as discounted returns)::

        brier = mean_i (v_i - y_i)^2
        ece   = sum_k (n_k / N) * |mean_{i in k} v_i - mean_{i in k} y_i|

    where bin ``k`` holds the ``v_i`` in ``[k / bins, (k + 1) / bins)`` (the last bin closed).
    A constant prediction equal to the base rate has ``ece = 0`` and ``brier = var(y)``.

    Args:
        values: ``[N]`` predictions in ``[0, 1]``.
        targets: ``[N]`` outcomes in ``[0, 1]``.
        bins: Number of equal-width bins of the ECE, ``>= 1``.

    Returns:
        ``{"value_mean", "target_mean", "brier", "ece"}`` as floats (all 0 when ``N = 0``).

    Raises:
        ValueError: On shapes that differ or are not 1-D, values outside ``[0, 1]``, or
            ``bins < 1``.
    """
    if values.dim() != 1 or values.shape != targets.shape:
        raise ValueError(
            f"values and targets must be [N] tensors of one shape, got {tuple(values.shape)} "
            f"and {tuple(targets.shape)}"
        )
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    v, y = values.double(), targets.double().to(values.device)
    for name, x in (("values", v), ("targets", y)):
        if bool(((x < 0) | (x > 1) | torch.isnan(x)).any()):
            raise ValueError(f"{name} must lie in [0, 1]")
    n = v.numel()
    if n == 0:
        return {"value_mean": 0.0, "target_mean": 0.0, "brier": 0.0, "ece": 0.0}
    which = (v * bins).long().clamp(max=bins - 1)
    v_sum = torch.zeros(bins, dtype=torch.float64).index_add_(0, which, v)
    y_sum = torch.zeros(bins, dtype=torch.float64).index_add_(0, which, y)
    ece = (v_sum - y_sum).abs().sum() / n  # n_k/N * |mean v - mean y| = |sum v - sum y| / N
    return {
        "value_mean": float(v.mean()),
        "target_mean": float(y.mean()),
        "brier": float(((v - y) ** 2).mean()),
        "ece": float(ece),
    }
