"""The per-sample loops of `sampling.plan_round`, compiled (numba).

At full participation a round has millions of samples (ML-1M: 5 M a local epoch); numpy's whole-array
version of these steps made a dozen passes over them and sorted them all at once. Here each client's block
is handled on its own. The random draws stay numpy's, in the same order, so a plan is the same to the bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def layout_samples(first, counts, starts, train_items, clients, s_item, s_label, neg_user, neg_first):
    """Client m's samples are first[m]:first[m + 1]: its training items in order (label 1), then its
    negatives (label 0, items drawn later). neg_user gets the user of every negative, in sample order."""
    for m in prange(first.shape[0] - 1):
        a, c = first[m], counts[m]
        for j in range(c):
            s_item[a + j] = train_items[starts[m] + j]
            s_label[a + j] = 1.0
        n_neg = first[m + 1] - a - c
        for j in range(n_neg):
            s_label[a + c + j] = 0.0
            neg_user[neg_first[m] + j] = clients[m]


@njit(cache=True, parallel=True)
def place_negatives(first, counts, neg_first, neg_item, s_item):
    for m in prange(first.shape[0] - 1):
        a, c = first[m], counts[m]
        for j in range(first[m + 1] - a - c):
            s_item[a + c + j] = neg_item[neg_first[m] + j]


@njit(cache=True)
def _segment_order(seg, m, bucket, start, order):
    """The sorting permutation of seg (k keys in [m, m + 1)) by a bucket sort: k buckets by the fraction
    (about one key each), then an insertion sort that only moves keys within a bucket: linear time.
    Returns False on a tie or on a key that rounded up to m + 1."""
    k = seg.shape[0]
    start[: k + 1] = 0
    for j in range(k):
        f = seg[j] - m  # exact: seg[j] and m lie on the same grid of doubles
        if f >= 1.0:
            return False
        bucket[j] = int(f * k)
        start[bucket[j] + 1] += 1
    for b in range(k):
        start[b + 1] += start[b]
    for j in range(k):
        order[start[bucket[j]]] = j
        start[bucket[j]] += 1
    for i in range(1, k):
        x = order[i]
        v = seg[x]
        lo = i - 1
        while lo >= 0 and seg[order[lo]] > v:
            order[lo + 1] = order[lo]
            lo -= 1
        if lo >= 0 and seg[order[lo]] == v:
            return False
        order[lo + 1] = x
    return True


@njit(cache=True, parallel=True)
def shuffle_into_slots(keys, first, n_batches, epoch, offsets, position, batch_size, slots):
    """One epoch of `np.argsort(s_client + u)` taken client by client, written into the schedule: sample
    local_pos of client m goes to step epoch * n_batches[m] + local_pos // B, slot local_pos % B.

    A client's keys lie in [m, m + 1), so the global sort is the clients' sorts side by side, unless two keys
    are equal or one rounded up to m + 1 (u within 2^-40 of the next key): then returns False and the
    caller sorts globally, as before."""
    M = first.shape[0] - 1
    ok = np.ones(M, dtype=np.bool_)
    for m in prange(M):
        a, b = first[m], first[m + 1]
        k = b - a
        order = np.empty(k, dtype=np.int64)
        bucket = np.empty(k, dtype=np.int64)
        start = np.empty(k + 1, dtype=np.int64)
        if not _segment_order(keys[a:b], m, bucket, start, order):
            ok[m] = False
            continue
        for j in range(k):
            step = epoch * n_batches[m] + j // batch_size
            slots[offsets[step] + position[m], j % batch_size] = a + order[j]
    return ok.all()
