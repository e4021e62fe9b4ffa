"""`run(cfg)`: build the problem of an `SdpConfig`, solve it with the chosen method, return the trace and V."""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from . import graphs
from .burer_monteiro import burer_monteiro
from .config import SdpConfig
from .frank_wolfe import frank_wolfe
from .mixing import mixing
from .problem import DiagSDP, default_rank, diag_sdp, maxcut
from .trace import Recorder


@dataclass
class SdpResult:
    config: SdpConfig
    problem: DiagSDP
    trace: pd.DataFrame  # one row per certified iteration
    V: np.ndarray  # the final factor (unit rows after normalize_rows)

    @property
    def final(self) -> dict:
        return self.trace.iloc[-1].to_dict()


def build_problem(cfg: SdpConfig, root=None) -> DiagSDP:
    if cfg.graph == "sync":
        C, _ = graphs.synchronization(cfg.n, cfg.noise, cfg.graph_seed)
        return diag_sdp(C, f"sync-{cfg.n}")
    W = graphs.load_graph(cfg.graph, cfg.n, cfg.avg_degree, cfg.graph_seed, root)
    return maxcut(W, cfg.graph if cfg.graph != "random" else f"G({cfg.n}, d={cfg.avg_degree:g})")


def rank_of(cfg: SdpConfig, n: int) -> int:
    return min(cfg.k or default_rank(n), n)


def blas_threads() -> int:
    """One BLAS thread unless LABCORE_THREADS says otherwise: the solvers do many small dense products and
    eigen-solves, which a second (spin-waiting) OpenBLAS thread slows down 20x on a busy 2-core machine."""
    return int(os.environ.get("LABCORE_THREADS", "1") or 1)


def solve(problem: DiagSDP, cfg: SdpConfig) -> SdpResult:
    with threadpool_limits(blas_threads()):
        return _solve(problem, cfg)


def _solve(problem: DiagSDP, cfg: SdpConfig) -> SdpResult:
    rec = Recorder(problem, cfg.method, cfg.max_iters, cfg.tol, cfg.time_limit, cfg.cert_every)
    if cfg.method in ("mixing", "mixing++"):
        V = mixing(problem, rank_of(cfg, problem.n), cfg.rule, cfg.momentum if cfg.method == "mixing++" else 0.0,
                   rec, cfg.seed)
    elif cfg.method == "bm":
        V = burer_monteiro(problem, rank_of(cfg, problem.n), rec, cfg.seed)
    else:
        V = frank_wolfe(problem, cfg.method, rec, cfg.seed, cfg.penalty, cfg.alm_every).factor()
    df = rec.table()
    df.insert(1, "label", cfg.label())
    return SdpResult(cfg, problem, df, V)


def run(cfg: SdpConfig, root=None) -> SdpResult:
    return solve(build_problem(cfg, root), cfg)
