"""The report's task: linear regression with a chosen condition number, split over users.

Each user holds `samples` rows (A_i, b_i) and f_i(x) = ||A_i x - b_i||^2 / (2 samples). The rows are
Gaussian and then re-shaped by one linear map so that the Hessian of f = mean_i f_i has its
eigenvalues spread evenly on [mu, L] exactly: Theorem 1's mu and L are the problem's, not estimates.
Users' labels carry independent noise, so their own optima differ from the global x*.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .config import WirelessConfig


@dataclass(frozen=True, eq=False)
class Problem:
    H: torch.Tensor  # (n, d, d) each user's Hessian A_i^T A_i / samples
    c: torch.Tensor  # (n, d) each user's A_i^T b_i / samples (grad f_i(x) = H_i x - c_i)
    x_star: torch.Tensor  # (d,) the minimiser of f = mean_i f_i
    mu: float
    L: float

    @property
    def d(self) -> int:
        return int(self.x_star.shape[0])

    def gradient(self, x: torch.Tensor) -> torch.Tensor:
        """x (R, n, d): every trial's and user's point -> grad f_i at it, batched over trials and users."""
        # one batched matmul per user's Hessian (bmm over users), all trials as columns
        return torch.bmm(self.H, x.permute(1, 2, 0)).permute(2, 0, 1) - self.c

    def hessian(self) -> torch.Tensor:
        return self.H.mean(0)


def make_problem(cfg: WirelessConfig) -> Problem:
    rng = np.random.default_rng(cfg.data_seed)
    n, m, d = cfg.users, cfg.samples, cfg.d
    A = rng.standard_normal((n, m, d))
    x_true = rng.standard_normal(d) / np.sqrt(d)
    b = A @ x_true + cfg.label_noise * rng.standard_normal((n, m))
    # one map T for every user: mean_i A_i^T A_i / m = V diag(lam) V^T  ->  T^T (...) T = V diag(target) V^T
    lam, V = np.linalg.eigh(np.einsum("nmi,nmj->ij", A, A) / (n * m))
    target = np.linspace(cfg.mu, cfg.L, d)
    T = V @ np.diag(np.sqrt(target / lam)) @ V.T
    A = A @ T
    H = np.einsum("nmi,nmj->nij", A, A) / m
    c = np.einsum("nmi,nm->ni", A, b) / m
    x_star = np.linalg.solve(H.mean(0), c.mean(0))
    return Problem(torch.from_numpy(H), torch.from_numpy(c), torch.from_numpy(x_star), float(cfg.mu), float(cfg.L))
