"""Soft-impute (Mazumder, Hastie & Tibshirani 2010): the nuclear-norm baseline.

X+ = S_lambda(X + P(M - X)), the singular values soft-thresholded by lambda, at most r kept (softImpute's
rank.max). Exact recovery needs lambda -> 0, so lambda follows a geometric path from sigma_1 / 2 down to
1e-13 sigma_1 (a factor 0.8 a step, warm starts along the path as in the paper's path algorithm).
"""
from __future__ import annotations

import numpy as np

from ..ops import lowrank_plus_sparse_svd
from .base import Algorithm


class SoftImpute(Algorithm):
    name = "soft_impute"
    decay = 0.8

    def init(self):
        self.U, self.s, self.V = self.starting_svd()
        self.lam = 0.5 * self.s[0]
        self.lam_min = 1e-13 * self.s[0]
        self.res = self.residual(self.U * self.s, self.V)

    def step(self):
        U, s, V = lowrank_plus_sparse_svd(self.p.matrix(self.res), self.U * self.s, self.V, self.r, self.rng,
                                          warm=self.V)
        self.U, self.s, self.V = U, np.maximum(s - self.lam, 0.0), V
        self.lam = max(self.lam * self.decay, self.lam_min)
        self.res = self.residual(self.U * self.s, self.V)
        self.iteration += 1

    def factors(self):
        return self.U * self.s, self.V
