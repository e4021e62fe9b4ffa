"""Where runs are stored, how many threads they use and how they run side by side: one answer for the engine and
every topic.

A topic keeps its results in a folder of its own under the lab's run cache (`topic_cache("gist")`), so that one
`LABCORE_CACHE` (the app's server sets its own) moves them all, and a student clears them all in one place.
"""
from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "LABCORE_CACHE"
THREADS_ENV = "LABCORE_THREADS"


def default_cache_dir() -> Path:
    """The lab's run cache: $LABCORE_CACHE, else ~/.cache/labcore/runs."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "labcore" / "runs"))


def topic_cache(name: str) -> Path:
    """A topic's own folder of the run cache."""
    return default_cache_dir() / name


def use_threads() -> None:
    """One intra-op thread unless LABCORE_THREADS says otherwise.

    The round's tensors are small; with several processes on a 2-core laptop (the app's sessions, a notebook,
    tests) two OpenMP threads per process spin-wait and run an order of magnitude slower than one.
    """
    import torch  # here: a module that only asks for the cache folder need not import torch

    n = int(os.environ.get(THREADS_ENV, "1"))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


def one_thread() -> None:
    """One intra-op thread whatever LABCORE_THREADS says: for worker processes, which share the cores already."""
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def in_processes(fn, items, jobs: int, *, cost=None, desc: str = "runs", progress: bool = True):
    """Call `fn` on each item in `jobs` spawned processes of one torch thread each, the costliest first (`cost`:
    item -> a number), under a progress bar; yields (item, fn(item)) as each finishes. jobs <= 1: here, in order.

    The runner behind every topic's `prefetch`: spawned (not forked) processes, so that no worker inherits a
    parent's OpenMP threads mid-run. `fn` must be a module-level function (it is pickled to the workers), and a
    script that calls this with jobs > 1 needs `if __name__ == "__main__":` (each worker imports it again).
    """
    from tqdm.auto import tqdm

    items = sorted(items, key=cost, reverse=True) if cost is not None else list(items)
    with tqdm(total=len(items), desc=desc, unit="run", disable=not (progress and items)) as bar:
        if jobs <= 1 or len(items) <= 1:
            for item in items:
                result = fn(item)
                bar.update()
                yield item, result
            return
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(min(jobs, len(items)), mp_context=mp.get_context("spawn"),
                                 initializer=one_thread) as pool:
            futures = {pool.submit(fn, item): item for item in items}
            for fut in as_completed(futures):
                bar.update()
                yield futures[fut], fut.result()
