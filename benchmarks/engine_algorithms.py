"""The FL algorithms on the lab's engine: what a round costs against FedAvg's, in one process.

    LABCORE_DATA=../shared/data .venv/bin/python benchmarks/engine_algorithms.py [--rounds 15] [--full-participation]

FedMF d=64 on MovieLens-1M at CoLR's settings (60 clients a round, E = 2, B = 256), the FedAvg weights N_u / N
(what SCAFFOLD and q-FFL run with), one thread. Each simulation first plays two rounds (compilation, first-touch
memory); then the algorithms take turns, one round each, so that a change in the machine's load falls on all of
them alike. Prints the median round time of each and its ratio to FedAvg's.

--full-participation: one SCAFFOLD round with all 6,040 users a round (three rounds; time and the process's peak
resident memory), against FedAvg's.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import time

from labcore.config import paper_ml1m
from labcore.fed.engine import Simulation, load_data

ARMS = {"FedAvg (weighted)": {}, "FedProx mu=0.01": {"prox_mu": 0.01}, "SCAFFOLD": {"scaffold": True},
        "q-FFL q=1": {"qffl_q": 1.0}, "FedAvg, 50 % stragglers dropped": {"stragglers": 0.5},
        "FedProx, 50 % stragglers kept": {"stragglers": 0.5, "prox_mu": 0.01}}


def interleaved(rounds: int) -> None:
    cfgs = {k: paper_ml1m(method="fedmf", aggregation="weighted", rank_every=0, eval_every=10**6, **kw)
            for k, kw in ARMS.items()}
    data = load_data(next(iter(cfgs.values())))
    sims = {k: Simulation(c, data) for k, c in cfgs.items()}
    for s in sims.values():
        s.step(), s.step()
    times = {k: [] for k in sims}
    for _ in range(rounds):
        for k, s in sims.items():
            t0 = time.perf_counter()
            s.step()
            times[k].append(time.perf_counter() - t0)
    base = statistics.median(times["FedAvg (weighted)"])
    print(f"{'algorithm':34s} {'round (ms)':>10s} {'/ FedAvg':>9s}")
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"{k:34s} {m * 1e3:10.1f} {m / base:8.2f}x")


def full_participation() -> None:
    for name, kw in (("FedAvg (weighted)", {}), ("SCAFFOLD", {"scaffold": True})):
        cfg = paper_ml1m(method="fedmf", aggregation="weighted", rank_every=0, eval_every=10**6,
                         clients_per_round=6040, **kw)
        sim = Simulation(cfg, load_data(cfg))
        ts = []
        for _ in range(3):
            t0 = time.perf_counter()
            sim.step()
            ts.append(time.perf_counter() - t0)
        print(f"{name}, 6,040 clients a round: rounds {', '.join(f'{t:.2f}' for t in ts)} s; peak resident "
              f"memory of the process so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--full-participation", action="store_true")
    args = ap.parse_args()
    interleaved(args.rounds)
    if args.full_participation:
        full_participation()


if __name__ == "__main__":
    main()
