"""Burer-Monteiro with the augmented Lagrangian (Burer & Monteiro 2003; the report's Algorithm 1).

    L(V, y, sigma) = <C, V V^T> - sum_i y_i r_i + sigma/2 sum_i r_i^2,   r_i = ||v_i||^2 - 1,

minimized over V by scipy's L-BFGS, then (Algorithm 1, with the constants the report leaves out chosen as in
Burer & Monteiro's own code): if the infeasibility ||r||^2 fell below ETA times its value at the last
multiplier update, y <- y - sigma r (and that value is remembered); otherwise sigma <- GAMMA sigma.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from .mixing import initial_factor
from .problem import DiagSDP, check_rank
from .trace import Recorder

ETA = 0.25  # required decrease of the infeasibility for a multiplier update
GAMMA = 10.0  # penalty growth otherwise
INNER_MAXITER = 300  # L-BFGS iterations per outer step
INNER_GTOL = 1e-9  # L-BFGS projected-gradient tolerance (scaled by sigma0)
SIGMA_MAX = 1e10


def sigma0(problem: DiagSDP) -> float:
    """The first penalty: the mean weighted degree sum_j |C_ij| (puts the penalty on the objective's scale)."""
    return float(abs(problem.C).sum() / problem.n)


def lagrangian(problem: DiagSDP, V: np.ndarray, y: np.ndarray, sigma: float) -> tuple[float, np.ndarray]:
    CV = problem.C @ V
    r = np.einsum("ij,ij->i", V, V) - 1.0
    f = float(np.sum(V * CV)) + problem.const - float(y @ r) + 0.5 * sigma * float(r @ r)
    grad = 2.0 * CV + 2.0 * (sigma * r - y)[:, None] * V
    return f, grad


def burer_monteiro(problem: DiagSDP, k: int, rec: Recorder | None = None, seed: int = 0) -> np.ndarray:
    k = check_rank(k, problem.n)
    n = problem.n
    V = initial_factor(n, k, seed)
    y = np.zeros(n)
    sigma = s0 = sigma0(problem)
    v_ref = np.inf
    rec = rec or Recorder(problem, "bm", 50, 1e-6, 60.0)
    rec.log(0, V, force=True, sigma=sigma, inner_iters=0)
    inner_total, it = 0, 0
    while True:
        it += 1
        rec.start()
        res = minimize(lambda x: _flat(problem, x, k, y, sigma), V.ravel(), jac=True, method="L-BFGS-B",
                       options={"maxiter": INNER_MAXITER, "gtol": INNER_GTOL * s0, "maxcor": 10})
        V = res.x.reshape(n, k)
        inner_total += int(res.nit)
        r = np.einsum("ij,ij->i", V, V) - 1.0
        v = float(r @ r)
        if v < ETA * v_ref:
            y = y - sigma * r
            v_ref = v
        else:
            sigma = min(GAMMA * sigma, SIGMA_MAX)
        rec.stop()
        if rec.log(it, V, sigma=sigma, inner_iters=inner_total):
            return V


def _flat(problem, x, k, y, sigma):
    f, g = lagrangian(problem, x.reshape(-1, k), y, sigma)
    return f, g.ravel()
