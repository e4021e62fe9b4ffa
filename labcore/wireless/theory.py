"""Theorem 1 of the report: FedAvg with uplink and downlink quantization on an L-smooth, mu-strongly convex f.

    r_k <= rho^k r_0 + N,   rho = 1 - mu gamma + 4 w_u (1 + gamma^2 L^2)(1 + 2 w_d),
    N = 2 ||x*||^2 (C1 + C2) / (mu gamma - 4 w_u (1 + gamma^2 L^2)(1 + 2 w_d)),
    C1 = gamma w_d (L - mu) + 2 w_d (1 + gamma^2 L^2),  C2 = 2 w_u + 4 w_u w_d (1 + gamma^2 L^2),

valid when 4 w_u / mu <= gamma / ((1 + gamma^2 L^2)(1 + 2 w_d)) (uplink condition) and
4 w_d / mu <= (1 - 2 gamma L) / (2 gamma L^2 + 2/gamma + L - mu) (downlink condition).
Everything here is in units of ||x*||^2 (x_0 = 0, so r_0 = ||x*||^2 and the bound of r_k / ||x*||^2
needs no x*). Where the conditions fail the bound is +inf (Theorem 1 says nothing).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..methods.quantize import qsgd_omega


def _b(gamma: float, L: float) -> float:
    return 1.0 + gamma**2 * L**2


def uplink_penalty(w_u: float, w_d: float, gamma: float, L: float) -> float:
    """4 w_u (1 + gamma^2 L^2)(1 + 2 w_d): what the uplink costs the contraction."""
    return 4.0 * w_u * _b(gamma, L) * (1.0 + 2.0 * w_d)


def contraction(mu: float, L: float, gamma: float, w_u: float, w_d: float) -> float:
    return 1.0 - mu * gamma + uplink_penalty(w_u, w_d, gamma, L)


def c1(mu: float, L: float, gamma: float, w_d: float) -> float:
    return gamma * w_d * (L - mu) + 2.0 * w_d * _b(gamma, L)


def c2(gamma: float, L: float, w_u: float, w_d: float) -> float:
    return 2.0 * w_u + 4.0 * w_u * w_d * _b(gamma, L)


def neighbourhood(mu: float, L: float, gamma: float, w_u: float, w_d: float) -> float:
    """The error neighbourhood N / ||x*||^2; +inf when the uplink condition fails."""
    den = mu * gamma - uplink_penalty(w_u, w_d, gamma, L)
    if den <= 0:
        return math.inf
    return 2.0 * (c1(mu, L, gamma, w_d) + c2(gamma, L, w_u, w_d)) / den


def uplink_ok(mu: float, L: float, gamma: float, w_u: float, w_d: float) -> bool:
    return 4.0 * w_u / mu <= gamma / (_b(gamma, L) * (1.0 + 2.0 * w_d)) * (1 + 1e-12)


def downlink_max(mu: float, L: float, gamma: float) -> float:
    """The largest w_d the downlink condition allows (negative when gamma L >= 1/2: none)."""
    return mu * (1.0 - 2.0 * gamma * L) / (4.0 * (2.0 * gamma * L**2 + 2.0 / gamma + L - mu))


def downlink_ok(mu: float, L: float, gamma: float, w_d: float) -> bool:
    return w_d <= downlink_max(mu, L, gamma) * (1 + 1e-12)


def conditions_hold(mu: float, L: float, gamma: float, w_u: float, w_d: float) -> bool:
    return uplink_ok(mu, L, gamma, w_u, w_d) and downlink_ok(mu, L, gamma, w_d)


def bound_curve(iterations: np.ndarray, mu: float, L: float, gamma: float, w_u: float, w_d: float,
                r0: float = 1.0) -> np.ndarray:
    """rho^k r_0 + N (relative to ||x*||^2) at each k; +inf everywhere when a condition fails."""
    k = np.asarray(iterations, dtype=float)
    if not conditions_hold(mu, L, gamma, w_u, w_d):
        return np.full(k.shape, np.inf)
    rho = contraction(mu, L, gamma, w_u, w_d)
    return rho**k * r0 + neighbourhood(mu, L, gamma, w_u, w_d)


def iterations_factor(mu: float, L: float, gamma: float, w_u: float, w_d: float) -> float:
    """1 / (1 - rho) in units of kappa: the report's 'O(c kappa ln(1/eps))' constant c."""
    rho = contraction(mu, L, gamma, w_u, w_d)
    return math.inf if rho >= 1 else 1.0 / (1.0 - rho) / (L / mu)


def threshold_bits(d: int, mu: float, L: float, gamma: float, link: str) -> float:
    """The fewest bits log2 k with omega = d / (4 k^2) that meet Theorem 1's condition for an
    uplink-only (w_d = 0) or downlink-only (w_u = 0) quantizer: Table 1's 'k_u >= 2^5.37', 'k_d >= 2^6.43'."""
    if link == "up":
        w_max = mu * gamma / (4.0 * _b(gamma, L))
    elif link == "down":
        w_max = downlink_max(mu, L, gamma)
    else:
        raise ValueError(f"link={link!r} is invalid: allowed values are up, down")
    if w_max <= 0:
        return math.inf
    return 0.5 * math.log2(d / (4.0 * w_max))


@dataclass(frozen=True)
class WorkedExample:
    link: str
    rate_factor: float  # iterations ~ rate_factor * kappa * ln(1/eps)
    neighbourhood: float  # N / ||x*||^2


def worked_examples(kappa: float) -> tuple[WorkedExample, WorkedExample]:
    """Section 3.1's comparison: gamma = 1/(4L), w = 1/(73 kappa) on one link only (mu = 1)."""
    mu, L = 1.0, kappa
    g, w = 1.0 / (4.0 * L), 1.0 / (73.0 * kappa)
    down = WorkedExample("down", iterations_factor(mu, L, g, 0.0, w), neighbourhood(mu, L, g, 0.0, w))
    up = WorkedExample("up", iterations_factor(mu, L, g, w, 0.0), neighbourhood(mu, L, g, w, 0.0))
    return down, up


def omega(d: int, bits: int) -> float:
    """Property 2's factor for a `bits`-bit quantizer (k = 2^bits); 0 for full precision (bits = 0)."""
    return 0.0 if bits == 0 else qsgd_omega(d, 2**bits)
