"""Top-K by the touched rows, compiled (numba): each client's k largest magnitudes among its rows, and the
server's decode of the k values back onto those rows. Both cost O(rows x d + clients x k); the dense forms
(`compress.topk_compress`, `topk_decompress`) build clients x items x d tables.

Hand-written because the selection is ragged (one top-k per client, of a different length each) and numpy /
torch have no per-segment partition; the per-client loop in torch cost 5.4 s on a full ML-1M round.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..fed.threads import compiled_threads, n_threads


@njit(cache=True)
def _kth_largest_key(key, k, hist, cand):
    """The k-th largest of the uint32 keys (k <= len(key)) by a radix select, 11 + 11 + 10 bits: one counting
    pass over all keys, then passes over the few that share the answer's leading bits. Branch-light: a full
    ML-1M round's encode took 1.1 s with it, 2.6 s with numba's np.partition (a quickselect)."""
    need, n_cand, total = k, 0, key.shape[0]
    for shift, width in ((21, 11), (10, 11), (0, 10)):
        mask = np.uint32((1 << width) - 1)
        hist[: 1 << width] = 0
        if shift == 21:
            for j in range(total):
                hist[key[j] >> shift] += 1
        else:
            for j in range(n_cand):
                hist[(cand[j] >> shift) & mask] += 1
        b = (1 << width) - 1
        while hist[b] < need:  # the bin that holds the need-th largest, counting from the top
            need -= hist[b]
            b -= 1
        hi = np.uint32(b)
        if shift == 21:
            for j in range(total):
                if key[j] >> shift == hi:
                    cand[n_cand] = key[j]
                    n_cand += 1
        else:
            w = 0
            for j in range(n_cand):
                if (cand[j] >> shift) & mask == hi:
                    cand[w] = cand[j]
                    w += 1
            n_cand = w
    return cand[0]


@njit(cache=True)
def _client_topk(flat, key, cand, hist, k, item, d, n_items, free, values, indices):
    """Client's row of the message from its n = len(flat) touched values (rows in increasing item order):
    the k largest magnitudes, ties at the k-th to the lowest positions, in increasing position order; or, when
    n < k, all n values and k - n zeros at the first untouched positions (`compress.topk_compress_rows`)."""
    n = flat.shape[0]
    if k <= n:
        bits = flat.view(np.uint32)
        for j in range(n):  # |x| as its bit pattern: the same order for every non-negative float
            key[j] = bits[j] & np.uint32(0x7FFFFFFF)
        thr = _kth_largest_key(key[:n], k, hist, cand)
        ties = k
        for j in range(n):
            ties -= key[j] > thr
        w = 0
        for j in range(n):  # everything above the k-th largest, and the first `ties` equal to it
            if key[j] > thr or (key[j] == thr and ties > 0):
                if key[j] == thr:
                    ties -= 1
                values[w] = flat[j]
                indices[w] = item[j // d] * d + j % d
                w += 1
        return
    for j in range(n):
        values[j] = flat[j]
        indices[j] = item[j // d] * d + j % d
    for j in range(n, k):
        values[j] = 0.0
    free[:] = True
    for r in range(item.shape[0]):
        free[item[r]] = False
    w = n
    for i in range(n_items):
        if w >= k:
            break
        if free[i]:
            for c in range(d):
                if w >= k:
                    break
                indices[w] = i * d + c
                w += 1


@njit(cache=True, parallel=True)
def _topk_rows(lanes, values_in, item, indptr, n_items, k, values, indices):
    d = values_in.shape[1]
    M = indptr.shape[0] - 1
    for lane in prange(lanes):
        key = np.empty(0, dtype=np.uint32)
        cand = np.empty(0, dtype=np.uint32)
        hist = np.empty(2048, dtype=np.int64)
        free = np.empty(n_items, dtype=np.bool_)
        for m in range(lane, M, lanes):  # clients dealt round-robin, as in fed.kernels.fused's _lanes
            a, b = indptr[m], indptr[m + 1]
            flat = values_in[a:b].reshape(-1)
            if key.shape[0] < flat.shape[0]:
                key, cand = np.empty(flat.shape[0], dtype=np.uint32), np.empty(flat.shape[0], dtype=np.uint32)
            _client_topk(flat, key, cand, hist, k, item[a:b], d, n_items, free, values[m], indices[m])


def topk_rows(values: np.ndarray, item: np.ndarray, indptr: np.ndarray, n_items: int,
              k: int) -> tuple[np.ndarray, np.ndarray]:
    """(M, k) values and int32 flat indices: `compress.topk_compress` of each client's (N, d) table, from its
    touched rows (values (R, d) C-contiguous, item (R,), indptr (M + 1,))."""
    M = indptr.shape[0] - 1
    out_v = np.empty((M, k), dtype=values.dtype)
    out_i = np.empty((M, k), dtype=np.int32)
    with compiled_threads():
        _topk_rows(n_threads(), values, item, indptr, n_items, k, out_v, out_i)
    return out_v, out_i


@njit(cache=True)
def _onto_rows(values, indices, item, indptr, d, out, off_client, off_flat, off_value):
    """Each client's k values written at their rows of `out`, walking its positions and its rows together
    (positions come in increasing order but for the padding; a step back restarts the walk). A nonzero value
    that lands off the client's rows (a zero of the padding a noisy link moved) is listed in the off_* buffers
    while they have room; returns how many there are."""
    n_off = 0
    for m in range(indptr.shape[0] - 1):
        a, b = indptr[m], indptr[m + 1]
        r, last = a, -1
        for j in range(values.shape[1]):
            flat = np.int64(indices[m, j])
            if flat < last:
                r = a
            last = flat
            while r < b and (item[r] + 1) * d <= flat:
                r += 1
            if r < b and item[r] * d <= flat:
                out[r, flat - item[r] * d] = values[m, j]
            elif values[m, j] != 0.0:
                if n_off < off_client.shape[0]:
                    off_client[n_off], off_flat[n_off], off_value[n_off] = m, flat, values[m, j]
                n_off += 1
    return n_off


def topk_onto_rows(values: np.ndarray, indices: np.ndarray, item: np.ndarray, indptr: np.ndarray,
                   d: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The decoded (R, d) rows of the clients' touched rows (item, indptr) from their Top-K messages (M, k), and
    the nonzero values that lie off those rows as (client, flat position, value): none unless a noisy link
    moved zeros of a short client's padding (those in the quantizer's bucket that holds its last values: in a
    bucket of zeros alone, the norm is zero)."""
    out = np.zeros((item.shape[0], d), dtype=values.dtype)
    size = max(1024, d * values.shape[0])  # a row's worth a client (ML-1M's full round: 19 values a client)
    while True:  # the first guess holds them all but in the noisiest rounds; then once more, exactly
        off = (np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, values.dtype))
        n_off = _onto_rows(values, indices, item, indptr, d, out, *off)
        if n_off <= size:
            return out, tuple(a[:n_off] for a in off)
        size = n_off
