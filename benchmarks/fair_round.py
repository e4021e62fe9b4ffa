"""Time of one FAIR round on Goodreads-100 (10 devices, 359K items), at the paper's settings.

    LABCORE_DATA=/work/shared/data python benchmarks/fair_round.py               # FAIR-HET 1x-2x
    python benchmarks/fair_round.py --method fedavg --rounds 20
    python benchmarks/fair_round.py --capacities 1x-2x-4x --block 1               # element-wise hashing

Prints, per round: wall seconds, CPU seconds of this process, the local training
share and how many devices were at 1x; then the mean and the median over the
timed rounds (the first round, which allocates, is not timed; no evaluation
inside the timed rounds). On a shared machine the CPU time is the number to
compare with the 1 s target: wall time also counts other processes' turns.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from labcore.fair import FairSimulation, paper_ranking


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="goodreads-100")
    ap.add_argument("--method", default="fair")
    ap.add_argument("--capacities", default="1x-2x")
    ap.add_argument("--block", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=10, help="timed rounds")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    cfg = paper_ranking(a.dataset, method=a.method, capacities=a.capacities, block=a.block, seed=a.seed,
                        rounds=10**6, eval_every=10**6, lr=3e-3)
    t0 = time.perf_counter()
    sim = FairSimulation(cfg)
    print(f"{cfg.describe()} on {sim.data.name}: {sim.n_users} devices, {sim.rows:,} items x d={sim.d} x "
          f"{sim.n_tables} tables, K={cfg.clients_per_round}, E={cfg.local_epochs}, B={cfg.batch_size}; "
          f"torch threads {torch.get_num_threads()}; setup {time.perf_counter() - t0:.1f} s")
    sim.step()  # warm-up
    walls, cpus = [], []
    print("round   wall s    CPU s   local s   devices at 1x   local steps")
    for _ in range(a.rounds):
        w0, c0 = time.perf_counter(), time.process_time()
        row = sim.step()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        print(f"{row['round']:5d} {walls[-1]:8.2f} {cpus[-1]:8.2f} {row['sec_local']:9.2f} {row['clients_1x']:15d} "
              f"{row['local_steps']:13d}")
    print(f"mean    {statistics.mean(walls):8.2f} {statistics.mean(cpus):8.2f}")
    print(f"median  {statistics.median(walls):8.2f} {statistics.median(cpus):8.2f}")


if __name__ == "__main__":
    main()
