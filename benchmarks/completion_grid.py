"""The report's Table 1 on its own n = 1000 half: 27 problems (36 settings, 9 below the information limit) x 6
algorithms at a CPU budget each, in parallel processes; prints the split into solved / in between / failed,
the wall-clock time of the whole grid and the machine's load.

    nice python benchmarks/completion_grid.py --jobs 2 --budget 2   # a quick look (~3 min)
    nice labcore figure completion-table1 --full --save --jobs 2    # the card's own grid (20 s), stored (~30 min)

Runs are cached by config ($LABCORE_CACHE/completion/), so an interrupted grid resumes where it stopped.
The budgets are CPU seconds, so the split does not depend on the load; only the grid's wall-clock does.
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
    load_before = C.machine_load()
    t0 = time.perf_counter()
    df = run_many(cfgs, jobs=ns.jobs, progress=True)
    elapsed = time.perf_counter() - t0
    load_after = C.machine_load()
    problems = C.problems_table(df)
    print(C.split(problems).to_string(index=False))
    print(problems[["rank", "share", "kappa", "best_error", "best_algorithm"]].to_string(index=False))
    last = df.sort_values("t").groupby("key").last()
    print(f"grid wall-clock: {elapsed / 60:.1f} min (cached runs count as 0); CPU seconds in the runs: "
          f"{last['t'].sum():.0f}, their wall-clock: {last['wall_s'].sum():.0f}; load before {load_before}, "
          f"after {load_after}")


if __name__ == "__main__":
    main()
