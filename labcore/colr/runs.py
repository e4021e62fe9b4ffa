"""CoLR's config grids: the paper's settings (or their synthetic stand-in), one learning rate, one row per run.

Full-size configs are built from `paper_ml1m` (d=64, 1% of users per round,
E=2, B=256, 1000 rounds, evaluation every 100 rounds, effective rank every 10
rounds) with one learning rate for every method, so cards that need the same
run (Fig. 3's CoLR and FedMF runs are also Fig. 4's, Fig. 5's, Table 2's and
Fig. 2's) share it through the run cache. Smoke configs are the same grids on
the small synthetic dataset for a few rounds. Training goes through the card
runner (`labcore.figures.runs`).
"""
from __future__ import annotations

import math

import pandas as pd

from ..config import RunConfig, paper_ml1m
from ..figures.registry import SPREAD_SEEDS  # noqa: F401  (the cards read it here)
from ..figures.runs import label, n_items, run_all, topk_rank
from ..methods.compress import topk_count
from ..net.wallclock import MB

# One learning rate for every method and size: the best of the paper's grid {0.5, 0.1, 0.05, 0.01} in our
# short checks for FedMF (d = 2, 64) and CoLR (r = 1, 8) on ML-1M (docs/reproduction.md, "Learning rate").
LR = 0.5

# Pinterest: 1% of 37,501 users = 375 clients a round, the paper's 2000 rounds (each user trains 20 times
# under the rotating schedule). A round costs about 0.02 s of local training here.
PINTEREST_CLIENTS = 375
PINTEREST_ROUNDS = 2000
PINTEREST_DIM = 16

SMOKE = dict(dataset="synthetic", synthetic_size="small", rounds=6, clients_per_round=20, local_epochs=1,
             client_schedule="rotating",
             batch_size=64, eval_every=3, rank_every=2)

ML1M_DIMS = (1, 2, 4, 8, 16, 32, 64)
ML1M_RANKS = (1, 2, 4, 8, 16, 32)
PINTEREST_DIMS = (1, 2, 4, 8, 16)
PINTEREST_RANKS = (1, 2, 4, 8)
TOPK_RANKS = (1, 2, 4, 8, 16)  # Table 2 / Table 3: TopK@r keeps r/d of the values (and sends their indices)
SCOLR_RANKS = (32, 16, 8, 4)
B_INITS = ("normal", "orthonormal", "sphere")  # the paper's three
FIG5_DIAGNOSTIC = "sphere_scaled"  # ours: unit-sphere columns times sqrt(d/r), the second moment of the other two
# SVD / Top-K (Fig. 4, Table 2's measured columns) and the other distributions of B (Fig. 5) at three ratios a
# factor 4 apart: each SVD / Top-K run costs as much as FedMF d=64, and the full ladder would double the
# reproduction time. Table 2's paper-accounting column still covers every row of the paper.
FIG4_RANKS = (1, 4, 16)
FIG4_RANKS_PINTEREST = (1, 4, 8)  # of d = 16: 1/16 to 1/2 of the values (16 would be no compression)
FIG5_RANKS = (1, 4, 16)
# Pinterest's Fig. 4: where Top-K came within 0.3 HR points of CoLR (seed 0), both also run seeds 1 and 2
FIG4_SEEDED_PINTEREST = (4, 8)


def ml1m(size: str, **kw) -> RunConfig:
    """CoLR's MovieLens-1M setting (full) or its synthetic stand-in (smoke), with overrides."""
    if size == "full":
        return paper_ml1m(**{"lr": LR, **kw})
    return RunConfig(**{**SMOKE, "dim": 64, "lr": LR, **kw})


def pinterest(size: str, **kw) -> RunConfig:
    if size == "full":
        return paper_ml1m(**{"dataset": "pinterest", "dim": PINTEREST_DIM, "clients_per_round": PINTEREST_CLIENTS,
                             "rounds": PINTEREST_ROUNDS, "eval_every": PINTEREST_ROUNDS // 10, "lr": LR, **kw})
    return RunConfig(**{**SMOKE, "dim": PINTEREST_DIM, "lr": LR, **kw})


# --- the grids -------------------------------------------------------------------
def fedmf_grid(size: str, dataset: str = "ml-1m") -> list[RunConfig]:
    make, dims = (ml1m, ML1M_DIMS) if dataset == "ml-1m" else (pinterest, PINTEREST_DIMS)
    return [make(size, method="fedmf", dim=d) for d in dims]


def colr_grid(size: str, dataset: str = "ml-1m", b_init: str = "normal", ranks=None) -> list[RunConfig]:
    make, default = (ml1m, ML1M_RANKS) if dataset == "ml-1m" else (pinterest, PINTEREST_RANKS)
    return [make(size, method="colr", rank=r, b_init=b_init) for r in (ranks or default)]


def fig4_ranks(dataset: str = "ml-1m") -> tuple[int, ...]:
    return FIG4_RANKS if dataset == "ml-1m" else FIG4_RANKS_PINTEREST


def svd_grid(size: str, dataset: str = "ml-1m") -> list[RunConfig]:
    make = ml1m if dataset == "ml-1m" else pinterest
    return [make(size, method="svd", rank=r) for r in fig4_ranks(dataset)]


def topk_grid(size: str, dataset: str = "ml-1m") -> list[RunConfig]:
    """TopK r/d: the share of the values a rank-r CoLR update of the same d sends."""
    make, d = (ml1m, 64) if dataset == "ml-1m" else (pinterest, PINTEREST_DIM)
    return [make(size, method="topk", topk_ratio=r / d) for r in fig4_ranks(dataset)]


def scolr_grid(size: str) -> list[RunConfig]:
    return [ml1m(size, method="scolr", rank=r, scolr_min_rank=1) for r in SCOLR_RANKS]


def table2_label(cfg: RunConfig) -> str:
    """The paper's Table 2 names: MF-64, CoLR@r, SVD@r, TopK@r (r/d of the values)."""
    return {"fedmf": f"MF-{cfg.dim}", "colr": f"CoLR@{cfg.rank}", "svd": f"SVD@{cfg.rank}",
            "topk": f"TopK@{topk_rank(cfg)}", "scolr": f"SCoLR@{cfg.rank}"}[cfg.method]


def budget(cfg: RunConfig) -> int:
    """k of the equal-communication comparison: FedMF's d, CoLR / SVD's r, TopK's r (ratio r/d)."""
    return {"fedmf": cfg.dim, "topk": topk_rank(cfg)}.get(cfg.method, cfg.rank)


def paper_values(cfg: RunConfig, n: int) -> int:
    """Float32 values one client sends (and receives) per round, in the paper's accounting.

    FedMF N x d, CoLR N x r (B travels as a seed), SVD N x r (the d x r factor is not counted),
    Top-K 2 k (values and their indices), k = r/d of N x d. SCoLR: N x r_g, the largest message.
    """
    if cfg.method == "fedmf":
        return n * cfg.dim
    if cfg.method == "topk":
        return 2 * topk_count(n * cfg.dim, cfg.topk_ratio)
    return n * cfg.rank


def summary_row(cfg: RunConfig, res) -> dict:
    n = n_items(cfg)
    t, f = res.table, res.final
    return {
        "label": label(cfg), "method": cfg.method, "dataset": cfg.dataset, "dim": cfg.dim, "k": budget(cfg),
        "seed": cfg.seed,
        "rank": cfg.rank if cfg.method in ("colr", "scolr", "svd") else math.nan,
        "topk_ratio": cfg.topk_ratio if cfg.method == "topk" else math.nan, "b_init": cfg.b_init,
        "n_items": n, "size_kb": 4 * paper_values(cfg, n) / 1024,
        "up_kb": float(t["bytes_up_client"].mean()) / 1024, "down_kb": float(t["bytes_down_client"].mean()) / 1024,
        "hr": f["hr"], "ndcg": f["ndcg"], "rounds": f["rounds"], "lr": cfg.lr,
        "comm_min": float(t["t_comm"].sum()) / 60, "comp_min": float(t["t_comp"].sum()) / 60,
        "total_min": float(t["t_round"].sum()) / 60, "key": cfg.key(),
    }


def summarize(cfgs: list[RunConfig], progress: bool = False) -> pd.DataFrame:
    return pd.DataFrame([summary_row(c, r) for c, r in zip(cfgs, run_all(cfgs, progress))])


def comm_minutes(values: int, rounds: int, bw_down: float = 0.75, bw_up: float = 0.25) -> float:
    """Communication minutes of `rounds` rounds when one client moves `values` float32 each way.

    The round-time model's T_comm = S_down / B_down + S_up / B_up with MB = 2**20 bytes.
    """
    mb = 4 * values / MB
    return rounds * (mb / bw_down + mb / bw_up) / 60
