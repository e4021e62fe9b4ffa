"""Top-K at full participation: the message made and decoded by the touched rows (`topk_kernels`, now) against
the per-client torch selection and the dense decode they replaced (before), on one real round's update, in the
same process; the ratios printed.

    python benchmarks/topk_rows.py                        # ML-1M, every user a client, TopK@4 (ratio 4/64)
    python benchmarks/topk_rows.py --clients 256 --ratio 0.25
    python benchmarks/topk_rows.py --bits 3 --link-budget 1 # 3-bit values over a link that carries 2 levels

One round of the engine gives the cohort's touched rows; both encodes must send the same message (checked),
then both decodes are aggregated as the CoLR papers' Top-K runs do (`item_mean`), and the largest difference
of the two aggregates is printed (the sums add the clients in another order). With --bits and --link-budget the
decodes take the values a noisy link delivered (its noise moves zeros of short clients' padding off their rows:
received-only rows, now; they were the reason to decode densely). One thread unless
LABCORE_THREADS says otherwise; the compiled steps are timed at their second call (the first loads the kernels). On
a shared machine trust the ratio more than the seconds.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

import labcore
from labcore.fed.aggregate import item_mean, rows_item_mean
from labcore.fed.engine import Simulation, load_data
from labcore.runtime import use_threads
from labcore.fed.mods import quantize_wires
from labcore.methods.base import Wire
from labcore.methods.compress import topk_compress_rows, topk_count, topk_decompress, topk_positions
from labcore.methods.topk import TopKCompression
from labcore.methods.topk_kernels import topk_onto_rows


def encode_before(X: torch.Tensor, item: torch.Tensor, indptr, n_items: int, k: int):
    """The former `topk_compress_rows`: one torch top-k (kthvalue) per client, in a Python loop."""
    M, d = len(indptr) - 1, X.shape[1]
    values, indices = X.new_zeros(M, k), torch.empty(M, k, dtype=torch.int64)
    for m in range(M):
        a, b = int(indptr[m]), int(indptr[m + 1])
        flat, items = X[a:b].reshape(-1), item[a:b]
        if k <= flat.shape[0]:
            local = topk_positions(flat.abs()[None], k)[0]
            values[m], indices[m] = flat[local], items[local // d] * d + local % d
            continue
        n = flat.shape[0]
        values[m, :n] = flat
        indices[m, :n] = (items[:, None] * d + torch.arange(d)).reshape(-1)
        free = torch.ones(n_items, dtype=torch.bool)
        free[items] = False
        spare = torch.nonzero(free).squeeze(1)[: -(-(k - n) // d)]
        indices[m, n:] = (spare[:, None] * d + torch.arange(d)).reshape(-1)[: k - n]
    return values, indices.to(torch.int32)


def timed(fn, repeat: int = 1):
    """fn's result and its best time of `repeat` calls (the compiled ones: the first call loads the kernels)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-1m")
    ap.add_argument("--clients", type=int, default=0, help="clients per round; 0 = every user")
    ap.add_argument("--ratio", type=float, default=4 / 64, help="topk_ratio (k = ratio x items x dim)")
    ap.add_argument("--bits", type=int, default=0, help="quantize the k values with QSGD at these bits (0 = not)")
    ap.add_argument("--link-budget", type=int, default=0, help="log2 K of the uplink channel (0 = no limit)")
    args = ap.parse_args(argv)
    use_threads()
    base = labcore.paper_ml1m(dataset=args.dataset, method="topk", topk_ratio=args.ratio, rank_every=0,
                              eval_every=10**6)
    data = load_data(base)
    m = data.n_users if args.clients <= 0 else min(args.clients, data.n_users)
    cfg = base.replace(clients_per_round=m)
    sim = Simulation(cfg, data)
    seen = {}
    uplink = TopKCompression.uplink

    def keep_rows(self, local, setup):  # the round's touched rows, as the uplink receives them
        seen["rows"] = local.rows
        return uplink(self, local, setup)

    TopKCompression.uplink = keep_rows
    sim.step()
    TopKCompression.uplink = uplink
    rows = seen["rows"]
    N, d = data.n_items, cfg.dim
    k = topk_count(N * d, cfg.topk_ratio)
    print(f"{args.dataset}, {m} clients, {rows.values.shape[0]:,} touched rows x {d}, k = {k:,} values a client")

    (v_new, i_new), t_enc_new = timed(lambda: topk_compress_rows(rows.values, rows.item, rows.indptr, N, k), 2)
    (v_old, i_old), t_enc_old = timed(lambda: encode_before(rows.values, rows.item, rows.indptr, N, k))
    if not (torch.equal(v_new, v_old) and torch.equal(i_new, i_old)):
        raise SystemExit("the two encodes send different messages")
    print("  encode: the same message, value for value and index for index")
    print(f"    compiled radix select (now)   {t_enc_new:.2f} s")
    print(f"    torch, client by client       {t_enc_old:.2f} s   ratio {t_enc_old / t_enc_new:.1f}x")

    item = np.ascontiguousarray(rows.item.numpy())
    received = v_new
    if args.bits:  # what the server receives: the dequantized values, after the link's noise if it has a budget
        wire = Wire("values", "values", v_new)
        received = quantize_wires([wire], args.bits, cfg.quant_bucket, torch.Generator().manual_seed(0),
                                  args.link_budget)[1][0].data
    out, off = topk_onto_rows(received.numpy(), i_new.numpy(), item, rows.indptr, d)
    print(f"  received: {args.bits or 32}-bit values, link budget {args.link_budget or 'none'}: {len(off[0]):,} "
          f"nonzero values off the clients' touched rows")

    def decode_new():
        out, off = topk_onto_rows(received.numpy(), i_new.numpy(), item, rows.indptr, d)
        return rows_item_mean(rows.with_values(torch.from_numpy(out)).with_received(*off))

    def decode_old():
        return item_mean(topk_decompress(received, i_old, (m, N, d)), rows.touched())

    agg_new, t_dec_new = timed(decode_new, 2)
    agg_old, t_dec_old = timed(decode_old)
    diff = float((agg_new - agg_old).abs().max())
    scale = float(agg_old.abs().max())
    print(f"  decode and item_mean: largest difference {diff:.2e} (largest value {scale:.2e}; the clients are "
          f"added in another order)")
    print(f"    onto the touched rows (now)   {t_dec_new:.2f} s   rows {rows.values.numel() * 4 / 2**30:.2f} GiB")
    print(f"    dense tables (before)         {t_dec_old:.2f} s   ratio {t_dec_old / t_dec_new:.1f}x   "
          f"table {m * N * d * 4 / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
