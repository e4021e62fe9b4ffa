"""The model-loss / data-loss trade-off of the paper's Fig. 1, computed from runs.

With one model size for everybody, a model at ratio r (1/r of the full size)
can only be trained by the devices whose capacity holds it: r = 1 keeps the
full model but drops every smaller device ("data loss", FULL-TRN); r = the
smallest capacity includes everybody with the smallest model ("model loss",
FAIR-HOM). FAIR-HET trains every device at its own size.

    df = tradeoff_curve(paper_ranking("ml-1m-100", rounds=100), "1x-2x-4x-8x")
    labcore.fair.plots.tradeoff(df)

One scheme, the paper's four strategies side by side (FedAvg, FAIR-HET, FAIR-HOM,
FULL-TRN): `scheme_runs`, then tidy frames of the curves, the bytes per round
from the ledgers, the memory per tier and a summary (the lab's capacity control).
"""
from __future__ import annotations

import pandas as pd

from .baselines import device_ratios, eligible_users
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
                   data=None, on_point=None) -> pd.DataFrame:
    """Run (or read from the run cache) every point of the trade-off; one row per strategy and size.
    `on_point(done, total)` is called after each point."""
    configs = tradeoff_configs(base, capacities)
    results = []
    for c in configs:
        results.append(run(c, data=data, progress=progress))
        if on_point:
            on_point(len(results), len(configs))
    n_users = data.n_users if data is not None else _n_users(configs[0])
    return tradeoff_frame(configs, results, n_users)


def _n_users(cfg: FairConfig) -> int:
    from .engine import load_data

    return load_data(cfg).n_users


# --- one capacity scheme, four strategies (the lab's capacity-tier control) -----------------------------
SCHEME_LABELS = ("FedAvg", "FAIR-HET", "FAIR-HOM", "FULL-TRN")


def scheme_configs(base: FairConfig, capacities: str) -> dict[str, FairConfig]:
    """The strategies of Tables 2 and 3 on one scheme, labelled as the paper does.

    FedAvg: everyone at 1x (the reference, as if every device could hold the full model); FAIR-HET:
    every device at its own capacity; FAIR-HOM ("model loss"): everyone at the smallest capacity, written
    as one tier as the figure cards do, so the runs are shared; FULL-TRN ("data loss"): only the 1x
    devices (left out when the scheme has no 1x tier).
    """
    cfg = base.replace(capacities=capacities, assign="by_id")
    out = {"FedAvg": cfg.replace(method="fedavg", capacities="1x"), "FAIR-HET": cfg.replace(method="fair"),
           "FAIR-HOM": cfg.replace(method="fair-hom", capacities=f"{max(cfg.ratios())}x")}
    if 1 in cfg.ratios():
        out["FULL-TRN"] = cfg.replace(method="full-trn")
    return out


def scheme_runs(base: FairConfig, capacities: str, progress: bool = False, data=None) -> dict[str, FairResult]:
    """Run (or read from the run cache) every strategy of `scheme_configs`."""
    return {label: run(c, data=data, progress=progress) for label, c in scheme_configs(base, capacities).items()}


def scheme_curves(runs: dict[str, FairResult]) -> pd.DataFrame:
    """The evaluated rounds of every run: method, round (counted from 1), metric."""
    return pd.concat([r.curve().assign(method=label, round=lambda c: c["round"] + 1)
                      for label, r in runs.items()], ignore_index=True)[["method", "round", "metric"]]


def scheme_traffic(runs: dict[str, FairResult]) -> pd.DataFrame:
    """Bytes per round and per device of a round, by direction, from each run's ledger."""
    rows = []
    for label, r in runs.items():
        n_rounds = max(1, len(r.table))
        devices = float(r.table["clients"].mean())
        for direction, b in r.ledger.groupby("direction")["bytes"].sum().items():
            rows.append({"method": label, "direction": direction, "bytes_per_round": b / n_rounds,
                         "bytes_per_device": b / n_rounds / devices})
    return pd.DataFrame(rows)


def scheme_devices(runs: dict[str, FairResult], capacities: str, data=None) -> pd.DataFrame:
    """What a device of each tier of `capacities` stores under each strategy (0 bytes: it does not take part).

    FedAvg is shown as if every device could hold the full model."""
    from .engine import FairSimulation, load_data

    cfgs = {label: r.config for label, r in runs.items()}
    data = data if data is not None else load_data(next(iter(cfgs.values())))
    frames = [FairSimulation(c.replace(capacities=capacities), data).device_table().assign(method=label)
              for label, c in cfgs.items()]
    return pd.concat(frames, ignore_index=True)


def scheme_summary(runs: dict[str, FairResult], n_users: int) -> pd.DataFrame:
    """One row per strategy: best metric and its round, the share of devices whose data is used, and
    the upload per device of a round."""
    up = scheme_traffic(runs).query("direction == 'up'").set_index("method")["bytes_per_device"]
    rows = []
    for label, r in runs.items():
        best, at = r.best
        share = eligible_users(r.config, device_ratios(r.config, n_users)).size / n_users
        rows.append({"method": label, "run": r.config.describe(), r.metric_name: best, "round_best": at,
                     "devices_used": share, "upload_KiB_per_device": up.get(label, float("nan")) / 1024})
    return pd.DataFrame(rows)
