"""Local training of a cohort in one compiled pass over the batch schedule (numba).

The readable form of each method's local step is in its own file (`labcore.methods.base.train_client` for FedMF,
`labcore.methods.colr.train_client` for CoLR / SCoLR); the tests check these kernels against it. A batched torch
trainer would gather (clients, batch, d) copies of the rows every step reads, materialize three temporaries of
that size and scatter the result back: at full participation most of a round would be memory traffic, not
arithmetic. Here each client walks its own steps and reads and writes its rows in place, so a round costs about one
pass over the samples (d multiply-adds a slot, five times). Same update rule, same float32 arithmetic; only
the summation order of the dot products differs from torch's (last-bit differences, 1e-7 relative).

Clients are independent within a round (each owns its user vector and its rows of W), so they are spread over
threads (`_lanes`): no sum is ever split between threads, and the thread count changes no bit.
"""
from __future__ import annotations

import math
import sys

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros  # count trailing zero bits (one instruction)

from ..threads import compiled_threads, n_threads
from ..workspace import Workspace, take
from .common import FAST, add_loss, bce, end_step, gather_batch, open_rows



# --- the rows a cohort touches -------------------------------------------------------------------------------
@njit(cache=True)
def _set_item_bits(m, first, s_item, bits):
    """Set bit i of `bits` (a bit set over the catalogue, one uint64 word per 64 items) for every item i among
    client m's samples."""
    one = np.uint64(1)
    for s in range(first[m], first[m + 1]):
        i = s_item[s]
        bits[i >> 6] |= one << np.uint64(i & 63)


@njit(cache=True, parallel=True)
def _count_touched(lanes, first, s_item, n_items, counts, words):
    """counts[m] = client m's distinct items: the bits its samples set. Clients are dealt to threads like the
    training's (_lanes), each thread with its own bit set, cleared after each client. If words has rows, words[m]
    keeps client m's bit set (the fill reads it there instead of setting the bits again)."""
    M = first.shape[0] - 1
    one = np.uint64(1)
    keep = words.shape[0] > 0
    for lane in prange(lanes):
        bits = np.zeros((n_items + 63) // 64, dtype=np.uint64)
        for m in range(lane, M, lanes):
            _set_item_bits(m, first, s_item, bits)
            n = 0
            for w in range(bits.shape[0]):
                x = bits[w]
                if keep:
                    words[m, w] = x
                while x != 0:
                    n += 1
                    x &= x - one
                bits[w] = 0
            counts[m] = n


@njit(cache=True, parallel=True)
def _fill_touched(lanes, first, s_item, n_items, row_first, row_item, words):
    """Client m's rows are row_first[m]:row_first[m + 1], its distinct items in increasing order (its set bits,
    read word by word: 58 words on ML-1M, faster than sorting the items or scanning a stamp per item): from
    words[m] if words has rows (`_count_touched` kept them), else from the bits its samples set again."""
    M = first.shape[0] - 1
    one = np.uint64(1)
    kept = words.shape[0] > 0
    for lane in prange(lanes):
        bits = np.zeros((n_items + 63) // 64, dtype=np.uint64)
        for m in range(lane, M, lanes):
            if not kept:
                _set_item_bits(m, first, s_item, bits)
            r = row_first[m]
            for w in range(bits.shape[0]):
                x = words[m, w] if kept else bits[w]
                while x != 0:
                    row_item[r] = w * 64 + np.int64(trailing_zeros(x))
                    r += 1
                    x &= x - one
                bits[w] = 0


# The bitmaps are kept only up to this size: they live through local training, the round's memory peak (at
# Pinterest's full participation they would be 46 MB); beyond it the item mask is set from the rows afterwards.
ITEM_BITS_LIMIT = 8 * 2**20


def touched_rows_grouped(first: np.ndarray, s_item: np.ndarray, n_items: int, workspace: Workspace | None = None):
    """The distinct (client, item) rows of a cohort whose samples are grouped by client (client m's are
    first[m]:first[m + 1]), sorted by client then item (`torch.unique` of client * N + item). Returns row_first
    (client m's rows are row_first[m]:row_first[m + 1]), row_item, and each client's items as the item mask's
    bitmap (`RowUpdate.item_bits`; None above ITEM_BITS_LIMIT bytes). A sample's row is found by the trainer
    (`common.open_rows`), not stored: 4 bytes a sample at the round's memory peak. workspace: row_item is made in its
    buffer "row_item"."""
    M = first.shape[0] - 1
    counts = np.zeros(M, dtype=np.int64)
    n_words = (n_items + 63) // 64
    # the words seen as bytes are the mask's layout only on a little-endian machine (bit i of a row is item i)
    keep = M * n_words * 8 <= ITEM_BITS_LIMIT and sys.byteorder == "little"
    words = np.empty((M if keep else 0, n_words), np.uint64)
    with compiled_threads():
        lanes = n_threads()
        _count_touched(lanes, first, s_item, n_items, counts, words)
        row_first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        U = int(row_first[-1])
        row_item = take(workspace, "row_item", U, np.int64)
        _fill_touched(lanes, first, s_item, n_items, row_first, row_item, words)
    return row_first, row_item, (words.view(np.uint8)[:, :(n_items + 7) // 8] if keep else None)


# --- local training --------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=FAST)
def _grad_bce(x, label):
    """dBCE/dx = sigmoid(x) - label, and the probability the model gives the sample's label (its BCE is -log
    of it; 0 when it underflows). Float32 math from one exp."""
    one = np.float32(1.0)
    ex = np.exp(-x)
    s = one / (one + ex)
    if label > np.float32(0.5):
        return s - label, s
    return s - label, (ex * s if ex < np.float32(np.inf) else one)  # 1 - sigmoid = e^-x sigmoid: no cancellation


@njit(cache=True)
def _scratch(Bs, d, n_items):
    """A client's per-step buffers: g and labels per slot, the user gradient, the slots' items and rows,
    and each item's occurrences in the current batch."""
    return (np.empty(Bs, dtype=np.float32), np.empty(d, dtype=np.float32), np.empty(Bs, dtype=np.int64),
            np.empty(Bs, dtype=np.int64), np.empty(Bs, dtype=np.float32), np.zeros(n_items, dtype=np.int32))


# _lanes: clients come heaviest first (`RoundPlan.order`), and a prange over them is split into one contiguous
# block per thread whatever numba's chunk size (measured: the first thread got most of the work, two threads
# ran a round only 15 % faster than one). So with T = lanes = the thread count, thread k takes clients k, k + T,
# k + 2T, ...: equal shares.


# FedProx (prox_mu > 0): every local step also pulls every row of the client's update toward the round's global
# table, D <- D - lr mu D (CoLR: a <- a - lr s mu B^T B a), the rows of no batch included. A row no batch touches
# changes by that pull alone, so it is applied lazily: `stamp` holds the step at whose start each row is current,
# and a row catches up on its missed steps when a batch next reads it, or when the client's training ends.
@njit(cache=True, fastmath=FAST)
def _pull_full(W, k, n, keep):
    """n steps of FedProx's pull on row k of D alone: D <- keep D, keep = 1 - lr mu."""
    for _ in range(n):
        for j in range(W.shape[1]):
            W[k, j] *= keep


@njit(cache=True, fastmath=FAST)
def _pull_lowrank(W, k, n, BtB, coef, tmp):
    """n steps of FedProx's pull on row k of A alone: a <- a - coef * (B^T B a), coef = lr mu s (per column)."""
    for _ in range(n):
        for c in range(W.shape[1]):
            acc = np.float32(0.0)
            for c2 in range(W.shape[1]):
                acc += W[k, c2] * BtB[c, c2]
            tmp[c] = acc
        for c in range(W.shape[1]):
            W[k, c] -= coef[c] * tmp[c]


@njit(cache=True, parallel=True)
def _full_rows(lanes, Q, W, row_lo, row_hi, p, slots, s_item, s_label, row_item, n_active, offsets, lr,
               two_wd, mu, loss):
    for lane in prange(lanes):
        pos = np.empty(Q.shape[0], dtype=np.int64)
        for m in range(lane, p.shape[0], lanes):  # see _lanes
            open_rows(W, row_lo[m], row_hi[m], row_item, pos)
            _full_client(m, Q, W, row_lo[m], row_hi[m], p, slots, s_item, s_label, pos, n_active, offsets,
                         lr, two_wd, mu, loss)


@njit(cache=True, fastmath=FAST)
def _full_client(m, Q, W, lo, hi, p, slots, s_item, s_label, pos, n_active, offsets, lr, two_wd, mu,
                 loss):
    d = p.shape[1]
    Bs = slots.shape[1]
    lr32, neg_lr, wd, one = np.float32(lr), np.float32(-lr), np.float32(two_wd), np.float32(1.0)
    E = np.empty((Bs, d), dtype=np.float32)  # the batch's q + D rows as read (before this step's update)
    g, ge, item, key, label, count = _scratch(Bs, d, Q.shape[0])
    pm, total, prod = p[m], 0.0, 1.0  # the user vector; the loss column (see common.add_loss)
    prox, mu32 = mu > 0.0, np.float32(mu)
    keep = one - lr32 * mu32
    stamp = np.zeros(hi - lo if prox else 0, dtype=np.int64)
    D = np.empty((Bs if prox else 0, d), dtype=np.float32)  # the batch's D rows as read (FedProx's pull)
    steps = 0
    for t in range(n_active.shape[0]):
        if m >= n_active[t]:
            break
        steps = t + 1
        nb = gather_batch(slots, offsets[t] + m, s_item, s_label, pos, count, item, key, label)
        for b in range(nb):
            i, k = item[b], key[b]
            if prox:
                if stamp[k - lo] < t:
                    _pull_full(W, k, t - stamp[k - lo], keep)
                    stamp[k - lo] = t
                for j in range(d):
                    D[b, j] = W[k, j]
            for j in range(d):
                E[b, j] = Q[i, j] + W[k, j]
            x = np.float32(0.0)
            for j in range(d):  # a loop without stores: see FAST
                x += E[b, j] * pm[j]
            g[b], prob = _grad_bce(x, label[b])
            total, prod = add_loss(x, label[b], prob, total, prod)
        # user: mean over the batch of g e; item rows: -lr times the mean over a row's occurrences in the
        # batch of (g p + 2 wd e). One pass over the batch for both.
        ge[:] = 0.0
        for b in range(nb):
            sc = (one / np.float32(count[item[b]])) * neg_lr
            k, gb = key[b], g[b]
            if prox:
                for j in range(d):
                    e = E[b, j]
                    ge[j] += gb * e
                    W[k, j] += (gb * pm[j] + wd * e + mu32 * D[b, j]) * sc
                stamp[k - lo] = t + 1
            else:
                for j in range(d):
                    e = E[b, j]
                    ge[j] += gb * e
                    W[k, j] += (gb * pm[j] + wd * e) * sc
        end_step(count, item, nb, pm, ge, lr32, wd)
    if prox:  # the pull of the steps after each row's last batch
        for k in range(lo, hi):
            _pull_full(W, k, steps - stamp[k - lo], keep)
    loss[m] = total - np.log(prod)


# SCAFFOLD (option II of Karimireddy et al. 2020): every local step also moves every row of the client's table by
# -lr (c - c_i), the rows of no batch included. That drift is the same each step, so W holds the gradient steps
# alone (G) and a row read at step t is Q + G - t lr (c - c_i): nothing is applied row by row. The client's
# update is then G - K lr (c - c_i), and its new variate c_i+ = c_i - c + (x - y_i) / (K lr) = -G / (K lr),
# zero off its touched rows (`labcore.fed.scaffold`).
@njit(cache=True, parallel=True)
def _full_rows_scaffold(lanes, Q, W, row_lo, row_hi, p, slots, s_item, s_label, row_item, n_active, offsets,
                        lr, two_wd, C, ci_lo, ci_hi, ci_item, ci_val, loss):
    for lane in prange(lanes):
        Ci = np.zeros(Q.shape, dtype=np.float32)  # this thread's client's c_i, spread over the catalogue
        pos = np.empty(Q.shape[0], dtype=np.int64)
        for m in range(lane, p.shape[0], lanes):  # see _lanes
            for r in range(ci_lo[m], ci_hi[m]):
                Ci[ci_item[r], :] = ci_val[r]
            open_rows(W, row_lo[m], row_hi[m], row_item, pos)
            _full_client_scaffold(m, Q, W, p, slots, s_item, s_label, pos, n_active, offsets, lr, two_wd,
                                  C, Ci, loss)
            for r in range(ci_lo[m], ci_hi[m]):
                Ci[ci_item[r], :] = np.float32(0.0)


@njit(cache=True, fastmath=FAST)
def _full_client_scaffold(m, Q, W, p, slots, s_item, s_label, pos, n_active, offsets, lr, two_wd, C, Ci,
                          loss):
    """`_full_client` (without FedProx) reading each row with SCAFFOLD's drift: e = Q + G - t lr (c - c_i)."""
    d = p.shape[1]
    Bs = slots.shape[1]
    lr32, neg_lr, wd, one = np.float32(lr), np.float32(-lr), np.float32(two_wd), np.float32(1.0)
    E = np.empty((Bs, d), dtype=np.float32)
    g, ge, item, key, label, count = _scratch(Bs, d, Q.shape[0])
    pm, total, prod = p[m], 0.0, 1.0
    for t in range(n_active.shape[0]):
        if m >= n_active[t]:
            break
        drift = np.float32(t) * lr32  # steps taken so far times the local step size
        nb = gather_batch(slots, offsets[t] + m, s_item, s_label, pos, count, item, key, label)
        for b in range(nb):
            i, k = item[b], key[b]
            for j in range(d):
                E[b, j] = (Q[i, j] + W[k, j]) - drift * (C[i, j] - Ci[i, j])
            x = np.float32(0.0)
            for j in range(d):  # a loop without stores: see FAST
                x += E[b, j] * pm[j]
            g[b], prob = _grad_bce(x, label[b])
            total, prod = add_loss(x, label[b], prob, total, prod)
        ge[:] = 0.0
        for b in range(nb):
            sc = (one / np.float32(count[item[b]])) * neg_lr
            k, gb = key[b], g[b]
            for j in range(d):
                e = E[b, j]
                ge[j] += gb * e
                W[k, j] += (gb * pm[j] + wd * e) * sc
        end_step(count, item, nb, pm, ge, lr32, wd)
    loss[m] = total - np.log(prod)


@njit(cache=True, fastmath=FAST)
def _prox_lowrank_step(W, k, a, BtB, Bp, qb, scale, gb, wd, mu, sc):
    """One occurrence's share of row k's step with FedProx's pull: the step of `_lowrank_client` plus mu B^T B a."""
    for c in range(W.shape[1]):
        ab = np.float32(0.0)
        for c2 in range(W.shape[1]):
            ab += a[c2] * BtB[c, c2]
        W[k, c] += (gb * Bp[c] + wd * (qb[c] + ab) + mu * ab) * scale[c] * sc


@njit(cache=True, parallel=True)
def _lowrank_rows(lanes, QB, Q, B, BtB, row_scale, W, row_lo, row_hi, p, slots, s_item, s_label, row_item,
                  n_active, offsets, lr, two_wd, mu, loss):
    for lane in prange(lanes):
        pos = np.empty(Q.shape[0], dtype=np.int64)
        for m in range(lane, p.shape[0], lanes):  # see _lanes
            open_rows(W, row_lo[m], row_hi[m], row_item, pos)
            if mu > 0.0:
                _lowrank_client_prox(m, QB, Q, B, BtB, row_scale, W, row_lo[m], row_hi[m], p, slots, s_item,
                                     s_label, pos, n_active, offsets, lr, two_wd, mu, loss)
            else:
                _lowrank_client(m, QB, Q, B, BtB, row_scale, W, p, slots, s_item, s_label, pos, n_active,
                                offsets, lr, two_wd, loss)


@njit(cache=True, fastmath=FAST)
def _lowrank_client(m, QB, Q, B, BtB, row_scale, W, p, slots, s_item, s_label, pos, n_active, offsets,
                    lr, two_wd, loss):
    d, rk = p.shape[1], B.shape[1]
    Bs = slots.shape[1]
    lr32, neg_lr, wd, one = np.float32(lr), np.float32(-lr), np.float32(two_wd), np.float32(1.0)
    A = np.empty((Bs, rk), dtype=np.float32)  # the batch's a rows as read (before this step's update)
    ga = np.empty(rk, dtype=np.float32)
    Bp = np.empty(rk, dtype=np.float32)
    g, ge, item, key, label, count = _scratch(Bs, d, Q.shape[0])
    pm, total, prod = p[m], 0.0, 1.0  # the user vector; the loss column (see common.add_loss)
    for t in range(n_active.shape[0]):
        if m >= n_active[t]:
            break
        for c in range(rk):
            acc = np.float32(0.0)
            for j in range(d):
                acc += pm[j] * B[j, c]
            Bp[c] = acc
        nb = gather_batch(slots, offsets[t] + m, s_item, s_label, pos, count, item, key, label)
        for b in range(nb):
            i, k = item[b], key[b]
            x = np.float32(0.0)
            for j in range(d):
                x += Q[i, j] * pm[j]
            for c in range(rk):
                A[b, c] = W[k, c]
            y = np.float32(0.0)
            for c in range(rk):  # a loop without stores: see FAST
                y += A[b, c] * Bp[c]
            x = x + y
            g[b], prob = _grad_bce(x, label[b])
            total, prod = add_loss(x, label[b], prob, total, prod)
        ge[:] = 0.0
        ga[:] = 0.0
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
                for c2 in range(rk):  # (B^T B a)_c along row c of the symmetric B^T B: contiguous, vectorized
                    ab += A[b, c2] * BtB[c, c2]
                W[k, c] += (gb * Bp[c] + wd * (QB[i, c] + ab)) * row_scale[m, c] * sc
        end_step(count, item, nb, pm, ge, lr32, wd)
    loss[m] = total - np.log(prod)



@njit(cache=True, fastmath=FAST)
def _lowrank_client_prox(m, QB, Q, B, BtB, row_scale, W, lo, hi, p, slots, s_item, s_label, pos, n_active,
                          offsets, lr, two_wd, mu, loss):
    """`_lowrank_client` with FedProx's pull (mu > 0). A function of its own: the plain one keeps its compiled
    form, so its sums keep their order and every stored CoLR result its bits."""
    d, rk = p.shape[1], B.shape[1]
    Bs = slots.shape[1]
    lr32, neg_lr, wd, one = np.float32(lr), np.float32(-lr), np.float32(two_wd), np.float32(1.0)
    A = np.empty((Bs, rk), dtype=np.float32)  # the batch's a rows as read (before this step's update)
    ga = np.empty(rk, dtype=np.float32)
    Bp = np.empty(rk, dtype=np.float32)
    g, ge, item, key, label, count = _scratch(Bs, d, Q.shape[0])
    pm, total, prod = p[m], 0.0, 1.0  # the user vector; the loss column (see common.add_loss)
    mu32 = np.float32(mu)
    stamp = np.zeros(hi - lo, dtype=np.int64)
    coef = np.empty(rk, dtype=np.float32)  # FedProx's pull per column: lr mu s
    for c in range(rk):
        coef[c] = lr32 * mu32 * row_scale[m, c]
    steps = 0
    for t in range(n_active.shape[0]):
        if m >= n_active[t]:
            break
        steps = t + 1
        for c in range(rk):
            acc = np.float32(0.0)
            for j in range(d):
                acc += pm[j] * B[j, c]
            Bp[c] = acc
        nb = gather_batch(slots, offsets[t] + m, s_item, s_label, pos, count, item, key, label)
        for b in range(nb):  # the batch's rows catch up on the pull of the steps they missed
            k = key[b]
            if stamp[k - lo] < t:
                _pull_lowrank(W, k, t - stamp[k - lo], BtB, coef, ga)
                stamp[k - lo] = t
        for b in range(nb):
            i, k = item[b], key[b]
            x = np.float32(0.0)
            for j in range(d):
                x += Q[i, j] * pm[j]
            for c in range(rk):
                A[b, c] = W[k, c]
            y = np.float32(0.0)
            for c in range(rk):  # a loop without stores: see FAST
                y += A[b, c] * Bp[c]
            x = x + y
            g[b], prob = _grad_bce(x, label[b])
            total, prod = add_loss(x, label[b], prob, total, prod)
        ge[:] = 0.0
        ga[:] = 0.0
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
            _prox_lowrank_step(W, k, A[b], BtB, Bp, QB[i], row_scale[m], gb, wd, mu32, sc)
            stamp[k - lo] = t + 1
        end_step(count, item, nb, pm, ge, lr32, wd)
    for k in range(lo, hi):  # the pull of the steps after each row's last batch
        _pull_lowrank(W, k, steps - stamp[k - lo], BtB, coef, ga)
    loss[m] = total - np.log(prod)


def full_rows(Q, W, row_lo, row_hi, p, slots, s_item, s_label, row_item, n_active, offsets, lr,
              two_wd, mu=0.0) -> float:
    """FedMF / SVD / Top-K: W's rows are D_i of the touched (client, item) pairs and q = Q_i + D_i.

    Q (N, d) frozen; W (U, d) any values at entry (client m's rows row_lo[m]:row_hi[m] are zeroed before
    it trains), trained in place; p (M, d) user vectors in schedule order
    (`RoundPlan.order`), trained in place; slots (R, B) the plan's schedule; per sample its item and label;
    row_item: the item of each row of W (a client's rows sorted by item, `touched_rows_grouped`); mu: FedProx's
    pull (0: none). Returns the summed BCE loss of every slot (before its step)."""
    loss = np.zeros(p.shape[0])
    with compiled_threads():
        _full_rows(n_threads(), Q, W, row_lo, row_hi, p, slots, s_item, s_label, row_item, n_active, offsets,
                   lr, two_wd, float(mu), loss)
    return float(loss.sum())


# --- the server's sum on arrival -----------------------------------------------------------------------------
# A plain FedMF round's update table holds every (client, item) row the cohort touched, d floats each (ML-1M at full
# participation: 4.2 M rows, 1.07 GB): written by training and read back by the server's sum, it went out to main
# memory and back. When nothing reads the clients' rows but that sum (see `engine.Simulation._sums_on_arrival`),
# each client's rows are added to it just after the client trains, while they are still in the core's cache, and
# the scratch rows are reused: the same sum to the bit (clients in index order, each one's items in increasing
# order, the order in which `aggregate` adds the table's rows), without the table.
@njit(cache=True, fastmath=FAST)
def _clip_factor(W, lo, hi, clip):
    """min(1, clip / ||rows lo:hi of W||) in float32, the squares summed in float64 (`privacy.dp.clip_factors`;
    1 when clip is inf, so that W * 1 leaves the plain sum's bits). Reassociated: the sum in vector lanes, not one
    chain of dependent additions."""
    if math.isinf(clip):
        return np.float32(1.0)
    sq = 0.0
    for k in range(lo, hi):
        for c in range(W.shape[1]):
            x = np.float64(W[k, c])
            sq += x * x
    norm = math.sqrt(sq)
    return np.float32(1.0) if norm <= clip else np.float32(clip / norm)


@njit(cache=True)
def _add_client_rows(out, count, items, W, lo, hi, wc, fc, weighted, i_lo, i_hi):
    """Rows lo:hi of W (items items[lo:hi]) of items i_lo <= i < i_hi into the server's sum: out[i] += W[k] and
    count[i] += 1 (item_mean), or out[i] += (W[k] * fc) * wc (weighted; fc the client's clip factor); the
    arithmetic of `privacy.dp.clip_rows` and `aggregate._add_rows` / `_add_weighted_rows` (no fastmath: each
    product rounded, then added)."""
    for k in range(lo, hi):
        i = items[k]
        if i < i_lo or i >= i_hi:
            continue
        if weighted:
            for c in range(W.shape[1]):
                out[i, c] += (W[k, c] * fc) * wc
        else:
            count[i] += 1
            for c in range(W.shape[1]):
                out[i, c] += W[k, c]


@njit(cache=True, parallel=True)
def _full_rows_summed(lanes, group, Q, indptr, position, p, slots, s_item, s_label, row_item, n_active, offsets, lr,
                      two_wd, mu, loss, weighted, w, clip, out, count, first):
    """Clients in index order, `group` at a time: the group's clients train on threads (dealt as in _lanes) into
    scratch rows, then their rows are added to the sum in client order. Client c is at schedule position
    position[c]; its rows are indptr[c]:indptr[c + 1] of row_item. first: client 0's rows, kept (its message)."""
    M, N = indptr.shape[0] - 1, Q.shape[0]
    span = 0  # the most rows a group holds
    for g0 in range(0, M, group):
        span = max(span, indptr[min(g0 + group, M)] - indptr[g0])
    W = np.empty((span, Q.shape[1]), dtype=np.float32)
    pos = np.empty((lanes, Q.shape[0]), dtype=np.int64)
    factor = np.ones(M, dtype=np.float32)  # each client's clip factor (DP), 1 when not clipped
    for g0 in range(0, M, group):
        g1 = min(g0 + group, M)
        base = indptr[g0]
        items = row_item[base:]  # the group's rows are W's first ones
        for lane in prange(lanes):
            for c in range(g0 + lane, g1, lanes):
                lo, hi = indptr[c] - base, indptr[c + 1] - base
                open_rows(W, lo, hi, items, pos[lane])
                _full_client(position[c], Q, W, lo, hi, p, slots, s_item, s_label, pos[lane], n_active, offsets,
                             lr, two_wd, mu, loss)
                factor[c] = _clip_factor(W, lo, hi, clip)
        if g0 == 0:
            first[:, :] = W[:first.shape[0]]
        for lane in prange(lanes):  # each thread adds the group's rows of its share of the items, in client order
            i_lo, i_hi = N * lane // lanes, N * (lane + 1) // lanes
            for c in range(g0, g1):
                _add_client_rows(out, count, items, W, indptr[c] - base, indptr[c + 1] - base, w[c], factor[c],
                                 weighted, i_lo, i_hi)


# Clients a thread trains per group before the group's rows are summed: the group's scratch rows stay within the
# cores' caches (ML-1M: 700 rows of 256 bytes a client), and a thread that ends early waits for at most a few clients.
GROUP_PER_LANE = 16


def full_rows_summed(Q, indptr, position, p, slots, s_item, s_label, row_item, n_active, offsets, lr, two_wd,
                     weights=None, clip=math.inf):
    """`full_rows` without FedProx, with the server's sum taken on arrival (see above): no update table is made
    (the kernel keeps FedProx's argument, at 0, so that its compiled form stays the one tested). indptr: client c's
    rows are row_item[indptr[c]:indptr[c + 1]] (client index order); position[c]: its place in the schedule (p,
    slots); weights: the clients' float32 weights in index order (the weighted sum) or None (the item mean's sum
    and count); clip: DP's clip norm C (`privacy.dp.clip_rows`), each client's rows scaled by
    min(1, C / ||its rows||) before they are added (inf: not clipped). Returns the summed loss, the sum (N, d), the
    rows per item (item mean; zeros if weighted) and client 0's rows (unclipped: the message it sent)."""
    N, d = Q.shape
    loss = np.zeros(p.shape[0])
    out = np.zeros((N, d), dtype=np.float32)
    count = np.zeros(N, dtype=np.int64)
    first = np.empty((int(indptr[1]) if len(indptr) > 1 else 0, d), dtype=np.float32)
    weighted = weights is not None
    w = np.ascontiguousarray(weights, dtype=np.float32) if weighted else np.zeros(p.shape[0], dtype=np.float32)
    with compiled_threads():
        lanes = n_threads()
        _full_rows_summed(lanes, 1 if lanes == 1 else GROUP_PER_LANE * lanes, Q, indptr, position, p, slots, s_item,
                          s_label, row_item, n_active, offsets, lr, two_wd, 0.0, loss, weighted, w, float(clip), out,
                          count, first)
    return float(loss.sum()), out, count, first


def full_rows_scaffold(Q, W, row_lo, row_hi, p, slots, s_item, s_label, row_item, n_active, offsets, lr,
                       two_wd, C, ci_lo, ci_hi, ci_item, ci_val) -> float:
    """`full_rows` with SCAFFOLD's correction: W's rows end as the gradient steps G alone (see above).
    C (N, d) the server's variate; the clients' variates c_i by rows, client m's (schedule order)
    ci_lo[m]:ci_hi[m] with their items ci_item and values ci_val."""
    loss = np.zeros(p.shape[0])
    with compiled_threads():
        _full_rows_scaffold(n_threads(), Q, W, row_lo, row_hi, p, slots, s_item, s_label, row_item, n_active,
                            offsets, lr, two_wd, C, ci_lo, ci_hi, ci_item, ci_val, loss)
    return float(loss.sum())


@njit(cache=True, fastmath=FAST)
def _client_bce(Q, P, s_client, s_item, s_label, total):
    for s in range(s_item.shape[0]):
        m, i = s_client[s], s_item[s]
        x = np.float32(0.0)
        for j in range(Q.shape[1]):
            x += P[m, j] * Q[i, j]
        total[m] += bce(x, s_label[s])


def client_bce(Q: np.ndarray, P: np.ndarray, s_client: np.ndarray, s_item: np.ndarray,
               s_label: np.ndarray) -> np.ndarray:
    """Each client's summed BCE over its samples at item table Q and user vectors P (M, d), float64 sums: one pass,
    nothing gathered (q-FFL's loss before training)."""
    total = np.zeros(P.shape[0])
    _client_bce(Q, P, s_client, s_item, s_label, total)
    return total


@njit(cache=True, parallel=True, fastmath=FAST)
def _user_bce(Q, P, indptr, items, negatives, out):
    for u in prange(P.shape[0]):
        total = 0.0
        for s in range(indptr[u], indptr[u + 1]):
            x = np.float32(0.0)
            for j in range(Q.shape[1]):
                x += P[u, j] * Q[items[s], j]
            total += bce(x, np.float32(1.0))
        for s in range(negatives.shape[1]):
            x = np.float32(0.0)
            for j in range(Q.shape[1]):
                x += P[u, j] * Q[negatives[u, s], j]
            total += bce(x, np.float32(0.0))
        out[u] = total / (indptr[u + 1] - indptr[u] + negatives.shape[1])


def user_losses(Q: np.ndarray, P: np.ndarray, indptr: np.ndarray, items: np.ndarray,
                negatives: np.ndarray) -> np.ndarray:
    """Every user's mean BCE over its training positives (label 1) and its evaluation negatives (label 0) at item
    table Q and user vectors P: the per-client loss whose spread q-FFL narrows. One pass, nothing gathered."""
    out = np.zeros(P.shape[0])
    with compiled_threads():
        _user_bce(Q, P, indptr, items, negatives, out)
    return out


def lowrank_rows(Q, B, row_scale, W, row_lo, row_hi, p, slots, s_item, s_label, row_item, n_active,
                 offsets, lr, two_wd, mu=0.0) -> float:
    """CoLR / SCoLR: W's rows are a_i (width r) and q = Q_i + B a_i, trained in A's r-dimensional space:
    x = p.Q_i + (B^T p).a_i, dL/da = row_scale (g B^T p + 2 wd (B^T Q_i + B^T B a_i)).
    row_scale (M, r) per client in schedule order (SCoLR's column mask times its lr scale). The readable form is
    `labcore.methods.colr.train_client`; at a small rank without FedProx `fused_lowrank` trains instead
    (`dispatch.choose_kernel`)."""
    QB, BtB = Q @ B, B.T @ B  # Q is frozen during local training: B^T Q_i once per item
    loss = np.zeros(p.shape[0])
    with compiled_threads():
        _lowrank_rows(n_threads(), QB, Q, B, BtB, row_scale, W, row_lo, row_hi, p, slots, s_item, s_label,
                      row_item, n_active, offsets, lr, two_wd, float(mu), loss)
    return float(loss.sum())
