"""The model-loss / data-loss trade-off of the paper's Fig. 1, computed from runs.

With one model size for everybody, a model at ratio r (1/r of the full size)
can only be trained by the devices whose capacity holds it: r = 1 keeps the
full model but drops every smaller device ("data loss", FULL-TRN); r = the
smallest capacity includes everybody with the smallest model ("model loss",
FAIR-HOM). FAIR-HET trains every device at its own size.

    df = tradeoff_curve(paper_ranking("ml-1m-100", rounds=100), "1x-2x-4x-8x")
    labcore.fair.plots.tradeoff(df)
"""
from __future__ import annotations

import pandas as pd

from .baselines import device_ratios
from .config import FairConfig
from .engine import FairResult, run


def tradeoff_configs(base: FairConfig, capacities: str) -> list[FairConfig]:
    """One `fixed` run per model size of the scheme, then FAIR-HET on the same devices."""
    cfg = base.replace(capacities=capacities, assign="by_id")
    out = [cfg.replace(method="fixed", model_ratio=r) for r in sorted(set(cfg.ratios()))]
    return out + [cfg.replace(method="fair")]


def tradeoff_frame(configs: list[FairConfig], results: list[FairResult], n_users: int) -> pd.DataFrame:
    rows = []
    for cfg, res in zip(configs, results):
        ratios = device_ratios(cfg, n_users)
        if cfg.method == "fixed":
            share, strategy, r = float((ratios <= cfg.model_ratio).mean()), "one model size", cfg.model_ratio
        else:
            share, strategy, r = 1.0, "FAIR-HET", 0
        best, at = res.best
        rows.append({"strategy": strategy, "model_ratio": r, "devices_share": share, "metric": best,
                     "round_best": at, "capacities": cfg.capacities, "metric_name": res.metric_name})
    return pd.DataFrame(rows)


def tradeoff_curve(base: FairConfig, capacities: str = "1x-2x-4x-8x", progress: bool = False,
                   data=None) -> pd.DataFrame:
    """Run (or read from the run cache) every point of the trade-off; one row per strategy and size."""
    configs = tradeoff_configs(base, capacities)
    results = [run(c, data=data, progress=progress) for c in configs]
    n_users = data.n_users if data is not None else _n_users(configs[0])
    return tradeoff_frame(configs, results, n_users)


def _n_users(cfg: FairConfig) -> int:
    from .engine import load_data

    return load_data(cfg).n_users
