"""The STTFedRec reproduction: config grids and the tables and figures as DataFrames, behind the cards.

    labcore figure 'sttfedrec-*'                            # smoke size (synthetic, seconds)
    labcore figure 'sttfedrec-*' --full --save --jobs 2     # ML-1M, writes results/sttfedrec-*.csv/.json

Two sizes, like the figure cards:
* smoke: a 300-user synthetic movie catalogue, a few rounds; tests the pipeline, the numbers mean nothing.
* full: ML-1M with section 4.1's settings (K = 50, T = 10, rho = 0.9, dropout 0.2, FedAdam with decay),
  with fewer rounds than a converged run (the budget of the whole reproduction is ~35 minutes of a 2-core
  CPU): FULL_ROUNDS for Table 2, SWEEP_ROUNDS for Fig. 4, K_ROUNDS for Fig. 5 / 6.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .config import STTConfig
from .frameworks import load_bundle, run

SIZES = ("smoke", "full")
FULL_ROUNDS = 400
SWEEP_ROUNDS = 200
K_ROUNDS = 150
CENTRAL_STEPS = 600
RHOS = (0.5, 0.6, 0.7, 0.8, 0.9)  # the paper's grid, T = 10 items per request (clicks per request vary)
ONE_CLICK_T = (2, 3, 4, 5, 10)  # one click per request, T - 1 non-clicks: rho = 1 - 1/T = 0.5, 0.67, 0.75, 0.8, 0.9
KS = (25, 50, 100, 200)

FULL = dict(dataset="ml-1m", clients_per_round=50, request_size=10, rho=0.9, batches_per_round=1,
            rounds=FULL_ROUNDS, lr=1e-3, lr_decay=0.01, decay_every=10, dropout=0.2, gamma=10.0, eval_every=100,
            eval_users=1000, chain_every=200, n_features=4096, history=5)
SMOKE = dict(dataset="synthetic", synthetic_users=300, synthetic_items=400, clients_per_round=20, request_size=10,
             rho=0.9, rounds=12, eval_every=6, eval_users=0, chain_every=6, n_features=512, history=5)


def base(size: str, **kw) -> STTConfig:
    if size not in SIZES:
        raise ValueError(f"size={size!r} is invalid: allowed values are {', '.join(SIZES)}")
    return STTConfig(**{**(FULL if size == "full" else SMOKE), **kw})


# --- grids ---------------------------------------------------------------------------------------------------
def table2_configs(size: str) -> list[STTConfig]:
    full = size == "full"
    central = dict(framework="centralized", central_batch=256, max_steps=CENTRAL_STEPS if full else 10,
                   eval_every=200 if full else 5)
    return [
        base(size, tower="dssm", **central), base(size, tower="clsm", **central),
        base(size, framework="fcf", lr=0.5, mf_dim=64, chain_every=0),
        base(size, framework="fedmvmf", mf_dim=64, chain_every=0),
        base(size, framework="fl", tower="dssm", chain_every=0), base(size, framework="fl", tower="clsm", chain_every=0),
        base(size, framework="sttfedrec", tower="dssm"), base(size, framework="sttfedrec", tower="clsm"),
    ]


def fig4_configs(size: str) -> list[STTConfig]:
    """Two series per tower: the paper's rho grid at T = 10, and one click per request with T = 1 / (1 - rho)."""
    rounds = SWEEP_ROUNDS if size == "full" else SMOKE["rounds"]
    fixed_t = [base(size, tower=t, rho=r, rounds=rounds, chain_every=0) for t in ("dssm", "clsm") for r in RHOS]
    one_click = [base(size, tower=t, request_size=T, rho=1 - 1 / T, rounds=rounds, chain_every=0)
                 for t in ("dssm", "clsm") for T in ONE_CLICK_T if T != 10]  # T = 10 is rho = 0.9 of the first series
    return fixed_t + one_click


def fig56_configs(size: str, tower: str) -> list[STTConfig]:
    full = size == "full"
    ks = KS if full else (5, 10, 20)
    return [base(size, tower=tower, clients_per_round=k, rounds=K_ROUNDS if full else SMOKE["rounds"],
                 eval_every=25 if full else 3, eval_users=500 if full else 0, chain_every=0) for k in ks]


def all_configs(size: str) -> list[STTConfig]:
    return table2_configs(size) + fig4_configs(size) + fig56_configs(size, "dssm") + fig56_configs(size, "clsm")


# --- running ---------------------------------------------------------------------------------------------------
def run_all(cfgs: list[STTConfig], progress: bool = False) -> list:
    out = []
    for i, cfg in enumerate(cfgs):
        w0 = time.perf_counter()
        res = run(cfg, progress=False)
        if progress:
            f = res.final
            print(f"  [{i + 1}/{len(cfgs)}] {cfg.label():<16} rho={cfg.rho} K={cfg.clients_per_round} "
                  f"AUC {f['auc']:.4f} P@10 {f['p10']:.4f} NDCG@10 {f['ndcg10']:.4f} "
                  f"{'cached' if res.cached else f'{time.perf_counter() - w0:.0f} s'}", file=sys.stderr, flush=True)
        out.append(res)
    return out


TABLE2_PAPER = pd.DataFrame([  # Table 2, MovieLens column (mean of 3 builds; %)
    {"model": "DSSM", "auc": 78.55, "p10": 36.22, "ndcg10": 34.06},
    {"model": "CLSM", "auc": 80.11, "p10": 38.20, "ndcg10": 35.27},
    {"model": "FCF", "auc": 73.56, "p10": 30.15, "ndcg10": 25.85},
    {"model": "FedMVMF", "auc": 74.75, "p10": 32.07, "ndcg10": 26.99},
    {"model": "FL-DSSM", "auc": 69.34, "p10": 27.66, "ndcg10": 22.86},
    {"model": "FL-CLSM", "auc": 73.53, "p10": 31.17, "ndcg10": 25.33},
    {"model": "STTFedRec-DSSM", "auc": 69.05, "p10": 27.04, "ndcg10": 22.61},
    {"model": "STTFedRec-CLSM", "auc": 73.50, "p10": 31.15, "ndcg10": 25.37},
])


def table2(size: str = "smoke", progress: bool = False) -> pd.DataFrame:
    cfgs = table2_configs(size)
    rows = []
    for cfg, res in zip(cfgs, run_all(cfgs, progress)):
        steps = cfg.max_steps if cfg.framework == "centralized" else cfg.rounds
        rows.append({"model": cfg.label(), "framework": cfg.framework, "tower": cfg.tower, **res.final,
                     "rounds_or_steps": steps, "train_seconds": (res.timing or {}).get("seconds"),
                     "train_cpu_seconds": (res.timing or {}).get("cpu_seconds"), "key": cfg.key()})
    return pd.DataFrame(rows)


def fig4(size: str = "smoke", progress: bool = False) -> pd.DataFrame:
    cfgs = fig4_configs(size)
    rows = []
    for c, r in zip(cfgs, run_all(cfgs, progress)):
        row = {"tower": c.tower, "rho": round(c.effective_rho, 4), "request_size": c.request_size,
               "n_click": c.n_click, **r.final, "rounds": c.rounds, "key": c.key()}
        if c.request_size == 10:
            rows.append({"series": "T = 10", **row})
        if c.n_click == 1:  # rho = 0.9 at T = 10 belongs to both series
            rows.append({"series": "one click", **row})
    return pd.DataFrame(rows)


def fig56(size: str = "smoke", tower: str = "dssm", progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(curves, costs): AUC by round for each K, and the measured chain cost per round for each K."""
    from .efficiency import chain_cost_sweep, device_chain_ms

    cfgs = fig56_configs(size, tower)
    curves = []
    for c, r in zip(cfgs, run_all(cfgs, progress)):
        h = r.history.dropna(subset=["auc"])
        for _, row in h.iterrows():
            curves.append({"tower": tower, "K": c.clients_per_round, "round": int(row["round"]) + 1, "auc": row["auc"],
                           "ndcg10": row["ndcg10"], "final": False})
        curves.append({"tower": tower, "K": c.clients_per_round, "round": c.rounds, "auc": r.final["auc"],
                       "ndcg10": r.final["ndcg10"], "final": True})
    from .towers import TwoTower

    model = TwoTower(tower, cfgs[0].n_features)
    n_user = sum(p.numel() for p in model.user.parameters())
    costs, n_values = [], {}
    for c in cfgs:
        union = _union_size(c)
        n = n_user + union * model.item.out_dim + 1  # [user-tower gradient | item-embedding gradients | loss]
        n_values[c.clients_per_round] = n
        d = chain_cost_sweep(n, Ks=(c.clients_per_round,), measured_values=1 << 16 if size == "full" else 1 << 12,
                             repeats=0)  # device_ms comes below, from all Ks measured taking turns
        d.insert(0, "tower", tower)
        d["union_items"] = union
        d["user_tower_values"] = n_user
        costs.append(d)
    costs = pd.concat(costs, ignore_index=True)
    device = device_chain_ms(n_values, modes=tuple(dict.fromkeys(costs["mode"])), repeats=15 if size == "full" else 1)
    costs["device_ms"] = [device[K, mode] for K, mode in zip(costs["K"], costs["mode"])]
    return pd.DataFrame(curves), costs


def fig56_frame(size: str = "smoke", tower: str = "dssm", progress: bool = False) -> pd.DataFrame:
    """Fig. 5 / 6 as one frame (the card's): convergence rows (kind 'curve') and chain-cost rows (kind 'chain')."""
    curves, costs = fig56(size, tower, progress)
    return pd.concat([curves.assign(kind="curve"), costs.assign(kind="chain")], ignore_index=True)


def privacy_frame(pv: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The privacy card's frame: the rho sweep (kind 'rho') and the linkage sweep (kind 'linkage')."""
    return pd.concat([pv["rho"].assign(kind="rho"), pv["linkage"].assign(kind="linkage", attack="linkage")],
                     ignore_index=True)


def _union_size(cfg: STTConfig) -> int:
    from .frameworks import FedTrainer

    tr = FedTrainer.__new__(FedTrainer)
    tr.cfg, tr.bundle = cfg, load_bundle(cfg)
    return int(len(np.unique(tr.requests(0).items)))


def table3(size: str = "smoke", reps: int | None = None,
           seeds: tuple[int, ...] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3 measured once per seed (other devices, requests and initial towers); the summary is the mean over
    seeds with the time factor's spread beside it (ddof 0): `x_total_ms_std` to show, and `x_total_ms_log_std`,
    the spread of its logarithm, to check it by (a factor's noise is a multiple, not a sum); the bytes' parts of
    seed 0."""
    from ..figures.registry import SPREAD_SEEDS
    from .efficiency import table3 as t3

    cfg = base(size)
    seeds = seeds or ((0,) + SPREAD_SEEDS if size == "full" else (0,))
    runs = [t3(cfg, reps=reps or (20 if size == "full" else 4), seed=s) for s in seeds]
    per_seed = pd.concat([summary.assign(seed=s) for s, (summary, _) in zip(seeds, runs)], ignore_index=True)
    numeric = per_seed.select_dtypes("number").columns.drop("seed")
    first = runs[0][0]
    mean = per_seed.groupby("model", sort=False)[list(numeric)].mean()
    out = first.drop(columns=list(numeric)).join(mean, on="model")[first.columns]
    factor = per_seed.groupby("model", sort=False)["x_total_ms"]
    out["x_total_ms_std"] = factor.std(ddof=0).reindex(out.model).values
    out["x_total_ms_log_std"] = factor.apply(lambda x: np.log(x).std(ddof=0)).reindex(out.model).values
    out["seeds"] = len(seeds)
    return out, runs[0][1]


def privacy(size: str = "smoke") -> dict[str, pd.DataFrame]:
    from .privacy import dropout_scenarios, linkage_sweep, rho_sweep

    cat = load_bundle(base(size)).catalog
    full = size == "full"
    return {"rho": rho_sweep(cat, users=1000 if full else 100, rounds=10 if full else 4),
            "linkage": linkage_sweep(cat, users=500 if full else 60, rounds_list=(1, 2, 5, 10, 20) if full else (1, 2, 4)),
            "dropout": dropout_scenarios()}


# --- training a card's runs and timing them ----------------------------------------------------------------------
def _train(cfg: STTConfig) -> str:
    run(cfg)
    return cfg.key()


def prefetch(configs_by_card: dict[str, list[STTConfig]], jobs: int) -> None:
    """Train every uncached run behind these cards once (the union of their configs) in `jobs` processes, one
    torch thread each, longest first (`labcore figure 'sttfedrec-*' --full --save --jobs 2`)."""
    from ..runner.store import stored
    from ..runtime import in_processes
    from .frameworks import cache_dir

    cfgs = {c.key(): c for cs in configs_by_card.values() for c in cs}
    todo = [c for k, c in cfgs.items() if not stored(cache_dir() / k)]
    for _ in in_processes(_train, todo, jobs, desc="sttfedrec runs",
                          cost=lambda c: (c.max_steps if c.framework == "centralized" else c.rounds)
                          * c.clients_per_round):
        pass


def runs_meta(cfgs: list[STTConfig]) -> dict:
    """What the stored result keeps of its runs: the seconds each took when it was trained (from the run cache)."""
    from ..figures.registry import timing_meta
    from ..runner.store import load_timing
    from .frameworks import cache_dir

    return timing_meta({c.key(): load_timing(cache_dir() / c.key()) for c in cfgs})


def load_table(name: str, folder: Path | None = None) -> tuple[pd.DataFrame, dict] | None:
    """A stored table (results/<name>.csv) and its record (results/<name>.json), or None."""
    from ..figures import results_dir

    folder = Path(folder or results_dir())
    if not (folder / f"{name}.csv").exists():
        return None
    meta_path = folder / f"{name}.json"
    return pd.read_csv(folder / f"{name}.csv"), (json.loads(meta_path.read_text()) if meta_path.exists() else {})


# --- the docs/reproduction.md tables ------------------------------------------------------------------------------
def _md(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def markdown_tables(folder: Path | None = None) -> dict[str, str]:
    """Paper beside ours, as markdown, from the stored results (results/sttfedrec-*-ml1m.csv)."""
    from .efficiency import TABLE3_PAPER

    out = {}
    t2 = load_table("sttfedrec-table2-ml1m", folder)
    if t2:
        o = t2[0].set_index("model")
        p = TABLE2_PAPER.set_index("model")
        rows = []
        for m in p.index:
            if m in o.index:
                rows.append({"model": m, "AUC paper": f"{p.loc[m, 'auc']:.2f}", "AUC ours": f"{100 * o.loc[m, 'auc']:.2f}",
                             "P@10 paper": f"{p.loc[m, 'p10']:.2f}", "P@10 ours": f"{100 * o.loc[m, 'p10']:.2f}",
                             "NDCG@10 paper": f"{p.loc[m, 'ndcg10']:.2f}",
                             "NDCG@10 ours": f"{100 * o.loc[m, 'ndcg10']:.2f}",
                             "train s (CPU s)": f"{o.loc[m, 'train_seconds']:.0f} ({o.loc[m, 'train_cpu_seconds']:.0f})"})
        out["table2"] = _md(pd.DataFrame(rows))
    t3 = load_table("sttfedrec-table3-ml1m", folder)
    if t3:
        o = t3[0].set_index("model")
        p = TABLE3_PAPER.set_index("model")
        rows = []
        for m in o.index:
            pm = m.split("/")[0]
            has = pm in p.index and "/" not in m
            f = lambda col, fmt: (fmt.format(p.loc[pm, col]) if has else "")  # noqa: E731
            rows.append({"model": m, "train ms paper": f("train_ms", "{:.0f}"), "train ms ours": f"{o.loc[m, 'train_ms']:.1f}",
                         "chain ms ours": f"{o.loc[m, 'chain_ms']:.1f}",
                         "infer ms paper": f("infer_ms", "{:.0f}"), "infer ms ours": f"{o.loc[m, 'infer_ms']:.2f}",
                         "train MB paper": f("train_mb", "{:.2f}"), "train MB ours (server links / all)":
                             f"{o.loc[m, 'train_mb_server_links']:.2f} / {o.loc[m, 'train_mb']:.2f}",
                         "infer MB paper": f("infer_mb", "{:.2f}"), "infer MB ours": f"{o.loc[m, 'infer_mb']:.3f}"})
        out["table3"] = _md(pd.DataFrame(rows))
    return out
