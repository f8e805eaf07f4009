"""GRPO / GiGPO math against hand-computed groups."""

from __future__ import annotations

import math

import pytest
import torch

from distrl_tasks.algorithms import functional as F


def test_group_normalize_hand_computed() -> None:
    values = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 5.0])
    groups = torch.tensor([7, 7, 7, 7, 3, 3, 9])
    # group 7: mean .75, deviations (.25, -.75, .25, .25), sample variance .75 / 3 = .25, std .5
    expected = torch.tensor([0.5, -1.5, 0.5, 0.5, 0.0, 0.0, 0.0])
    torch.testing.assert_close(F.group_normalize(values, groups, eps=0.0 + 1e-12), expected)
    # mean-centred only (Dr. GRPO); the equal pair and the single stay 0
    centred = torch.tensor([0.25, -0.75, 0.25, 0.25, 0.0, 0.0, 0.0])
    torch.testing.assert_close(F.group_normalize(values, groups, scale=False), centred)


def test_group_normalize_rejects_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="matching"):
        F.group_normalize(torch.zeros(3), torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="floating"):
        F.group_normalize(torch.zeros(3, dtype=torch.long), torch.zeros(3, dtype=torch.long))


def test_clipped_surrogate_hand_computed() -> None:
    lp = torch.tensor([[math.log(1.5), math.log(0.5)]], requires_grad=True)
    mu = torch.zeros(1, 2)
    mask = torch.ones(1, 2, dtype=torch.bool)
    # A = +1: min(1.5, 1.2) = 1.2 and min(.5, .8) = .5 -> loss -(1.2 + .5) / 2
    loss, clip_frac = F.clipped_surrogate(lp, mu, torch.ones(1, 2), mask, clip_eps=0.2)
    assert float(loss.detach()) == pytest.approx(-0.85) and float(clip_frac) == 1.0
    loss.backward()
    # the clipped step (ratio 1.5 > 1.2 with A > 0) gets no gradient; the other d/dlp = -.5/2
    torch.testing.assert_close(lp.grad, torch.tensor([[0.0, -0.25]]))
    # A = -1: min(-1.5, -1.2) = -1.5 and min(-.5, -.8) = -.8 -> loss (1.5 + .8) / 2
    loss, _ = F.clipped_surrogate(lp.detach(), mu, -torch.ones(1, 2), mask, clip_eps=0.2)
    assert float(loss) == pytest.approx(1.15)
    # padded steps count for nothing
    half = torch.tensor([[True, False]])
    loss, clip_frac = F.clipped_surrogate(lp.detach(), mu, torch.ones(1, 2), half, clip_eps=0.2)
    assert float(loss) == pytest.approx(-1.2) and float(clip_frac) == 1.0


def test_kl_k3_hand_computed_and_zero_on_equal_policies() -> None:
    lp = torch.tensor([[math.log(0.5), 0.0]])
    ref = torch.tensor([[math.log(0.25), 0.0]])
    mask = torch.tensor([[True, False]])
    # r = log(.25 / .5) = -log 2: exp(r) - r - 1 = .5 + log 2 - 1
    assert float(F.kl_k3(lp, ref, mask)) == pytest.approx(0.5 + math.log(2) - 1)
    assert float(F.kl_k3(lp, lp, torch.ones(1, 2, dtype=torch.bool))) == 0.0


def test_kl_k3_bounds_a_step_the_policy_has_left() -> None:
    # r = 30 nats: exp(30) would swamp the loss; the step's term stops at 10, with no gradient
    lp = torch.tensor([[-31.0, math.log(0.5)]], requires_grad=True)
    ref = torch.tensor([[-1.0, math.log(0.25)]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    kl = F.kl_k3(lp, ref, mask)
    assert float(kl.detach()) == pytest.approx((10.0 + 0.5 + math.log(2) - 1) / 2)
    kl.backward()
    assert lp.grad is not None and float(lp.grad[0, 0]) == 0.0
    # the ordinary step keeps its gradient: d/dlp (exp(r) - r - 1) / 2 = (1 - exp(r)) / 2 = .25
    assert float(lp.grad[0, 1]) == pytest.approx(0.25)
    # r = -30 (pi far above ref): clamped at -20, term -exp(-20) + 20 - 1 ~ 19 -> 10
    far = F.kl_k3(
        torch.tensor([[-1.0]]), torch.tensor([[-31.0]]), torch.ones(1, 1, dtype=torch.bool)
    )
    assert float(far) == pytest.approx(10.0)
