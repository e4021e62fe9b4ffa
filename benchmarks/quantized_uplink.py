"""A quantized uplink at full participation: the server's decode read back onto the touched rows and summed by rows
(now) against the dense decode of every client's table summed by torch (before), on one real round's message, in
the same process; the ratio printed.

    python benchmarks/quantized_uplink.py                        # ML-1M, every user a client, CoLR@4, 8 bits
    python benchmarks/quantized_uplink.py --method fedmf --clients 600 --bits 4

One round of the engine gives the cohort's received (dequantized) uplink and its touched rows; both decodes are
aggregated as the CoLR papers' runs do (`item_mean`), and the largest difference of the two aggregates is printed
(the sums add the clients in another order). One thread unless LABCORE_THREADS says otherwise; the compiled step
is timed at its second call (the first loads the kernel). On a shared machine trust the ratio more than the seconds.
"""
from __future__ import annotations

import argparse

import torch

import labcore
from labcore.fed import engine as E
from labcore.fed.aggregate import aggregate
from labcore.fed.engine import Simulation, load_data, use_threads
from topk_rows import timed  # best of `repeat` calls (this folder is on the path of a script run from it)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-1m")
    ap.add_argument("--method", default="colr", choices=("colr", "scolr", "fedmf"))
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--clients", type=int, default=0, help="clients per round; 0 = every user")
    ap.add_argument("--bits", type=int, default=8, help="QSGD bits of the uplink")
    args = ap.parse_args(argv)
    use_threads()
    base = labcore.paper_ml1m(dataset=args.dataset, method=args.method, rank=args.rank, up_bits=args.bits,
                              rank_every=0, eval_every=10**6)
    data = load_data(base)
    m = data.n_users if args.clients <= 0 else min(args.clients, data.n_users)
    cfg = base.replace(clients_per_round=m)
    sim = Simulation(cfg, data)
    sim.keep_view = True  # the round's rows stay valid after it (no buffers reused)
    seen = {}
    quantize_wires = E.quantize_wires

    def keep(wires, *a, **kw):  # the round's message as the server receives it
        sent, received = quantize_wires(wires, *a, **kw)
        seen.setdefault("received", {w.name: w for w in received})  # the uplink's (the downlink's comes after)
        return sent, received

    E.quantize_wires = keep
    setup_round = sim.method.setup_round
    sim.method.setup_round = lambda *a: seen.setdefault("setup", setup_round(*a))
    uplink = sim.method.uplink
    sim.method.uplink = lambda local, setup: (seen.setdefault("rows", local.rows), uplink(local, setup))[1]
    sim.step()
    E.quantize_wires, sim.method.setup_round, sim.method.uplink = quantize_wires, setup_round, uplink
    rows, received, setup, method = seen["rows"], seen["received"], seen["setup"], sim.method
    weights = torch.full((m,), 1.0 / m)
    print(f"{args.dataset}, {cfg.describe()}, {m} clients, {rows.values.shape[0]:,} touched rows x {rows.width}, "
          f"{next(iter(received.values())).data.numel():,} values received")

    def by_rows():
        return aggregate(method.decode_uplink(received, setup, rows), cfg.aggregation, weights, None, method.layout)

    def dense():
        return aggregate(method.decode_uplink(received, setup, None), cfg.aggregation, weights, rows.touched(),
                         method.layout)

    agg_new, t_new = timed(by_rows, 2)
    agg_old, t_old = timed(dense)
    diff, scale = float((agg_new - agg_old).abs().max()), float(agg_old.abs().max())
    print(f"  decode and {cfg.aggregation}: largest difference {diff:.2e} (largest value {scale:.2e}; the clients "
          f"are added in another order)")
    print(f"    onto the touched rows (now)   {t_new:.2f} s")
    print(f"    dense tables (before)         {t_old:.2f} s   ratio {t_old / t_new:.1f}x")


if __name__ == "__main__":
    main()
