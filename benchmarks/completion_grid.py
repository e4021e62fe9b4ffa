"""The report's Table 1 on its own n = 1000 half: 27 problems (36 settings, 9 below the information limit) x 6
algorithms at a 20 s budget each, in parallel processes; prints the split into solved / in between / failed and
the wall-clock time of the whole grid.

    nice python benchmarks/completion_grid.py --jobs 2              # ~30 min on 2 cores
    nice python benchmarks/completion_grid.py --jobs 2 --budget 2   # a quick look (~3 min)

Runs are cached by config ($LABCORE_CACHE/completion/), so an interrupted grid resumes where it stopped.
"""
from __future__ import annotations

import argparse
import time

from labcore.completion import cards as C
from labcore.completion.harness import run_many


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--budget", type=float, default=C.PAPER_GRID["budget_s"])
    ap.add_argument("--n", type=int, default=C.PAPER_GRID["n"])
    ns = ap.parse_args()
    grid = {**C.PAPER_GRID, "budget_s": ns.budget, "n": ns.n}
    cfgs = C.grid_configs(**grid)
    n_problems = len({c.problem_key() for c in cfgs})
    print(f"{n_problems} problems x {len(C.TABLE_ALGORITHMS)} algorithms x {ns.budget:g} s, {ns.jobs} processes")
    t0 = time.perf_counter()
    df = run_many(cfgs, jobs=ns.jobs, progress=True)
    elapsed = time.perf_counter() - t0
    problems = C.problems_table(df)
    print(C.split(problems).to_string(index=False))
    print(problems[["rank", "share", "kappa", "best_error", "best_algorithm"]].to_string(index=False))
    print(f"grid wall-clock: {elapsed / 60:.1f} min (cached runs count as 0)")


if __name__ == "__main__":
    main()
