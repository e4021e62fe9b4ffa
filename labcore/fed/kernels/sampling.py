"""The per-sample loops of `sampling.plan_round`, compiled (numba).

At full participation a round has millions of samples (ML-1M: 5 M a local epoch); numpy's whole-array
version of these steps made a dozen passes over them and sorted them all at once. Here each client's block
is handled on its own. The random draws stay numpy's, in the same order, so a plan is the same to the bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def layout_samples(first, counts, starts, train_items, s_item, s_label):
    """Client m's samples are first[m]:first[m + 1]: its training items in order (label 1), then its negatives
    (label 0, items drawn later)."""
    for m in prange(first.shape[0] - 1):
        a, c = first[m], counts[m]
        for j in range(c):
            s_item[a + j] = train_items[starts[m] + j]
            s_label[a + j] = 1.0
        for j in range(first[m + 1] - a - c):
            s_label[a + c + j] = 0.0


@njit(cache=True, parallel=True)
def place_negatives(first, counts, neg_first, neg_item, s_item):
    for m in prange(first.shape[0] - 1):
        a, c = first[m], counts[m]
        for j in range(first[m + 1] - a - c):
            s_item[a + c + j] = neg_item[neg_first[m] + j]


@njit(cache=True)
def _segment_order(u, m, bucket, start, order, vals):
    """The sorting permutation of client m's keys m + u[j] (u in [0, 1)) by a bucket sort: 2 k buckets by the
    fraction, then an insertion sort that only moves keys within a bucket: linear time. The keys are sorted
    alongside the permutation (`vals`), so the insertion sort compares neighbours in memory, and a key already
    above its left neighbour (most of them, with twice as many buckets as keys) is passed at once.
    Returns False on a tie or on a key that rounded up to m + 1."""
    k = u.shape[0]
    n_buckets = 2 * k
    over = False
    for j in range(k):  # no early exit in this loop, so it vectorizes (a fifth of the shuffle's time)
        f = (u[j] + m) - m  # the key's fraction, exact: m + u[j] and m lie on the same grid of doubles
        over |= f >= 1.0
        bucket[j] = np.int32(f * n_buckets)
    if over:
        return False
    start[: n_buckets + 1] = 0
    for j in range(k):
        start[bucket[j] + 1] += 1
    for b in range(n_buckets):
        start[b + 1] += start[b]
    for j in range(k):
        b = bucket[j]
        p = start[b]
        order[p], vals[p] = j, u[j] + m
        start[b] = p + 1
    for i in range(1, k):
        v = vals[i]
        if vals[i - 1] < v:
            continue
        x, lo = order[i], i - 1
        while lo >= 0 and vals[lo] > v:
            order[lo + 1], vals[lo + 1] = order[lo], vals[lo]
            lo -= 1
        if lo >= 0 and vals[lo] == v:
            return False
        order[lo + 1], vals[lo + 1] = x, v
    return True


@njit(cache=True, parallel=True)
def shuffle_into_slots(lanes, u, first, n_batches, epoch, offsets, position, batch_size, slots):
    """One epoch of `np.argsort(s_client + u)` taken client by client, written into the schedule: sample
    local_pos of client m goes to step epoch * n_batches[m] + local_pos // B, slot local_pos % B. u: the
    epoch's uniform draws in [0, 1), one per sample (the key s_client + u is formed here, to the same bits).

    A client's keys lie in [m, m + 1), so the global sort is the clients' sorts side by side, unless two keys
    are equal or one rounded up to m + 1 (u within 2^-40 of the next key): then returns False and the
    caller sorts globally (numpy's argsort). Every slot of the epoch's rows is written here either way (the padding
    of each client's last batch, -1, too), so the schedule needs no filling first. Clients are dealt to `lanes`
    threads in turn (as in `fused`), each with scratch for the largest client (scratch per client cost
    an eighth of the shuffle: four allocations a client)."""
    M = first.shape[0] - 1
    k_max = 0
    for m in range(M):
        k_max = max(k_max, first[m + 1] - first[m])
    ok = np.ones(M, dtype=np.bool_)
    for lane in prange(lanes):
        order, bucket = np.empty(k_max, dtype=np.int32), np.empty(k_max, dtype=np.int32)
        start, vals = np.empty(2 * k_max + 1, dtype=np.int32), np.empty(k_max, dtype=np.float64)
        for m in range(lane, M, lanes):
            a, k = first[m], first[m + 1] - first[m]
            if k == 0:
                continue
            last = offsets[(epoch + 1) * n_batches[m] - 1] + position[m]  # the epoch's last batch: its padding
            for j in range(k - (n_batches[m] - 1) * batch_size, batch_size):
                slots[last, j] = -1
            if not _segment_order(u[a:a + k], m, bucket[:k], start, order[:k], vals[:k]):
                ok[m] = False
                continue
            step = epoch * n_batches[m]
            for j0 in range(0, k, batch_size):  # one schedule row per batch
                row = offsets[step] + position[m]
                for j in range(j0, min(j0 + batch_size, k)):
                    slots[row, j - j0] = a + order[j]
                step += 1
    return ok.all()


@njit(cache=True)
def dense_lookup(dense, users, items, out):
    """out[j] = dense[users[j], items[j]]: the bitmap's answers, in one compiled pass (half the time of numpy's
    two-index fancy indexing, which goes through a general index iterator)."""
    for j in range(users.shape[0]):
        out[j] = dense[users[j], items[j]]
    return out


@njit(cache=True)
def dense_hits_grouped(dense, users, starts, items):
    """The samples j whose item is a positive of their user (dense[user, item]), in order, and their users; sample j
    belongs to users[m] for starts[m] <= j < starts[m + 1]. One pass without a branch on the answer: every sample
    is written at the next free place, which only a hit moves on (half the time of counting first, then filling).
    The buffers start at a sixteenth of the samples (ML-1M: 4.5 % hit) and double when a client's block could
    overrun them."""
    cap = max(1024, items.shape[0] // 16)
    hits, hit_user = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
    n = 0
    for m in range(users.shape[0]):
        row, u = dense[users[m]], users[m]
        j0, end = starts[m], starts[m + 1]
        while j0 < end:
            j1 = min(end, j0 + cap - n)  # samples j0:j1 write at most up to place cap - 1
            if j1 == j0:
                cap *= 2
                grown, grown_user = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
                grown[:n], grown_user[:n] = hits[:n], hit_user[:n]
                hits, hit_user = grown, grown_user
                continue
            for j in range(j0, j1):
                hits[n], hit_user[n] = j, u
                n += np.int64(row[items[j]])
            j0 = j1
    return hits[:n], hit_user[:n]


@njit(cache=True)
def redraw_dense(dense, redo, redo_user, items, draws):
    """One pass of the sampler's rejection loop on a dense bitmap: items[redo[j]] = draws[j], then keep (in place,
    in order) the redo entries (and their users) whose new item is again a positive. Returns how many are kept."""
    n = 0
    for j in range(redo.shape[0]):
        s, u = redo[j], redo_user[j]
        items[s] = draws[j]
        if dense[u, draws[j]]:
            redo[n], redo_user[n] = s, u
            n += 1
    return n
