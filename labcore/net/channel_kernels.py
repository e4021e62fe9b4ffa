"""The budget channel (Eq. 6) applied to a packed QSGD message, compiled (numba).

A noisy link moves zeros: a value that left as level 0 can arrive as a small level, so a client's whole table
arrives, not only the rows it holds. But a value's received level is scaled by its bucket's norm, and a bucket whose
norm is zero (nothing held in it) arrives as zeros whatever the channel does. So the channel is drawn for only in
buckets with a norm, read straight from the packed codes (no (M, n) tables of levels, signs or float64 copies).

Each received level is drawn either from its exact distribution given the sent level (a table, one uniform a value:
`channel.received_level_table`), or, past the table's size, through Eq. 6 as written (a normal and a uniform).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def transmit_codes(packed, norms, n, width, bucket, s, sigma, first, z, u, cdf, guide, out, clear):
    """out[m, j] (float32, zeroed unless `clear`: then the buckets without a norm are zeroed here) for each value j of
    client m's buckets with a norm: its code's level l (of 0..s)
    and sign sent through the channel, then dequantized as `quantize_kernels.qsgd_values` does. u (and z) are
    client m's draws from first[m] on, one each per value of its buckets with a norm, in order.

    With a table (cdf, guide: `channel.received_level_table`, cdf empty for none) the received level is the inverse
    of row l of cdf at u, found from guide[l, floor(u (s + 1))] on. Without, Eq. 6 as written: y = l / s + sigma z
    clipped to [0, 1], rounded back onto the grid to floor(y s) + [u < y s - floor(y s)], in the float64 operations
    and order of `channel.transmit_levels` + `quantize.dequantize`."""
    exact = cdf.shape[0] > 0
    cells = guide.shape[1]
    mask = (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    for m in range(packed.shape[0]):
        t = first[m]
        row, codes = out[m], packed[m]
        for q in range(norms.shape[1]):
            norm = np.float64(norms[m, q])
            j0, j1 = q * bucket, min(q * bucket + bucket, n)
            if norm == 0.0:  # every value of the bucket arrives as 0 x level
                if clear:
                    row[j0:j1] = np.float32(0.0)
                continue
            o = (j0 * width) >> 3  # the bucket's codes read in order from the byte of its first bit on
            acc, held = np.uint64(codes[o]) >> np.uint64((j0 * width) & 7), 8 - ((j0 * width) & 7)
            o += 1
            for j in range(j0, j1):
                while held < width:  # at most 5 bytes: width <= 33
                    acc |= np.uint64(codes[o]) << np.uint64(held)
                    held += 8
                    o += 1
                code = acc & mask
                acc >>= np.uint64(width)
                held -= width
                if exact:
                    sent = np.int64(code >> np.uint64(1))
                    got = guide[sent, np.int64(u[t] * cells)]
                    while cdf[sent, got] <= u[t]:  # a step or two; the last column is 1 > u
                        got += 1
                    lv = np.float64(got)
                else:
                    y = np.float64(code >> np.uint64(1)) / s + z[t] * sigma
                    r = min(max(y, 0.0), 1.0) * s
                    low = np.floor(r)
                    lv = low + np.float64(u[t] < r - low)  # at most s: r <= s, and r = s has no fraction
                row[j] = np.float32(((lv / s) * (-1.0 if code & np.uint64(1) else 1.0)) * norm)
                t += 1
