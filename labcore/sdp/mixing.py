"""The mixing method (Wang, Chang & Kolter 2017) and its coordinate rules (Erdogdu et al. 2018), Mixing++.

One sweep = n block updates v_i <- -g_i / ||g_i||:
  cyclic     i = 1..n in order (the original method);
  uniform    n indices drawn uniformly with replacement;
  importance n indices drawn with p_i = ||g_i|| / sum_j ||g_j||, the norms taken at the start of the sweep
             (they are not refreshed inside a sweep: a stale but cheap version of the rule);
  greedy     n times i = argmax ||g_i|| + <v_i, g_i> (the exact decrease of the update), G = C V kept up to date.
Mixing++ (Kim et al. 2021) adds momentum to each block: v_i <- normalize(u + beta (u - v_i)), u = -g_i/||g_i||.
"""
from __future__ import annotations

import numpy as np

from . import mixing_kernels as K
from .certificates import normalize_rows
from .problem import DiagSDP, check_rank
from .trace import Recorder

RULES = ("cyclic", "uniform", "importance", "greedy")


def csr_arrays(problem: DiagSDP):
    C = problem.C
    return C.indptr.astype(np.int64), C.indices.astype(np.int64), np.ascontiguousarray(C.data, dtype=np.float64)


def initial_factor(n: int, k: int, seed: int) -> np.ndarray:
    """Random unit rows (Gaussian directions): the random initialization the mixing method's theory assumes."""
    return normalize_rows(np.random.default_rng(seed).normal(size=(n, k)))


def mixing(problem: DiagSDP, k: int, rule: str = "cyclic", momentum: float = 0.0, rec: Recorder | None = None,
           seed: int = 0, V0: np.ndarray | None = None) -> np.ndarray:
    """Run sweeps until `rec` says stop; returns V (n x k, unit rows)."""
    k = check_rank(k, problem.n)
    if rule not in RULES:
        raise ValueError(f"rule={rule!r} is invalid: allowed values are {', '.join(RULES)}")
    if rule == "greedy" and momentum:
        raise ValueError("rule='greedy' is invalid with momentum > 0: Mixing++ uses cyclic, uniform or importance")
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum={momentum!r} is invalid: allowed range is 0 <= beta < 1")
    K.warm_up()  # compile (or load the cached machine code) before the clock starts
    n = problem.n
    indptr, indices, data = csr_arrays(problem)
    rng = np.random.default_rng(seed + 1)
    V = initial_factor(n, k, seed) if V0 is None else np.array(V0, dtype=np.float64)
    rec = rec or Recorder(problem, "mixing", 100, 1e-6, 60.0)
    rec.log(0, V, force=True)
    it = 0
    while True:
        it += 1
        rec.start()
        if rule == "greedy":
            G = problem.C @ V
            K.greedy_steps(indptr, indices, data, V, G, n)
        else:
            if rule == "cyclic":
                order = np.arange(n, dtype=np.int64)
            elif rule == "uniform":
                order = rng.integers(0, n, n).astype(np.int64)
            else:
                gn = np.linalg.norm(problem.C @ V, axis=1)
                order = rng.choice(n, n, p=gn / gn.sum()).astype(np.int64)
            K.sweep_order(indptr, indices, data, V, order, float(momentum))
        rec.stop()
        if rec.log(it, V):
            return V
