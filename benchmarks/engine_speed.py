"""Vectorized engine vs the per-client loop, same config, same process.

    python benchmarks/engine_speed.py                 # CoLR@4 on ML-1M (paper settings), 20 rounds each
    python benchmarks/engine_speed.py --full          # plus the whole 1000-round run with evaluation
    python benchmarks/engine_speed.py --method fedmf --dataset synthetic --size small

Prints rounds per second of each implementation and their ratio (the ratio is
what to trust on a shared machine), the full run's wall time and peak memory.
"""
from __future__ import annotations

import argparse
import resource
import time

import torch

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test oracles (`tests/oracles`)

import labcore
from labcore.fed.engine import Simulation, load_data
from labcore.fed.local_train import train_cohort
from oracles.fed_loop import train_clients_loop  # noqa: E402


def rounds_per_second(cfg, data, trainer, rounds: int) -> tuple[float, float]:
    """(rounds per wall-clock second, rounds per CPU second of this process)."""
    sim = Simulation(cfg, data, trainer=trainer)
    sim.step()  # warm-up round (allocations, first-call overheads)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        sim.step()
    return rounds / (time.perf_counter() - t0), rounds / (time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="colr")
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--dataset", default="ml-1m")
    ap.add_argument("--size", default="small", help="synthetic size")
    ap.add_argument("--rounds", type=int, default=20, help="timed rounds per implementation")
    ap.add_argument("--full", action="store_true", help="also time the full 1000-round run with evaluation")
    a = ap.parse_args()
    cfg = labcore.paper_ml1m(dataset=a.dataset, synthetic_size=a.size, method=a.method, rank=a.rank,
                             rank_every=0, eval_every=10**6)
    data = load_data(cfg)
    fast = rounds_per_second(cfg, data, train_cohort, a.rounds)
    slow = rounds_per_second(cfg, data, train_clients_loop, max(3, a.rounds // 4))
    print(f"{cfg.describe()} on {data.name}: {cfg.clients_per_round} clients/round, E={cfg.local_epochs}, "
          f"B={cfg.batch_size}, d={cfg.dim}; torch threads {torch.get_num_threads()}")
    print("                    wall rounds/s   CPU rounds/s")
    print(f"vectorized engine : {fast[0]:13.2f}  {fast[1]:13.2f}")
    print(f"per-client loop   : {slow[0]:13.2f}  {slow[1]:13.2f}")
    print(f"speed-up          : {fast[0] / slow[0]:12.1f}x  {fast[1] / slow[1]:12.1f}x")
    if a.full:
        full = labcore.paper_ml1m(dataset=a.dataset, synthetic_size=a.size, method=a.method, rank=a.rank)
        t0 = time.perf_counter()
        res = labcore.run(full, data=data, use_cache=False, progress=False)
        print(f"full run          : {full.rounds} rounds, eval every {full.eval_every}, effective rank every "
              f"{full.rank_every}: {time.perf_counter() - t0:.1f} s, HR@10 {res.final['hr']:.4f}, "
              f"NDCG@10 {res.final['ndcg']:.4f}")
    print(f"peak memory (RSS) : {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
