"""The experiments behind the figure cards, each returning one tidy DataFrame.

Every experiment takes the graph as config fields ({"graph": "cora"} or {"graph": "random", "n": 80}) so the
cards' smoke size (small random graphs) and full size (Cora) run the same code.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .config import SdpConfig
from .rounding import GW_ALPHA, round_cuts
from .run import build_problem, solve_stored

FAMILY_METHODS = ("mixing", "mixing++", "bm", "hazan", "inface")


def convergence(graph: dict, methods=FAMILY_METHODS, time_limit: float = 20.0, max_iters: int = 3000,
                tol: float = 1e-6, progress: bool = False) -> pd.DataFrame:
    """Objective, certified bound and relative gap against solver seconds for each method (~40 log-spaced
    certificates per run; certificate time is not in `seconds`)."""
    problem = build_problem(SdpConfig(**graph))
    iters = {"bm": min(max_iters, 60), "hazan": min(max_iters, 400), "inface": min(max_iters, 2000)}
    out = []
    for m in methods:
        cfg = SdpConfig(**graph, method=m, max_iters=iters.get(m, max_iters), tol=tol, time_limit=time_limit,
                        cert_every=0)
        if progress:
            print(f"  {cfg.label()} ...", flush=True)
        out.append(solve_stored(problem, cfg).trace)
    return pd.concat(out, ignore_index=True)


def rank_threshold(graph: dict, ks, seeds=(0, 1, 2), sweeps: int = 1000, progress: bool = False) -> pd.DataFrame:
    """The mixing method run at rank k for `sweeps` sweeps from random starts; the certified gap where it stops.

    Below the rank of the SDP's solutions a rank-k factor cannot reach the optimum (its best is a strictly smaller
    value); above sqrt(2n) the theory guarantees that no spurious critical point is stable."""
    problem = build_problem(SdpConfig(**graph))
    rows = []
    for k in ks:
        for seed in seeds:
            cfg = SdpConfig(**graph, method="mixing", k=int(min(k, problem.n)), seed=seed, max_iters=sweeps,
                            cert_every=sweeps, tol=1e-12, time_limit=600.0)
            f = solve_stored(problem, cfg).final
            rows.append({"k": int(k), "seed": seed, "rel_gap": f["rel_gap"], "primal": f["primal"],
                         "bound": f["bound"], "n": problem.n, "sqrt_2n": float(np.sqrt(2 * problem.n))})
        if progress:
            print(f"  k={k}: median gap {np.median([r['rel_gap'] for r in rows[-len(seeds):]]):.1e}", flush=True)
    return pd.DataFrame(rows)


def rounding(graph: dict, trials: int = 100, tol: float = 1e-5, seed: int = 0) -> pd.DataFrame:
    """`trials` hyperplane roundings of a solution certified to `tol`; ratio = cut / certified SDP upper bound."""
    problem = build_problem(SdpConfig(**graph))
    res = solve_stored(problem, SdpConfig(**graph, method="mixing++", tol=tol, max_iters=3000, cert_every=10))
    vals = round_cuts(problem, res.V, trials, seed)
    upper = res.final["bound"]
    return pd.DataFrame({"trial": np.arange(trials), "cut": vals, "sdp_upper": upper, "ratio": vals / upper,
                         "sdp_gap": res.final["rel_gap"]})


def rules(graph: dict, tol: float = 1e-4, max_sweeps: int = 3000, cert_every: int = 5,
          progress: bool = False) -> pd.DataFrame:
    """Sweeps (n block updates each) and solver seconds each coordinate rule and Mixing++ need to reach `tol`."""
    problem = build_problem(SdpConfig(**graph))
    runs = [("mixing", "cyclic"), ("mixing", "uniform"), ("mixing", "importance"), ("mixing", "greedy"),
            ("mixing++", "cyclic")]
    rows = []
    for method, rule in runs:
        cfg = SdpConfig(**graph, method=method, rule=rule, tol=tol, max_iters=max_sweeps, cert_every=cert_every,
                        time_limit=120.0)
        tr = solve_stored(problem, cfg).trace
        hit = tr[tr["rel_gap"] < tol]
        rows.append({"method": method, "rule": rule, "label": cfg.label(),
                     "sweeps": int(hit["iter"].iloc[0]) if len(hit) else np.nan,
                     "seconds": float(hit["seconds"].iloc[0]) if len(hit) else np.nan,
                     "final_gap": float(tr["rel_gap"].iloc[-1]), "cert_every": cert_every, "tol": tol})
        if progress:
            print(f"  {cfg.label()}: {rows[-1]['sweeps']} sweeps", flush=True)
    return pd.DataFrame(rows)


def hazan_rate(graph: dict, steps: int = 1000) -> pd.DataFrame:
    """Hazan's algorithm on one fixed penalized objective F (no multiplier updates): F(X_t) - F* against t, with
    F* bounded below by the best Frank-Wolfe bound of the run, and the rank of X_t."""
    problem = build_problem(SdpConfig(**graph))
    cfg = SdpConfig(**graph, method="hazan", alm_every=0, max_iters=steps, tol=1e-12, cert_every=0,
                    time_limit=600.0)
    tr = solve_stored(problem, cfg).trace
    tr = tr[tr["iter"] > 0].copy()
    lower = float((tr["fw_objective"] - tr["fw_gap"]).max())
    tr["objective_gap"] = tr["fw_objective"] - lower
    return tr[["iter", "fw_objective", "objective_gap", "fw_gap", "rank", "rel_gap", "seconds"]].reset_index(drop=True)


def loglog_slope(t, y, lo: float = 10, hi_share: float = 0.25) -> float:
    """Least-squares slope of log y on log t over lo <= t <= hi_share * max(t) (away from the tail, where the
    estimated optimum's own error dominates)."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    m = (t >= lo) & (t <= hi_share * t.max()) & (y > 0)
    return float(np.polyfit(np.log(t[m]), np.log(y[m]), 1)[0]) if m.sum() >= 3 else float("nan")


__all__ = ["convergence", "rank_threshold", "rounding", "rules", "hazan_rate", "loglog_slope", "GW_ALPHA"]
