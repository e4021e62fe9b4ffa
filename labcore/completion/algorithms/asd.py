"""ASD: alternating steepest descent (Tanner & Wei 2016, Alg. 1), with exact step sizes.

f(X, Y) = 1/2 ||P(M) - P(X Y^T)||^2. A step on X along its negative gradient d = R Y (R the sparse residual)
with the exact minimiser t = ||d||^2 / ||P(d Y^T)||^2, then the same on Y with the updated X.
The start is the authors' (Ke Wei's code, which the report ran): X0 = U_r S_r, Y0 = V_r from the top-r SVD of
the seen entries; a balanced split U_r S_r^(1/2), V_r S_r^(1/2) is another method's start (ScaledGD's).
"""
from __future__ import annotations

import numpy as np

from .base import Algorithm, safe_div


class ASD(Algorithm):
    name = "asd"

    def init(self):
        U, s, V = self.starting_svd()
        self.X, self.Y = U * s, V
        self.res = self.residual(self.X, self.Y)

    def direction_x(self, G):
        return G  # the negative gradient; ScaledASD rescales it

    def direction_y(self, G):
        return G

    def step(self):
        p = self.p
        G = p.matrix(self.res) @ self.Y  # -grad_X
        D = self.direction_x(G)
        PD = p.sample(D, self.Y)
        t = safe_div(np.sum(G * D), PD @ PD)
        self.X = self.X + t * D
        self.res = self.res - t * PD
        G = p.matrix(self.res).T @ self.X  # -grad_Y
        D = self.direction_y(G)
        PD = p.sample(self.X, D)
        t = safe_div(np.sum(G * D), PD @ PD)
        self.Y = self.Y + t * D
        self.res = self.residual(self.X, self.Y)  # fresh every iteration: no drift from the running update
        self.iteration += 1

    def factors(self):
        return self.X, self.Y
