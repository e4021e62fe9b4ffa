"""The report's Table 1 on its own n = 1000 half: 27 problems (36 settings, 9 below the information limit) x 6
algorithms at a 20 s CPU budget each, in parallel processes; prints the split into solved / in between / failed,
the wall-clock time of the whole grid and the machine's load. `--save` stores it as the Table 1 card's full
result (results/completion-table1.csv|json).

    nice python benchmarks/completion_grid.py --jobs 2 --save      # ~30 min on 2 idle cores
    nice python benchmarks/completion_grid.py --jobs 2 --budget 2   # a quick look (~3 min), not stored

Runs are cached by config ($LABCORE_CACHE/completion/), so an interrupted grid resumes where it stopped.
The budgets are CPU seconds, so the split does not depend on the load; only the grid's wall-clock does.
"""
from __future__ import annotations

import argparse
import time

from labcore import figures
from labcore.completion import cards as C
from labcore.completion.harness import run_many


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--budget", type=float, default=C.PAPER_GRID["budget_s"])
    ap.add_argument("--n", type=int, default=C.PAPER_GRID["n"])
    ap.add_argument("--save", action="store_true", help="store the grid as the Table 1 card's full result")
    ns = ap.parse_args()
    grid = {**C.PAPER_GRID, "budget_s": ns.budget, "n": ns.n}
    if ns.save and grid != C.PAPER_GRID:
        ap.error("--save stores the card's own grid: leave --budget and --n at their defaults")
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
    if ns.save:
        import os

        os.environ[C.JOBS_ENV] = str(ns.jobs)
        res = figures.reproduce("completion-table1", "full")  # every run is in the cache now
        res.meta.update({"jobs": ns.jobs, "grid_wall_clock_s": round(elapsed, 1),
                         "runs_cpu_s": round(float(last["t"].sum()), 1),
                         "runs_wall_clock_s": round(float(last["wall_s"].sum()), 1),
                         "load_before": load_before, "load_after": load_after})
        print("saved", figures.save(res, f"python benchmarks/completion_grid.py --jobs {ns.jobs} --save",
                                    runtime_s=elapsed))


if __name__ == "__main__":
    main()
