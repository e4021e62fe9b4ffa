"""The diagonal-constrained SDP  min <C, X>  s.t.  diag(X) = 1, X PSD, and MaxCut as one instance of it.

MaxCut of a graph with non-negative weights W (symmetric, zero diagonal) is the relaxation

    max (1/4) sum_ij w_ij (1 - X_ij)   =   (sum(W) - <W, X>) / 4,

so it is `min <C, X>` with C = W, and the cut value of a feasible X is `(sum(W) - <W, X>) / 4`
(in edge-weight units: a +-1 vector gives exactly the weight of the edges it cuts). The diagonal of C
does not matter (X_ii = 1), so it is kept apart as a constant and every solver sees the zero-diagonal part.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


class ProblemError(ValueError):
    """A problem's data is unusable; the message names the field and what is allowed."""


def _fail(field: str, what: str, allowed: str):
    raise ProblemError(f"{field} is invalid: {what}; {allowed}")


@dataclass(frozen=True, eq=False)
class DiagSDP:
    """min <C, X> s.t. X_ii = 1, X PSD.  `C` is the zero-diagonal CSR part; `const` = trace(C)."""

    C: sp.csr_matrix
    const: float = 0.0
    name: str = "sdp"
    sense: str = "min"  # "max" for MaxCut: value() turns <C, X> into the cut value
    scale: float = 1.0  # value = offset + scale * <C, X>
    offset: float = 0.0

    @property
    def n(self) -> int:
        return self.C.shape[0]

    def value(self, obj: float) -> float:
        """The problem's own objective (the cut value for MaxCut) from <C, X>."""
        return self.offset + self.scale * obj

    def objective(self, V: np.ndarray) -> float:
        """<C, V V^T> for a factor V (n x k)."""
        return float(np.sum(V * (self.C @ V))) + self.const

    def objective_of_matrix(self, X: np.ndarray) -> float:
        return float(self.C.multiply(X).sum()) + self.const

    def dense(self) -> np.ndarray:
        return self.C.toarray() + np.diag(np.full(self.n, self.const / self.n))


def _as_csr(matrix, field: str) -> sp.csr_matrix:
    if matrix is None:
        _fail(field, "no matrix given", "pass a square array or scipy sparse matrix")
    M = sp.csr_matrix(matrix, dtype=np.float64) if not sp.issparse(matrix) else matrix.tocsr().astype(np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        _fail(field, f"shape {M.shape} is not square", "the matrix must be n x n")
    if M.shape[0] == 0:
        _fail(field, "the matrix is empty (n = 0)", "the graph needs at least 2 nodes and 1 edge")
    if not np.all(np.isfinite(M.data)):
        _fail(field, "it has NaN or infinite entries", "every entry must be finite")
    M.eliminate_zeros()
    return M


def _check_symmetric(M: sp.csr_matrix, field: str) -> None:
    diff = abs(M - M.T)
    if diff.nnz and diff.max() > 1e-10 * max(1.0, abs(M).max()):
        i, j = np.unravel_index(int(np.argmax(diff.toarray())) if M.shape[0] <= 2000 else 0, M.shape)
        _fail(field, f"the matrix is not symmetric (largest |M - M^T| = {diff.max():.3g}"
                     + (f", e.g. at ({i}, {j}))" if M.shape[0] <= 2000 else ")"),
              "the method needs a symmetric matrix (an undirected graph)")


def diag_sdp(C, name: str = "sdp") -> DiagSDP:
    """min <C, X> over X PSD with unit diagonal, for any symmetric C (negative entries allowed)."""
    M = _as_csr(C, "C")
    _check_symmetric(M, "C")
    d = M.diagonal()
    off = (M - sp.diags(d)).tocsr()
    off.eliminate_zeros()
    if off.nnz == 0:
        _fail("C", "it has no off-diagonal entries (every X with unit diagonal is optimal)",
              "give at least one non-zero C_ij with i != j")
    return DiagSDP(off, float(d.sum()), name)


def maxcut(W, name: str = "graph") -> DiagSDP:
    """The MaxCut SDP of the graph with weight matrix W (symmetric, non-negative; the diagonal is ignored)."""
    M = _as_csr(W, "W")
    if M.shape[0] < 2:
        _fail("W", f"the graph has {M.shape[0]} node", "MaxCut needs at least 2 nodes and 1 edge")
    if M.nnz and M.data.min() < 0:
        _fail("W", f"it has negative weights (smallest {M.data.min():.3g})",
              "MaxCut and the 0.878 rounding guarantee need non-negative weights; use diag_sdp for signed C")
    _check_symmetric(M, "W")
    M = (M - sp.diags(M.diagonal())).tocsr()
    M.eliminate_zeros()
    if M.nnz == 0:
        _fail("W", "the graph has no edges", "MaxCut needs at least 1 edge with positive weight")
    total = float(M.sum())
    return DiagSDP(M, 0.0, name, sense="max", scale=-0.25, offset=total / 4.0)


def cut_value(problem: DiagSDP, x: np.ndarray) -> float:
    """The value of a +-1 vector x: the cut weight for MaxCut (x^T C x through `value`)."""
    x = np.asarray(x, dtype=np.float64)
    return problem.value(float(x @ (problem.C @ x)) + problem.const)


def check_rank(k, n: int | None = None) -> int:
    """k is the number of columns of V (the rank of the factorization): an integer >= 1."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ProblemError(f"k={k!r} is invalid: the rank k of the factor V must be an integer >= 1")
    if n is not None and k > n:
        raise ProblemError(f"k={k!r} is invalid: the rank k must be at most n = {n}")
    return int(k)


def default_rank(n: int) -> int:
    """ceil(sqrt(2n)) + 1: just above the Barvinok-Pataki bound, where spurious local optima vanish."""
    return int(np.ceil(np.sqrt(2 * n))) + 1


def rank_threshold(n: int) -> int:
    """The smallest integer k with k > sqrt(2n) (the report's Sec. 2.2.1 threshold; k(k+1)/2 > n also holds)."""
    return int(np.floor(np.sqrt(2 * n))) + 1
