"""Matrix-completion problems: the seen entries, and what the error is measured against.

    p = make_problem(CompletionConfig(n=500, rank=2, share=0.4, kappa=2))
    p.rows, p.cols, p.vals        # seen entries, sorted row-major (CSR order)
    p.truth                       # (A, B) with M* = A B^T (synthetic), else None
    p.test_rows, ...              # held-out ratings (real data), else None

A problem below the information-theoretic limit (fewer seen entries than the r(m + n - r) degrees of freedom
of a rank-r matrix) is still built, with an `InformationLimitWarning`: no algorithm can recover it.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .config import CompletionConfig
from .errors import frobenius_of_product, heldout_errors, relative_error
from .ops import sample


class InformationLimitWarning(UserWarning):
    """Fewer seen entries than degrees of freedom: the problem has no unique rank-r solution."""


@dataclass(eq=False)
class Problem:
    m: int
    n: int
    rank: int
    rows: np.ndarray  # int64, sorted row-major
    cols: np.ndarray
    vals: np.ndarray  # float64, the seen (possibly noisy) values
    truth: tuple[np.ndarray, np.ndarray] | None = None  # M* = A B^T
    test_rows: np.ndarray | None = None
    test_cols: np.ndarray | None = None
    test_vals: np.ndarray | None = None
    psd: bool = False
    name: str = "synthetic"

    def __post_init__(self):
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(self.rows, minlength=self.m))]).astype(np.int64)
        self.share_seen = len(self.vals) / (self.m * self.n)
        self.truth_norm = frobenius_of_product(*self.truth) if self.truth is not None else None

    @property
    def n_seen(self) -> int:
        return len(self.vals)

    def degrees_of_freedom(self) -> int:
        r = self.rank
        return r * (2 * self.n - r + 1) // 2 if self.psd else r * (self.m + self.n - r)

    def matrix(self, values: np.ndarray) -> sp.csr_matrix:
        """The m x n sparse matrix with `values` on the seen entries (shares the problem's index arrays)."""
        return sp.csr_matrix((values, self.cols, self.indptr), shape=(self.m, self.n))

    def sample(self, U: np.ndarray, V: np.ndarray) -> np.ndarray:
        """(U V^T) on the seen entries."""
        return sample(U, V, self.rows, self.cols)

    def error(self, U: np.ndarray, V: np.ndarray) -> dict:
        """The error of M = U V^T: relative Frobenius error to M* (synthetic) or on the held-out ratings."""
        fit = float(np.linalg.norm(self.vals - self.sample(U, V)) / np.linalg.norm(self.vals))
        if self.truth is not None:
            return {"error": relative_error(U, V, *self.truth, truth_norm=self.truth_norm), "fit": fit}
        rel, rmse = heldout_errors(sample(U, V, self.test_rows, self.test_cols), self.test_vals)
        return {"error": rel, "fit": fit, "rmse": rmse}


# --- synthetic ------------------------------------------------------------------------------------------
def spectrum(rank: int, kappa: float) -> np.ndarray:
    """Singular values from 1 down to 1/kappa, evenly spaced in log scale."""
    return np.logspace(0.0, -np.log10(kappa), rank) if rank > 1 else np.ones(1)


def _uniform_pairs(rng: np.random.Generator, total: int, k: int) -> np.ndarray:
    """k distinct linear indices in [0, total), sorted, without an array of size `total`."""
    k = min(k, total)
    if k > total // 4:
        return np.sort(rng.choice(total, size=k, replace=False))
    picked = np.unique(rng.integers(0, total, size=int(k * 1.1) + 16))
    while len(picked) < k:
        picked = np.unique(np.concatenate([picked, rng.integers(0, total, size=k - len(picked) + 16)]))
    return np.sort(rng.choice(picked, size=k, replace=False))


def check_information_limit(cfg: CompletionConfig, stacklevel: int = 3) -> bool:
    """Warn (and return True) when the problem is below the information-theoretic limit."""
    if cfg.below_information_limit():
        warnings.warn(
            f"below the information-theoretic limit: {cfg.expected_seen():,.0f} seen entries < "
            f"{cfg.degrees_of_freedom():,} degrees of freedom of a rank-{cfg.rank} {cfg.m} x {cfg.n} matrix "
            f"(r(m + n - r)); no algorithm can recover M* (share={cfg.share:g}, rank={cfg.rank})",
            InformationLimitWarning, stacklevel=stacklevel)
        return True
    return False


def synthetic_problem(cfg: CompletionConfig) -> Problem:
    check_information_limit(cfg, stacklevel=4)
    rng = np.random.default_rng([cfg.problem_seed, 17])
    m, n, r = cfg.m, cfg.n, cfg.rank
    s = spectrum(r, cfg.kappa)
    U = np.linalg.qr(rng.standard_normal((m, r)))[0]
    if cfg.psd:
        A, B = U * s, U
        upper = _uniform_pairs(rng, n * (n + 1) // 2, max(1, round(cfg.share * n * (n + 1) / 2)))
        i, j = _triangle(upper, n)
        rows, cols = np.concatenate([i, j[i != j]]), np.concatenate([j, i[i != j]])
        order = np.lexsort((cols, rows))
        rows, cols = rows[order], cols[order]
    else:
        V = np.linalg.qr(rng.standard_normal((n, r)))[0]
        A, B = U * s, V
        lin = _uniform_pairs(rng, m * n, max(1, round(cfg.share * m * n)))
        rows, cols = lin // n, lin % n
    vals = sample(A, B, rows, cols)
    if cfg.noise > 0:
        g = rng.standard_normal(len(vals))
        if cfg.psd:  # the same noise on (i, j) and (j, i): the seen matrix stays symmetric
            key = np.minimum(rows, cols) * n + np.maximum(rows, cols)
            g = g[np.unique(key, return_inverse=True)[1]]
        vals = vals + cfg.noise * np.linalg.norm(vals) / np.sqrt(len(vals)) * g
    return Problem(m, n, r, rows.astype(np.int64), cols.astype(np.int64), vals, truth=(A, B), psd=cfg.psd)


def _triangle(lin: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Linear indices of the upper triangle (row-major, diagonal included) -> (i, j) with i <= j."""
    # row i starts at i*n - i*(i-1)/2; invert with the quadratic formula, then fix rounding
    i = np.floor(((2 * n + 1) - np.sqrt((2 * n + 1) ** 2 - 8.0 * lin)) / 2).astype(np.int64)
    start = i * n - i * (i - 1) // 2
    i = np.where(lin < start, i - 1, i)
    start = i * n - i * (i - 1) // 2
    nxt = (i + 1) * n - (i + 1) * i // 2
    i = np.where(lin >= nxt, i + 1, i)
    start = i * n - i * (i - 1) // 2
    return i, i + (lin - start)


def make_problem(cfg: CompletionConfig) -> Problem:
    if cfg.dataset == "synthetic":
        return synthetic_problem(cfg)
    return ratings_problem(cfg)


def ratings_problem(cfg: CompletionConfig) -> Problem:
    """At most m users x n items (the first by id), `share` of their ratings seen, the rest held out."""
    from .ratings import read_ratings  # the MovieLens readers, only for a real data set

    users, items, vals = read_ratings(cfg.dataset)
    keep = (users < cfg.m) & (items < cfg.n)
    users, items, vals = users[keep], items[keep], vals[keep]
    m, n = int(users.max()) + 1, int(items.max()) + 1
    rng = np.random.default_rng([cfg.problem_seed, 29])
    seen = rng.random(len(vals)) < cfg.share
    order = np.lexsort((items[seen], users[seen]))
    return Problem(m, n, cfg.rank, users[seen][order], items[seen][order], vals[seen][order],
                   test_rows=users[~seen], test_cols=items[~seen], test_vals=vals[~seen], name=cfg.dataset)
