"""`run(cfg)`: build the problem of an `SdpConfig`, solve it with the chosen method, return the trace and V.
`solve_stored` keeps each config's run in the lab's run cache (`labcore.runner.store`), so a card computes once."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from ..runtime import topic_cache

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


def _folder(cfg: SdpConfig) -> Path:
    return topic_cache("sdp") / cfg.key()


def _load(folder: Path, cfg: SdpConfig, problem: DiagSDP) -> SdpResult:
    from ..runner.store import load_run

    tables, _ = load_run(folder, ("trace", "V"))
    return SdpResult(cfg, problem, tables["trace"], tables["V"].to_numpy())


def solve_stored(problem: DiagSDP, cfg: SdpConfig) -> SdpResult:
    """`solve`, once per config: its trace and factor V are stored (with the config and the run's timing) and read
    back the next time. A run that stops on `time_limit` keeps what this machine reached in that time."""
    from ..runner.store import read_stored, save_run, timing

    folder = _folder(cfg)
    hit = read_stored(folder, lambda f: _load(f, cfg, problem))
    if hit is not None:
        return hit
    t0, c0 = time.perf_counter(), time.process_time()
    res = solve(problem, cfg)
    save_run(folder, {"trace": res.trace, "V": pd.DataFrame(res.V)}, {"config": cfg.to_dict(), "problem": problem.name},
             timing(time.perf_counter() - t0, time.process_time() - c0), float_format="%.17g")
    return _load(folder, cfg, problem)  # the same dtypes whether stored or fresh


def run(cfg: SdpConfig, root=None) -> SdpResult:
    return solve(build_problem(cfg, root), cfg)
