"""Drawing one round's plan: the compiled per-client version (`sampling.plan_round`) against the whole-array
numpy version it replaced (`tests/oracles/fed_loop.plan_round_numpy`), same draws, same process; the ratio printed.

    python benchmarks/plan_round.py                      # ML-1M, every user a client, paper settings
    python benchmarks/plan_round.py --dataset pinterest --clients 2000 --repeat 5

Both plans are checked equal field by field before anything is timed. One thread unless LABCORE_THREADS says
otherwise; on a shared machine trust the ratio more than the seconds.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test oracles (`tests/oracles`)

import labcore
from labcore.fed import sampling
from labcore.fed.engine import load_data
from labcore.runtime import use_threads
from oracles.fed_loop import plan_round_numpy  # noqa: E402

FIELDS = tuple(f.name for f in dataclasses.fields(sampling.RoundPlan) if f.default is dataclasses.MISSING)


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ml-1m")
    ap.add_argument("--clients", type=int, default=0, help="clients per round; 0 = every user")
    ap.add_argument("--repeat", type=int, default=3, help="timed repetitions of each (the best is printed)")
    args = ap.parse_args(argv)
    use_threads()
    cfg = labcore.paper_ml1m(dataset=args.dataset)
    data = load_data(cfg)
    sampler = sampling.NegativeSampler(data)
    m = data.n_users if args.clients <= 0 else min(args.clients, data.n_users)
    clients = np.arange(m) if m == data.n_users else sampling.sample_clients(
        data.n_users, m, sampling.round_rng(cfg.seed, 1, sampling.STREAM_CLIENTS))
    draw = (data, sampler, clients, cfg.num_negatives, cfg.local_epochs, cfg.batch_size, cfg.seed, 1)
    new, old = sampling.plan_round(*draw), plan_round_numpy(*draw)
    for f in FIELDS:
        a, b = getattr(new, f), getattr(old, f)
        if a.dtype != b.dtype or not np.array_equal(a, b):
            raise SystemExit(f"the two plans differ in {f}")
    t_new = best_of(lambda: sampling.plan_round(*draw), args.repeat)
    t_old = best_of(lambda: plan_round_numpy(*draw), args.repeat)
    print(f"{args.dataset}, {m} clients, {new.sample_item.shape[0]:,} samples x {cfg.local_epochs} epochs: "
          f"the same plan, bit for bit")
    print(f"  compiled per client (now)   {t_new:.3f} s")
    print(f"  whole-array numpy (before)  {t_old:.3f} s   ratio {t_old / t_new:.1f}x")


if __name__ == "__main__":
    main()
