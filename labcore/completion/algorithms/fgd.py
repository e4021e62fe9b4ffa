"""FGD: factored gradient descent on M = U U^T (Bhojanapalli, Kyrillidis & Sanghavi 2016) for square PSD M*.

f(U) = 1/(4p) ||P(U U^T - M)||^2 (p the share seen), grad = (1/p) S U with S the symmetric sparse residual;
step eta = c / sigma_1(U_0 U_0^T) from the spectral start, c = 0.5 (the paper's step is a constant over
the largest eigenvalue of the start).
"""
from __future__ import annotations

import numpy as np

from .base import Algorithm


class FGD(Algorithm):
    name = "fgd"
    c = 0.5

    def init(self):
        if not self.p.psd:
            raise ValueError("algorithm='fgd' is invalid: FGD fits M = U U^T and needs a square PSD problem")
        U, s, _ = self.starting_svd()
        self.U = U * np.sqrt(s)
        self.eta = self.c / s[0]

    def step(self):
        S = self.p.matrix(self.p.sample(self.U, self.U) - self.p.vals)
        self.U = self.U - (self.eta / self.p.share_seen) * (S @ self.U)
        self.iteration += 1

    def factors(self):
        return self.U, self.U
