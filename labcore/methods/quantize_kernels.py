"""The QSGD quantizer's per-value passes, compiled (numba): levels and signs, the dequantized values, and the
fixed-width bit packing of the codes.

Written with torch and numpy's bit planes, each pass made several full-size temporaries (the packer one uint64
per *bit*: 6 GB for the 89 M values of a full-participation Top-K round on ML-1M), and quantization took about
80 % of an 8-bit CoLR round. Each loop below does the same float64 operations in the same order as that form (no
fastmath), so the levels, the values and the bytes are the same; the random draws stay torch's.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def qsgd_levels(xb, norms, u, s, levels, signs):
    """xb (M, B, b) float64 buckets (zero padded), norms (M, B), u (M, B, b) uniform draws in [0, 1), s the top
    level -> levels (M, n) int64 and signs (M, n) bool (True = negative) of the first n values: the stochastic
    rounding of r = |x| / ||bucket|| * s to floor(r) + [u < r - floor(r)], at most s."""
    M, nb, b = xb.shape
    n = levels.shape[1]
    for m in range(M):
        level, sign = levels[m], signs[m]
        for q in range(nb):
            den = norms[m, q] if norms[m, q] > 0.0 else 1.0
            x, draw, base = xb[m, q], u[m, q], q * b
            for t in range(min(b, n - base)):
                r = (abs(x[t]) / den) * s
                low = np.floor(r)
                lv = low + np.float64(draw[t] < r - low)
                level[base + t] = np.int64(lv if lv < s else s)
                sign[base + t] = x[t] < 0.0


@njit(cache=True)
def qsgd_values(levels, signs, norms, s, bucket, out):
    """out (M, n) float32 = (level / s) (-1 if sign else 1) ||bucket||, each product in float64 and rounded once;
    a loop per bucket (no division of each index by the bucket size: half the time)."""
    n = levels.shape[1]
    for m in range(levels.shape[0]):
        level, sign, row = levels[m], signs[m], out[m]
        for q in range(norms.shape[1]):
            norm = np.float64(norms[m, q])
            for j in range(q * bucket, min(q * bucket + bucket, n)):
                row[j] = np.float32(((np.float64(level[j]) / s) * (-1.0 if sign[j] else 1.0)) * norm)


@njit(cache=True)
def pack_fixed(values, signs, shift, width, out):
    """Row m of out (zeroed, ceil(n width / 8) bytes) gets the codes (values << shift) | sign (sign read only when
    shift is 1), `width` bits each, value j at bits j width .. (j + 1) width - 1, least significant bit first:
    numpy's packbits of the codes' bit planes with bitorder little."""
    for m in range(values.shape[0]):
        acc, held, o = np.uint64(0), 0, 0
        for j in range(values.shape[1]):
            code = np.uint64(values[m, j]) << np.uint64(shift)
            if shift:
                code |= np.uint64(signs[m, j])
            acc |= code << np.uint64(held)  # held < 8 and width <= 33: fits in 64 bits
            held += width
            while held >= 8:
                out[m, o] = np.uint8(acc & np.uint64(255))
                acc >>= np.uint64(8)
                held -= 8
                o += 1
        if held:
            out[m, o] = np.uint8(acc & np.uint64(255))


@njit(cache=True)
def unpack_fixed(packed, shift, width, values, signs):
    """The inverse of `pack_fixed` for values (M, n) int64 (and signs when shift is 1)."""
    mask = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    for m in range(values.shape[0]):
        acc, held, o = np.uint64(0), 0, 0
        for j in range(values.shape[1]):
            while held < width:
                acc |= np.uint64(packed[m, o]) << np.uint64(held)
                held += 8
                o += 1
            code = acc & mask
            acc >>= np.uint64(width)
            held -= width
            if shift:
                signs[m, j] = (code & np.uint64(1)) != np.uint64(0)
            values[m, j] = np.int64(code >> np.uint64(shift))


# --- a payload held by its touched rows ----------------------------------------------------------------------
# FedMF's and CoLR's uplinks are each client's (N, k) table, zero except on the rows the client touched. QSGD keeps
# a zero at zero (level 0 whatever the draw), so only the held values are drawn for, rounded, packed and
# dequantized: O(rows x k), with no (M, N k) table of levels, signs or values.
@njit(cache=True)
def payload_position(i, j, n_items, k, factor):
    """The position in a client's flattened (N, k) table of value j of its item i's row: item-major (i k + j) or
    factor-major (`factor`: j N + i), the layouts of `base.RowBlock`."""
    return j * n_items + i if factor else i * k + j


@njit(cache=True)
def _bucket_run(i, j0, k, bucket, bucket_of):
    """Item i's item-major row from column j0 on: its bucket q and the end j1 of the columns in that bucket."""
    q = bucket_of[i * k + j0]
    return q, min(k, (q + 1) * bucket - i * k)


@njit(cache=True)
def qsgd_rows_norms(values, indptr, item, n_items, factor, bucket, bucket_of, norms):
    """norms (M, B) float64, zeroed: the L2 norm of each bucket of consecutive payload values, from the held values
    (rows indptr[m]:indptr[m + 1] of client m, (R, k)); every other value is zero. bucket_of[p]: the bucket of
    payload position p (a table: an integer division per value took a sixth of `qsgd_rows`' time). Each bucket's
    squares are added in the order of the rows, then of the columns."""
    k = values.shape[1]
    for m in range(indptr.shape[0] - 1):
        for r in range(indptr[m], indptr[m + 1]):
            i = item[r]
            if factor:
                for j in range(k):
                    x = np.float64(values[r, j])
                    norms[m, bucket_of[payload_position(i, j, n_items, k, True)]] += x * x
                continue
            j0 = 0
            while j0 < k:  # item-major: the row is positions i k .. i k + k - 1, a run of one bucket at a time
                q, j1 = _bucket_run(i, j0, k, bucket, bucket_of)
                acc = norms[m, q]  # summed in a register: the same additions in the same order, without a store each
                for j in range(j0, j1):
                    x = np.float64(values[r, j])
                    acc += x * x
                norms[m, q] = acc
                j0 = j1
    for m in range(norms.shape[0]):
        for q in range(norms.shape[1]):
            norms[m, q] = np.sqrt(norms[m, q])


@njit(cache=True)
def _run_codes(values, r, j0, j1, u, s, norm, norm32, out, codes):
    """QSGD of values[r, j0:j1], all in one bucket (norm its float64 norm, norm32 as sent): the dequantized values
    into out[r, j0:j1] and the codes level << 1 | sign into codes[j0:j1]. `qsgd_levels` and `qsgd_values` value by
    value, in the same float64 operations and order; a loop with no branch, so it vectorizes."""
    den = norm if norm > 0.0 else 1.0
    n32 = np.float64(norm32)
    for j in range(j0, j1):
        x = np.float64(values[r, j])
        ratio = (abs(x) / den) * s
        low = np.floor(ratio)
        lv = low + np.float64(u[r, j] < ratio - low)
        lv = lv if lv < s else s
        negative = x < 0.0
        out[r, j] = np.float32(((lv / s) * (1.0 - 2.0 * np.float64(negative))) * n32)
        codes[j] = (np.uint64(lv) << np.uint64(1)) | np.uint64(negative)


@njit(cache=True)
def _factor_column_codes(values, lo, hi, item, j, n_items, bucket, bucket_of, u, s, width, norms, norms32, row, out,
                         run):
    """Column j of a client's factor-major rows lo:hi (items ascending, `qsgd_rows`' arguments otherwise): positions
    j N + item[r] ascending, so the rows fall into the column's buckets in runs. A run's values and draws are gathered
    into the contiguous scratch `run` (x, u, values, codes: `_column_scratch`) and coded by `_run_codes` (vectorized;
    each value's float64 steps are those of coding it on its own), then scattered back and ORed into the packed row.
    The same codes and values as value by value; that loop stayed scalar (a column's values are k apart in memory)."""
    xs, us, vs, codes = run
    base = j * n_items
    r = lo
    while r < hi:
        q = bucket_of[base + item[r]]
        end = (q + 1) * bucket - base  # the first item past bucket q in this column
        r1 = r + 1
        while r1 < hi and item[r1] < end:
            r1 += 1
        for t in range(r, r1):
            xs[0, t - r] = values[t, j]
            us[0, t - r] = u[t, j]
        _run_codes(xs, 0, 0, r1 - r, us, s, norms[q], norms32[q], vs, codes)
        for t in range(r, r1):
            out[t, j] = vs[0, t - r]
            _or_code(row, (base + item[t]) * width, codes[t - r], width)
        r = r1


@njit(cache=True)
def _or_code(row, bit, code, width):
    """OR one code of `width` bits into the bytes of `row` from bit `bit` on (`pack_fixed`'s layout): the bytes it
    can touch, never past the row."""
    code <<= np.uint64(bit & 7)  # width <= 33 and a shift below 8: fits in 64 bits
    o = bit >> 3
    for t in range(min((width + 7 + 7) // 8, row.shape[0] - o)):
        row[o + t] |= np.uint8((code >> np.uint64(8 * t)) & np.uint64(255))


@njit(cache=True)
def _column_scratch(n):
    """`_factor_column_codes`' scratch for runs of up to n values."""
    return (np.empty((1, n), dtype=np.float32), np.empty((1, n), dtype=np.float64),
            np.empty((1, n), dtype=np.float32), np.empty(n, dtype=np.uint64))


@njit(cache=True)
def _or_run(row, bit, codes, width):
    """OR the codes, `width` bits each, into the bytes of `row` from bit `bit` on, least significant bit first
    (`pack_fixed`'s layout for a run of consecutive payload positions). ORed, not stored: the run's first and last
    bytes can hold a neighbouring row's codes. Four bytes are written at a time (half the time of one at a time)."""
    o, held, acc = bit >> 3, bit & 7, np.uint64(0)
    for j in range(codes.shape[0]):
        acc |= codes[j] << np.uint64(held)  # held < 32 and width <= 33: fits in 64 bits
        held += width
        while held >= 32:
            for t in range(4):
                row[o + t] |= np.uint8((acc >> np.uint64(8 * t)) & np.uint64(255))
            acc >>= np.uint64(32)
            held -= 32
            o += 4
    while held > 0:
        row[o] |= np.uint8(acc & np.uint64(255))
        acc >>= np.uint64(8)
        held -= 8
        o += 1


@njit(cache=True)
def qsgd_rows(values, indptr, item, n_items, factor, bucket, bucket_of, u, s, width, norms, norms32, packed, out,
              runs=True):
    """The held values' QSGD codes, packed into their clients' rows of `packed` (zeroed, `pack_fixed`'s layout:
    level << 1 | sign in `width` bits at bit p width for payload position p), and their dequantized values `out`
    (R, k) float32: `qsgd_levels`, `pack_fixed` and `qsgd_values` value by value. u (R, k): one uniform draw per
    held value; s the top level; norms: float64 (for the levels), norms32: as sent (for the values); bucket and
    bucket_of as for `qsgd_rows_norms`.

    Item-major (FedMF), a row is a run of consecutive positions: with `runs`, coded a bucket's run at a time in a loop
    that vectorizes (`_run_codes`), then packed in one pass (`_or_run`): about half the time of coding and packing
    each value on its own. Factor-major rows (CoLR: k = rank values, each at a place of its own) are coded a column
    at a time, a bucket's run of rows through the same loop (`_factor_column_codes`). `runs=False` codes and packs
    every value on its own (the former pass: the benchmark's baseline)."""
    k = values.shape[1]
    codes = np.empty(k, dtype=np.uint64)
    run = _column_scratch(min(bucket, n_items) if factor and runs else 0)  # a column's run lies in one bucket
    for m in range(indptr.shape[0] - 1):
        if runs and factor:
            for j in range(k):
                _factor_column_codes(values, indptr[m], indptr[m + 1], item, j, n_items, bucket, bucket_of, u, s,
                                     width, norms[m], norms32[m], packed[m], out, run)
            continue
        for r in range(indptr[m], indptr[m + 1]):
            i = item[r]
            if runs and not factor:
                j0 = 0
                while j0 < k:
                    q, j1 = _bucket_run(i, j0, k, bucket, bucket_of)
                    _run_codes(values, r, j0, j1, u, s, norms[m, q], norms32[m, q], out, codes)
                    j0 = j1
                _or_run(packed[m], i * k * width, codes, width)
                continue
            for j in range(k):
                p = payload_position(i, j, n_items, k, factor)
                q = bucket_of[p]
                x = np.float64(values[r, j])
                den = norms[m, q] if norms[m, q] > 0.0 else 1.0
                ratio = (abs(x) / den) * s
                low = np.floor(ratio)
                lv = low + np.float64(u[r, j] < ratio - low)
                level = np.int64(lv if lv < s else s)
                negative = x < 0.0
                sign = 1.0 - 2.0 * np.float64(negative)  # +-1 without a branch (signs are a coin toss)
                out[r, j] = np.float32(((np.float64(level) / s) * sign) * np.float64(norms32[m, q]))
                _or_code(packed[m], p * width, (np.uint64(level) << np.uint64(1)) | np.uint64(negative), width)
