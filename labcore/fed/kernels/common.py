"""What the compiled trainers share: the float flags, the loss column, a batch's gather, the user step and the
opening of a client's rows. One copy, imported by `fused` (every method) and `fused_lowrank` (CoLR at a small rank)."""
from __future__ import annotations

import numpy as np
from numba import njit

# Reassociation lets LLVM vectorize the d-long dot products (partial sums in a fixed order for a given build
# and CPU). Every such sum is a loop that only loads: a loop that also stores gets a run-time overlap check
# with a scalar fallback that sums in another order, and which branch runs depends on where the buffers
# happen to lie in memory, so the same inputs could give different last bits (seen in tests).
FAST = {"reassoc", "contract"}


@njit(cache=True, fastmath=FAST)
def bce(x, label):
    """softplus(x) - label x: the BCE of a sample whose probability underflowed (confidently wrong)."""
    return max(x, np.float32(0.0)) + np.log1p(np.exp(-abs(x))) - label * x


@njit(cache=True)
def add_loss(x, label, prob, total, prod):
    """The loss column: BCE is -log(prob), so a client's loss is -log of the product of its probabilities,
    taken one log per ~1e-200 of product (a log a sample cost a fifth of a full round). total: -logs so far,
    prod: the product since; a probability below 1e-30 is added exactly instead. Returns both."""
    if prob > 1e-30:
        prod *= prob
        if prod < 1e-200:
            return total - np.log(prod), 1.0
        return total, prod
    return total + bce(x, label), prod


@njit(cache=True)
def gather_batch(slots, r, s_item, s_label, pos, count, item, key, label):
    """The valid slots of schedule row r: their items, rows of W (pos: the client's row of each item, see
    `_open_rows`) and labels, first nb entries; counts each item's occurrences in the batch. Returns nb."""
    nb = 0
    for b in range(slots.shape[1]):
        s = slots[r, b]
        if s < 0:
            continue
        i = s_item[s]
        item[nb], key[nb], label[nb] = i, pos[i], s_label[s]
        count[item[nb]] += 1
        nb += 1
    return nb


@njit(cache=True, fastmath=FAST)
def end_step(count, item, nb, pm, ge, lr32, wd):
    """Reset the batch's item counts; the user step p -= lr (mean over the batch of g e + 2 wd p)."""
    for b in range(nb):
        count[item[b]] = 0
    inv_nv = np.float32(1.0) / np.float32(max(nb, 1))
    for j in range(pm.shape[0]):
        pm[j] -= lr32 * (ge[j] * inv_nv + wd * pm[j])


@njit(cache=True)
def open_rows(W, lo, hi, row_item, pos):
    """Zero a client's rows of W in one sequential pass just before it trains: the pass also brings them into
    the core's cache, where the client's scattered reads then find them (a separate zeroing of the whole
    table left them in main memory: a miss on the first touch of each row, a third of a FedMF round). And map
    each of its items to its row, pos[row_item[k]] = k, through which its batches find their rows (a row stored
    per sample cost 4 bytes a sample at the round's memory peak)."""
    for k in range(lo, hi):
        pos[row_item[k]] = k
        for j in range(W.shape[1]):
            W[k, j] = np.float32(0.0)
