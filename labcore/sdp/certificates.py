"""Certificates: how far a factor V is from the SDP optimum, proved by a dual-feasible point.

For min <C, X> s.t. diag(X) = 1, X PSD the dual is max sum(y) s.t. C - Diag(y) PSD. From any V with unit rows,
g_i = (C V)_i gives y_i = -||g_i|| (at an optimum C v_i = -||g_i|| v_i exactly); this y is made feasible by
shifting it by the smallest eigenvalue lam of S = C - Diag(y) (scipy's Lanczos, `eigsh`), so

    lower bound = trace(C) + sum(y) + n * lam  <=  optimum  <=  <C, V V^T> = upper bound,

and the relative gap (upper - lower) / |value| is a proof of accuracy, not an estimate. For MaxCut the two are
turned into cut values (the SDP cut value lies between them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

from .problem import DiagSDP


@dataclass
class Certificate:
    primal: float  # the problem's value at V (a feasible point: a lower bound on the cut SDP value for MaxCut)
    bound: float  # the value proved by the dual point (an upper bound for MaxCut)
    rel_gap: float  # |bound - primal| / max(1, |primal|)
    lam_min: float  # smallest eigenvalue of C - Diag(y); >= 0 means y is already dual feasible
    eigvec: np.ndarray  # its eigenvector (a warm start for the next certificate)


def normalize_rows(V: np.ndarray) -> np.ndarray:
    """The nearest feasible factor: every row scaled to unit length (a zero row becomes e_1)."""
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    out = np.divide(V, norms, out=np.zeros_like(V), where=norms > 0)
    out[norms[:, 0] == 0, 0] = 1.0
    return out


DENSE_CHECK_NODES = 6000  # up to this many nodes a certificate that ends a run is checked by a dense solve


def smallest_eigenpair(S, v0: np.ndarray | None = None, tol: float = 1e-9,
                       exact: bool = False) -> tuple[float, np.ndarray]:
    """Smallest eigenvalue of the symmetric sparse S and its eigenvector (Lanczos; dense for small n, and up to
    DENSE_CHECK_NODES when `exact`: LAPACK's solve of the smallest pair cannot settle on a wrong eigenvalue)."""
    n = S.shape[0]
    if exact and n <= DENSE_CHECK_NODES:
        from scipy.linalg import eigh

        w, U = eigh(S.toarray() if sp.issparse(S) else S, subset_by_index=[0, 0])
        return float(w[0]), U[:, 0]
    if n <= 400:
        w, U = np.linalg.eigh(S.toarray() if sp.issparse(S) else S)
        return float(w[0]), U[:, 0]
    # Lanczos on the shifted -S + sigma I finds the largest, which converges faster than which="SA"
    sigma = float(abs(S).sum(axis=1).max())  # Gershgorin: every eigenvalue of S is in [-sigma, sigma]
    op = sigma * sp.identity(n, format="csr") - S
    try:
        w, U = eigsh(op, k=1, which="LA", v0=v0, tol=tol, maxiter=20 * n)
    except ArpackNoConvergence as e:  # keep the best Ritz pair found (still an upper bound on lam_min)
        if len(e.eigenvalues) == 0:
            raise
        w, U = e.eigenvalues, e.eigenvectors
    return float(sigma - w[-1]), U[:, -1]


def certificate(problem: DiagSDP, V: np.ndarray, v0: np.ndarray | None = None, exact: bool = False) -> Certificate:
    """The certificate of the feasible point `normalize_rows(V)` (`exact`: the eigenvalue by a dense solve)."""
    V = normalize_rows(np.asarray(V, dtype=np.float64))
    G = problem.C @ V
    obj = float(np.sum(V * G)) + problem.const
    gnorm = np.linalg.norm(G, axis=1)
    S = problem.C + sp.diags(gnorm)
    lam, vec = smallest_eigenpair(S, v0, exact=exact)
    dual = problem.const - float(gnorm.sum()) + problem.n * lam
    primal, bound = problem.value(obj), problem.value(dual)
    return Certificate(primal, bound, abs(bound - primal) / max(1.0, abs(primal)), lam, vec)
