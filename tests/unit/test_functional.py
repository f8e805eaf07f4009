"""Tests for the RL math in distrl_tasks.algorithms.functional (and its advantages module).

Hand-computed cases carry their arithmetic in comments. Property tests compare the vectorised
implementation with the scalar references below, which use the closed sum-of-products forms of
the equations rather than the backward recursions the implementation runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from distrl_tasks.algorithms.functional import (
    OffPolicyReturns,
    discounts_from_dones,
    dper_priority,
    instruction_advantage,
    mc_returns,
    retrace,
    sampled_entropy,
    step_advantage,
    step_advantage_filter,
    td_errors,
    top_p_filter,
    vtrace,
)

F64 = torch.float64
INF = math.inf


def t64(rows: list[list[float]] | list[float]) -> torch.Tensor:
    return torch.tensor(rows, dtype=F64)


def close(actual: torch.Tensor, expected: list | torch.Tensor, atol: float = 1e-12) -> None:
    expected = expected if isinstance(expected, torch.Tensor) else t64(expected)
    torch.testing.assert_close(actual, expected.to(actual.dtype), atol=atol, rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# Scalar references: one trajectory as Python lists, closed-form sums (no recursion).


def mc_ref(r: list[float], d: list[float]) -> list[float]:
    """G_t = sum_k (prod_{i=t}^{k-1} d_i) r_k."""
    out = []
    for t in range(len(r)):
        total, coef = 0.0, 1.0
        for k in range(t, len(r)):
            total += coef * r[k]
            coef *= d[k]
        out.append(total)
    return out


def _deltas(r: list[float], v: list[float], boot: float, d: list[float]) -> list[float]:
    v_next = [*v[1:], boot]
    return [r[t] + d[t] * v_next[t] - v[t] for t in range(len(r))]


def vtrace_ref(lr, r, v, boot, d, rho_bar, c_bar, pg_rho_bar):
    """vs_t = V_t + sum_k (prod_{i=t}^{k-1} d_i c_i) rhobar_k delta_k."""
    rho = [math.exp(x) for x in lr]
    delta = _deltas(r, v, boot, d)
    vs = []
    for t in range(len(r)):
        total, coef = 0.0, 1.0
        for k in range(t, len(r)):
            total += coef * min(rho_bar, rho[k]) * delta[k]
            coef *= d[k] * min(c_bar, rho[k])
        vs.append(v[t] + total)
    vs_next = [*vs[1:], boot]
    pg = [min(pg_rho_bar, rho[t]) * (r[t] + d[t] * vs_next[t] - v[t]) for t in range(len(r))]
    return vs, pg, [min(rho_bar, x) for x in rho]


def retrace_ref(lr, r, v, boot, d, lam, c_bar, rho_bar):
    """G_t = V_t + sum_k (prod_{i=t}^{k-1} d_i) (prod_{i=t+1}^{k} c_i) delta_k."""
    rho = [math.exp(x) for x in lr]
    delta = _deltas(r, v, boot, d)
    gs = []
    for t in range(len(r)):
        total, coef = 0.0, 1.0
        for k in range(t, len(r)):
            total += coef * delta[k]
            if k + 1 < len(r):
                coef *= d[k] * lam * min(c_bar, rho[k + 1])
        gs.append(v[t] + total)
    g_next = [*gs[1:], boot]
    pg = [min(rho_bar, rho[t]) * (r[t] + d[t] * g_next[t] - v[t]) for t in range(len(r))]
    return gs, pg, [min(rho_bar, x) for x in rho]


def padded(rows: list[list[float]], width: int) -> list[list[float]]:
    return [row + [0.0] * (width - len(row)) for row in rows]


# ---------------------------------------------------------------------------------------------
# Monte-Carlo returns


def test_mc_returns_reset_at_mid_sequence_done():
    rewards = t64([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 1.0, 5.0]])
    dones = torch.tensor([[0, 1, 0, 0], [0, 0, 1, 0]], dtype=torch.bool)
    # Row 0, gamma 0.5: G3 = 4; G2 = 3 + .5*4 = 5; G1 = 2 (done, no carry); G0 = 1 + .5*2 = 2.
    # Row 1: G3 = 5; G2 = 1 (done); G1 = 0 + .5*1 = .5; G0 = .25.
    close(mc_returns(rewards, dones, 0.5), [[2.0, 2.0, 5.0, 4.0], [0.25, 0.5, 1.0, 5.0]])


def test_mc_returns_gamma_extremes_and_float_dones():
    rewards = t64([[1.0, 2.0, 3.0]])
    dones = t64([[0.0, 0.0, 0.0]])
    close(mc_returns(rewards, dones, 0.0), [[1.0, 2.0, 3.0]])  # gamma 0: the rewards
    close(mc_returns(rewards, dones, 1.0), [[6.0, 5.0, 3.0]])  # gamma 1: undiscounted sums


def test_mc_returns_mask_ignores_padding_even_nan():
    rewards = t64([[1.0, 2.0, math.nan, math.nan], [3.0, 0.0, 0.0, 0.0]])
    dones = torch.zeros(2, 4, dtype=torch.bool)
    mask = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]])
    # Row 0 is cut after 2 steps without bootstrap: G1 = 2; G0 = 1 + .5*2 = 2.
    close(mc_returns(rewards, dones, 0.5, mask=mask), [[2.0, 2.0, 0.0, 0.0], [3.0, 0, 0, 0]])


def test_discounts_from_dones():
    d = discounts_from_dones(torch.tensor([[False, True, False]]), 0.9)
    assert d.dtype == torch.get_default_dtype()
    close(d, [[0.9, 0.0, 0.9]], atol=1e-7)
    assert discounts_from_dones(t64([[1.0, 0.0]]), 0.5).dtype == F64


# ---------------------------------------------------------------------------------------------
# V-trace and Retrace on a hand-computed 3-step trajectory
#   V = [.5, .2, .4], bootstrap 1, r = [0, 1, 0], d = .9 everywhere, rho = [2, .5, 1]
#   next V = [.2, .4, 1]
#   delta0 = 0 + .9*.2 - .5 = -.32;  delta1 = 1 + .9*.4 - .2 = 1.16;  delta2 = .9*1 - .4 = .5

HAND = {
    "log_rhos": t64([[math.log(2.0), math.log(0.5), 0.0]]),
    "rewards": t64([[0.0, 1.0, 0.0]]),
    "values": t64([[0.5, 0.2, 0.4]]),
    "bootstrap_value": t64([1.0]),
    "discounts": t64([[0.9, 0.9, 0.9]]),
}


def test_vtrace_hand_case():
    out = vtrace(**HAND)
    assert isinstance(out, OffPolicyReturns)
    # rhobar = c = min(1, rho) = [1, .5, 1]
    # vs2 - V2 = 1*.5 = .5                          -> vs2 = .9
    # vs1 - V1 = .5*1.16 + .9*.5*.5 = .58 + .225 = .805  -> vs1 = 1.005
    # vs0 - V0 = 1*(-.32) + .9*1*.805 = .4045       -> vs0 = .9045
    close(out.vs, [[0.9045, 1.005, 0.9]])
    # pg0 = 1*(0 + .9*1.005 - .5) = .4045; pg1 = .5*(1 + .9*.9 - .2) = .805; pg2 = .9 - .4 = .5
    close(out.pg_advantages, [[0.4045, 0.805, 0.5]])
    close(out.clipped_rhos, [[1.0, 0.5, 1.0]])


def test_retrace_hand_case_lambda_one():
    out = retrace(**HAND, lambda_=1.0)
    # c = min(1, rho) = [1, .5, 1]; the trace at step t is c_{t+1}.
    # G2 - V2 = .5                                   -> G2 = .9
    # G1 - V1 = 1.16 + .9*c2*.5 = 1.16 + .45 = 1.61  -> G1 = 1.81
    # G0 - V0 = -.32 + .9*c1*1.61 = -.32 + .7245 = .4045 -> G0 = .9045
    close(out.vs, [[0.9045, 1.81, 0.9]])
    # pg0 = min(1, 2)*(0 + .9*1.81 - .5) = 1.129; pg1 = .5*(1 + .9*.9 - .2) = .805; pg2 = .5
    close(out.pg_advantages, [[1.129, 0.805, 0.5]])
    close(out.clipped_rhos, [[1.0, 0.5, 1.0]])


def test_retrace_hand_case_lambda_half():
    out = retrace(**HAND, lambda_=0.5)
    # c = .5*min(1, rho) = [.5, .25, .5]
    # G2 - V2 = .5; G1 - V1 = 1.16 + .9*.5*.5 = 1.385 -> G1 = 1.585
    # G0 - V0 = -.32 + .9*.25*1.385 = -.32 + .311625 = -.008375 -> G0 = .491625
    close(out.vs, [[0.491625, 1.585, 0.9]])


def test_retrace_hand_case_with_done():
    hand = dict(HAND, discounts=t64([[0.9, 0.0, 0.9]]))  # episode ends at step 1
    out = retrace(**hand, lambda_=1.0)
    # delta1 = 1 + 0 - .2 = .8, nothing flows back into step 1 from step 2.
    # G2 = .9; G1 = .2 + .8 = 1.0; G0 - V0 = -.32 + .9*.5*.8 = .04 -> G0 = .54
    close(out.vs, [[0.54, 1.0, 0.9]])
    # pg1 = .5*(1 + 0*G2 - .2) = .4
    close(out.pg_advantages[:, 1], [0.4])


def test_vtrace_hand_case_with_done():
    hand = dict(HAND, discounts=t64([[0.9, 0.0, 0.9]]))
    out = vtrace(**hand)
    # vs2 = .9; vs1 - V1 = .5*.8 + 0 = .4 -> vs1 = .6; vs0 - V0 = -.32 + .9*1*.4 = .04 -> .54
    close(out.vs, [[0.54, 0.6, 0.9]])


# ---------------------------------------------------------------------------------------------
# Reductions


def _random_inputs(b: int, t: int, seed: int, dones: bool = True) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    done = torch.rand(b, t, generator=g) < (0.25 if dones else 0.0)
    return {
        "log_rhos": torch.randn(b, t, generator=g, dtype=F64),
        "rewards": torch.randn(b, t, generator=g, dtype=F64),
        "values": torch.randn(b, t, generator=g, dtype=F64),
        "bootstrap_value": torch.randn(b, generator=g, dtype=F64),
        "discounts": discounts_from_dones(done, 0.8, dtype=F64),
    }


@pytest.mark.parametrize("clip", [1.0, 5.0, INF])
def test_on_policy_vtrace_is_n_step_bootstrapped_return(clip):
    x = _random_inputs(3, 5, seed=0, dones=False)
    x["log_rhos"] = torch.zeros_like(x["values"])
    out = vtrace(**x, rho_bar=clip, c_bar=clip, pg_rho_bar=clip)
    # vs_t = sum_{k=t}^{T-1} .8^(k-t) r_k + .8^(T-t) * bootstrap
    powers = 0.8 ** torch.arange(5, 0, -1, dtype=F64)
    expected = mc_returns(x["rewards"], torch.zeros(3, 5), 0.8) + powers * x[
        "bootstrap_value"
    ].unsqueeze(1)
    close(out.vs, expected)
    # and the advantage is the n-step return from t+1, bootstrapped, minus V_t
    next_vs = torch.cat([expected[:, 1:], x["bootstrap_value"].unsqueeze(1)], dim=1)
    close(out.pg_advantages, x["rewards"] + 0.8 * next_vs - x["values"])


def test_retrace_lambda_zero_is_one_step_td_target():
    x = _random_inputs(4, 6, seed=1)
    out = retrace(**x, lambda_=0.0)
    next_v = torch.cat([x["values"][:, 1:], x["bootstrap_value"].unsqueeze(1)], dim=1)
    close(out.vs, x["rewards"] + x["discounts"] * next_v)
    close(
        out.vs - x["values"],
        td_errors(x["rewards"], x["values"], x["bootstrap_value"], x["discounts"]),
    )


def test_retrace_lambda_one_on_policy_equals_vtrace():
    x = _random_inputs(4, 6, seed=2)
    x["log_rhos"] = torch.zeros_like(x["values"])
    a = retrace(**x, lambda_=1.0, c_bar=1.0, rho_bar=1.0)
    b = vtrace(**x, rho_bar=1.0, c_bar=1.0, pg_rho_bar=1.0)
    close(a.vs, b.vs)
    close(a.pg_advantages, b.pg_advantages)
    close(a.clipped_rhos, torch.ones_like(a.vs))


def test_large_rhos_are_clipped():
    x = _random_inputs(2, 4, seed=3)
    on_policy = dict(x, log_rhos=torch.zeros_like(x["values"]))
    huge = dict(x, log_rhos=torch.full_like(x["values"], 5.0))  # rho = e^5 ~ 148
    # with every clip at 1, a huge rho behaves exactly like rho = 1
    close(vtrace(**huge).vs, vtrace(**on_policy).vs)
    close(vtrace(**huge).pg_advantages, vtrace(**on_policy).pg_advantages)
    close(retrace(**huge).vs, retrace(**on_policy).vs)
    # clip at 2: the weights saturate at 2, and pg advantages are exactly 2x the rho=2 case
    clipped = vtrace(**huge, rho_bar=2.0, c_bar=2.0, pg_rho_bar=2.0)
    close(clipped.clipped_rhos, torch.full_like(x["values"], 2.0))
    at_two = vtrace(
        **dict(x, log_rhos=torch.full_like(x["values"], math.log(2.0))),
        rho_bar=2.0,
        c_bar=2.0,
        pg_rho_bar=2.0,
    )
    close(clipped.vs, at_two.vs)
    r = retrace(**huge, rho_bar=3.0)
    close(r.clipped_rhos, torch.full_like(x["values"], 3.0))
    close(r.pg_advantages, 3.0 * retrace(**on_policy).pg_advantages)


def test_unclipped_vtrace_uses_raw_rhos():
    # single step, rho = 4, no clipping: vs = V + 4*delta; delta = 1 + .5*2 - 1 = 1 -> vs = 5
    out = vtrace(
        t64([[math.log(4.0)]]),
        t64([[1.0]]),
        t64([[1.0]]),
        t64([2.0]),
        t64([[0.5]]),
        rho_bar=INF,
        c_bar=INF,
        pg_rho_bar=INF,
    )
    close(out.vs, [[5.0]])
    close(out.pg_advantages, [[4.0]])  # 4*(1 + .5*2 - 1)


@pytest.mark.parametrize("fn", [vtrace, retrace])
def test_rows_are_independent(fn):
    x = _random_inputs(4, 5, seed=4)
    full = fn(**x)
    for b in range(4):
        row = fn(**{k: v[b : b + 1] for k, v in x.items()})
        for got, want in zip(row, full, strict=True):
            close(got, want[b : b + 1])


# ---------------------------------------------------------------------------------------------
# Masks


@pytest.mark.parametrize("fn", [vtrace, retrace])
def test_mask_equals_truncated_rows_and_ignores_nan_padding(fn):
    x = _random_inputs(3, 5, seed=5)
    lengths = [5, 2, 0]
    mask = torch.arange(5).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    dirty = {k: (v.masked_fill(~mask, math.nan) if v.dim() == 2 else v) for k, v in x.items()}
    out = fn(**dirty, mask=mask)
    for b, length in enumerate(lengths):
        for field in out:
            assert torch.all(field[b, length:] == 0)
        if length:
            row = fn(
                **{
                    k: (v[b : b + 1, :length] if v.dim() == 2 else v[b : b + 1])
                    for k, v in x.items()
                }
            )
            for got, want in zip(out, row, strict=True):
                close(got[b : b + 1, :length], want)


def test_mask_bootstraps_at_the_last_valid_step():
    # one valid step of three: vs0 = V0 + (r0 + .9*boot - V0) = 1 + .9*2 = 2.8 (rho = 1)
    x = dict(
        HAND,
        rewards=t64([[1.0, 9.0, 9.0]]),
        bootstrap_value=t64([2.0]),
        log_rhos=torch.zeros(1, 3, dtype=F64),
    )
    out = vtrace(**x, mask=torch.tensor([[True, False, False]]))
    close(out.vs, [[2.8, 0.0, 0.0]])


@pytest.mark.parametrize(
    "mask, message",
    [
        (torch.tensor([[1, 0, 1]]), "right-padded"),
        (torch.tensor([[1, 2, 0]]), "only 0 and 1"),
        (torch.tensor([[1, 1]]), "mask must have shape"),
    ],
)
def test_bad_masks_are_rejected(mask, message):
    with pytest.raises(ValueError, match=message):
        vtrace(**HAND, mask=mask)


# ---------------------------------------------------------------------------------------------
# Property tests: vectorised == scalar closed-form references on random shapes and ragged masks


@st.composite
def trajectories(draw):
    b = draw(st.integers(1, 4))
    t = draw(st.integers(1, 6))

    def grid(lo, hi):
        return [[draw(st.floats(lo, hi)) for _ in range(t)] for _ in range(b)]

    lengths = [draw(st.integers(0, t)) for _ in range(b)]
    dones = [[draw(st.booleans()) for _ in range(t)] for _ in range(b)]
    gamma = draw(st.sampled_from([0.0, 0.5, 0.9, 1.0]))
    return {
        "lr": grid(-3.0, 3.0),
        "r": grid(-1.0, 1.0),
        "v": grid(-2.0, 2.0),
        "boot": [draw(st.floats(-2.0, 2.0)) for _ in range(b)],
        "d": [[gamma * (1.0 - x) for x in row] for row in dones],
        "dones": dones,
        "gamma": gamma,
        "lengths": lengths,
        "t": t,
    }


def _tensors(tr):
    mask = torch.arange(tr["t"]).unsqueeze(0) < torch.tensor(tr["lengths"]).unsqueeze(1)
    return t64(tr["lr"]), t64(tr["r"]), t64(tr["v"]), t64(tr["boot"]), t64(tr["d"]), mask


def _cut(tr, key, b):
    return tr[key][b][: tr["lengths"][b]]


CLIPS = st.sampled_from([0.5, 1.0, 2.0, INF])


@settings(max_examples=60, deadline=None, derandomize=True)
@given(tr=trajectories(), rho_bar=CLIPS, c_bar=CLIPS, pg_rho_bar=CLIPS)
def test_vtrace_matches_reference(tr, rho_bar, c_bar, pg_rho_bar):
    lr, r, v, boot, d, mask = _tensors(tr)
    out = vtrace(lr, r, v, boot, d, rho_bar=rho_bar, c_bar=c_bar, pg_rho_bar=pg_rho_bar, mask=mask)
    refs = [
        vtrace_ref(
            *(_cut(tr, k, b) for k in ("lr", "r", "v")),
            tr["boot"][b],
            _cut(tr, "d", b),
            rho_bar,
            c_bar,
            pg_rho_bar,
        )
        for b in range(len(tr["lengths"]))
    ]
    for i, field in enumerate(out):
        close(field, t64(padded([ref[i] for ref in refs], tr["t"])), atol=1e-9)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(tr=trajectories(), lam=st.sampled_from([0.0, 0.3, 0.95, 1.0]), c_bar=CLIPS, rho_bar=CLIPS)
def test_retrace_matches_reference(tr, lam, c_bar, rho_bar):
    lr, r, v, boot, d, mask = _tensors(tr)
    out = retrace(lr, r, v, boot, d, lambda_=lam, c_bar=c_bar, rho_bar=rho_bar, mask=mask)
    refs = [
        retrace_ref(
            *(_cut(tr, k, b) for k in ("lr", "r", "v")),
            tr["boot"][b],
            _cut(tr, "d", b),
            lam,
            c_bar,
            rho_bar,
        )
        for b in range(len(tr["lengths"]))
    ]
    for i, field in enumerate(out):
        close(field, t64(padded([ref[i] for ref in refs], tr["t"])), atol=1e-9)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(tr=trajectories())
def test_mc_returns_matches_reference(tr):
    _, r, _, _, _, mask = _tensors(tr)
    out = mc_returns(r, torch.tensor(tr["dones"]), tr["gamma"], mask=mask)
    refs = [mc_ref(_cut(tr, "r", b), _cut(tr, "d", b)) for b in range(len(tr["lengths"]))]
    close(out, t64(padded(refs, tr["t"])), atol=1e-9)


# ---------------------------------------------------------------------------------------------
# dtype, device, gradients, argument errors


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_and_device_preserved(dtype):
    x = {k: v.to(dtype) for k, v in HAND.items()}
    for out in (vtrace(**x), retrace(**x)):
        assert all(f.dtype == dtype and f.device == x["values"].device for f in out)
    assert mc_returns(x["rewards"], torch.zeros(1, 3), 0.9).dtype == dtype
    close(vtrace(**x).vs, [[0.9045, 1.005, 0.9]], atol=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_inputs_stay_on_cuda():
    x = {k: v.cuda() for k, v in HAND.items()}
    out = retrace(**x, mask=torch.ones(1, 3, dtype=torch.bool, device="cuda"))
    assert all(f.is_cuda for f in out)
    close(out.vs.cpu(), [[0.9045, 1.81, 0.9]])


def test_targets_carry_no_gradient():
    values = HAND["values"].clone().requires_grad_(True)
    out = vtrace(**dict(HAND, values=values))
    assert not out.vs.requires_grad and not out.pg_advantages.requires_grad
    assert not retrace(**dict(HAND, values=values)).vs.requires_grad


@pytest.mark.parametrize(
    "change, message",
    [
        ({"values": t64([0.5, 0.2, 0.4])}, r"values must have shape \[B, T\]"),
        ({"rewards": t64([[0.0, 1.0]])}, r"rewards must have shape \[1, 3\]"),
        ({"bootstrap_value": t64([[1.0]])}, r"bootstrap_value must have shape \[1\]"),
        ({"discounts": HAND["discounts"].float()}, "discounts must have dtype torch.float64"),
        ({"log_rhos": [[0.0, 0.0, 0.0]]}, "log_rhos must be a torch.Tensor"),
        ({"rewards": torch.zeros(1, 3, dtype=torch.long)}, "rewards must be a floating-point"),
        ({"values": torch.zeros(1, 0, dtype=F64)}, "values must have at least one time step"),
    ],
)
def test_bad_inputs_name_the_argument(change, message):
    with pytest.raises(ValueError, match=message):
        vtrace(**dict(HAND, **change))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: vtrace(**HAND, rho_bar=0.0), "rho_bar must be a positive number"),
        (lambda: vtrace(**HAND, c_bar=math.nan), "c_bar must be a positive number"),
        (lambda: retrace(**HAND, lambda_=1.5), r"lambda_ must be a number in \[0, 1\]"),
        (lambda: retrace(**HAND, rho_bar=-1.0), "rho_bar must be a positive number"),
        (lambda: mc_returns(HAND["rewards"], torch.zeros(1, 3), 1.2), "gamma"),
        (lambda: mc_returns(HAND["rewards"], torch.zeros(1, 4), 0.5), "dones must have shape"),
        (lambda: discounts_from_dones(torch.zeros(3), 0.5), "dones must be a"),
    ],
)
def test_bad_hyperparameters_are_rejected(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ---------------------------------------------------------------------------------------------
# DigiRL: doubly-robust step advantage, 1/H filter, instruction advantage, top-p curriculum
#   Row 0 succeeds (r = [0, 0, 1]); row 1 fails. lam = .5, three steps, steps numbered h = 1..3.

DIGI = {
    "values": t64([[0.6, 0.4, 0.7], [0.5, 0.3, 0.1]]),
    "next_values": t64([[0.4, 0.7, 0.0], [0.3, 0.1, 0.0]]),
    "rewards": t64([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]),
}


def test_step_advantage_hand_case_h_equals_length():
    adv = step_advantage(**DIGI, lam=0.5)
    # H = 3. Row 0, r_H = 1, weight w = .5^(3-h):
    #   h=1: w=.25, td = .4 + 0 - .6 = -.2 -> .25 + .75*(-.2) = .10
    #   h=2: w=.5,  td = .7 - .4 = .3      -> .5 + .5*.3 = .65
    #   h=3: w=1,   td = 0 + 1 - .7 = .3   -> 1 + 0*.3 = 1
    # Row 1, r_H = 0: A = td = [.3 - .5, .1 - .3, 0 + 0 - .1] = [-.2, -.2, -.1]
    close(adv, [[0.10, 0.65, 1.0], [-0.2, -0.2, -0.1]])
    # keep A > 1/3: only the last two steps of the successful row
    keep = step_advantage_filter(adv, horizon=3)
    assert keep.tolist() == [[False, True, True], [False, False, False]]


def test_step_advantage_fixed_horizon():
    adv = step_advantage(**DIGI, lam=0.5, horizon=4)
    # H = 4, row 0: w = [.125, .25, .5]
    #   h=1: .125 + .875*(-.2) = -.05; h=2: .25 + .75*.3 = .475; h=3: .5 + .5*.3 = .65
    close(adv[0], [-0.05, 0.475, 0.65])
    with pytest.raises(ValueError, match="horizon=2 is shorter than a trajectory of 3 steps"):
        step_advantage(**DIGI, lam=0.5, horizon=2)


def test_step_advantage_explicit_final_reward_and_lambda_zero():
    # lam = 0: the Monte-Carlo term only survives at h = H (0^0 = 1); r_H given explicitly.
    adv = step_advantage(**DIGI, lam=0.0, final_rewards=t64([1.0, 1.0]))
    # row 1 h=3: 1 + 0*(...) = 1; earlier steps are the plain TD estimate
    close(adv, [[-0.2, 0.3, 1.0], [-0.2, -0.2, 1.0]])


def test_step_advantage_mask_uses_each_rows_length():
    adv = step_advantage(
        t64([[0.2, 0.6, math.nan]]),
        t64([[0.6, 0.0, math.nan]]),
        t64([[0.0, 1.0, math.nan]]),
        lam=0.5,
        mask=torch.tensor([[1, 1, 0]]),
    )
    # L = H = 2, r_H = 1 (reward at the last valid step)
    #   h=1: w = .5, td = .6 - .2 = .4 -> .5 + .5*.4 = .7;  h=2: w = 1 -> 1
    close(adv, [[0.7, 1.0, 0.0]])
    keep = step_advantage_filter(adv, horizon=2, mask=torch.tensor([[1, 1, 0]]))
    assert keep.tolist() == [[True, True, False]]


def test_step_advantage_filter_threshold_is_strict():
    adv = t64([[0.1, 0.1 + 1e-9, 0.5]])
    assert step_advantage_filter(adv, horizon=10).tolist() == [[False, True, True]]
    with pytest.raises(ValueError, match="horizon must be a positive int"):
        step_advantage_filter(adv, horizon=0)


def test_instruction_advantage():
    adv = instruction_advantage(t64([1.0, 0.0, 1.0]), t64([0.25, 0.5, 0.9]))
    close(adv, [0.75, -0.5, 0.1])
    with pytest.raises(ValueError, match="instruction_values must have shape"):
        instruction_advantage(t64([1.0, 0.0]), t64([0.25, 0.5, 0.9]))


def test_top_p_filter_thresholds():
    scores = t64([0.1, 0.5, 0.3, 0.9, 0.7])
    # p = .4: quantile(.6) of [.1,.3,.5,.7,.9] at position .6*4 = 2.4 -> .5 + .4*.2 = .58
    assert top_p_filter(scores, 0.4).tolist() == [False, False, False, True, True]
    assert top_p_filter(scores, 1.0).all()
    # DigiRL's top 10% of 10 scores: quantile(.9) at position 8.1 -> 8.1, keeps only the 9
    assert top_p_filter(torch.arange(10, dtype=torch.float32), 0.1).nonzero().tolist() == [[9]]
    # ties at the threshold are all kept: quantile(.75) of [0,1,1,1] is 1
    assert top_p_filter(t64([1.0, 1.0, 1.0, 0.0]), 0.25).tolist() == [True, True, True, False]
    assert top_p_filter(t64([]), 0.5).numel() == 0


def test_top_p_filter_matches_numpy_quantile():
    rng = np.random.default_rng(0)
    for p in (0.1, 0.25, 0.5, 0.9):
        scores = rng.normal(size=17)
        expected = scores >= np.quantile(scores, 1 - p)
        assert top_p_filter(torch.from_numpy(scores), p).numpy().tolist() == expected.tolist()


@pytest.mark.parametrize(
    "scores, p, message",
    [
        (t64([0.1, 0.2]), 0.0, r"p must be a number in \(0, 1\]"),
        (t64([0.1, 0.2]), 1.5, r"p must be a number in \[0, 1\]"),
        (t64([0.1, math.nan]), 0.5, "scores must not contain NaN"),
        (t64([[0.1, 0.2]]), 0.5, r"scores must have shape \[B\]"),
    ],
)
def test_top_p_filter_rejects_bad_input(scores, p, message):
    with pytest.raises(ValueError, match=message):
        top_p_filter(scores, p)


# ---------------------------------------------------------------------------------------------
# DistRL: DPER priority and sampled entropy


def test_dper_priority_hand_case():
    td = t64([[0.5, -1.0, 2.0], [1.0, -3.0, math.nan]])
    target = t64([[-1.0, -2.0, -3.0], [-2.0, -4.0, math.nan]])
    behavior = t64([[-1.0, -3.0, -2.0], [-2.0, -4.0, math.nan]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    prio = dper_priority(td, target, behavior, w1=2.0, w2=0.5, w3=1.0, mask=mask)
    # Row 0: mean|delta| = 3.5/3; rho = e^[0, 1, -1], mean = (1 + e + 1/e)/3; mean H = 2
    #   p = 2*3.5/3 + .5*(1 + e + 1/e)/3 + 2 = 2.333333 + 0.681027 + 2 = 5.014360
    # Row 1 (2 valid steps): mean|delta| = 2, mean rho = 1, mean H = 3 -> 4 + .5 + 3 = 7.5
    row0 = 2 * 3.5 / 3 + 0.5 * (1 + math.e + 1 / math.e) / 3 + 2
    close(prio, [row0, 7.5])
    assert abs(row0 - 5.014360) < 1e-6
    # rho clipped at 1: mean rho = (1 + 1 + 1/e)/3 -> p = 2.333333 + 0.394647 + 2 = 4.727980
    clipped = dper_priority(td, target, behavior, w1=2.0, w2=0.5, w3=1.0, rho_clip=1.0, mask=mask)
    close(clipped[0:1], [2 * 3.5 / 3 + 0.5 * (2 + 1 / math.e) / 3 + 2])
    assert abs(float(clipped[0]) - 4.727980) < 1e-6


def test_dper_priority_weights_select_terms_and_empty_rows():
    td = t64([[1.0, -3.0], [5.0, 5.0]])
    logp = t64([[-1.0, -1.0], [-1.0, -1.0]])
    mask = torch.tensor([[1, 1], [0, 0]])
    close(dper_priority(td, logp, logp, w1=1.0, w2=0.0, w3=0.0, mask=mask), [2.0, 0.0])
    close(dper_priority(td, logp, logp, w1=0.0, w2=1.0, w3=0.0), [1.0, 1.0])
    with pytest.raises(ValueError, match="w2 must be a finite number >= 0"):
        dper_priority(td, logp, logp, w2=-1.0)
    with pytest.raises(ValueError, match="behavior_log_probs must have shape"):
        dper_priority(td, logp, logp[:, :1])


def test_sampled_entropy_keeps_gradient():
    logp = t64([[-1.0, -2.0, -3.0], [-4.0, math.nan, math.nan]]).requires_grad_(True)
    ent = sampled_entropy(logp, mask=torch.tensor([[1, 1, 1], [1, 0, 0]]))
    close(ent.detach(), [2.0, 4.0])
    ent.sum().backward()
    # d(mean of -logp)/d logp = -1/L on valid steps, 0 on padding
    close(logp.grad, [[-1 / 3, -1 / 3, -1 / 3], [-1.0, 0.0, 0.0]])


def test_td_errors_hand_case():
    delta = td_errors(
        HAND["rewards"],
        HAND["values"],
        HAND["bootstrap_value"],
        HAND["discounts"],
        mask=torch.tensor([[1, 1, 0]]),
    )
    # delta0 = -.32; delta1 = 1 + .9*boot - .2 = 1.7 (step 1 is the last valid one); pad 0
    close(delta, [[-0.32, 1.7, 0.0]])
