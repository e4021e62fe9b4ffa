"""The mixing method's inner loops, compiled with numba over the CSR arrays of C (zero diagonal).

Why numba: one coordinate update touches only the neighbours of node i (deg(i) * k flops), and the next update
depends on it (Gauss-Seidel), so the work cannot be batched into one sparse product; a Python loop over nodes
costs ~10 us of interpreter overhead per node, far more than the update itself. `cache=True` keeps the compiled
code on disk so only the first run on a machine pays the compile time; `warm_up()` compiles outside any timing.

Every update is v_i <- -g_i / ||g_i|| with g_i = sum_j C_ij v_j (the report's Sec. 2.2.1); Mixing++ replaces it
by v_i <- normalize(u + beta (u - v_i)) with u = -g_i / ||g_i|| (the projected step plus heavy-ball momentum).
"""
from __future__ import annotations

import numpy as np
from numba import njit

_TINY = 1e-300


@njit(cache=True)
def sweep_order(indptr, indices, data, V, order, beta):
    """Update the rows `order` of V in that order (recomputing each g_i from its neighbours)."""
    k = V.shape[1]
    g = np.empty(k)
    for t in range(order.size):
        i = order[t]
        g[:] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = data[p]
            for c in range(k):
                g[c] += w * V[j, c]
        nrm = 0.0
        for c in range(k):
            nrm += g[c] * g[c]
        nrm = np.sqrt(nrm)
        if nrm < _TINY:  # isolated node: any unit vector is optimal, keep it
            continue
        if beta == 0.0:
            for c in range(k):
                V[i, c] = -g[c] / nrm
        else:
            s = 0.0
            for c in range(k):
                u = -g[c] / nrm
                g[c] = u + beta * (u - V[i, c])
                s += g[c] * g[c]
            s = np.sqrt(s)
            if s < _TINY:  # u = v_i exactly: already optimal for this block
                continue
            for c in range(k):
                V[i, c] = g[c] / s


@njit(cache=True)
def _gain(V, G, i):
    """Decrease of <C, VV^T>/2 from updating block i: ||g_i|| + <v_i, g_i> (>= 0)."""
    nrm = 0.0
    dot = 0.0
    for c in range(V.shape[1]):
        nrm += G[i, c] * G[i, c]
        dot += V[i, c] * G[i, c]
    return np.sqrt(nrm) + dot


@njit(cache=True)
def greedy_steps(indptr, indices, data, V, G, steps):
    """`steps` greedy updates: each picks i = argmax_i ||g_i|| + <v_i, g_i>, keeping G = C V up to date.

    Returns the number of updates done (fewer if every gain is 0: a critical point)."""
    n, k = V.shape
    gain = np.empty(n)
    for i in range(n):
        gain[i] = _gain(V, G, i)
    delta = np.empty(k)
    for s in range(steps):
        i = np.argmax(gain)
        if gain[i] <= 0.0:
            return s
        nrm = 0.0
        for c in range(k):
            nrm += G[i, c] * G[i, c]
        nrm = np.sqrt(nrm)
        for c in range(k):
            new = -G[i, c] / nrm
            delta[c] = new - V[i, c]
            V[i, c] = new
        gain[i] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = data[p]
            for c in range(k):
                G[j, c] += w * delta[c]
            gain[j] = _gain(V, G, j)
    return steps


def warm_up() -> None:
    """Compile (or load from numba's cache) every kernel on a 3-node problem, outside any timing."""
    indptr = np.array([0, 2, 4, 6], dtype=np.int64)
    indices = np.array([1, 2, 0, 2, 0, 1], dtype=np.int64)
    data = np.ones(6)
    V = np.eye(3)
    sweep_order(indptr, indices, data, V, np.arange(3, dtype=np.int64), 0.0)
    sweep_order(indptr, indices, data, V, np.arange(3, dtype=np.int64), 0.5)
    greedy_steps(indptr, indices, data, V, np.ones((3, 3)), 3)


def python_sweep(indptr, indices, data, V, order, beta: float = 0.0) -> None:
    """The same update as `sweep_order`, as a plain per-node Python loop (numpy per node): the benchmark baseline
    and a test oracle."""
    for i in order:
        lo, hi = indptr[i], indptr[i + 1]
        g = data[lo:hi] @ V[indices[lo:hi]]
        nrm = np.linalg.norm(g)
        if nrm < _TINY:
            continue
        u = -g / nrm
        if beta:
            u = u + beta * (u - V[i])
            s = np.linalg.norm(u)
            if s < _TINY:
                continue
            u = u / s
        V[i] = u
