"""The runs behind the DP topic's cards and page, at smoke size (seconds) and full size (ML-1M at CoLR's settings).

HR@10 against epsilon: central DP-FedAvg (McMahan et al. 2018) with Poisson sampling at q = 60 / users (CoLR's 60
clients a round expected), the fixed denominator (aggregation="weighted") and clipping at HR_CLIP, for FedMF and
CoLR@4; sigma in NOISE_LEVELS, the clip alone (sigma 0) to tell the clip's cost from the noise's, and the same
schedule without DP; epsilon at delta = 1 / users.
"""
from __future__ import annotations

import pandas as pd

from ..config import RunConfig, paper_ml1m
from ..privacy import dp

NOISE_LEVELS = (0.5, 1.0, 2.0, 4.0)  # sigma of the full-size card (and 0: no DP)
SMOKE_NOISE = (1.0, 4.0)
METHODS = (("FedMF", {"method": "fedmf"}), ("CoLR@4", {"method": "colr", "rank": 4}))
DP_CLIP = 0.1  # C: below the typical client update's norm at these learning rates, so clipping binds
# C of the HR card: it binds (the clip alone takes FedMF's HR@10 from 0.74 to 0.53 on ML-1M), yet leaves the noise
# something to cost; at DP_CLIP the clip alone holds HR@10 at a random ranking's 0.1 and every sigma looks the same
HR_CLIP = 1.0
SEEDS = {"smoke": (0,), "full": (0, 1, 2)}
SMOKE = dict(dataset="synthetic", synthetic_size="tiny", dim=8, rounds=6, eval_every=6, clients_per_round=10,
             local_epochs=1, batch_size=32, rank_every=0)


def base(size: str, **overrides) -> RunConfig:
    """Poisson cohorts and the fixed denominator: the schedule DP needs, for the DP runs and the no-noise one."""
    common = dict(client_schedule="poisson", aggregation="weighted", rank_every=0)
    if size == "full":
        return paper_ml1m(**{**common, **overrides})
    return RunConfig(**{**SMOKE, **common, **overrides})


def hr_runs(size: str) -> list[tuple[str, bool, float, int, RunConfig]]:
    """(method label, clipped, sigma, seed, config): not clipped is the run without DP; clipped at sigma 0 is the
    clip alone."""
    out = []
    for seed in SEEDS[size]:  # seed by seed: a run stopped early has whole seeds
        for label, m in METHODS:
            out.append((label, False, 0.0, seed, base(size, seed=seed, **m)))
            for sigma in (0.0,) + (NOISE_LEVELS if size == "full" else SMOKE_NOISE):
                out.append((label, True, sigma, seed, base(size, seed=seed, dp_mode="central",
                                                           dp_noise_multiplier=sigma, dp_clip=HR_CLIP, **m)))
    return out


def hr_table(size: str, progress: bool = False) -> pd.DataFrame:
    from ..figures.runs import run_all
    runs = hr_runs(size)
    results = run_all([c for *_, c in runs], progress)
    rows = []
    for (label, clipped, sigma, seed, cfg), res in zip(runs, results):
        t = res.table
        rows.append({"method": label, "clipped": clipped, "sigma": sigma, "seed": seed,
                     "epsilon": float(t["epsilon"].iloc[-1]) if sigma else float("inf"),
                     "hr": float(t["hr"].dropna().iloc[-1]), "rounds": len(t)})
    return pd.DataFrame(rows)


def curious_table(size: str) -> pd.DataFrame:
    """The curious server's item-recovery precision on a FedMF run without DP, with central DP and with local DP
    at each sigma: on each client's upload and on the round's aggregate (labcore.colr.curious_server)."""
    from ..colr.curious_server import curious_server
    rounds = 2
    data = {} if size == "full" else {"synthetic_size": "small"}  # on tiny data half the items are positives
    cfgs = [("no DP", 0.0, base(size, method="fedmf", **data))]
    for mode in ("central", "local"):
        for sigma in (NOISE_LEVELS if size == "full" else SMOKE_NOISE):
            cfgs.append((mode, sigma, base(size, method="fedmf", dp_mode=mode, dp_noise_multiplier=sigma,
                                           dp_clip=DP_CLIP, **data)))
    rows = []
    for mode, sigma, cfg in cfgs:
        out = curious_server(cfg, rounds=rounds)
        n_users = _n_users(cfg)
        rate = 1.0 if mode == "local" else cfg.clients_per_round / n_users
        eps = dp.epsilon_rdp(rate, sigma, rounds, 1 / n_users) if sigma else float("inf")
        rows.append({"mode": mode, "sigma": sigma, "epsilon": eps,
                     "upload_precision": out["upload"]["precision"], "aggregate_precision": out["aggregate"]["precision"],
                     "base_rate": out["upload"]["base_rate"]})
    return pd.DataFrame(rows)


def _n_users(cfg: RunConfig) -> int:
    from ..figures.runs import _data
    return _data(cfg).n_users


def inversion_table(size: str) -> pd.DataFrame:
    """PSNR of the reconstruction of one 8x8 digit (one local step) under each defense, over seeds."""
    from . import inversion as inv
    seeds = (0, 1, 2) if size == "full" else (0,)
    iters = 600 if size == "full" else 150
    names = [n for n in inv.DEFENSES if size == "full" or n != "batch of 8"]  # batch of 8: minutes at 600 steps
    rows = []
    for name in names:
        for seed in seeds:
            r = inv.attack(inv.defended(inv.Setup(iterations=iters, seed=seed), name))
            rows.append({"defense": name, "seed": seed, "psnr": r.mean_psnr, "chance_psnr": r.mean_image_psnr})
    return pd.DataFrame(rows)
