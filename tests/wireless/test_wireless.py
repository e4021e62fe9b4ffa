"""Wireless topic: the quantizer of Eq. (4)-(5), the channel of Eq. (6), rate regions, Theorem 1, quantized FedAvg,
the allocation of Eq. (9)-(12) and Table 1."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from labcore.methods.quantize import (dequantize_levels, eq5_bits, pack_uint, qsgd_omega, quantize_levels,
                                      unpack_uint)
from oracles.quantize_reference import pack_planes
from labcore.net import channel
from labcore.net.channel import ChannelError, LinkModel, RateRegion
from labcore.net.message import frame_bytes
from labcore.typed_config import ConfigError
from labcore.wireless import allocation, theory
from labcore.wireless.config import WirelessConfig, from_dict
from labcore.wireless.data import make_problem
from labcore.wireless.fedavg import bits_per_round, error_floor, simulate


# --- the quantizer -------------------------------------------------------------------------------------------
def _draws(x: torch.Tensor, k: int, n: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    levels, signs, norms = quantize_levels(x.expand(n, -1), k, gen)
    return dequantize_levels(levels, signs, norms, k)


def test_quantizer_is_unbiased():
    x = torch.tensor([0.3, -1.2, 0.05, 2.0, -0.7, 0.0], dtype=torch.float64)
    q = _draws(x, 4, 40_000)
    se = q.std(0) / math.sqrt(q.shape[0])
    assert torch.all((q.mean(0) - x).abs() <= 4 * se + 1e-6)  # float32 norm: 1e-7 relative
    assert torch.all(q[:, 5] == 0)


def test_quantizer_variance_is_omega_at_its_worst_case():
    # d = 16 equal coordinates, k = 2: every |x_i| / ||x|| * k = 1/2, the case where Property 2 is tight
    d, k = 16, 2
    x = torch.ones(d, dtype=torch.float64)
    q = _draws(x, k, 40_000, seed=1)
    err = (q - x).pow(2).sum(1)
    omega = qsgd_omega(d, k)
    assert omega == d / (4 * k * k)
    expected = omega * float(x.pow(2).sum())
    assert abs(float(err.mean()) - expected) <= 4 * float(err.std()) / math.sqrt(len(err))


def test_quantizer_variance_never_exceeds_omega():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(50, dtype=torch.float64, generator=gen)
    for k in (1, 4, 64):
        err = (_draws(x, k, 20_000, seed=k) - x).pow(2).sum(1)
        assert float(err.mean()) <= qsgd_omega(50, k) * float(x.pow(2).sum()) * 1.02


def test_bad_level_count_is_named():
    with pytest.raises(ValueError, match=r"k=0 is invalid"):
        quantize_levels(torch.ones(3), 0, torch.Generator())


def test_pack_uint_round_trips():
    v = np.random.default_rng(0).integers(0, 2**9, size=(3, 37))
    assert np.array_equal(unpack_uint(pack_uint(v, 9), 37, 9), v)
    assert pack_uint(v, 9).shape == (3, math.ceil(37 * 9 / 8))
    assert np.array_equal(pack_uint(v, 9), pack_planes(v, 9))  # the bytes numpy's bit planes gave


# --- the channel and rate regions -------------------------------------------------------------------------------
def test_channel_is_exact_within_budget_and_noisy_beyond():
    gen = torch.Generator().manual_seed(0)
    levels = torch.randint(0, 2**6 + 1, (4, 1000), generator=gen)
    assert torch.equal(channel.transmit_levels(levels, 2**6, 6, gen), levels)  # k = K
    assert torch.equal(channel.transmit_levels(levels, 2**12, 0, gen), levels)  # no limit
    # k = 2^12 over a budget of 2^6: noise of std 1/(2K) on y = l/k, away from the clipping edges
    y = torch.full((200_000,), 0.5, dtype=torch.float64)
    lv = (y * 2**12).to(torch.int64)
    out = channel.transmit_levels(lv, 2**12, 6, gen).to(torch.float64) / 2**12
    sd = channel.noise_std(6)
    assert sd == 1 / 128
    assert abs(float(out.mean()) - 0.5) < 4 * sd / math.sqrt(len(out))
    assert float(out.var()) == pytest.approx(sd**2 + 1 / (6 * 2**24), rel=0.03)
    assert channel.effective_omega(200, 2**12, 6) == pytest.approx(2 * qsgd_omega(200, 2**12) + qsgd_omega(200, 2**6))


def test_channel_and_link_errors_name_the_field():
    with pytest.raises(ChannelError, match=r"budget_bits=30 is invalid: allowed range is 0\.\.24"):
        channel.noise_std(30)
    with pytest.raises(ChannelError, match=r"budget_up_bits=-1 is invalid"):
        LinkModel(budget_up_bits=-1)
    with pytest.raises(ChannelError, match=r"rate_down_bps=0 is invalid"):
        LinkModel(rate_down_bps=0)
    assert LinkModel(rate_up_bps=1e6, rate_down_bps=2e6).seconds(1e6, 1e6) == pytest.approx(1.5)


def test_rate_region_constraints_and_membership():
    r = RateRegion.two_users(9, 6, 14)
    A, b = r.constraints()
    assert A.tolist() == [[1, 0], [0, 1], [1, 1]] and b.tolist() == [9, 6, 14]
    assert r.contains([8, 6]) and not r.contains([9, 6]) and not r.contains([7, 7])
    assert r.sum_rate_bits(200, [8, 6]) == 200 * 14


@pytest.mark.parametrize("budgets, match", [
    ({(0,): 9, (1,): 6, (0, 1): 16}, r"budgets\[\[0, 1\]\]=16 is invalid: it exceeds the sum 15"),
    ({(0,): 9, (1,): 6, (0, 1): 8}, r"budgets\[\[0, 1\]\]=8 is invalid: it is smaller than the budget 9"),
    ({(0,): -1}, r"budgets\[\[0\]\]=-1 is invalid"),
    ({(0, 2): 3}, r"is invalid: a subset of users 0\.\.1"),
    ({(): 3}, r"is invalid: a subset of users"),
    ({(0,): float("nan")}, r"budgets\[\[0\]\]=nan is invalid"),
])
def test_a_rate_region_that_is_not_a_region_is_refused(budgets, match):
    with pytest.raises(ChannelError, match=match):
        RateRegion(2, budgets)


# --- Theorem 1 ----------------------------------------------------------------------------------------------------
def test_theorem1_thresholds_follow_from_d_200():
    mu, L, g = 1.0, 2.0, 1 / 8
    assert round(theory.threshold_bits(200, mu, L, g, "up"), 2) == 5.37  # Table 1: k_u >= 2^5.37
    assert round(theory.threshold_bits(200, mu, L, g, "down"), 2) == 6.41  # Table 1 prints 2^6.43
    # at the threshold the condition holds with equality
    w = qsgd_omega(200, 2 ** theory.threshold_bits(200, mu, L, g, "up"))
    assert theory.uplink_ok(mu, L, g, w, 0) and not theory.uplink_ok(mu, L, g, w * 1.001, 0)


def test_theorem1_worked_examples():
    down, up = theory.worked_examples(kappa=2.0)
    assert up.rate_factor == pytest.approx(292 / 56) and round(up.rate_factor, 1) == 5.2  # "5.2 kappa"
    assert up.neighbourhood == pytest.approx(2 / 7)  # "2||x*||^2 / 7"
    assert down.rate_factor == pytest.approx(4.0)  # "4 kappa"
    assert down.neighbourhood == pytest.approx(18 / 73)  # the report prints 4/1387 (see the card's note)


def test_theorem1_by_hand():
    mu, L, g, wu, wd = 1.0, 4.0, 0.05, 0.01, 0.02
    pen = 4 * wu * (1 + g * g * L * L) * (1 + 2 * wd)
    assert theory.contraction(mu, L, g, wu, wd) == pytest.approx(1 - mu * g + pen)
    c1 = g * wd * (L - mu) + 2 * wd * (1 + g * g * L * L)
    c2 = 2 * wu + 4 * wu * wd * (1 + g * g * L * L)
    assert theory.neighbourhood(mu, L, g, wu, wd) == pytest.approx(2 * (c1 + c2) / (mu * g - pen))
    assert theory.neighbourhood(mu, L, g, 1.0, 0.0) == math.inf
    assert np.all(np.isinf(theory.bound_curve(np.arange(3), mu, L, g, 1.0, 0.0)))


# --- the problem and quantized FedAvg -----------------------------------------------------------------------------
def test_problem_has_the_exact_condition_number():
    P = make_problem(WirelessConfig(d=30, users=3, samples=20, kappa=5.0))
    lam = np.linalg.eigvalsh(P.hessian().numpy())
    assert lam[0] == pytest.approx(1.0) and lam[-1] == pytest.approx(5.0)
    g = P.gradient(P.x_star.expand(1, 3, -1)).mean(1)
    assert float(g.abs().max()) < 1e-10  # x* minimises the mean of the users' losses


def test_full_precision_fedavg_is_gradient_descent_over_users():
    cfg = WirelessConfig(d=12, users=4, samples=10, kappa=3.0, iterations=15, trials=2)
    table, _ = simulate(cfg)
    P = make_problem(cfg)
    H, c, xs = P.H.numpy(), P.c.numpy(), P.x_star.numpy()
    x = np.zeros(12)
    errs = [1.0]
    for _ in range(15):  # one user at a time: the loop the batched run replaces
        x = np.mean([x - cfg.gamma * (H[i] @ x - c[i]) for i in range(4)], axis=0)
        errs.append(float(np.sum((x - xs) ** 2) / np.sum(xs**2)))
    assert np.allclose(table["err"], errs, rtol=1e-10, atol=1e-15)


def test_same_config_same_numbers_and_seed_matters():
    cfg = WirelessConfig(d=10, bits_up=3, bits_down=4, budget_up_bits=2, iterations=10, trials=3)
    a, b = simulate(cfg)[0], simulate(cfg)[0]
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["err"], simulate(cfg.replace(seed=1))[0]["err"])


def test_ledger_counts_eq5_bits_and_measures_bytes():
    d, users = 40, 3
    cfg = WirelessConfig(d=d, users=users, samples=20, bits_up=6, bits_down=5, iterations=3, trials=2)
    _, ledger = simulate(cfg)
    per = bits_per_round(ledger).set_index(["direction", "part"])
    assert per.loc[("up", "levels"), "bits"] == users * d * 6
    assert per.loc[("up", "sign"), "bits"] == users * 2 * d
    assert per.loc[("up", "norm"), "bits"] == users * 32
    assert per.loc[("down", "levels"), "bits"] == users * d * 5  # one broadcast, downloaded by every user
    assert sum(eq5_bits(d, 2**6).values()) * users == per.loc["up", "bits"].sum()
    # measured bytes: the packed payloads (levels 0..k need log2 k + 1 bits) plus each part's framing
    assert per.loc[("up", "levels"), "bytes"] == users * (math.ceil(d * 7 / 8) + frame_bytes("levels", 1))
    assert per.loc[("up", "sign"), "bytes"] == users * (math.ceil(d * 2 / 8) + frame_bytes("sign", 1))
    assert per.loc[("up", "norm"), "bytes"] == users * (4 + frame_bytes("norm", 1))
    assert len(ledger) == 3 * 6 and set(ledger["round"]) == {0, 1, 2}


def test_measured_curves_stay_below_theorem1_bound():
    """Small case, links within and beyond their budgets, several users: E[r_k] <= bound at every k."""
    base = dict(d=20, kappa=2.0, iterations=80, trials=30)
    for kw in ({"bits_up": 6}, {"bits_down": 6}, {"bits_up": 6, "bits_down": 7},
               {"bits_up": 10, "bits_down": 10, "budget_up_bits": 6, "budget_down_bits": 7},
               {"bits_up": 8, "users": 4, "samples": 10}):
        t = simulate(WirelessConfig(**base, **kw))[0]
        assert np.isfinite(t["bound"]).all(), kw
        assert (t["err"] <= t["bound"] * (1 + 1e-9)).all(), kw


def test_more_bits_lower_the_floor_and_uplink_sits_above_downlink():
    base = dict(d=50, iterations=150, trials=20)
    f = {(u, dn): error_floor(simulate(WirelessConfig(**base, bits_up=u, bits_down=dn))[0])
         for u, dn in ((8, 0), (16, 0), (0, 8), (0, 16))}
    assert math.log10(f[8, 0] / f[16, 0]) >= 4 and math.log10(f[0, 8] / f[0, 16]) >= 4
    assert f[8, 0] > f[0, 8] and f[16, 0] > f[0, 16]


def test_bits_beyond_the_budget_hurt_less_than_too_few_bits():
    base = dict(d=50, iterations=150, trials=20, budget_up_bits=8, budget_down_bits=8)
    f = {(u, dn): error_floor(simulate(WirelessConfig(**base, bits_up=u, bits_down=dn))[0])
         for u, dn in ((8, 8), (4, 8), (16, 8), (8, 4), (8, 16))}
    assert min(f, key=f.get) == (8, 8)
    assert f[4, 8] > f[16, 8] and f[8, 4] > f[8, 16]


@pytest.mark.parametrize("field, value, match", [
    ("bits_up", 30, r"bits_up=30 is invalid: allowed range is 0\.\.24"),
    ("budget_down_bits", -2, r"budget_down_bits=-2 is invalid: allowed range is 0\.\.24"),
    ("users", 0, r"users=0 is invalid"), ("kappa", 0.5, r"kappa=0.5 is invalid"),
    ("step", 2.5, r"step=2.5 is invalid"), ("samples", 5, r"samples=5 is invalid: users \* samples must be >= d"),
])
def test_bad_config_names_the_field(field, value, match):
    with pytest.raises(ConfigError, match=match):
        WirelessConfig(**{field: value})


def test_config_from_strings_and_unknown_fields():
    assert from_dict({"bits_up": "8", "kappa": "4"}) == WirelessConfig(bits_up=8, kappa=4.0)
    with pytest.raises(ConfigError, match="unknown config field"):
        from_dict({"bitz": 3})
    assert WirelessConfig().key() != WirelessConfig(bits_up=8).key()


# --- allocation (Eq. 9-12) and Table 1 ----------------------------------------------------------------------------
def test_table1_reproduced_exactly():
    rows = {r["K2_bits"]: r for r in allocation.table1()}
    assert set(rows) == {6, 7, 8, 9, 10}
    for K2, r in rows.items():
        want_up = (8, 6) if K2 == 6 else (7, 7)
        for name in ("up_k{}_bits", "up_int_k{}_bits", "up_eq12_k{}_bits"):
            assert (r[name.format(1)], r[name.format(2)]) == pytest.approx(want_up, abs=1e-6), (K2, name)
        if K2 == 6:
            assert math.isnan(r["down_k1_bits"]) and math.isnan(r["down_int_k1_bits"])
        else:
            assert (r["down_k1_bits"], r["down_k2_bits"]) == pytest.approx((7, 7), abs=1e-6)


def test_closed_form_equals_solver_and_stationarity():
    s = allocation.Setting()
    assert allocation.eq12_ratio(7, 7, s) == pytest.approx(1.0)
    assert allocation.stationary_ratio(7, 7, s) == pytest.approx(1.0)
    for K2 in (7.5, 8, 12):
        region = RateRegion.two_users(9, K2, 14)
        num = allocation.solve(region, s, "up")
        for ratio in (allocation.eq12_ratio, allocation.stationary_ratio):
            assert allocation.closed_form_two_users(region, s, ratio) == pytest.approx(num, abs=1e-6)
    # an objective check: the optimum beats its neighbours on the sum-rate line
    r = RateRegion.two_users(12, 12, 14)
    opt = allocation.solve(r, s, "up")
    for dt in (0.3, -0.3):
        assert allocation.objective(opt, s, "up") < allocation.objective(opt + [dt, -dt], s, "up")


def test_infeasible_allocation_is_refused():
    with pytest.raises(allocation.InfeasibleAllocation, match=r"Theorem 1 needs k >= 2\^6\.41"):
        allocation.solve(RateRegion.two_users(9, 6, 14), link="down")
    with pytest.raises(allocation.InfeasibleAllocation, match="uplink"):
        allocation.solve(RateRegion.two_users(9, 9, 10), link="up")  # 5 bits each < 5.37
    with pytest.raises(ChannelError, match=r"link='side' is invalid: allowed values are up, down"):
        allocation.solve(RateRegion.two_users(9, 9, 14), link="side")


def test_the_channel_works_in_place_with_the_former_draws_and_levels():
    """transmit_levels and requantize overwrite their own float64 temporaries (a full-participation payload's copy
    is 0.7 GB): the same draws, in the same order, give the same levels as the former out-of-place expressions,
    and the caller's tensors are left as they were."""
    from labcore.methods.quantize import requantize
    from labcore.net.channel import noise_std, transmit_levels

    levels = torch.randint(0, 8, (3, 1001), generator=torch.Generator().manual_seed(0))
    kept = levels.clone()
    got = transmit_levels(levels, 7, 1, torch.Generator().manual_seed(5))
    g = torch.Generator().manual_seed(5)
    y = levels.to(torch.float64) / 7.0
    w = torch.randn(y.shape, generator=g, dtype=torch.float64) * noise_std(1)
    ratio = (y + w).clamp(0.0, 1.0).clamp(0.0, 1.0) * 7.0
    low = ratio.floor()
    up = torch.rand(ratio.shape, generator=g, dtype=torch.float64) < (ratio - low)
    former = (low + up.to(torch.float64)).clamp(max=7.0).to(torch.int64)
    assert torch.equal(got, former) and not torch.equal(got, levels) and torch.equal(levels, kept)
    y = torch.rand(4, 50, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    y_kept = y.clone()
    requantize(y, 5, torch.Generator().manual_seed(2))
    assert torch.equal(y, y_kept)
    as_float = levels.to(torch.float64)
    transmit_levels(as_float, 7, 1, torch.Generator().manual_seed(5))
    assert torch.equal(as_float, kept.to(torch.float64))
