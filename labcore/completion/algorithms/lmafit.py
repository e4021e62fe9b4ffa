"""LMaFit: nonlinear successive over-relaxation (Wen, Yin & Zhang 2012, Alg. 1, fixed rank).

min ||X Y^T - Z||_F^2 with P(Z) = P(M). With S = P(M - X Y^T), Z = X Y^T + S, and the over-relaxed
Z_w = X Y^T + w S:  X+ = orth(Z_w Y) (a QR), Y+ = Z_w^T X+. The extrapolation rule of the paper:
gamma = ||S+|| / ||S||; if gamma < 1 the step is kept and, when progress is slow (gamma > gamma_1 = 0.7),
w grows by delta = max(delta, 0.25 (w - 1)) up to w_max; if gamma >= 1 the step is redone with w = 1.
"""
from __future__ import annotations

import numpy as np

from .base import Algorithm


class LMaFit(Algorithm):
    name = "lmafit"
    gamma1 = 0.7
    w_max = 100.0

    def init(self):
        U, s, V = self.starting_svd()
        self.X, self.Y = U, V * s  # X orthonormal, M = X Y^T
        self.res = self.residual(self.X, self.Y)
        self.w, self.delta = 1.0, 1.0

    def _trial(self, w):
        S = self.p.matrix(self.res)
        # Z_w Y = X (Y^T Y) + w S Y
        Xn = np.linalg.qr(self.X @ (self.Y.T @ self.Y) + w * (S @ self.Y))[0]
        # Y+ = Z_w^T X+ = Y (X^T X+) + w S^T X+
        Yn = self.Y @ (self.X.T @ Xn) + w * (S.T @ Xn)
        return Xn, Yn, self.residual(Xn, Yn)

    def step(self):
        before = np.linalg.norm(self.res)
        Xn, Yn, res = self._trial(self.w)
        gamma = np.linalg.norm(res) / before if before > 0 else 0.0
        if gamma >= 1.0 and self.w > 1.0:  # the extrapolation overshot: back to w = 1 and redo the step
            self.w, self.delta = 1.0, max(0.1, 0.25 * (self.w - 1.0))
            Xn, Yn, res = self._trial(1.0)
        elif gamma > self.gamma1:  # slow progress: extrapolate more
            self.delta = max(self.delta, 0.25 * (self.w - 1.0))
            self.w = min(self.w + self.delta, self.w_max)
        self.X, self.Y, self.res = Xn, Yn, res
        self.iteration += 1

    def factors(self):
        return self.X, self.Y
