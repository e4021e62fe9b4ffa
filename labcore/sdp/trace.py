"""`Recorder`: the per-iteration table every solver fills (objective, certificate, rank, time).

Solver time and certificate time are kept apart: `seconds` is the method's own work (what a user of the method
pays), `cert_seconds` the Lanczos certificate computed for the table.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .certificates import certificate
from .problem import DiagSDP

COLUMNS = ("method", "iter", "seconds", "cert_seconds", "primal", "bound", "rel_gap", "rank", "infeasibility")


def numerical_rank(V: np.ndarray, rtol: float = 1e-6) -> int:
    """Rank of V V^T: singular values of V above rtol times the largest."""
    s = np.linalg.svd(V, compute_uv=False)
    return int((s > rtol * s[0]).sum()) if s.size and s[0] > 0 else 0


def log_schedule(max_iters: int, points: int = 40) -> set[int]:
    return set(np.unique(np.geomspace(1, max_iters, points).round().astype(int)).tolist()) | {max_iters}


class Recorder:
    def __init__(self, problem: DiagSDP, method: str, max_iters: int, tol: float, time_limit: float,
                 cert_every: int = 1):
        self.problem, self.method, self.tol, self.time_limit = problem, method, tol, time_limit
        self.max_iters = max_iters
        self.schedule = log_schedule(max_iters) if cert_every == 0 else None
        self.cert_every = cert_every
        self.rows: list[dict] = []
        self.solver_seconds = 0.0
        self.cert_seconds = 0.0
        self._t0 = None
        self._v0 = None

    # --- timing of the method's own work ---------------------------------------------------------------
    def start(self) -> None:
        self._t0 = time.perf_counter()

    def stop(self) -> None:
        self.solver_seconds += time.perf_counter() - self._t0

    def due(self, it: int) -> bool:
        if it >= self.max_iters or self.solver_seconds >= self.time_limit:
            return True
        return it in self.schedule if self.schedule is not None else it % self.cert_every == 0

    def log(self, it: int, V: np.ndarray, force: bool = False, **extra) -> bool:
        """Certify V (if due) and add a row; True when the run should stop (gap below tol, out of time/iters)."""
        out_of_budget = it >= self.max_iters or self.solver_seconds >= self.time_limit
        if not (force or self.due(it)):
            return out_of_budget
        t = time.perf_counter()
        cert = certificate(self.problem, V, self._v0)
        if cert.rel_gap < self.tol and self._v0 is not None:
            # Lanczos warm-started at the last eigenvector can settle on an eigenvalue that is no longer the
            # smallest (measured on Cora: a claimed gap of 8e-5 whose dense check was 5.5e-4), so a gap that
            # ends the run is certified again by a dense solve (graphs up to DENSE_CHECK_NODES nodes).
            cert = certificate(self.problem, V, None, exact=True)
        self._v0 = cert.eigvec
        row = {"method": self.method, "iter": it, "seconds": self.solver_seconds, "primal": cert.primal,
               "bound": cert.bound, "rel_gap": cert.rel_gap, "rank": numerical_rank(V),
               "infeasibility": float(np.abs(np.einsum("ij,ij->i", V, V) - 1).max())}
        row.update(extra)
        self.cert_seconds += time.perf_counter() - t
        row["cert_seconds"] = self.cert_seconds
        self.rows.append(row)
        return out_of_budget or cert.rel_gap < self.tol

    def table(self) -> pd.DataFrame:
        df = pd.DataFrame(self.rows)
        first = [c for c in COLUMNS if c in df.columns]
        return df[first + [c for c in df.columns if c not in first]]
