"""CoLR's two compiled trainers on the same rounds: the kernel compiled for its rank (`fed/kernels/fused_lowrank.py`)
against the general low-rank one (`fed/kernels/fused.py: lowrank_rows`), which would train every rank if the two were
merged. Prints each one's median round of local training and the ratio.

    LABCORE_DATA=../shared/data .venv/bin/python benchmarks/lowrank_kernels.py [--rank 4] [--rounds 5] [--clients all]

ML-1M at CoLR's settings. Two simulations of one config take turns, one round each, after two warm-up rounds
(compilation); one of them has its trainer told to use the general kernel. Only the kernel's call is timed.
"""
from __future__ import annotations

import argparse
import statistics
import time

from labcore.config import paper_ml1m
from labcore.fed import engine, local_train
from labcore.fed.kernels import fused, fused_lowrank


def _timed(fn, times, current):
    def run(*a, **kw):
        t0 = time.perf_counter()
        out = fn(*a, **kw)
        times[current["name"]].append(time.perf_counter() - t0)
        return out
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clients", default="all", help="clients per round: a number, or 'all' (every user)")
    args = ap.parse_args()

    cfg = paper_ml1m(method="colr", rank=args.rank, rank_every=0, eval_every=10**6)
    data = engine.load_data(cfg)
    cfg = cfg.replace(clients_per_round=data.n_users if args.clients == "all" else int(args.clients))
    chosen = local_train.choose_kernel
    current = {"name": ""}
    local_train.choose_kernel = lambda **kw: "lowrank" if current["name"] == "general kernel" else chosen(**kw)
    times = {"small-rank kernel": [], "general kernel": []}
    for module, fn in ((fused_lowrank, "lowrank_rows_small"), (fused, "lowrank_rows")):
        setattr(module, fn, _timed(getattr(module, fn), times, current))
    sims = {name: engine.Simulation(cfg, data) for name in times}
    for rnd in range(args.rounds + 2):
        for name, sim in sims.items():
            current["name"] = name
            sim.step()
            if rnd < 2:  # compilation and first-touch memory
                times[name].clear()
    small, full = (statistics.median(times[k]) for k in sims)
    print(f"CoLR@{args.rank}, {cfg.clients_per_round} clients a round, median local training of {args.rounds} rounds:")
    print(f"  small-rank kernel {small:.3f} s, general kernel {full:.3f} s, general / small-rank = {full / small:.2f}")


if __name__ == "__main__":
    main()
