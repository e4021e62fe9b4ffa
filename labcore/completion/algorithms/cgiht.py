"""CGIHT: conjugate gradient iterative hard thresholding (Blanchard, Tanner & Wei 2015, Alg. 1 for matrix
completion, projected onto the current column space).

R_j = P(M - X_j); the search direction P_j = R_j + b_j P_{j-1} with
b_j = -<P(P_U R_j), P(P_U P_{j-1})> / ||P(P_U P_{j-1})||^2 keeps successive directions conjugate on the
current column space; a_j = <P_U R_j, P_U P_j> / ||P(P_U P_j)||^2 and X_{j+1} = H_r(X_j + a_j P_j).
Every R_j is supported on the seen entries, so the directions stay sparse.
"""
from __future__ import annotations

import numpy as np

from .base import safe_div
from .niht import NIHT


class CGIHT(NIHT):
    name = "cgiht"

    def init(self):
        super().init()
        self.prev = None  # the previous search direction, as values on the seen entries

    def _project(self, vals):
        """(U^T Z) r x n and P(P_U Z) on the seen entries, for Z sparse with `vals`."""
        UtZ = (self.p.matrix(vals).T @ self.U).T
        return UtZ, self.p.sample(self.U, UtZ.T)

    def step(self):
        UtR, PR = self._project(self.res)
        direction = self.res
        if self.prev is not None:
            _, PP = self._project(self.prev)
            beta = -safe_div(PR @ PP, PP @ PP)
            direction = self.res + beta * self.prev
        UtD, PD = self._project(direction)
        alpha = safe_div(np.sum(UtR * UtD), PD @ PD)
        if alpha <= 0:  # lost conjugacy: restart from the residual
            direction = self.res
            alpha = safe_div(np.sum(UtR * UtR), PR @ PR)
        plain = direction is self.res
        before = (self.U, self.s, self.V, self.res)
        self.update(self.p.matrix(direction), alpha)
        self.prev = direction
        if self.res @ self.res > before[3] @ before[3] and not plain:
            # the conjugate step raised the residual: restart with a plain NIHT step (Blanchard et al.'s restart)
            self.U, self.s, self.V, self.res = before
            self.prev = None
            G = self.p.matrix(self.res)
            self.update(G, self.step_size(G))
        self.iteration += 1
