"""The Frank-Wolfe family on the MaxCut SDP: Hazan's algorithm and the in-face extended Frank-Wolfe method.

Both work over the spectraplex {X PSD, trace(X) = n} (every feasible X has trace n) and handle diag(X) = 1 by an
augmented Lagrangian, as in the report's reference [10] (Yurtsever et al.):

    F(X) = <C, X> + <y, z - 1> + beta/2 ||z - 1||^2,   z = diag(X),   gradient  C + Diag(y + beta (z - 1)),

with the multipliers updated y <- y + beta (z - 1) every `alm_every` steps (0: a fixed penalty, y = 0).
The linear step (LMO) over the spectraplex is H = n u u^T with u the eigenvector of the smallest eigenvalue of
the (sparse) gradient, found by Lanczos (scipy's eigsh) from a random start. The iterate is kept factored,
X = U diag(s) U^T with orthonormal U, so its rank is known exactly at every step and X is never formed.

* hazan:  X <- (1 - eta) X + eta H with eta = 2/(t+2): rank(X_t) <= t + 1 (the start is rank 1).
* inface: Freund, Grigas & Mazumder's extended FW. Each step first tries to move inside the minimal face of X
  ({U S U^T : S PSD, trace n}, directions computed from the small r x r matrix U^T grad U): (a) an away step to
  the face's boundary, taken when it does not increase F (the rank drops by one); else (b) the in-face FW step
  with exact line search, taken when it closes at least GAMMA2 of the current bound gap F - B; else (c) a
  regular FW step with exact line search (F is quadratic along a line, so the search is closed form), which also
  refreshes the lower bound B = max(B, F - FW gap).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .certificates import smallest_eigenpair
from .problem import DiagSDP
from .trace import Recorder

GAMMA2 = 0.5  # in-face step accepted if it closes at least this share of F - B (Freund et al.'s gamma_2)
DROP = 1e-12  # eigenvalues of X below DROP * n are dropped (the iterate's numerical rank)


class FactoredPSD:
    """X = U diag(s) U^T with U orthonormal (n x r) and s > 0."""

    def __init__(self, u: np.ndarray, trace: float):
        self.U = (u / np.linalg.norm(u))[:, None]
        self.s = np.array([trace])

    @property
    def rank(self) -> int:
        return int(self.s.size)

    def diag(self) -> np.ndarray:
        return (self.U ** 2) @ self.s

    def factor(self) -> np.ndarray:
        return self.U * np.sqrt(self.s)

    def mix(self, eta: float, u: np.ndarray, weight: float) -> None:
        """X <- (1 - eta) X + eta * weight * u u^T (u need not be unit)."""
        self._rebuild(np.column_stack([self.U * np.sqrt((1 - eta) * self.s), np.sqrt(eta * weight) * u]))

    def set_core(self, S: np.ndarray) -> None:
        """X <- U S U^T for a PSD r x r core S (an in-face move)."""
        w, Q = np.linalg.eigh((S + S.T) / 2)
        keep = w > DROP * max(w.max(), 1.0)
        self.U, self.s = self.U @ Q[:, keep], w[keep]

    def _rebuild(self, B: np.ndarray) -> None:
        Q, R = np.linalg.qr(B)
        w, W = np.linalg.eigh(R @ R.T)
        keep = w > DROP * max(w.max(), 1.0)
        self.U, self.s = Q @ W[:, keep], w[keep]


INFACE_PENALTY_SHARE = 0.125  # measured on random 100-node graphs: the in-face method likes a softer penalty


def default_penalty(problem: DiagSDP, variant: str = "hazan") -> float:
    """beta = mean weighted degree sum_j |C_ij| / n (the objective's scale per node); 1/8 of it for in-face FW."""
    d = float(abs(problem.C).sum() / problem.n)
    return d if variant == "hazan" else INFACE_PENALTY_SHARE * d


class _ALM:
    def __init__(self, problem: DiagSDP, beta: float):
        self.p, self.beta, self.y = problem, beta, np.zeros(problem.n)

    def value(self, cx: float, z: np.ndarray) -> float:
        r = z - 1.0
        return cx + float(self.y @ r) + 0.5 * self.beta * float(r @ r)

    def weights(self, z: np.ndarray) -> np.ndarray:
        return self.y + self.beta * (z - 1.0)

    def line(self, slope: float, dz: np.ndarray, hi: float) -> float:
        """argmin over [0, hi] of F(X + a D) = F + a slope + a^2 beta/2 ||diag D||^2."""
        curv = self.beta * float(dz @ dz)
        if slope >= 0:
            return 0.0
        return hi if curv <= 0 else min(hi, -slope / curv)


def frank_wolfe(problem: DiagSDP, variant: str = "hazan", rec: Recorder | None = None, seed: int = 0,
                penalty: float = 0.0, alm_every: int = 20) -> FactoredPSD:
    if variant not in ("hazan", "inface"):
        raise ValueError(f"variant={variant!r} is invalid: allowed values are hazan, inface")
    n, C = problem.n, problem.C
    rng = np.random.default_rng(seed)
    alm = _ALM(problem, penalty or default_penalty(problem, variant))
    X = FactoredPSD(rng.normal(size=n), float(n))
    rec = rec or Recorder(problem, variant, 200, 1e-6, 60.0)
    B = -np.inf  # best lower bound on min F (refreshed by regular steps)
    rec.log(0, X.factor(), force=True, fw_objective=np.nan, fw_gap=np.nan, step="start")
    t = 0
    while True:
        t += 1
        rec.start()
        z = X.diag()
        CU = C @ X.U
        cx = float(np.einsum("ij,ij->j", X.U, CU) @ X.s) + problem.const
        F = alm.value(cx, z)
        w = alm.weights(z)
        step = "fw"
        if variant == "inface" and X.rank > 1 and np.isfinite(B):
            step = _inface_step(X, CU, w, alm, F, B, n)
        if step == "fw":
            grad = (C + sp.diags(w)).tocsr()
            lam, u = smallest_eigenpair(grad, v0=rng.normal(size=n) if n > 400 else None)
            gap = cx - problem.const + float(w @ z) - n * lam  # <grad, X - H> >= 0
            B = max(B, F - gap)
            if variant == "hazan":
                eta = 2.0 / (t + 2.0)
            else:
                eta = alm.line(-gap, n * u ** 2 - z, 1.0)
            X.mix(eta, u, float(n))
        if alm_every and t % alm_every == 0:
            alm.y = alm.y + alm.beta * (X.diag() - 1.0)
            B = -np.inf  # F changed: the old bound no longer holds
        rec.stop()
        if rec.log(t, X.factor(), fw_objective=F, fw_gap=F - B if np.isfinite(B) else np.nan, step=step):
            return X


def _inface_step(X: FactoredPSD, CU: np.ndarray, w: np.ndarray, alm: _ALM, F: float, B: float, n: int) -> str:
    """Try the away-to-boundary step, then the in-face FW step; returns 'away', 'inface' or 'fw' (none taken)."""
    U, s = X.U, X.s
    M = U.T @ CU + (U * w[:, None]).T @ U  # U^T grad U (r x r)
    M = (M + M.T) / 2
    ev, Q = np.linalg.eigh(M)
    S = np.diag(s)
    # (a) away from the worst in-face direction m: D = X - n U m m^T U^T, largest step keeping S PSD
    m = Q[:, -1]
    denom = n * float(m @ (m / s)) - 1.0
    if denom > 1e-12:
        a_max = 1.0 / denom
        D = S - n * np.outer(m, m)
        slope = float(np.sum(M * D))
        dz = (U ** 2) @ s - n * (U @ m) ** 2
        if a_max * slope + 0.5 * alm.beta * a_max ** 2 * float(dz @ dz) <= 0.0:
            X.set_core(S + a_max * D)
            return "away"
    # (b) in-face FW step towards n U m m^T U^T, m the best in-face direction
    m = Q[:, 0]
    D = n * np.outer(m, m) - S
    slope = float(np.sum(M * D))
    dz = n * (U @ m) ** 2 - (U ** 2) @ s
    a = alm.line(slope, dz, 1.0)
    decrease = -(a * slope + 0.5 * alm.beta * a * a * float(dz @ dz))
    if a > 0 and decrease >= GAMMA2 * (F - B):
        X.set_core(S + a * D)
        return "inface"
    return "fw"
