"""Runs behind the cards: each config trained once, its summary cached on disk by `cfg.key()`.

    summaries(configs, jobs=2)   -> one row per config (fields + test/val accuracies in %)
    over_seeds(frame)            -> mean and std over seeds

The cache lives in `labcore.runtime.default_cache_dir()/gist/<key>/` (`labcore.runner.store`).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..runtime import in_processes
from .config import GistConfig

METRICS = ("test_at_best_val", "test_last", "val_best", "test_max")


def cache_dir() -> Path:
    from ..runtime import default_cache_dir

    return default_cache_dir() / "gist"


def _folder(cfg: GistConfig) -> Path:
    return cache_dir() / cfg.key()


def cached(cfg: GistConfig) -> dict | None:
    """A stored run as `train_one` returns it, or None (also for a damaged one, which is trained again)."""
    from ..runner.store import read_stored

    return read_stored(_folder(cfg), _summary)


def _summary(folder: Path) -> dict:
    from ..runner.store import load_run

    tables, meta = load_run(folder, ("curve",))
    spent = meta.get("timing") or {}
    return {**meta["summary"], "seconds": spent.get("seconds"), "cpu_seconds": spent.get("cpu_seconds"),
            "curve": tables["curve"].to_dict("list"), "bytes_up_per_subnet": meta["bytes_up_per_subnet"]}


def train_one(cfg: GistConfig) -> dict:
    """Train (or read) one run; the summary in percent plus the accuracy curve."""
    hit = cached(cfg)
    if hit is not None:
        return hit
    import time

    from ..runner.store import save_run, timing
    from .simulate import run

    t0, c0 = time.perf_counter(), time.process_time()
    res = run(cfg)
    summary = {k: 100.0 * v if k in METRICS else v for k, v in res.summary().items()}
    spent = timing(time.perf_counter() - t0, time.process_time() - c0)  # one thread
    curve = res.history[["epoch", "val_acc", "test_acc", "train_loss"]].round(5)
    save_run(_folder(cfg), {"curve": curve}, {"config": cfg.to_dict(), "summary": summary,
                                              "bytes_up_per_subnet": res.bytes_per_subnet("up")}, spent)
    return cached(cfg)


def prefetch(configs_by_card: dict[str, list[GistConfig]], jobs: int) -> None:
    """Train the uncached runs of these cards in `jobs` processes (the bytes card measures without training)."""
    configs = [c for cid, cs in configs_by_card.items() if cid != "gist-bytes" for c in cs]
    if configs:
        summaries(configs, jobs=jobs, progress=True)


def summaries(configs: list[GistConfig], jobs: int = 1, progress: bool = False) -> pd.DataFrame:
    """One row per config: its fields and METRICS; uncached runs are trained (in `jobs` processes)."""
    todo = [c for c in dict.fromkeys(configs) if cached(c) is None]
    if todo and jobs > 1:
        for _ in in_processes(train_one, todo, jobs, cost=lambda c: c.epochs * max(1, c.subnets // 2),
                              desc="gist runs", progress=progress):
            pass
    rows = []
    for i, c in enumerate(configs):
        s = train_one(c)
        if progress and todo and jobs <= 1:
            print(f"  gist runs: {i + 1}/{len(configs)}", flush=True)
        rows.append({**c.to_dict(), **{k: s[k] for k in METRICS}})
    return pd.DataFrame(rows)


def train_seconds(configs: list[GistConfig]) -> dict:
    """Wall-clock and CPU seconds the configs' cached runs took when trained (runs stored without a timing are
    counted apart)."""
    from ..figures.registry import timing_meta

    return timing_meta({c.key(): cached(c) for c in dict.fromkeys(configs)})


def over_seeds(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and std (ddof=0) of METRICS over seeds, per config."""
    keys = [c for c in frame.columns if c not in (*METRICS, "seed")]
    g = frame.groupby(keys, sort=False)[list(METRICS)]
    out = g.mean().add_suffix("")
    std = g.std(ddof=0).add_suffix("_std")
    n = g.size().rename("seeds")
    return pd.concat([out, std, n], axis=1).reset_index()
