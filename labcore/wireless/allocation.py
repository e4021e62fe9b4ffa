"""Channel-aware budget allocation (Eq. 9-12): split a shared channel's levels among users.

Minimise the sum of the users' Theorem 1 neighbourhoods (Eq. 9) over levels k_i = 2^t_i subject to the
rate region of Eq. (10) (`labcore.net.channel.RateRegion`, linear in t) and to Theorem 1's conditions
(t_i >= threshold). In t the objective is convex (a convex increasing function of w = d/4 2^(-2t),
itself convex in t) and the constraints are linear, so a local solver finds the optimum: scipy's SLSQP.

For two users on one link Eq. (12) gives the ratio k1/k2 at an interior optimum (only the sum
constraint active); with k1 k2 = K(s) it fixes the allocation. `closed_form_two_users` solves it and
projects onto the users' own budgets when the interior point is not feasible (the report's 'closest
feasible pair'). Our own derivation of Eq. (9)'s stationarity has no square-root factor; for users
with equal parameters both give k1 = k2 (see `stationary_ratio`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize

from ..net.channel import ChannelError, RateRegion
from . import theory

LINKS = ("up", "down")


class InfeasibleAllocation(ValueError):
    """No allocation meets both the rate region and Theorem 1's conditions."""


@dataclass(frozen=True)
class Setting:
    """What the objective needs: the problem (d, mu, L), the step and the other link's quantizer."""

    d: int = 200
    mu: float = 1.0
    L: float = 2.0
    gamma: float = 0.125  # 1 / (4 L)
    other_omega: float = 0.0  # w of the link not being allocated (0: uplink-only / downlink-only)

    def omegas(self, t: float, link: str) -> tuple[float, float]:
        w = self.d / 4.0 * 2.0 ** (-2.0 * t)
        return (w, self.other_omega) if link == "up" else (self.other_omega, w)

    def threshold(self, link: str) -> float:
        """Fewest bits that meet Theorem 1's condition on this link (with the other link's w)."""
        w_max = (self.mu * self.gamma / (4 * (1 + self.gamma**2 * self.L**2) * (1 + 2 * self.other_omega))
                 if link == "up" else theory.downlink_max(self.mu, self.L, self.gamma))
        return math.inf if w_max <= 0 else 0.5 * math.log2(self.d / (4.0 * w_max))

    def neighbourhood(self, t: float, link: str) -> float:
        w_u, w_d = self.omegas(t, link)
        return theory.neighbourhood(self.mu, self.L, self.gamma, w_u, w_d)


def _check_link(link: str) -> None:
    if link not in LINKS:
        raise ChannelError(f"link={link!r} is invalid: allowed values are {', '.join(LINKS)}")


def objective(t_bits, setting: Setting, link: str) -> float:
    """Eq. (9) / ||x*||^2: the sum of the users' neighbourhoods at levels 2^t."""
    return float(sum(setting.neighbourhood(float(t), link) for t in np.atleast_1d(t_bits)))


def solve(region: RateRegion, setting: Setting = Setting(), link: str = "up") -> np.ndarray:
    """The optimal bits t_i = log2 k_i (continuous) by SLSQP; raises InfeasibleAllocation."""
    _check_link(link)
    A, b = region.constraints()
    lo = setting.threshold(link)
    if not np.isfinite(lo) or np.any(b[A.sum(1) == 1] < lo - 1e-12) or np.any(b < lo * A.sum(1) - 1e-12):
        raise InfeasibleAllocation(
            f"no allocation on the {link}link: Theorem 1 needs k >= 2^{lo:.2f} for every user, and the rate "
            f"region (budgets {', '.join(f'{v:g}' for v in b)} bits) does not allow it")
    n = region.n
    # start strictly inside: every user at the threshold plus a share of the slack of the tightest constraint
    slack = np.min((b - lo * A.sum(1)) / A.sum(1))
    t0 = np.full(n, lo + 0.5 * slack)
    cons = [{"type": "ineq", "fun": lambda t: b - A @ t, "jac": lambda t: -A}]
    res = minimize(objective, t0, args=(setting, link), method="SLSQP", bounds=[(lo, None)] * n,
                   constraints=cons, options={"ftol": 1e-15, "maxiter": 500})
    if not res.success or not region.contains(res.x, tol=1e-7):
        raise InfeasibleAllocation(f"the solver found no feasible allocation on the {link}link: {res.message}")
    return res.x


def solve_integer(region: RateRegion, setting: Setting = Setting(), link: str = "up", max_bits: int = 24) -> np.ndarray:
    """The best whole-bit allocation (exhaustive over t_i in threshold..max_bits; n <= 3 users)."""
    _check_link(link)
    if region.n > 3:
        raise ChannelError(f"n={region.n} is invalid for the exhaustive search: at most 3 users")
    lo = max(0, math.ceil(setting.threshold(link) - 1e-12)) if np.isfinite(setting.threshold(link)) else None
    if lo is None or lo > max_bits:
        raise InfeasibleAllocation(f"no whole-bit allocation on the {link}link meets Theorem 1's condition")
    grids = np.meshgrid(*[np.arange(lo, max_bits + 1)] * region.n, indexing="ij")
    T = np.stack([g.ravel() for g in grids], 1).astype(float)
    A, b = region.constraints()
    T = T[np.all(T @ A.T <= b + 1e-9, axis=1)]
    if not len(T):
        raise InfeasibleAllocation(f"no whole-bit allocation on the {link}link: every user needs at least {lo} bits "
                                   "(Theorem 1) and the rate region does not allow it")
    vals = np.array([objective(t, setting, link) for t in T])
    return T[int(np.argmin(vals))]


# --- two users: Eq. (12) ------------------------------------------------------------------------------------
def _c(setting: Setting, t: float) -> float:
    w_u, w_d = setting.omegas(t, "up")
    return theory.uplink_penalty(w_u, w_d, setting.gamma, setting.L)


def eq12_ratio(t1: float, t2: float, setting: Setting = Setting()) -> float:
    """The right side of the report's Eq. (12) at k1 = 2^t1, k2 = 2^t2 (uplink)."""
    a, c1, c2 = setting.mu * setting.gamma, _c(setting, t1), _c(setting, t2)
    return (a - c2) / (a - c1) * math.sqrt((a + c1) / (a + c2))


def stationary_ratio(t1: float, t2: float, setting: Setting = Setting()) -> float:
    """The ratio k1/k2 that Eq. (9)'s Lagrangian gives with w_d = 0 (our derivation): (a - c2) / (a - c1)."""
    a, c1, c2 = setting.mu * setting.gamma, _c(setting, t1), _c(setting, t2)
    return (a - c2) / (a - c1)


def closed_form_two_users(region: RateRegion, setting: Setting = Setting(), ratio=eq12_ratio) -> np.ndarray:
    """Eq. (12) with k1 k2 = K(s), then the feasible pair closest to it when a user's own budget binds."""
    if region.n != 2 or frozenset({0, 1}) not in region.budgets:
        raise ChannelError("region is invalid for Eq. (12): two users with a sum budget K(s)")
    s = region.budgets[frozenset({0, 1})]
    K1 = region.budgets.get(frozenset({0}), s)
    K2 = region.budgets.get(frozenset({1}), s)
    lo = setting.threshold("up")

    def gap(t1):  # log2 k1 - log2 k2 - log2 ratio(...) on the line t1 + t2 = s
        return t1 - (s - t1) - math.log2(ratio(t1, s - t1, setting))

    a, b = max(lo, s - 24.0) + 1e-9, min(s - lo, 24.0) - 1e-9
    if not a < b:
        raise InfeasibleAllocation(f"sum budget {s:g} bits leaves no room above the threshold {lo:.2f} bits for both")
    t1 = brentq(gap, a, b, xtol=1e-13)
    t = np.array([t1, s - t1])
    # a user's own budget binds: it gets its budget, the other the rest of the sum (within its own budget)
    if t[1] > K2:
        t = np.array([min(K1, s - K2), K2])
    elif t[0] > K1:
        t = np.array([K1, min(K2, s - K1)])
    if np.any(t < lo - 1e-9):
        raise InfeasibleAllocation(f"the closest feasible pair {t} is below Theorem 1's threshold {lo:.2f} bits")
    return t


# --- Table 1 -------------------------------------------------------------------------------------------------
TABLE1_K1, TABLE1_SUM, TABLE1_K2 = 9, 14, (6, 7, 8, 9, 10)


def table1(setting: Setting = Setting()) -> "list[dict]":
    """Every row of Table 1: K1 = 2^9, K(s) = 2^14, K2 = 2^6..2^10; allocations in bits (NaN = infeasible)."""
    rows = []
    for K2 in TABLE1_K2:
        region = RateRegion.two_users(TABLE1_K1, K2, TABLE1_SUM)
        row = {"K1_bits": TABLE1_K1, "K2_bits": K2, "Ks_bits": TABLE1_SUM}
        for link in LINKS:
            try:
                t = solve(region, setting, link)
                ti = solve_integer(region, setting, link)
                cf = closed_form_two_users(region, setting) if link == "up" else np.array([np.nan, np.nan])
            except InfeasibleAllocation:
                t = ti = cf = np.array([np.nan, np.nan])
            row.update({f"{link}_k1_bits": t[0], f"{link}_k2_bits": t[1], f"{link}_int_k1_bits": ti[0],
                        f"{link}_int_k2_bits": ti[1]})
            if link == "up":
                row.update({"up_eq12_k1_bits": cf[0], "up_eq12_k2_bits": cf[1]})
        rows.append(row)
    return rows
