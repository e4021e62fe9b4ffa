"""The benchmark harness: every algorithm gets the same CPU-time budget, its iterates are logged at fixed
times, and the result is a tidy DataFrame (one row per logged iterate).

    df = run(CompletionConfig(n=1000, rank=2, share=0.05, kappa=200, algorithm="irls", budget_s=20))
    df = run_many(configs, jobs=2)        # parallel processes, each run cached by its config key

The harness, not the algorithm, keeps the clock: it times `init()` and each `step()` in CPU seconds of the
calling thread (`time.thread_time`, with BLAS held to that one thread), and computes the error of the factors
between steps with the clock stopped. CPU time, not wall-clock: on a machine shared with other work a
wall-clock budget gives each run a load-dependent amount of computing, so one config would give different
numbers at different times; the CPU seconds of one thread do not depend on the load (nor on other threads
of the process, e.g. an app's). The wall-clock time of the same calls is logged beside it (`wall_s`).
A step that ends past the budget does not count (the run's last iterate is the one before it), so no
algorithm gets more than the budget. Iterates are logged at the first step boundary after each of `log_points` times spread evenly in log
time over the budget (the report logged every iteration and paid for it in distance computations).
`max_iters > 0` makes a run deterministic (iterates logged at fixed iteration counts) for tests and exercises.
A run whose error stops being finite is recorded as diverged and stopped; `stop_below > 0` stops a run
once a logged error is below it.
"""
from __future__ import annotations

import math
import time
import warnings
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from ..runtime import in_processes
from .algorithms import make
from .config import FAMILIES, LABELS, PROBLEM_FIELDS, CompletionConfig
from .problem import InformationLimitWarning, Problem, make_problem

COLUMNS = ("key", "algorithm", "label", "family", "t", "wall_s", "iteration", "error", "fit", "rmse", "diverged",
           "below_limit", "budget_s") + PROBLEM_FIELDS


def cache_dir() -> Path:
    """`$LABCORE_CACHE/completion` (the lab's run cache, as `labcore.runtime.default_cache_dir`)."""
    from ..runtime import topic_cache

    return topic_cache("completion")


def log_times(cfg: CompletionConfig) -> np.ndarray:
    return cfg.budget_s * np.logspace(-2.5, 0.0, cfg.log_points)


def log_iterations(cfg: CompletionConfig) -> np.ndarray:
    return np.unique(np.round(np.linspace(0, cfg.max_iters, cfg.log_points)).astype(int))


def _limit_threads():
    try:
        from threadpoolctl import threadpool_limits

        return threadpool_limits(1)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return None


def race_one(cfg: CompletionConfig, problem: Problem | None = None,
             on_log: Callable[[dict], None] | None = None) -> pd.DataFrame:
    """Run one algorithm on one problem under the budget; no cache. `on_log(row)` sees each logged row."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InformationLimitWarning)  # recorded in the `below_limit` column
        problem = problem if problem is not None else make_problem(cfg)
    _limit_threads()
    base = {"key": cfg.key(), "algorithm": cfg.algorithm, "label": LABELS[cfg.algorithm],
            "family": FAMILIES[cfg.algorithm], "below_limit": cfg.below_information_limit(),
            "budget_s": cfg.budget_s, **cfg.problem_dict()}
    rows: list[dict] = []
    clock = 0.0  # CPU seconds spent in init() and step(): the budget
    wall = 0.0  # wall-clock seconds of the same calls: logged only

    def log(iteration: int, factors) -> bool:
        with np.errstate(all="ignore"):
            err = problem.error(*factors)
        finite = all(math.isfinite(v) for v in err.values())
        row = {**base, "t": clock, "wall_s": wall, "iteration": iteration, "rmse": math.nan, **err,
               "diverged": not finite}
        if not finite:
            row["error"] = math.inf
        rows.append(row)
        if on_log:
            on_log(row)
        return finite and not row["error"] < cfg.stop_below

    alg = make(cfg.algorithm, problem, cfg.rank, seed=cfg.seed, init=cfg.init)
    start, start_wall = time.thread_time(), time.perf_counter()
    with np.errstate(all="ignore"):
        alg.init()
    clock, wall = time.thread_time() - start, time.perf_counter() - start_wall
    by_iter = cfg.max_iters > 0
    marks = log_iterations(cfg) if by_iter else log_times(cfg)
    nxt = int(np.searchsorted(marks, alg.iteration if by_iter else clock, side="right"))
    ok = log(alg.iteration, alg.factors())
    last = None  # (iteration, factors) before a step that ended past the budget
    while ok and clock < cfg.budget_s and not (by_iter and alg.iteration >= cfg.max_iters):
        kept = (alg.iteration, tuple(np.array(f) for f in alg.factors()))  # copies, in case the step overruns
        start, start_wall = time.thread_time(), time.perf_counter()
        with np.errstate(all="ignore"):
            alg.step()
        spent = time.thread_time() - start
        if clock + spent > cfg.budget_s:
            last = kept  # this step ends past the budget: it does not count
            break
        clock += spent
        wall += time.perf_counter() - start_wall
        now = alg.iteration if by_iter else clock
        if nxt < len(marks) and now >= marks[nxt]:
            nxt = int(np.searchsorted(marks, now, side="right"))
            ok = log(alg.iteration, alg.factors())
    iteration, factors = last if last is not None else (alg.iteration, alg.factors())
    if ok and rows[-1]["iteration"] != iteration:
        log(iteration, factors)  # the last iterate within the budget
    return pd.DataFrame(rows).reindex(columns=list(COLUMNS))


def _folder(cfg: CompletionConfig) -> Path:
    return cache_dir() / cfg.key()


def _stored(cfg: CompletionConfig) -> pd.DataFrame | None:
    """The stored log of this config (`labcore.runner.store`), or None (also for a damaged one: run again)."""
    from ..runner.store import load_run, read_stored

    return read_stored(_folder(cfg), lambda f: load_run(f, ("log",))[0]["log"])


def run(cfg: CompletionConfig, cache: bool = True, on_log: Callable[[dict], None] | None = None) -> pd.DataFrame:
    """One run, read from the cache when this exact config ran before (then `on_log` is not called)."""
    from ..runner.store import save_run, timing

    hit = _stored(cfg) if cache else None
    if hit is not None:
        return hit
    t0, c0 = time.perf_counter(), time.process_time()
    df = race_one(cfg, on_log=on_log)
    if cache:
        save_run(_folder(cfg), {"log": df}, {"config": cfg.to_dict()},
                 timing(time.perf_counter() - t0, time.process_time() - c0), float_format="%.17g")
        df = _stored(cfg)  # the same dtypes whether cached or fresh
    return df


def prefetch(configs_by_card: dict[str, list[CompletionConfig]], jobs: int) -> None:
    """Run every uncached config of these cards in `jobs` processes (one BLAS thread each)."""
    run_many([c for cs in configs_by_card.values() for c in cs], jobs=jobs, progress=True)


def run_many(configs: Iterable[CompletionConfig], jobs: int = 1, progress: bool = False,
             cache: bool = True) -> pd.DataFrame:
    """Every config once (cached by key), in `jobs` processes, longest budgets first; rows in config order."""
    from ..runner.store import stored

    configs = list(dict.fromkeys(configs))
    todo = [c for c in configs if cache and not stored(_folder(c))]  # uncached: each runs once, below
    for _ in in_processes(run, todo, jobs, cost=lambda c: c.budget_s, desc="completion runs", progress=progress):
        pass
    if not configs:
        return pd.DataFrame(columns=list(COLUMNS))
    return pd.concat([run(c, cache=cache) for c in configs], ignore_index=True)


def best_errors(df: pd.DataFrame) -> pd.DataFrame:
    """Per problem (and algorithm): the lowest error reached within the budget."""
    keys = [c for c in PROBLEM_FIELDS if c in df.columns]
    return df.groupby(keys + ["algorithm"], as_index=False)["error"].min()
