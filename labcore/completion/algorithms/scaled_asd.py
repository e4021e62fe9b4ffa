"""ScaledASD (Tanner & Wei 2016, Alg. 2): ASD with each gradient scaled by the inverse Gram matrix of the
other factor, d_X = R Y (Y^T Y)^{-1}, a quasi-Newton step; exact step t = <grad, d> / ||P(d Y^T)||^2."""
from __future__ import annotations

import numpy as np

from .asd import ASD


class ScaledASD(ASD):
    name = "scaled_asd"

    def direction_x(self, G):
        return np.linalg.solve(self.Y.T @ self.Y, G.T).T

    def direction_y(self, G):
        return np.linalg.solve(self.X.T @ self.X, G.T).T
