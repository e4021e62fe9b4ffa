"""CoLR / SCoLR's local training at a small rank, compiled for that rank (numba).

The same update as `fused._lowrank_client` (x = p.Q_i + (B^T p).a_i, the same steps), laid out so that the
compiler can vectorize it: with r known when compiled (the length of a tuple argument), the rank-r work of a batch
(a's product, its gradient, B^T B a and the row step) is one loop across the batch's samples, with B^T B and B^T p
held in registers (tuples); the d-long products read eight samples' Q rows at a time; the batch's sigmoids take
exp from a polynomial (`_exp_parts`), a loop without calls. One full-participation ML-1M CoLR@4 round's training
on one thread: 0.28 s against 0.45 s in the general kernel (`benchmarks/lowrank_kernels.py`). Other last bits than the
general kernel (summation order, the exp), so the runs trained here have a cache key of their own
(`config.RunConfig.small_rank_kernel`). Which kernel trains a run is decided once, in `dispatch.choose_kernel`.

Ranks above SMALL_RANK and FedProx keep the general kernel: at rank 8 the rank-r loops (B^T B a: r^2 multiply-adds
a sample) are no longer unrolled whole, and tuples read at run-time indices made this kernel slower than the general
one (100 paper rounds of CoLR@8: 4.6 s against 2.7 s; CoLR@4 0.78 s against 1.03 s).
Each rank is compiled once, on its first use (about 5 s), and cached on disk like the other kernels.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.tuple import tuple_setitem

from ..threads import compiled_threads, n_threads
from .common import FAST, add_loss, end_step, gather_batch, open_rows
from .dispatch import SMALL_RANK

# exp(z) = 2^n exp(r), n = round(z log2 e), r = z - n ln 2 (ln 2 in two parts: n ln2_hi is exact), exp(r) by
# Cephes' expf polynomial (S. Moshier): within one float32 ulp of the exact value (`tests/core/test_fused_lowrank.py`)
_LOG2E = np.float32(1.44269504088896341)
_LN2_HI = np.float32(0.693359375)
_LN2_LO = np.float32(-2.12194440e-4)
_EXP_POLY = (np.float32(1.9875691500e-4), np.float32(1.3981999507e-3), np.float32(8.3334519073e-3),
             np.float32(4.1665795894e-2), np.float32(1.6666665459e-1), np.float32(5.0000001201e-1))


@njit(cache=True, inline="always")
def _as_tuple(like, values):
    """values[:len(like)] as a tuple of like's type: held in registers, where no store of a loop can alias them.
    A tuple's length is part of its type, so it is a constant of the code compiled for it."""
    out = like
    for c in range(len(like)):
        out = tuple_setitem(out, c, values[c])
    return out


@njit(cache=True, fastmath=FAST, inline="always")
def _exp_parts(z):
    """exp(z) = y 2^k for z clamped to [-87, 88] (normal results: no overflow, no underflow): returns y and the
    bits of the float32 2^k. Calls nothing, so a loop of it vectorizes (libm's expf is a call a sample)."""
    c0, c1, c2, c3, c4, c5 = _EXP_POLY
    x = min(max(z, np.float32(-87.0)), np.float32(88.0))
    k = np.floor(x * _LOG2E + np.float32(0.5))
    r = x - k * _LN2_HI - k * _LN2_LO
    y = ((((c0 * r + c1) * r + c2) * r + c3) * r + c4) * r + c5
    return y * r * r + r + np.float32(1.0), (np.int32(k) + np.int32(127)) << 23


@njit(cache=True, fastmath=FAST)
def exp_batch(z, out, bits):
    """out = exp(z) in float32 (`_exp_parts`); bits: int32 scratch of z's size. For the tests."""
    for b in range(z.shape[0]):
        out[b], bits[b] = _exp_parts(z[b])
    two_k = bits.view(np.float32)
    for b in range(z.shape[0]):
        out[b] *= two_k[b]


@njit(cache=True, fastmath=FAST, inline="always")
def _sigmoids(x, label, g, prob, e, bits, nb):
    """`fused._grad_bce` for a batch's nb logits: g[b] = sigmoid(x[b]) - label[b] and prob[b] = the
    probability of the sample's label, from exp(-x) (`_exp_parts`; e and bits are scratch)."""
    for b in range(nb):
        e[b], bits[b] = _exp_parts(-x[b])
    two_k = bits.view(np.float32)
    one = np.float32(1.0)
    for b in range(nb):
        ex = e[b] * two_k[b]
        s = one / (one + ex)
        g[b] = s - label[b]
        prob[b] = s if label[b] > np.float32(0.5) else ex * s  # 1 - sigmoid = e^-x sigmoid: no cancellation


@njit(cache=True, fastmath=FAST, inline="always")
def _logits(Q, pm, item, x, nb, D):
    """x[b] = Q[item[b]] . pm, eight samples at a time (p's values read once for eight rows)."""
    b = 0
    while b + 7 < nb:
        i0, i1, i2, i3 = item[b], item[b + 1], item[b + 2], item[b + 3]
        i4, i5, i6, i7 = item[b + 4], item[b + 5], item[b + 6], item[b + 7]
        x0 = x1 = x2 = x3 = x4 = x5 = x6 = x7 = np.float32(0.0)
        for j in range(D):
            pj = pm[j]
            x0 += Q[i0, j] * pj
            x1 += Q[i1, j] * pj
            x2 += Q[i2, j] * pj
            x3 += Q[i3, j] * pj
            x4 += Q[i4, j] * pj
            x5 += Q[i5, j] * pj
            x6 += Q[i6, j] * pj
            x7 += Q[i7, j] * pj
        x[b], x[b + 1], x[b + 2], x[b + 3] = x0, x1, x2, x3
        x[b + 4], x[b + 5], x[b + 6], x[b + 7] = x4, x5, x6, x7
        b += 8
    while b < nb:
        i = item[b]
        acc = np.float32(0.0)
        for j in range(D):
            acc += Q[i, j] * pm[j]
        x[b] = acc
        b += 1


@njit(cache=True, fastmath=FAST, inline="always")
def _user_grad(Q, g, item, ge, nb, D):
    """ge = sum_b g[b] Q[item[b]], eight samples a pass over ge."""
    ge[:] = 0.0
    b = 0
    while b + 7 < nb:
        g0, g1, g2, g3 = g[b], g[b + 1], g[b + 2], g[b + 3]
        g4, g5, g6, g7 = g[b + 4], g[b + 5], g[b + 6], g[b + 7]
        i0, i1, i2, i3 = item[b], item[b + 1], item[b + 2], item[b + 3]
        i4, i5, i6, i7 = item[b + 4], item[b + 5], item[b + 6], item[b + 7]
        for j in range(D):
            ge[j] += (((g0 * Q[i0, j] + g1 * Q[i1, j]) + (g2 * Q[i2, j] + g3 * Q[i3, j]))
                      + ((g4 * Q[i4, j] + g5 * Q[i5, j]) + (g6 * Q[i6, j] + g7 * Q[i7, j])))
        b += 8
    while b < nb:
        gb, i = g[b], item[b]
        for j in range(D):
            ge[j] += gb * Q[i, j]
        b += 1


@njit(cache=True, fastmath=FAST)
def _client(m, QB, Q, B, btb, row_scale, W, p, slots, s_item, s_label, pos, n_active, offsets, lr, two_wd, loss,
            r_zeros):
    """Client m's local training (see `fused._lowrank_client`). btb: B^T B as a tuple, row by row;
    r_zeros: a tuple of r zeros, whose length fixes r when compiled."""
    D, R = p.shape[1], len(r_zeros)
    Bs = slots.shape[1]
    lr32, neg_lr, wd = np.float32(lr), np.float32(-lr), np.float32(two_wd)
    scale = _as_tuple(r_zeros, row_scale[m])
    # the batch's a rows as read (before this step's update), their B^T Q_i, and the rows' steps: (r, batch),
    # so that a loop across the batch reads each column contiguously
    A, QBi, U = np.empty((R, Bs), np.float32), np.empty((R, Bs), np.float32), np.empty((R, Bs), np.float32)
    x, g, prob, e, sc = (np.empty(Bs, np.float32), np.empty(Bs, np.float32), np.empty(Bs, np.float32),
                         np.empty(Bs, np.float32), np.empty(Bs, np.float32))
    bits = np.empty(Bs, np.int32)
    item, key, label = np.empty(Bs, np.int64), np.empty(Bs, np.int64), np.empty(Bs, np.float32)
    count = np.zeros(Q.shape[0], np.int32)
    ge, r_scratch = np.empty(D, np.float32), np.empty(R, np.float32)
    pm, total, prod = p[m], 0.0, 1.0  # the user vector; the loss column (see common.add_loss)
    for t in range(n_active.shape[0]):
        if m >= n_active[t]:
            break
        for c in range(R):
            acc = np.float32(0.0)
            for j in range(D):
                acc += pm[j] * B[j, c]
            r_scratch[c] = acc
        bp = _as_tuple(r_zeros, r_scratch)  # B^T p
        nb = gather_batch(slots, offsets[t] + m, s_item, s_label, pos, count, item, key, label)
        _logits(Q, pm, item, x, nb, D)
        for b in range(nb):
            k, i = key[b], item[b]
            for c in range(R):
                A[c, b] = W[k, c]
                QBi[c, b] = QB[i, c]
            sc[b] = neg_lr / np.float32(count[i])  # -lr over the row's occurrences in the batch
        for b in range(nb):
            y = np.float32(0.0)
            for c in range(R):
                y += A[c, b] * bp[c]
            x[b] += y
        _sigmoids(x, label, g, prob, e, bits, nb)
        for b in range(nb):
            total, prod = add_loss(x[b], label[b], prob[b], total, prod)
        # user: mean over the batch of g (Q_i + B a), the a part as (sum_b g a) B^T
        _user_grad(Q, g, item, ge, nb, D)
        for c in range(R):
            acc = np.float32(0.0)
            for b in range(nb):
                acc += g[b] * A[c, b]
            r_scratch[c] = acc
        ga = _as_tuple(r_zeros, r_scratch)  # sum_b g a
        for j in range(D):
            acc = np.float32(0.0)
            for c in range(R):
                acc += ga[c] * B[j, c]
            ge[j] += acc
        # item rows: a += -lr s (g B^T p + 2 wd (B^T Q_i + B^T B a)) / occurrences, each from a as read
        for b in range(nb):
            gb, sb = g[b], sc[b]
            for c in range(R):
                acc = QBi[c, b]
                for c2 in range(R):
                    acc += A[c2, b] * btb[c * R + c2]
                U[c, b] = (gb * bp[c] + wd * acc) * scale[c] * sb
        for b in range(nb):  # added in the batch's order: an item twice in a batch gets both shares
            k = key[b]
            for c in range(R):
                W[k, c] += U[c, b]
        end_step(count, item, nb, pm, ge, lr32, wd)
    loss[m] = total - np.log(prod)


@njit(cache=True, parallel=True)
def _rows(lanes, QB, Q, B, btb, row_scale, W, row_lo, row_hi, p, slots, s_item, s_label, row_item, n_active,
          offsets, lr, two_wd, loss, r_zeros):
    for lane in prange(lanes):
        pos = np.empty(Q.shape[0], dtype=np.int64)
        for m in range(lane, p.shape[0], lanes):  # see fused's _lanes
            open_rows(W, row_lo[m], row_hi[m], row_item, pos)
            _client(m, QB, Q, B, btb, row_scale, W, p, slots, s_item, s_label, pos, n_active, offsets, lr, two_wd,
                    loss, r_zeros)


def lowrank_rows_small(Q, B, row_scale, W, row_lo, row_hi, p, slots, s_item, s_label, row_item, n_active, offsets,
                       lr, two_wd) -> float:
    """`fused.lowrank_rows` without FedProx at rank r <= SMALL_RANK; returns the summed loss."""
    r = B.shape[1]
    if not 1 <= r <= SMALL_RANK:
        raise ValueError(f"rank={r}: the fixed-size kernel takes ranks 1 to {SMALL_RANK}")
    QB, BtB = Q @ B, B.T @ B  # Q is frozen during local training: B^T Q_i once per item
    loss = np.zeros(p.shape[0])
    with compiled_threads():
        _rows(n_threads(), QB, Q, B, tuple(BtB.astype(np.float32).ravel()), row_scale, W, row_lo, row_hi, p, slots,
              s_item, s_label, row_item, n_active, offsets, lr, two_wd, loss, (np.float32(0.0),) * r)
    return float(loss.sum())
