"""The one interface every completion algorithm implements, and the initialisation they share.

    alg = ASD(problem, rank=2, seed=0)
    alg.init()          # timed by the harness like every step
    alg.step()          # one iteration
    U, V = alg.factors()  # the current iterate M = U V^T (the harness measures the error from these)

An algorithm never looks at the clock or at the truth: the harness gives every algorithm the same CPU-time
budget and logs its factors at fixed times.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ..problem import Problem


class Algorithm:
    name = "base"

    def __init__(self, problem: Problem, rank: int, seed: int = 0, init: str = "spectral"):
        self.p = problem
        self.r = rank
        self.rng = np.random.default_rng([seed, 101])
        self.init_kind = init
        self.iteration = 0

    def init(self) -> None:
        raise NotImplementedError

    def step(self) -> None:
        raise NotImplementedError

    def factors(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    # --- shared pieces -------------------------------------------------------------------------------------
    def starting_svd(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(U, s, V): top-r SVD of P(M) / share (spectral), or random orthonormal factors of that scale."""
        p = self.p
        scale = 1.0 / p.share_seen
        if self.init_kind == "random":
            U = np.linalg.qr(self.rng.standard_normal((p.m, self.r)))[0]
            V = np.linalg.qr(self.rng.standard_normal((p.n, self.r)))[0]
            s = np.full(self.r, np.linalg.norm(p.vals) * scale / np.sqrt(p.m * p.n) * np.sqrt(min(p.m, p.n)))
            return U, s / np.sqrt(self.r), V
        U, s, V = top_svd(p.matrix(p.vals * scale), self.r, self.rng)
        # one scalar least-squares fit on the seen entries: 1/share over-scales the start when the seen
        # entries are not a uniform sample (real ratings)
        fit = p.sample(U * s, V)
        return U, s * max(fit @ p.vals, 0.0) / max(fit @ fit, 1e-300) if fit @ p.vals > 0 else s, V

    def residual(self, U: np.ndarray, V: np.ndarray) -> np.ndarray:
        """P(M) - P(U V^T) on the seen entries."""
        return self.p.vals - self.p.sample(U, V)


def top_svd(S: sp.csr_matrix, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact top-k singular triplets of a sparse matrix, largest first (ARPACK from a seeded start vector;
    a dense SVD when k is a large part of the smaller side). A randomized sketch is not enough here: when the
    small singular values of M* sit inside the sampling noise of P(M) / share, the gap between sigma_k and
    sigma_k+1 is tiny and a few power iterations return a mixture of the k-th and later singular vectors."""
    m, n = S.shape
    if 10 * k >= min(m, n) and m * n <= 25_000_000:
        U, s, Vt = np.linalg.svd(S.toarray(), full_matrices=False)
        return U[:, :k], s[:k], Vt[:k].T
    U, s, Vt = spla.svds(S, k=k, v0=rng.standard_normal(min(m, n)))
    order = np.argsort(-s)
    return U[:, order], s[order], Vt[order].T


def safe_div(a: float, b: float) -> float:
    return a / b if b > 0 else 0.0
