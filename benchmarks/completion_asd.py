"""ASD on the seen entries (labcore.completion) against the same update on dense numpy arrays, same problem,
same process, one BLAS thread; and the time ASD / ScaledASD take to 1e-8 on the issue's n = 1000 problem.

    nice python benchmarks/completion_asd.py [--n 1000] [--share 0.4] [--iters 30]

The dense version keeps the seen matrix and its 0/1 mask as n x n arrays and forms X Y^T every half step, as a
direct MATLAB-style transcription of Tanner & Wei's update does. Both runs start from the same factors and must
agree to 1e-8 after the same number of iterations (checked below), so the ratio compares equal work.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from labcore.completion.algorithms.asd import ASD
from labcore.completion.config import CompletionConfig
from labcore.completion.harness import race_one
from labcore.completion.problem import make_problem


def dense_asd(Mobs, mask, X, Y, iters):
    for _ in range(iters):
        R = mask * (Mobs - X @ Y.T)
        G = R @ Y
        PD = mask * (G @ Y.T)
        X = X + (np.sum(G * G) / np.sum(PD * PD)) * G
        R = mask * (Mobs - X @ Y.T)
        G = R.T @ X
        PD = mask * (X @ G.T)
        Y = Y + (np.sum(G * G) / np.sum(PD * PD)) * G
    return X, Y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--shares", type=float, nargs="+", default=[0.4, 0.05])
    ap.add_argument("--iters", type=int, default=30)
    ns = ap.parse_args()
    threadpool_limits(1)
    for share in ns.shares:
        compare(ns.n, share, ns.iters)
    time_to_target()


def compare(n, share, iters):
    cfg = CompletionConfig(n=n, m=n, rank=2, share=share, kappa=2.0)
    p = make_problem(cfg)
    alg = ASD(p, 2)
    alg.init()
    alg.step()  # compile the numba kernel outside the timing
    X0, Y0 = alg.X.copy(), alg.Y.copy()
    Mobs = p.matrix(p.vals).toarray()
    mask = p.matrix(np.ones(p.n_seen)).toarray()

    t0 = time.perf_counter()
    for _ in range(iters):
        alg.step()
    sparse_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    Xd, Yd = dense_asd(Mobs, mask, X0, Y0, iters)
    dense_s = time.perf_counter() - t0
    gap = np.linalg.norm(alg.X @ alg.Y.T - Xd @ Yd.T) / np.linalg.norm(Xd @ Yd.T)
    assert gap < 1e-8, f"the two implementations disagree: {gap:.2e}"
    print(f"n {n}, rank 2, {share:.0%} seen ({p.n_seen:,} entries), {iters} ASD iterations, one thread")
    print(f"  sparse (labcore): {sparse_s / iters * 1e3:8.2f} ms / iteration")
    print(f"  dense numpy:      {dense_s / iters * 1e3:8.2f} ms / iteration")
    print(f"  speed-up: {dense_s / sparse_s:.1f}x   (same iterates: relative gap {gap:.1e})")



def time_to_target():
    print("time to 1e-8 under the harness (init included, one thread):")
    for name in ("asd", "scaled_asd"):
        df = race_one(CompletionConfig(n=1000, m=1000, rank=2, share=0.4, kappa=2.0, algorithm=name, budget_s=5.0,
                                       log_points=60, stop_below=1e-8))
        hit = df[df["error"] < 1e-8]
        when = f"{hit['t'].iloc[0]:.2f} s (iteration {hit['iteration'].iloc[0]})" if len(hit) else "not within 5 s"
        print(f"  {name:10s} {when}; best {df['error'].min():.1e}")


if __name__ == "__main__":
    main()
