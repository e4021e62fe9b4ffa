"""LRGeomCG: Riemannian conjugate gradients on the manifold of rank-r matrices (Vandereycken 2013).

The iterate X = U diag(s) V^T; a tangent vector is (K, Up, Vp) meaning U K V^T + Up V^T + U Vp^T with
U^T Up = 0, V^T Vp = 0. Each step: the Riemannian gradient (the projection of the sparse Euclidean gradient
onto the tangent space), a Polak-Ribiere+ conjugate direction with the previous direction and gradient moved
over by projection (vector transport), the exact minimiser of the linearised cost along it, and the retraction
back to rank r by an SVD of a 2r x 2r core. A step that raises the cost is halved (Armijo backtracking).
"""
from __future__ import annotations

import numpy as np

from .base import Algorithm, safe_div


def inner(a, b) -> float:
    return float(sum(np.sum(x * y) for x, y in zip(a, b)))


class LRGeomCG(Algorithm):
    name = "lrgeomcg"

    def init(self):
        self.U, self.s, self.V = self.starting_svd()
        self.res = self.residual(self.U * self.s, self.V)
        self.prev_dir = self.prev_grad = None

    def _grad(self):
        """Riemannian gradient of 1/2 ||P(X - M)||^2 at the current point."""
        G = self.p.matrix(-self.res)
        GV, GtU = G @ self.V, G.T @ self.U
        K = self.U.T @ GV
        return K, GV - self.U @ K, GtU - self.V @ K.T

    def _transport(self, xi, U0, V0):
        """Project a tangent vector at (U0, V0) onto the tangent space at the current point."""
        K, Up, Vp = xi
        A, B = np.hstack([U0 @ K + Up, U0]), np.hstack([V0, Vp])
        BtV, AtU = B.T @ self.V, A.T @ self.U
        Kn = (self.U.T @ A) @ BtV
        return Kn, A @ BtV - self.U @ Kn, B @ AtU - self.V @ Kn.T

    def _on_seen(self, xi):
        K, Up, Vp = xi
        return self.p.sample(self.U, self.V @ K.T + Vp) + self.p.sample(Up, self.V)

    def _retract(self, xi, t):
        K, Up, Vp = xi
        Qu, Ru = np.linalg.qr(Up)
        Qv, Rv = np.linalg.qr(Vp)
        r = self.r
        core = np.zeros((2 * r, 2 * r))
        core[:r, :r] = np.diag(self.s) + t * K
        core[:r, r:] = t * Rv.T
        core[r:, :r] = t * Ru
        a, s, bt = np.linalg.svd(core)
        return np.hstack([self.U, Qu]) @ a[:, :r], s[:r], np.hstack([self.V, Qv]) @ bt[:r].T

    def step(self):
        grad = self._grad()
        direction = tuple(-g for g in grad)
        if self.prev_dir is not None:
            old_dir = self._transport(self.prev_dir, *self.prev_point)
            old_grad = self._transport(self.prev_grad, *self.prev_point)
            beta = max(0.0, safe_div(inner(grad, tuple(g - o for g, o in zip(grad, old_grad))),
                                     self.prev_grad_sq))
            candidate = tuple(d + beta * o for d, o in zip(direction, old_dir))
            if inner(candidate, grad) < 0:  # still a descent direction
                direction = candidate
        Pd = self._on_seen(direction)
        t = safe_div(self.res @ Pd, Pd @ Pd)
        cost = self.res @ self.res
        for _ in range(10):
            U, s, V = self._retract(direction, t)
            res = self.residual(U * s, V)
            if res @ res <= cost:
                break
            t *= 0.5
        self.prev_dir, self.prev_grad, self.prev_grad_sq = direction, grad, inner(grad, grad)
        self.prev_point = (self.U, self.V)
        self.U, self.s, self.V, self.res = U, s, V, res
        self.iteration += 1

    def factors(self):
        return self.U * self.s, self.V
