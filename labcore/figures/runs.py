"""Training the engine runs behind figure cards: through the run cache, in parallel processes, timed.

Any topic whose cards are built on the core engine (`RunConfig`) trains them
here: `run_all(cfgs)` (one after the other, cached by config key) and
`train_parallel(cfgs, jobs)` (`labcore figure ... --jobs 2`: the union of the
cards' runs, each config once, longest first); `train_ray(cfgs, address)` does the same on a Ray cluster
(`--backend ray`, labcore.scale). The time each full-size run took
is logged in `results/run_times.csv`.
"""
from __future__ import annotations

import datetime as _dt
import os
import sys
import threading
import time
from pathlib import Path

import pandas as pd

from ..config import RunConfig
from ..runtime import in_processes

# --- running -----------------------------------------------------------------------
_DATA: dict[tuple, object] = {}
_DATA_LOCK = threading.Lock()  # the app's sessions are threads: one evicting while another reads its dataset


def _data(cfg: RunConfig):
    from ..fed.engine import load_data

    key = (cfg.dataset, cfg.data_seed, cfg.synthetic_size if cfg.dataset == "synthetic" else "", cfg.data_skew)
    with _DATA_LOCK:
        if key not in _DATA:
            if len(_DATA) >= 2:  # keep at most two datasets in memory
                _DATA.pop(next(iter(_DATA)))
            _DATA[key] = load_data(cfg)
        return _DATA[key]


def n_items(cfg: RunConfig) -> int:
    return int(_data(cfg).n_items)


# Time each run took: measured here when this process trained it, else read from the timing its training
# process stored beside the result (cpu_source "stored"; runs stored before that was kept have none):
# wall-clock and CPU seconds (the engine trains on one thread, so CPU seconds are what the run costs on an idle
# machine; wall-clock also counts the time other work on a shared machine took). A run resumed from a
# checkpoint at round s is scaled by rounds / (rounds - s).
RUN_SECONDS: dict[str, dict] = {}
RUN_TIMES_FILE = "run_times.csv"
RUN_TIMES_COLUMNS = ("key", "dataset", "label", "rounds", "seconds", "cpu_seconds", "cpu_source", "resumed_at",
                     "load_avg", "date")


def is_cached(cfg: RunConfig) -> bool:
    from ..runtime import default_cache_dir

    return _stored_sound(default_cache_dir() / cfg.key())


def _stored_sound(folder: Path) -> bool:
    """A result is stored in `folder` and matches its integrity record (a damaged one is trained again)."""
    from ..runner.store import verify

    if not (folder / "result.json").exists():
        return False
    try:
        verify(folder)
    except ValueError:
        return False
    return True


def _train_one(cfg: RunConfig, progress: bool = False):
    """Train (or read) one config; returns (result, timing row or None).

    The row is measured here when this process trained the run; for a run read from the cache it is the
    timing the training process stored beside the result (`cpu_source` "stored"), or None if there is none."""
    from ..fed.engine import run
    from ..runner.store import load_timing
    from ..runtime import default_cache_dir

    folder = default_cache_dir() / cfg.key()
    cached = _stored_sound(folder)
    t0, c0 = time.perf_counter(), time.process_time()
    res = run(cfg, data=None if cached else _data(cfg), progress=progress)
    if not res.complete or cfg.dataset == "synthetic":
        return res, None
    stored = load_timing(folder)
    if res.cached:  # trained earlier or by another process (which this one may have waited for)
        if stored is None:
            return res, None
        wall, cpu, source, load, date = (stored["seconds"], stored["cpu_seconds"], "stored", stored["load_avg"],
                                         stored["date"])
    else:
        wall, cpu, source = time.perf_counter() - t0, time.process_time() - c0, "measured"
        load = round(os.getloadavg()[1], 2)  # 5-minute load average: the machine may be shared
        date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    start = stored["resumed_at"] if stored else 0
    scale = cfg.rounds / max(cfg.rounds - start, 1)  # a run resumed from a checkpoint trained fewer rounds
    return res, {"key": cfg.key(), "dataset": cfg.dataset, "label": label(cfg), "rounds": cfg.rounds,
                 "seconds": round(wall * scale, 1), "cpu_seconds": round(cpu * scale, 1), "cpu_source": source,
                 "resumed_at": start, "load_avg": load, "date": date}


def train_config(cfg: RunConfig):
    """Train (or read) one config in a worker (a process of `train_parallel`, a Ray task): its key, final metrics and
    timing row."""
    res, timing = _train_one(cfg)
    return cfg.key(), res.final, timing


def cost_estimate(cfg: RunConfig) -> float:
    """Relative training cost of a config (for scheduling the longest runs first)."""
    width = cfg.rank if cfg.method in ("colr", "scolr") else cfg.dim
    return cfg.rounds * cfg.clients_per_round * (8 + width) * (1 + (cfg.method in ("svd", "topk")))


def train_many(cfgs: list[RunConfig], submit, progress: bool = True, where: str = "") -> int:
    """Train the uncached configs, longest first, on whatever `submit` runs them on; the cards then read every run
    from the cache. Returns how many runs were trained.

    submit(train_config, configs) runs `train_config` on each config and yields (config, its return value) as each
    finishes, with the run's result in this machine's cache by then (`train_parallel`'s processes, the Ray tasks
    of `labcore.scale.ray_runs.submit`)."""
    todo = {c.key(): c for c in cfgs if not is_cached(c)}
    order = sorted(todo.values(), key=cost_estimate, reverse=True)
    if not order:
        return 0
    t0 = time.perf_counter()
    for i, (cfg, (key, final, timing)) in enumerate(submit(train_config, order), 1):
        if timing:
            RUN_SECONDS[key] = timing
        if progress:
            print(f"  [{i}/{len(order)}] {cfg.dataset} {label(cfg):<16} HR@10 {final['hr']:.4f}  "
                  f"{(timing or {}).get('seconds', 0):.0f} s  (elapsed {time.perf_counter() - t0:.0f} s{where})",
                  file=sys.stderr, flush=True)
    return len(order)


def _in_processes(jobs: int):
    """A `train_many` submit over `jobs` spawned processes (one engine thread each; `runtime.in_processes`)."""
    def submit(fn, cfgs):
        # train_many prints a line per run: no second progress bar
        return in_processes(fn, cfgs, jobs, progress=False)

    return submit


def train_parallel(cfgs: list[RunConfig], jobs: int, progress: bool = True) -> int:
    """Train the uncached configs in `jobs` processes (one engine thread each), longest first (`train_many`).
    Returns how many runs were trained."""
    return train_many(cfgs, _in_processes(jobs), progress)


def train_ray(cfgs: list[RunConfig], address: str | None = None, num_cpus: int | None = None,
              progress: bool = True) -> int:
    """`train_parallel` on a Ray cluster (`labcore figure ... --backend ray [--address ...]`; needs labcore[scale]).

    A local cluster with `num_cpus` CPUs by default, or the one at `address`; each run is a Ray task (one
    engine thread), longest first, and its result lands in this machine's run cache. Returns how many ran.
    """
    from ..scale.ray_runs import submit

    return train_many(cfgs, submit(address, num_cpus), progress, where=", ray")


def run_all(cfgs: list[RunConfig], progress: bool = False) -> list:
    """Run every config (a stored result for the same config returns at once)."""
    out = []
    for i, cfg in enumerate(cfgs):
        cached = is_cached(cfg)
        t0 = time.perf_counter()
        res, timing = _train_one(cfg, progress)
        if timing:
            RUN_SECONDS[cfg.key()] = timing
        if progress:
            f = res.final
            print(f"  [{i + 1}/{len(cfgs)}] {cfg.dataset} {cfg.describe():<14} HR@10 {f['hr']:.4f} "
                  f"NDCG@10 {f['ndcg']:.4f}  {'cached' if cached else f'{time.perf_counter() - t0:.0f} s'}",
                  file=sys.stderr, flush=True)
        out.append(res)
    return out


# --- one row per run ---------------------------------------------------------------------
def topk_rank(cfg: RunConfig) -> int:
    return int(round(cfg.topk_ratio * cfg.dim))


def label(cfg: RunConfig) -> str:
    name = {"fedmf": f"FedMF d={cfg.dim}", "colr": f"CoLR@{cfg.rank}", "svd": f"SVD@{cfg.rank}",
            "topk": f"TopK@{topk_rank(cfg)}/{cfg.dim}", "scolr": f"SCoLR@{cfg.rank}"}[cfg.method]
    return (name + (f" B={cfg.b_init}" if cfg.method in ("colr", "scolr") and cfg.b_init != "normal" else "")
            + (" SCAFFOLD" if cfg.scaffold else "") + (f" q-FFL q={cfg.qffl_q:g}" if cfg.qffl_q else ""))


def run_times(folder: Path) -> pd.DataFrame:
    """Training seconds of every full-size run, as logged when it was trained (results/run_times.csv)."""
    path = Path(folder) / RUN_TIMES_FILE
    old = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=list(RUN_TIMES_COLUMNS))
    old = old.reindex(columns=list(RUN_TIMES_COLUMNS))
    new = pd.DataFrame(list(RUN_SECONDS.values()), columns=list(RUN_TIMES_COLUMNS))
    # a logged time stays as logged, unless the stored one is of a later training (the run was made again)
    logged_date = new["key"].map(old.drop_duplicates("key", keep="last").set_index("key")["date"]).astype(str)
    kept = new["cpu_source"].eq("stored") & new["key"].isin(old["key"]) & ~(new["date"].astype(str) > logged_date)
    new = new[~kept]
    both = pd.concat([old[~old["key"].isin(new["key"])], new], ignore_index=True) if len(new) else old
    return both.reset_index(drop=True)


def write_run_times(folder: Path) -> None:
    t = run_times(folder)
    if len(t):
        t.to_csv(Path(folder) / RUN_TIMES_FILE, index=False)
