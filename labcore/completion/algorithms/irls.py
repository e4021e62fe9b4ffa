"""MatrixIRLS (Kummerle & Verdun 2021): iteratively reweighted least squares for the smoothed log-det
objective sum_i log(max(sigma_i, eps), eps), with the harmonic-mean weight operator.

Each step solves  X+ = argmin <X, W X>  subject to P(X) = y  for the weights W of the current iterate:
with r~ singular values above eps, W^{-1} = eps^2 I + P_T^* D P_T, where T is the tangent space at the
top-r~ singular vectors and D holds sigma_i sigma_j - eps^2 (core) and eps (sigma_i - eps) (the two side
blocks). Woodbury turns the |Omega| x |Omega| system into one of the tangent space's dimension,
(eps^2 D^{-1} + P_T P^* P P_T^*) g = P_T P^* y, solved by conjugate gradients (scipy), and then
X+ = P^*(y - P P_T^* g) + P_T^* g: "sparse + rank 2r~", never dense. eps+ = min(eps, sigma_{r+1}(X+)).
"""
from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import LinearOperator, cg

from ..ops import lowrank_plus_sparse_svd
from .base import Algorithm


class MatrixIRLS(Algorithm):
    name = "irls"
    cg_rtol = 1e-13  # a looser solve floors the iterate's accuracy near the tolerance (1e-10 gave ~1e-10)
    cg_maxiter = 200

    def init(self):
        self.sparse = self.p.vals.copy()  # X^0 = P^*(y)
        self.L = self.R = None
        self.eps = np.inf
        self._svd(warm=None)

    def _svd(self, warm):
        k = min(self.r + 1, min(self.p.m, self.p.n) - 1)
        U, s, V = lowrank_plus_sparse_svd(self.p.matrix(self.sparse), self.L, self.R, k, self.rng, warm=warm,
                                          power_iters=3)
        self.eps = min(self.eps, s[self.r] if len(s) > self.r else 0.0)
        keep = int(np.sum(s[:self.r] > self.eps))
        self.U, self.s, self.V = U[:, :self.r], s[:self.r], V[:, :self.r]  # the rank-r iterate we report
        self.Uk, self.sk, self.Vk = U[:, :keep], s[:keep], V[:, :keep]  # where the weights live
        self.Vwarm = V

    def step(self):
        if self.eps <= 0 or len(self.sk) == 0:  # eps reached 0: the iterate has rank <= r and fits exactly
            self.iteration += 1
            return
        p, U, V, s, eps = self.p, self.Uk, self.Vk, self.sk, self.eps
        m, n, k = p.m, p.n, len(s)
        d_core = np.outer(s, s) - eps ** 2
        d_side = eps * (s - eps)
        scale = np.concatenate([(eps ** 2 / d_core).ravel(), np.tile(eps ** 2 / d_side, n),
                                np.tile(eps ** 2 / d_side, m)])
        sizes = np.cumsum([k * k, n * k])

        def unpack(g):
            g1, g2, g3 = np.split(g, sizes)
            return g1.reshape(k, k), g2.reshape(n, k), g3.reshape(m, k)

        def on_seen(g):  # P(U G1 V^T + U G2^T + G3 V^T)
            g1, g2, g3 = unpack(g)
            return p.sample(U, V @ g1.T + g2) + p.sample(g3, V)

        def to_tangent(w):  # P_T P^*(w) in coordinates
            Z = p.matrix(w)
            ZV, ZtU = Z @ V, Z.T @ U
            g1 = U.T @ ZV
            return np.concatenate([g1.ravel(), (ZtU - V @ g1.T).ravel(), (ZV - U @ g1).ravel()])

        op = LinearOperator((len(scale),) * 2, matvec=lambda g: scale * g + to_tangent(on_seen(g)), dtype=float)
        g, _ = cg(op, to_tangent(p.vals), rtol=self.cg_rtol, atol=0.0, maxiter=self.cg_maxiter)
        g1, g2, g3 = unpack(g)
        self.sparse = p.vals - on_seen(g)
        self.L, self.R = np.hstack([U, g3]), np.hstack([V @ g1.T + g2, V])
        self._svd(warm=self.Vwarm)
        self.iteration += 1

    def factors(self):
        return self.U * self.s, self.V
