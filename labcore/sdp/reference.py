"""A reference optimum from an interior/conic solver: cvxpy with SCS (or Clarabel), for graphs up to a few hundred
nodes (the n x n PSD variable is what limits it)."""
from __future__ import annotations

import numpy as np

from .problem import DiagSDP

MAX_NODES = 400


def reference_optimum(problem: DiagSDP, solver: str = "SCS", eps: float = 1e-9) -> tuple[float, np.ndarray]:
    """(the problem's optimal value, X) for min <C, X>, diag(X) = 1, X PSD solved by cvxpy."""
    import cvxpy as cp

    if problem.n > MAX_NODES:
        raise ValueError(f"n={problem.n} is invalid for the cvxpy reference: at most {MAX_NODES} nodes")
    C = problem.C.toarray()
    X = cp.Variable((problem.n, problem.n), PSD=True)
    prob = cp.Problem(cp.Minimize(cp.trace(C @ X)), [cp.diag(X) == 1])
    opts = {"eps": eps, "max_iters": 200000} if solver == "SCS" else {}
    prob.solve(solver=solver, **opts)
    if prob.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"cvxpy/{solver} ended with status {prob.status}")
    return problem.value(float(prob.value) + problem.const), np.asarray(X.value)
