"""Local training of a cohort in one compiled pass over the batch schedule (numba).

The batched torch trainer (`local_train.train_cohort_batched`) does each local step for all clients at once,
but every step gathers (clients, batch, d) copies of the rows it reads, materializes three temporaries of that
size and scatters the result back: at full participation most of a round is memory traffic, not arithmetic.
Here each client walks its own steps and reads and writes its rows in place, so a round costs about one
pass over the samples (d multiply-adds a slot, five times). Same update rule, same float32 arithmetic; only
the summation order of the dot products differs from torch's (last-bit differences, 1e-7 relative).

Clients are independent within a round (each owns its user vector and its rows of W), so loops over clients
are `prange`s: no sum is ever split between threads, and the thread count changes no bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .threads import compiled_threads

# reassociation lets LLVM vectorize the d-long dot products (a fixed order for a given build and CPU)
_FAST = {"reassoc", "contract"}


# --- the rows a cohort touches -------------------------------------------------------------------------------
@njit(cache=True)
def _touched(first, s_item, n_items, row_client, row_item, row_of_sample, count_only):
    """Client by client (serial: one stamp array over the items): count the distinct items (count_only), or
    write them in increasing order with each sample's row. A client's distinct items are put in order by a
    scan of the stamp array when that is cheaper than sorting them (dense clients), else by a sort."""
    M = first.shape[0] - 1
    stamp = np.full(n_items, -1, dtype=np.int64)
    pos = np.empty(n_items, dtype=np.int64)
    distinct = np.empty(n_items, dtype=np.int64)
    counts = np.zeros(M, dtype=np.int64)
    r = 0
    for m in range(M):
        n = 0
        for s in range(first[m], first[m + 1]):
            i = s_item[s]
            if stamp[i] != m:
                stamp[i] = m
                distinct[n] = i
                n += 1
        counts[m] = n
        if count_only:
            continue
        if n * max(1, int(np.log2(n + 1))) < n_items:
            mine = np.sort(distinct[:n])
        else:
            mine = np.empty(n, dtype=np.int64)
            j = 0
            for i in range(n_items):
                if stamp[i] == m:
                    mine[j] = i
                    j += 1
        for j in range(n):
            row_item[r + j] = mine[j]
            row_client[r + j] = m
            pos[mine[j]] = r + j
        for s in range(first[m], first[m + 1]):
            row_of_sample[s] = pos[s_item[s]]
        r += n
    return counts


def touched_rows_grouped(first: np.ndarray, s_item: np.ndarray, n_items: int):
    """The distinct (client, item) rows of a cohort whose samples are grouped by client (client m's are
    first[m]:first[m + 1]), sorted by client then item (`torch.unique` of client * N + item), and each
    sample's row. Returns row_client, row_item, row_of_sample."""
    none = np.empty(0, dtype=np.int64)
    U = int(_touched(first, s_item, n_items, none, none, none, True).sum())
    row_client, row_item = np.empty(U, np.int64), np.empty(U, np.int64)
    row_of_sample = np.empty(s_item.shape[0], np.int64)
    _touched(first, s_item, n_items, row_client, row_item, row_of_sample, False)
    return row_client, row_item, row_of_sample


# --- local training --------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=_FAST)
def _sigmoid_bce(x, label):
    """sigmoid(x) and the loss softplus(x) - label x (float32 math from one exp; the loss column only)."""
    one = np.float32(1.0)
    ex = np.exp(-x)
    e_abs = ex if x >= 0 else one / ex  # exp(-|x|)
    return one / (one + ex), max(x, np.float32(0.0)) + np.log1p(e_abs) - label * x


@njit(cache=True, parallel=True)
def _full_rows(Q, W, p, slots, s_item, s_label, row_of_sample, n_active, offsets, lr, two_wd, loss):
    for m in prange(p.shape[0]):
        _full_client(m, Q, W, p, slots, s_item, s_label, row_of_sample, n_active, offsets, lr, two_wd, loss)


@njit(cache=True, fastmath=_FAST)
def _full_client(m, Q, W, p, slots, s_item, s_label, row_of_sample, n_active, offsets, lr, two_wd, loss):
    d = p.shape[1]
    Bs = slots.shape[1]
    lr32, neg_lr, wd, one = np.float32(lr), np.float32(-lr), np.float32(two_wd), np.float32(1.0)
    E = np.empty((Bs, d), dtype=np.float32)  # the batch's q + D rows as read (before this step's update)
    g = np.empty(Bs, dtype=np.float32)
    ge = np.empty(d, dtype=np.float32)
    item = np.empty(Bs, dtype=np.int64)
    key = np.empty(Bs, dtype=np.int64)
    count = np.zeros(Q.shape[0], dtype=np.int32)  # occurrences of an item in the current batch
    pm = p[m]
    total = 0.0
    for t in range(n_active.shape[0]):
        if m >= n_active[t]:
            break
        r = offsets[t] + m
        nb = 0
        for b in range(Bs):
            s = slots[r, b]
            if s < 0:
                continue
            i, k = s_item[s], row_of_sample[s]
            item[nb], key[nb] = i, k
            count[i] += 1
            x = np.float32(0.0)
            for j in range(d):
                e = Q[i, j] + W[k, j]
                E[nb, j] = e
                x += e * pm[j]
            sg, bce = _sigmoid_bce(x, s_label[s])
            g[nb] = sg - s_label[s]
            total += bce
            nb += 1
        # user: mean over the batch of g e; item rows: -lr times the mean over a row's occurrences in the
        # batch of (g p + 2 wd e). One pass over the batch for both.
        for j in range(d):
            ge[j] = 0.0
        for b in range(nb):
            sc = (one / np.float32(count[item[b]])) * neg_lr
            k, gb = key[b], g[b]
            for j in range(d):
                e = E[b, j]
                ge[j] += gb * e
                W[k, j] += (gb * pm[j] + wd * e) * sc
        for b in range(nb):
            count[item[b]] = 0
        inv_nv = one / np.float32(max(nb, 1))
        for j in range(d):
            pm[j] -= lr32 * (ge[j] * inv_nv + wd * pm[j])
    loss[m] = total


@njit(cache=True, parallel=True)
def _lowrank_rows(QB, Q, B, BtB, row_scale, W, p, slots, s_item, s_label, row_of_sample, n_active, offsets, lr,
                  two_wd, loss):
    for m in prange(p.shape[0]):
        _lowrank_client(m, QB, Q, B, BtB, row_scale, W, p, slots, s_item, s_label, row_of_sample, n_active,
                        offsets, lr, two_wd, loss)


@njit(cache=True, fastmath=_FAST)
def _lowrank_client(m, QB, Q, B, BtB, row_scale, W, p, slots, s_item, s_label, row_of_sample, n_active, offsets,
                    lr, two_wd, loss):
    d, rk = p.shape[1], B.shape[1]
    Bs = slots.shape[1]
    lr32, neg_lr, wd, one = np.float32(lr), np.float32(-lr), np.float32(two_wd), np.float32(1.0)
    A = np.empty((Bs, rk), dtype=np.float32)  # the batch's a rows as read (before this step's update)
    g = np.empty(Bs, dtype=np.float32)
    ge = np.empty(d, dtype=np.float32)
    ga = np.empty(rk, dtype=np.float32)
    Bp = np.empty(rk, dtype=np.float32)
    item = np.empty(Bs, dtype=np.int64)
    key = np.empty(Bs, dtype=np.int64)
    count = np.zeros(Q.shape[0], dtype=np.int32)
    pm = p[m]
    total = 0.0
    for t in range(n_active.shape[0]):
        if m >= n_active[t]:
            break
        r = offsets[t] + m
        for c in range(rk):
            acc = np.float32(0.0)
            for j in range(d):
                acc += pm[j] * B[j, c]
            Bp[c] = acc
        nb = 0
        for b in range(Bs):
            s = slots[r, b]
            if s < 0:
                continue
            i, k = s_item[s], row_of_sample[s]
            item[nb], key[nb] = i, k
            count[i] += 1
            x = np.float32(0.0)
            for j in range(d):
                x += Q[i, j] * pm[j]
            y = np.float32(0.0)
            for c in range(rk):
                A[nb, c] = W[k, c]
                y += W[k, c] * Bp[c]
            x = x + y
            sg, bce = _sigmoid_bce(x, s_label[s])
            g[nb] = sg - s_label[s]
            total += bce
            nb += 1
        for j in range(d):
            ge[j] = 0.0
        for c in range(rk):
            ga[c] = 0.0
        for b in range(nb):
            gb, i = g[b], item[b]
            for j in range(d):
                ge[j] += gb * Q[i, j]
            for c in range(rk):
                ga[c] += gb * A[b, c]
        for j in range(d):  # dL/dp gets (sum_b g a) B^T
            acc = np.float32(0.0)
            for c in range(rk):
                acc += ga[c] * B[j, c]
            ge[j] += acc
        for b in range(nb):
            sc = (one / np.float32(count[item[b]])) * neg_lr
            k, i, gb = key[b], item[b], g[b]
            for c in range(rk):
                ab = np.float32(0.0)
                for c2 in range(rk):
                    ab += A[b, c2] * BtB[c2, c]
                W[k, c] += (gb * Bp[c] + wd * (QB[i, c] + ab)) * row_scale[m, c] * sc
        for b in range(nb):
            count[item[b]] = 0
        inv_nv = one / np.float32(max(nb, 1))
        for j in range(d):
            pm[j] -= lr32 * (ge[j] * inv_nv + wd * pm[j])
    loss[m] = total


def full_rows(Q, W, p, slots, s_item, s_label, row_of_sample, n_active, offsets, lr, two_wd) -> float:
    """FedMF / SVD / Top-K: W's rows are D_i of the touched (client, item) pairs and q = Q_i + D_i.

    Q (N, d) frozen; W (U, d) zero at entry, trained in place; p (M, d) user vectors in schedule order
    (`RoundPlan.order`), trained in place; slots (R, B) the plan's schedule; per sample its item, label and
    row of W. Returns the summed BCE loss of every slot (before its step)."""
    loss = np.zeros(p.shape[0])
    with compiled_threads():
        _full_rows(Q, W, p, slots, s_item, s_label, row_of_sample, n_active, offsets, lr, two_wd, loss)
    return float(loss.sum())


def lowrank_rows(Q, B, row_scale, W, p, slots, s_item, s_label, row_of_sample, n_active, offsets, lr,
                 two_wd) -> float:
    """CoLR / SCoLR: W's rows are a_i (width r) and q = Q_i + B a_i, trained in A's r-dimensional space:
    x = p.Q_i + (B^T p).a_i, dL/da = row_scale (g B^T p + 2 wd (B^T Q_i + B^T B a_i)).
    row_scale (M, r) per client in schedule order (SCoLR's column mask times its lr scale)."""
    QB, BtB = Q @ B, B.T @ B  # Q is frozen during local training: B^T Q_i once per item
    loss = np.zeros(p.shape[0])
    with compiled_threads():
        _lowrank_rows(QB, Q, B, BtB, row_scale, W, p, slots, s_item, s_label, row_of_sample, n_active, offsets,
                      lr, two_wd, loss)
    return float(loss.sum())
