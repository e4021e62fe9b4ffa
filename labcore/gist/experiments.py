"""Runs behind the cards: each config trained once, its summary cached on disk by `cfg.key()`.

    summaries(configs, jobs=2)   -> one row per config (fields + test/val accuracies in %)
    over_seeds(frame)            -> mean and std over seeds

The cache lives in `labcore.fed.engine.default_cache_dir()/gist/` (one small JSON per run).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..runtime import in_processes
from .config import GistConfig

METRICS = ("test_at_best_val", "test_last", "val_best", "test_max")


def cache_dir() -> Path:
    from ..runtime import default_cache_dir

    return default_cache_dir() / "gist"


def _path(cfg: GistConfig) -> Path:
    return cache_dir() / f"{cfg.key()}.json"


def cached(cfg: GistConfig) -> dict | None:
    p = _path(cfg)
    return json.loads(p.read_text()) if p.exists() else None


def train_one(cfg: GistConfig) -> dict:
    """Train (or read) one run; the summary in percent plus the accuracy curve."""
    hit = cached(cfg)
    if hit is not None:
        return hit
    import time

    from .simulate import run

    t0, c0 = time.perf_counter(), time.process_time()
    res = run(cfg)
    out = {k: 100.0 * v if k in METRICS else v for k, v in res.summary().items()}
    out["seconds"], out["cpu_seconds"] = time.perf_counter() - t0, time.process_time() - c0  # one thread
    out["curve"] = res.history[["epoch", "val_acc", "test_acc", "train_loss"]].round(5).to_dict("list")
    out["bytes_up_per_subnet"] = res.bytes_per_subnet("up")
    p = _path(cfg)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(p)
    return out


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
    """Wall-clock and CPU seconds the configs' cached runs took when trained (runs cached before this was
    logged are counted apart)."""
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
