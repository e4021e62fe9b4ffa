"""GIST: wall-clock per epoch of m subnets in m processes (torch.distributed, gloo) against one process
doing the same work (the simulation trains the m subnets one after the other), plus the exchange time per
sync and the plain GCN baseline's time on one core.

    LABCORE_DATA=/path/to/data python benchmarks/gist_parallel.py [--graph cora] [--m 2] [--epochs 40]

Both executions run in this script, on this machine, one after the other; only their ratio means anything
when other work shares the cores. Evaluation is left out of both (once at the end).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch


def main() -> None:
    from labcore.gist.baseline import train_gcn
    from labcore.gist.config import GistConfig, KipfConfig
    from labcore.gist.distributed import run_distributed, timing_summary
    from labcore.gist.graph import default_graph, for_config
    from labcore.gist.simulate import run

    ap = argparse.ArgumentParser()
    ap.add_argument("--graph", default=None)
    ap.add_argument("--m", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--locals", default="1,5")
    ap.add_argument("--split", default="layer1")
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3, help="alternate the two executions this many times")
    args = ap.parse_args()
    graph = args.graph or default_graph()
    torch.set_num_threads(1)

    if graph != "synthetic":
        t0 = time.perf_counter()
        hist, _ = train_gcn(KipfConfig(graph=graph, seed=0))
        print(f"plain GCN (Kipf's settings), {graph}, 200 epochs, one thread, evaluated every epoch: "
              f"{time.perf_counter() - t0:.2f} s, test accuracy {100 * hist['test_acc'].iloc[-1]:.1f} %")

    for local in (int(x) for x in args.locals.split(",")):
        cfg = GistConfig(graph=graph, subnets=args.m, split=args.split, hidden=args.hidden, local=local,
                         epochs=args.epochs, lr=0.05)
        for_config(cfg)  # load and project once, outside the timings
        run(cfg, rounds=1, evaluate=False)  # warm-up
        sims, dists = [], []
        for _ in range(args.repeat):  # alternate, so a change in the machine's other load hits both alike
            one = run(cfg, evaluate=False)
            many = run_distributed(cfg, evaluate=False)
            sims.append(one.timing["wall_s"] / one.timing["epochs"])
            dists.append(timing_summary(many)["wall_per_epoch_s"])
        t = timing_summary(many)
        t["wall_per_epoch_s"] = statistics.median(dists)
        same = all(torch.equal(one.params[k], many.params[k]) for k in one.params)
        sim_epoch = statistics.median(sims)
        print(f"  runs (ms per epoch), one process: {[round(1000 * x, 1) for x in sims]}, "
              f"{args.m} processes: {[round(1000 * x, 1) for x in dists]}")
        print(f"{graph}, m={args.m}, split={args.split}, local={local}, {args.epochs} epochs "
              f"({len(one.partitions)} syncs); same weights: {same}")
        print(f"  medians of {args.repeat} alternated runs")
        print(f"  one process, m subnets in turn : {1000 * sim_epoch:8.1f} ms per epoch")
        print(f"  {args.m} processes (gloo, loopback)  : {1000 * t['wall_per_epoch_s']:8.1f} ms per epoch")
        print(f"  speed-up (ratio)               : {sim_epoch / t['wall_per_epoch_s']:8.2f} x")
        print(f"  per sync: training {1000 * t['train_per_sync_s']:.1f} ms (slowest worker), waiting "
              f"{1000 * t['wait_per_sync_s']:.1f} ms, exchange {1000 * t['comm_per_sync_s']:.2f} ms "
              f"(median {1000 * t['comm_per_sync_median_s']:.2f} ms) for "
              f"{t['bytes_sent_per_worker_per_sync'] / 1024:.1f} KiB sent per worker")


if __name__ == "__main__":
    main()
