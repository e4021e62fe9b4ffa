"""A quantized uplink at full participation: QSGD drawn, coded and received by the rows the clients touched (now)
against one draw per value of every client's whole table, received as a dense table and read back onto the rows
(before), on one real round's message, in the same process; the ratio printed.

    python benchmarks/quantized_uplink.py                        # ML-1M, every user a client, CoLR@4, 8 bits
    python benchmarks/quantized_uplink.py --method fedmf --clients 600 --bits 4
    python benchmarks/quantized_uplink.py --method fedmf --clients 60 # the paper's cohort
    python benchmarks/quantized_uplink.py --method fedmf --clients 60 --link-budget 6  # over a noisy link

Over a noisy link (`--link-budget` below the bits) both ways receive whole tables (the channel moves zeros): now the
codes are drawn for by the held rows and the channel from the packed codes where a bucket has a norm
(`channel.transmit_packed`), before every value of each client's whole table with torch's draws; the by-rows passes
are then skipped, and the channel alone is timed on the same message two ways: each received level drawn from its
exact distribution with one uniform (now) and Eq. 6 as written, a normal and a uniform a value (before); for CoLR and
SCoLR the server's sum and weighted sum of the received tables (a factor-major view) are timed too, in the storage's
order (now) and torch's on the view (before).

Then, for the same message, the by-rows quantizer alone three ways, the same draws, the same bytes (checked): each
value coded and packed on its own in fresh arrays (before), coded by runs through the vectorized loop (FedMF's
item-major rows a bucket's run of a row at a time, CoLR's factor-major rows a bucket's run of a column), and that in a
workspace kept from call to call as the engine's rounds keep it (no fresh pages to fault in; below
`KEEP_QUANTIZED_BYTES`).

One round of the engine gives the cohort's uplink (its touched rows); each way quantizes it, the server decodes it
and aggregates it as the CoLR papers' runs do (`item_mean`). The two draw different numbers, so their aggregates
differ by the quantizer's noise: printed is each one's error against the float32 aggregate, and the packed bytes
(the same size both ways). One thread unless LABCORE_THREADS says otherwise; the compiled steps are timed at their
second call (the first loads the kernels). On a shared machine trust the ratio more than the seconds.
"""
from __future__ import annotations

import argparse

import torch

import labcore
from labcore.fed import mods as M
from labcore.fed.aggregate import aggregate
from labcore.fed.engine import Simulation, load_data
from labcore.runtime import use_threads
from labcore.fed.local_train import RowUpdate
from topk_rows import timed  # best of `repeat` calls (this folder is on the path of a script run from it)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-1m")
    ap.add_argument("--method", default="colr", choices=("colr", "scolr", "fedmf"))
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--clients", type=int, default=0, help="clients per round; 0 = every user")
    ap.add_argument("--bits", type=int, default=8, help="QSGD bits of the uplink")
    ap.add_argument("--link-budget", type=int, default=0, help="the uplink channel's budget log2 K; 0 = no limit")
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
    setup_round = sim.method.setup_round
    sim.method.setup_round = lambda *a: seen.setdefault("setup", setup_round(*a))
    uplink = sim.method.uplink
    sim.method.uplink = lambda local, setup: seen.setdefault("up", (local.rows, uplink(local, setup)))[1]
    sim.step()
    sim.method.setup_round, sim.method.uplink = setup_round, uplink
    (rows, up), setup, method = seen["up"], seen["setup"], sim.method
    part = next(w for w in up if w.rows is not None)
    weights = torch.full((m,), 1.0 / m)
    print(f"{args.dataset}, {cfg.describe()}, {m} clients, {rows.values.shape[0]:,} touched rows x {rows.width}: "
          f"{part.shape[0] * part.shape[1]:,} values in the clients' tables, {part.rows.update.values.numel():,} held")

    budget = args.link_budget
    if budget:
        print(f"  over a link of budget {budget} bits ({2**budget} levels exact; {2**args.bits - 1} sent): whole "
              "tables received both ways")

    def received(quantize):
        def run():
            packed, _, arrived = quantize(part, cfg.up_bits, cfg.quant_bucket, torch.Generator().manual_seed(1),
                                          link_budget=budget)
            wires = {w.name: w for w in up} | {part.name: arrived}
            decoded = method.decode_uplink(wires, setup, rows)
            touched = None if isinstance(decoded, RowUpdate) else rows.touched()  # a dense decode: the engine's mask
            return packed.shape, aggregate(decoded, cfg.aggregation, weights, touched, method.layout)
        return run

    exact = aggregate(method.decode_uplink({w.name: w for w in up}, setup, rows), cfg.aggregation, weights, None,
                      method.layout)
    now = "by the touched rows" if not budget else "by the rows, the channel from the codes"
    (shape_new, agg_new), t_new = timed(received(M.quantize_by_rows), 2)
    (shape_old, agg_old), t_old = timed(received(M.quantize_whole), 2)
    err = {k: float((a - exact).norm() / exact.norm()) for k, a in (("new", agg_new), ("old", agg_old))}
    print(f"  packed codes {tuple(shape_new)} both ways: {shape_new == shape_old}; aggregate ({cfg.aggregation}) "
          f"against the float32 one, relative L2 error: by rows {err['new']:.2e}, whole tables {err['old']:.2e}")
    label = f"quantize, {'transmit, ' if budget else ''}decode and aggregate {now} (now)"
    print(f"    {label}   {t_new:.2f} s")
    print(f"    {'the same from whole tables (before)':<{len(label)}}   {t_old:.2f} s   ratio {t_old / t_new:.1f}x")
    if not budget:
        by_rows_passes(part.rows, cfg.up_bits, cfg.quant_bucket)
    else:
        channel_ways(part.rows, cfg.up_bits, cfg.quant_bucket, budget)


def channel_ways(block, bits: int, bucket: int, budget: int) -> None:
    """The channel alone on the same packed message two ways: each received level drawn from its exact distribution
    with one uniform (now, up to `TABLE_LEVELS` levels) and Eq. 6 as written, a normal and a uniform (before)."""
    from labcore.methods.quantize import dequantize, quantize_rows, unpack_codes
    from labcore.net.channel import TABLE_LEVELS, transmit_packed

    u = block.update
    n = u.n_items * u.values.shape[1]
    packed, norms, _ = quantize_rows(u.values, u.indptr, u.item.numpy(), u.n_items, block.layout == "factor", bits,
                                     bucket, torch.Generator().manual_seed(1))
    levels, signs = unpack_codes(packed, n, bits)
    clean = dequantize(torch.from_numpy(levels), torch.from_numpy(signs), norms, bits, bucket, (packed.shape[0], n))
    del levels, signs

    def way(literal: bool):
        return lambda: transmit_packed(packed, norms.numpy(), n, bits, bucket, budget, torch.Generator().manual_seed(2),
                                       literal=literal)

    transmit_packed(packed[:1], norms.numpy()[:1], n, bits, bucket, budget, torch.Generator())  # the table, cached
    table, t_table = timed(way(False), 2)
    eq6, t_eq6 = timed(way(True), 2)
    err = {k: float((v - clean).norm() / clean.norm()) for k, v in (("table", table), ("eq6", eq6))}
    print(f"  the channel alone on one message ({int((norms > 0).sum()):,} buckets with a norm), relative L2 distance "
          f"from the codes as sent: table {err['table']:.4f}, Eq. 6 {err['eq6']:.4f}")
    note = "" if 2**bits <= TABLE_LEVELS else f" (more than TABLE_LEVELS = {TABLE_LEVELS} levels: Eq. 6 both ways)"
    print(f"    {'received levels from their exact distribution, one uniform (now)':<66}{t_table:.3f} s{note}")
    print(f"    {'Eq. 6 as written, a normal and a uniform a value (before)':<66}{t_eq6:.3f} s   "
          f"ratio {t_eq6 / t_table:.1f}x")
    if block.layout == "factor":
        server_sums(table.view(packed.shape[0], u.values.shape[1], u.n_items).transpose(1, 2))


def server_sums(view: torch.Tensor) -> None:
    """The server's two sums of a factor-major decode (a (M, N, r) view of the received (M, r, N) tables) over the
    clients: in the storage's order (now, `client_sum`, `weighted_sum`) and torch's own on the view (before)."""
    from labcore.fed.aggregate import client_sum, weighted_sum

    w = torch.rand(view.shape[0], generator=torch.Generator().manual_seed(3))
    w /= w.sum()
    for name, now, before in (("the sum (item_mean)", lambda: client_sum(view), lambda: view.sum(0)),
                              ("the weighted sum", lambda: weighted_sum(view, w),
                               lambda: torch.tensordot(w, view, dims=1))):
        (a, t_now), (b, t_before) = timed(now, 3), timed(before, 3)
        print(f"  {name} of the received tables over {view.shape[0]} clients: {t_now:.3f} s in the storage's order "
              f"(now), {t_before:.3f} s torch's on the view (before), ratio {t_before / t_now:.1f}x; largest "
              f"difference {float((a - b).abs().max()):.1e} of {float(b.abs().max()):.1e}")


def by_rows_passes(block, bits: int, bucket: int) -> None:
    """`quantize_rows` value by value in fresh arrays (before), by runs, and by runs in a kept workspace (now)."""
    from labcore.fed.workspace import Workspace
    from labcore.methods.quantize import KEEP_QUANTIZED_BYTES, quantize_rows

    u, ws = block.update, Workspace()
    args = (u.values, u.indptr, u.item.numpy(), u.n_items, block.layout == "factor", bits, bucket)

    def call(runs: bool, workspace=None):
        return lambda: quantize_rows(*args, torch.Generator().manual_seed(1), workspace, runs=runs)[0]

    before, t_each = timed(call(False), 3)
    runs, t_runs = timed(call(True), 3)
    kept, t_kept = timed(call(True, ws), 3)
    same = bool((before == runs).all() and (before == kept).all())
    held = ws.nbytes("quantized_codes", "quantized_values", "quantized_draws")
    print(f"  quantize_rows alone ({block.layout}-major rows, {u.values.numel():,} held values), the same bytes "
          f"three ways: {same}")
    print(f"    {'each value coded and packed on its own, fresh arrays (before)':<63}{t_each:.3f} s")
    print(f"    {block.layout + '-major rows coded by runs, fresh arrays':<63}{t_runs:.3f} s   "
          f"ratio {t_each / t_runs:.1f}x")
    print(f"    {'by runs in a workspace kept from call to call (now)':<63}{t_kept:.3f} s   "
          f"ratio {t_each / t_kept:.1f}x"
          + ("" if held else f"   (above KEEP_QUANTIZED_BYTES = {KEEP_QUANTIZED_BYTES / 2**20:.0f} MiB: not kept)"))


if __name__ == "__main__":
    main()
