"""The sparse operations every algorithm shares: values of a factored matrix on the seen entries, the sparse
matrix of values on those entries, and a warm-started randomized SVD of "low-rank + sparse".

Nothing here forms an m x n dense matrix: a factored M = U V^T is evaluated only on the seen entries
(one dot product of length r per entry), and sparse-times-dense products go through scipy.sparse.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit


@njit(cache=True)
def _sample(U, V, rows, cols, out):
    r = U.shape[1]
    for k in range(rows.shape[0]):
        i, j = rows[k], cols[k]
        s = 0.0
        for c in range(r):
            s += U[i, c] * V[j, c]
        out[k] = s
    return out


def sample(U: np.ndarray, V: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(U V^T)[rows, cols] without forming U V^T: O(|Omega| r) time, O(|Omega|) memory."""
    U = np.ascontiguousarray(U, dtype=np.float64)
    V = np.ascontiguousarray(V, dtype=np.float64)
    return _sample(U, V, rows, cols, np.empty(rows.shape[0]))


def orth(X: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the columns of X (thin QR)."""
    return np.linalg.qr(X)[0]


def lowrank_plus_sparse_svd(S: sp.csr_matrix, L: np.ndarray | None, R: np.ndarray | None, k: int,
                            rng: np.random.Generator, warm: np.ndarray | None = None, power_iters: int = 2,
                            oversample: int = 5):
    """Top-k SVD of W = S + L R^T (S sparse m x n, L m x q, R n x q) by randomized subspace iteration.

    `warm` (n x k) is the previous iterate's right singular basis: near convergence the top-k subspace
    barely moves, so a warm start plus two power iterations is as accurate as a cold ARPACK solve at a
    fraction of its cost (Halko, Martinsson & Tropp 2011, Alg. 4.4 with a warm start).
    Returns (U m x k, s k, V n x k).
    """
    m, n = S.shape
    St = S.T.tocsr()

    def times(X):  # W X
        out = S @ X
        return out if L is None else out + L @ (R.T @ X)

    def times_t(Y):  # W^T Y
        out = St @ Y
        return out if L is None else out + R @ (L.T @ Y)

    width = min(k + oversample, m, n)
    start = rng.standard_normal((n, width))
    if warm is not None:
        start[:, :warm.shape[1]] = warm[:, :width]
    Q = orth(times(start))
    for _ in range(power_iters):
        Q = orth(times(orth(times_t(Q))))
    B = times_t(Q).T  # width x n: Q^T W
    Ub, s, Vt = np.linalg.svd(B, full_matrices=False)
    return Q @ Ub[:, :k], s[:k], Vt[:k].T
