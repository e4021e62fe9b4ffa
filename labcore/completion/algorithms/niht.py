"""NIHT: normalized iterative hard thresholding (Tanner & Wei 2013, Alg. 2, column-space step size).

X_{j+1} = H_r(X_j + a_j G_j) with G_j = P(M - X_j) (sparse) and a_j = ||P_U G_j||^2 / ||P(P_U G_j)||^2, where
P_U projects onto the column space of X_j. H_r, the best rank-r approximation of "low-rank + sparse", is a
randomized SVD warm-started from the current right singular vectors (never an m x n dense matrix).
"""
from __future__ import annotations

import numpy as np

from ..ops import lowrank_plus_sparse_svd
from .base import Algorithm, safe_div


class NIHT(Algorithm):
    name = "niht"

    def init(self):
        self.U, self.s, self.V = self.starting_svd()
        self.res = self.residual(self.U * self.s, self.V)

    def step_size(self, G):
        UtG = (G.T @ self.U).T  # r x n: U^T G, so P_U G = U (U^T G)
        PG = self.p.sample(self.U, UtG.T)
        return safe_div(np.sum(UtG * UtG), PG @ PG)

    def update(self, D, alpha):
        """X + alpha D with D sparse on the seen entries, truncated back to rank r."""
        self.U, self.s, self.V = lowrank_plus_sparse_svd(alpha * D, self.U * self.s, self.V, self.r, self.rng,
                                                         warm=self.V)
        self.res = self.residual(self.U * self.s, self.V)

    def step(self):
        G = self.p.matrix(self.res)
        self.update(G, self.step_size(G))
        self.iteration += 1

    def factors(self):
        return self.U * self.s, self.V
