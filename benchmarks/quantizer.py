"""The QSGD quantizer of the uplink and downlink (`fed.mods.quantize_wires`): its compiled passes (now) against
the whole-array torch / numpy form they replaced (`tests/oracles/quantize_reference`), on the same payload with
the same draws, in the same process; both forms' levels, values and bytes checked equal, the ratios printed.

    python benchmarks/quantizer.py                       # a CoLR@4 uplink of the paper's cohort: 60 x 3706 x 4
    python benchmarks/quantizer.py --clients 6040 --values 14824 --bits 8   # Top-K@4/64 of every ML-1M user
    python benchmarks/quantizer.py --clients 6040 --rows-only              # CoLR@4's A of every ML-1M user, by rows

The last step quantizes a payload held by the rows the clients touched (CoLR@4's A sent column by column: each
client 825 of 3706 items, about ML-1M's 165 positives and their negatives): written from the rows a block of
clients at a time (now) against laid out as the whole (M, n) table first (before); the same levels and norms.

The payload is Gaussian with a quarter of its values zero (a short client's padding); the quantizer's cost does
not depend on the values. One thread unless LABCORE_THREADS says otherwise; best of --repeat; the compiled passes
are loaded before timing. On a shared machine trust the ratio more than the seconds.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test oracles (`tests/oracles`)

from labcore.runtime import use_threads
from labcore.fed.local_train import RowUpdate
from labcore.methods.base import RowBlock, Wire
from labcore.methods.quantize import dequantize, pack_codes, quantize, quantize_blocks
from oracles.quantize_reference import dequantize_torch, pack_codes_planes, quantize_torch


def time_both(now, before, repeat: int):
    """Each form's output and best time, the two run alternately."""
    outs, best = {}, {"now": float("inf"), "before": float("inf")}
    for _ in range(repeat):
        for name, fn in (("now", now), ("before", before)):
            t0 = time.perf_counter()
            outs[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return outs, best


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=60)
    ap.add_argument("--values", type=int, default=3706 * 4, help="values a client sends")
    ap.add_argument("--bits", type=int, default=8)
    ap.add_argument("--bucket", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--touched", type=int, default=825, help="rows a client touched (the rows-held payload)")
    ap.add_argument("--rows-only", action="store_true", help="time the rows-held payload's step alone")
    a = ap.parse_args()
    use_threads()
    x = torch.randn(a.clients, a.values, generator=torch.Generator().manual_seed(0))
    x[:, ::4] = 0.0
    shape = tuple(x.shape)
    quantize(x[:2, :64], a.bits, a.bucket, torch.Generator())  # load the compiled passes
    print(f"payload {a.clients} x {a.values} = {x.numel() / 1e6:.1f} M values, {a.bits} bits, buckets of {a.bucket}")
    def gen():
        return torch.Generator().manual_seed(1)

    steps = {"quantize (draws, levels, signs, norms)": (lambda: quantize(x, a.bits, a.bucket, gen()),
                                                        lambda: quantize_torch(x, a.bits, a.bucket, gen()))}
    q = quantize(x, a.bits, a.bucket, gen())
    steps["dequantize"] = (lambda: dequantize(*q, a.bits, a.bucket, shape),
                           lambda: dequantize_torch(*q, a.bits, a.bucket, shape))
    lv, sg = q[0].numpy(), q[1].numpy()
    steps["pack the codes"] = (lambda: pack_codes(lv, sg, a.bits), lambda: pack_codes_planes(lv, sg, a.bits))
    if a.rows_only:
        steps = {}
    wire = rows_wire(a.clients, 3706, 4, a.touched)
    steps["quantize a payload held by rows"] = (
        lambda: quantize_blocks(wire.fill, wire.shape, a.bits, a.bucket, gen()),
        lambda: quantize(wire.dense(), a.bits, a.bucket, gen()))
    total = {"now": 0.0, "before": 0.0}
    print(f"{'step':40s} {'now s':>8s} {'before s':>9s} {'ratio':>7s}")
    for name, (now, before) in steps.items():
        outs, t = time_both(now, before, a.repeat)
        assert all(np.array_equal(np.asarray(u), np.asarray(v)) for u, v in
                   zip(as_tuple(outs["now"]), as_tuple(outs["before"]))), f"{name}: the two forms differ"
        total["now"] += t["now"]
        total["before"] += t["before"]
        print(f"{name:40s} {t['now']:8.3f} {t['before']:9.3f} {t['before'] / t['now']:6.1f}x  (equal)")
    print(f"{'all':40s} {total['now']:8.3f} {total['before']:9.3f} {total['before'] / total['now']:6.1f}x")


def rows_wire(clients: int, n_items: int, width: int, touched: int) -> Wire:
    """An uplink wire held by rows: each client `touched` distinct random items, Gaussian values, factor layout."""
    rng = np.random.default_rng(0)
    items = np.concatenate([np.sort(rng.choice(n_items, touched, replace=False)) for _ in range(clients)])
    indptr = np.arange(clients + 1, dtype=np.int64) * touched
    values = torch.from_numpy(rng.standard_normal((len(items), width), dtype=np.float32))
    update = RowUpdate.from_offsets(clients, n_items, indptr, torch.from_numpy(items.astype(np.int64)), values)
    return Wire("A", "values", None, rows=RowBlock(update, "factor"))


if __name__ == "__main__":
    main()
