"""Local training of a cohort in one compiled pass over the batch schedule (numba).

The batched torch trainer (`local_train.train_cohort_batched`) does each local step for all clients at once,
but every step gathers (clients, batch, d) copies of the rows it reads, materializes three temporaries of that
size and scatters the result back: at full participation most of a round is memory traffic, not arithmetic.
Here each client walks its own steps and reads and writes its rows in place, so a round costs about one
pass over the samples (d multiply-adds a slot, five times). Same update rule, same float32 arithmetic; only
the summation order of the dot products differs from torch's (last-bit differences, 1e-7 relative).

Clients are independent within a round (each owns its user vector and its rows of W), so the loop over
clients is a `prange`: the result does not depend on the number of threads.
"""
from __future__ import annotations

import os

import numpy as np
from numba import config, get_parallel_chunksize, njit, prange, set_num_threads, set_parallel_chunksize

# reassociation lets LLVM vectorize the d-long dot products (a fixed order for a given build and CPU)
_FAST = {"reassoc", "contract"}
# clients come heaviest first (`RoundPlan.order`): hand them to threads in small chunks, not in two halves
_CHUNK = 16


@njit(cache=True, parallel=True)
def _full_rows(Q, W, p, keys, items, labels, valid, n_active, offsets, lr, two_wd, logits):
    """FedMF / SVD / Top-K: rows of W are D_i for the (client, item) pairs; q = Q_i + D_i.

    Q (N, d) frozen; W (U + 1, d) zero at entry, updated in place; p (M, d) user vectors in schedule order,
    updated in place; keys/items/labels/valid (R, B) per schedule row; logits (R, B) written."""
    for m in prange(p.shape[0]):
        _full_client(m, Q, W, p, keys, items, labels, valid, n_active, offsets, lr, two_wd, logits)


@njit(cache=True, fastmath=_FAST)
def _full_client(m, Q, W, p, keys, items, labels, valid, n_active, offsets, lr, two_wd, logits):
    M, d = p.shape
    Bs = keys.shape[1]
    T = n_active.shape[0]
    N = Q.shape[0]
    lr32 = np.float32(lr)
    neg_lr = np.float32(-lr)
    wd = np.float32(two_wd)
    one = np.float32(1.0)
    if True:
        E = np.empty((Bs, d), dtype=np.float32)
        g = np.empty(Bs, dtype=np.float32)
        ge = np.empty(d, dtype=np.float32)
        count = np.zeros(N, dtype=np.int32)  # occurrences of an item in the current batch
        pm = p[m]
        for t in range(T):
            if m >= n_active[t]:
                break
            r = offsets[t] + m
            nv = 0
            for b in range(Bs):
                if not valid[r, b]:
                    continue
                nv += 1
                count[items[r, b]] += 1
                k = keys[r, b]
                i = items[r, b]
                x = np.float32(0.0)
                for j in range(d):
                    e = Q[i, j] + W[k, j]
                    E[b, j] = e
                    x += e * pm[j]
                logits[r, b] = x
                g[b] = one / (one + np.exp(-x)) - labels[r, b]
            for j in range(d):
                ge[j] = 0.0
            for b in range(Bs):
                if valid[r, b]:
                    gb = g[b]
                    for j in range(d):
                        ge[j] += gb * E[b, j]
            # item rows: -lr times the mean over a row's occurrences in the batch of (g p + 2 wd e)
            for b in range(Bs):
                if not valid[r, b]:
                    continue
                i = items[r, b]
                s = (one / np.float32(count[i])) * neg_lr
                k = keys[r, b]
                gb = g[b]
                for j in range(d):
                    W[k, j] += (gb * pm[j] + wd * E[b, j]) * s
            for b in range(Bs):
                if valid[r, b]:
                    count[items[r, b]] = 0
            inv_nv = one / np.float32(max(nv, 1))
            for j in range(d):
                pm[j] -= lr32 * (ge[j] * inv_nv + wd * pm[j])


@njit(cache=True, parallel=True)
def _lowrank_rows(QB, Q, B, BtB, row_scale, W, p, keys, items, labels, valid, n_active, offsets, lr, two_wd,
                 logits):
    """CoLR / SCoLR: rows of W are a_i (width r) and q = Q_i + B a_i, trained in A's r-dimensional space:
    x = p.Q_i + (B^T p).a_i, dL/da = row_scale * (g B^T p + 2 wd (B^T Q_i + B^T B a_i)).

    QB = Q @ B (N, r), computed once; row_scale (M, r) per client in schedule order."""
    for m in prange(p.shape[0]):
        _lowrank_client(m, QB, Q, B, BtB, row_scale, W, p, keys, items, labels, valid, n_active, offsets, lr,
                        two_wd, logits)


@njit(cache=True, fastmath=_FAST)
def _lowrank_client(m, QB, Q, B, BtB, row_scale, W, p, keys, items, labels, valid, n_active, offsets, lr, two_wd,
                    logits):
    M, d = p.shape
    r_ = B.shape[1]
    Bs = keys.shape[1]
    T = n_active.shape[0]
    N = Q.shape[0]
    lr32 = np.float32(lr)
    neg_lr = np.float32(-lr)
    wd = np.float32(two_wd)
    one = np.float32(1.0)
    if True:
        g = np.empty(Bs, dtype=np.float32)
        ge = np.empty(d, dtype=np.float32)
        ga = np.empty(r_, dtype=np.float32)
        Bp = np.empty(r_, dtype=np.float32)
        A = np.empty((Bs, r_), dtype=np.float32)  # the batch's a rows as read (before this step's update)
        count = np.zeros(N, dtype=np.int32)
        pm = p[m]
        for t in range(T):
            if m >= n_active[t]:
                break
            row = offsets[t] + m
            for c in range(r_):
                acc = np.float32(0.0)
                for j in range(d):
                    acc += pm[j] * B[j, c]
                Bp[c] = acc
            nv = 0
            for b in range(Bs):
                if not valid[row, b]:
                    continue
                nv += 1
                i = items[row, b]
                count[i] += 1
                k = keys[row, b]
                x = np.float32(0.0)
                for j in range(d):
                    x += Q[i, j] * pm[j]
                y = np.float32(0.0)
                for c in range(r_):
                    A[b, c] = W[k, c]
                    y += W[k, c] * Bp[c]
                x = x + y
                logits[row, b] = x
                g[b] = one / (one + np.exp(-x)) - labels[row, b]
            for j in range(d):
                ge[j] = 0.0
            for c in range(r_):
                ga[c] = 0.0
            for b in range(Bs):
                if valid[row, b]:
                    gb = g[b]
                    i = items[row, b]
                    for j in range(d):
                        ge[j] += gb * Q[i, j]
                    for c in range(r_):
                        ga[c] += gb * A[b, c]
            for j in range(d):  # + (sum_b g a) B^T
                acc = np.float32(0.0)
                for c in range(r_):
                    acc += ga[c] * B[j, c]
                ge[j] += acc
            for b in range(Bs):
                if not valid[row, b]:
                    continue
                i = items[row, b]
                s = (one / np.float32(count[i])) * neg_lr
                k = keys[row, b]
                gb = g[b]
                for c in range(r_):
                    ab = np.float32(0.0)
                    for c2 in range(r_):
                        ab += A[b, c2] * BtB[c2, c]
                    W[k, c] += (gb * Bp[c] + wd * (QB[i, c] + ab)) * row_scale[m, c] * s
            for b in range(Bs):
                if valid[row, b]:
                    count[items[row, b]] = 0
            inv_nv = one / np.float32(max(nv, 1))
            for j in range(d):
                pm[j] -= lr32 * (ge[j] * inv_nv + wd * pm[j])


def _chunked(kernel):
    def run(*args):
        # as many threads as torch's (LABCORE_THREADS, one by default: see engine.use_threads)
        set_num_threads(max(1, min(int(os.environ.get("LABCORE_THREADS", "1")), config.NUMBA_NUM_THREADS)))
        old = get_parallel_chunksize()
        set_parallel_chunksize(_CHUNK)
        try:
            kernel(*args)
        finally:
            set_parallel_chunksize(old)
    run.__doc__ = kernel.__doc__
    return run


full_rows = _chunked(_full_rows)
lowrank_rows = _chunked(_lowrank_rows)
