"""Seconds per round: the lab's engine against the same config as a Flower federation (simulation engine).

    LABCORE_DATA=../shared/data .venv/bin/python benchmarks/scale_overhead.py            # ML-1M, CoLR@4
    .venv/bin/python benchmarks/scale_overhead.py --dataset synthetic --clients 10 50     # no data needed

For each cohort size M (60, 600, 6040 by default) both run `--rounds` rounds of the same config (same seed:
the same numbers); the first round of each is left out (imports, Ray's start, caches). Flower runs with
`--nodes` SuperNodes (each serves a block of users and trains its sampled users as one batch) on a local Ray
cluster of `--num-cpus` CPUs. Printed: seconds per round of each, their ratio, Flower's extra seconds per
sampled client, how many messages a round took, and how far the final HR@10 / NDCG@10 of the two are apart
(same seed: the same numbers). Evaluation rounds are excluded (eval only at the end).
Numbers depend on the machine and on what else runs on it: the load average is printed beside them.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def engine_seconds(cfg) -> tuple[list[float], dict]:
    """Seconds of each round but the last (it evaluates, and is left out as for Flower); the last row."""
    from labcore.fed.engine import Simulation, load_data

    sim = Simulation(cfg, load_data(cfg))
    out = []
    for _ in range(cfg.rounds - 1):
        t0 = time.perf_counter()
        sim.step()
        out.append(time.perf_counter() - t0)
    return out, sim.step()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="ml-1m")
    ap.add_argument("--method", default="colr")
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--clients", type=int, nargs="+", default=[60, 600, 6040])
    ap.add_argument("--rounds", type=int, default=4, help="rounds per run (first and last are not timed)")
    ap.add_argument("--nodes", type=int, default=60, help="SuperNodes (at most the number of users)")
    ap.add_argument("--num-cpus", type=int, default=2)
    args = ap.parse_args(argv)

    from labcore.config import RunConfig
    from labcore.scale.simulate import run_flower

    print(f"{args.method}@{args.rank} on {args.dataset}, {args.rounds} rounds, {args.nodes} SuperNodes, "
          f"Ray with {args.num_cpus} CPUs; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'clients':>8} {'engine s/round':>15} {'flower s/round':>15} {'ratio':>7} {'extra ms/client':>16} "
          f"{'messages/round':>15} {'|HR diff|':>10} {'|NDCG diff|':>11}")
    for m in args.clients:
        cfg = RunConfig(method=args.method, rank=args.rank, dataset=args.dataset, clients_per_round=m,
                        rounds=args.rounds, eval_every=args.rounds)
        secs, last = engine_seconds(cfg)
        eng = float(np.mean(secs[1:]))
        fr = run_flower(cfg, nodes=min(args.nodes, m), num_cpus=args.num_cpus, measure_bytes=False)
        flw = float(np.mean(fr.table["sec_round"].to_numpy()[1:-1]))
        msgs = int(fr.table["messages"].iloc[1])
        dhr, dndcg = abs(fr.table["hr"].iloc[-1] - last["hr"]), abs(fr.table["ndcg"].iloc[-1] - last["ndcg"])
        print(f"{m:>8} {eng:>15.3f} {flw:>15.3f} {flw / eng:>7.1f} {(flw - eng) / m * 1e3:>16.2f} {msgs:>15} "
              f"{dhr:>10.2e} {dndcg:>11.2e}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
