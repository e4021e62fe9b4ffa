"""The error of a factored iterate M = U V^T against the truth M* = A B^T, computed from the factors.

||M - M*||_F = ||[U, -A] [V, B]^T||_F = ||R_1 R_2^T||_F with [U, -A] = Q_1 R_1 and [V, B] = Q_2 R_2 (thin QR):
an (r + r*) x (r + r*) product instead of an m x n difference, and accurate to machine precision relative to
||M*||. The textbook shortcut through traces, ||M||^2 - 2<M, M*> + ||M*||^2, subtracts numbers of size
||M*||^2 and floors near sqrt(machine eps) ~ 1e-8 (`trace_error` below, kept to show that floor).
"""
from __future__ import annotations

import numpy as np


def frobenius_of_product(L: np.ndarray, R: np.ndarray) -> float:
    """||L R^T||_F from the factors (QR of each)."""
    R1 = np.linalg.qr(L, mode="r")
    R2 = np.linalg.qr(R, mode="r")
    return float(np.linalg.norm(R1 @ R2.T))


def relative_error(U: np.ndarray, V: np.ndarray, A: np.ndarray, B: np.ndarray, truth_norm: float | None = None
                   ) -> float:
    """||U V^T - A B^T||_F / ||A B^T||_F, stably from the factors."""
    num = frobenius_of_product(np.hstack([U, -A]), np.hstack([V, B]))
    den = truth_norm if truth_norm is not None else frobenius_of_product(A, B)
    return num / den


def dense_relative_error(U, V, A, B) -> float:
    """The same through dense m x n matrices: the reference for tests on small sizes only."""
    M, T = U @ V.T, A @ B.T
    return float(np.linalg.norm(M - T) / np.linalg.norm(T))


def trace_error(U, V, A, B) -> float:
    """||M - M*||_F / ||M*||_F through traces of r x r products: cheap, but floors near 1e-8."""
    mm = np.sum((U.T @ U) * (V.T @ V))
    tt = np.sum((A.T @ A) * (B.T @ B))
    mt = np.sum((U.T @ A) * (V.T @ B))
    return float(np.sqrt(max(mm - 2 * mt + tt, 0.0) / tt))


def heldout_errors(pred: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """(relative Frobenius error, RMSE) on held-out entries."""
    diff = pred - truth
    return float(np.linalg.norm(diff) / np.linalg.norm(truth)), float(np.sqrt(np.mean(diff ** 2)))
