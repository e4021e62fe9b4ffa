"""ScaledGD (Tong, Ma & Chi 2021, matrix completion): gradient steps on both factors of M = L R^T,
preconditioned by the inverse Gram matrix of the other factor, so the rate does not depend on kappa:

L+ = L - (eta/p) S R (R^T R)^{-1},   R+ = R - (eta/p) S^T L (L^T L)^{-1},   S = P(L R^T - M), eta = 0.5.
"""
from __future__ import annotations

import numpy as np

from .base import Algorithm


class ScaledGD(Algorithm):
    name = "scaled_gd"
    eta = 0.5

    def init(self):
        U, s, V = self.starting_svd()
        self.L, self.R = U * np.sqrt(s), V * np.sqrt(s)

    def step(self):
        S = self.p.matrix(self.p.sample(self.L, self.R) - self.p.vals)
        step = self.eta / self.p.share_seen
        gl = np.linalg.solve(self.R.T @ self.R, (S @ self.R).T).T
        gr = np.linalg.solve(self.L.T @ self.L, (S.T @ self.L).T).T
        self.L, self.R = self.L - step * gl, self.R - step * gr
        self.iteration += 1

    def factors(self):
        return self.L, self.R
