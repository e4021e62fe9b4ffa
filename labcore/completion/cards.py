"""Figure cards of the matrix-completion report: Fig. 1 to 4 and Table 1.

Importing this module registers the cards. Sizes: ``smoke`` runs a tiny synthetic problem with two or three
algorithms for a fraction of a second each (CI); ``full`` is the reproduction at the sizes stated on each card
(budgets and sizes reduced from the report's 60 s and n = 10000 where they would not fit a laptop).
Full results are stored as results/<card id>.csv / .json:

    labcore figure completion-fig1-irls --full --save --jobs 2
"""
from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd

from ..figures import registry as R
from . import paper as P
from . import plots
from .config import FAMILIES, LABELS, CompletionConfig
from .harness import run_many

JOBS_ENV = "LABCORE_JOBS"  # processes for a full-size card's runs not prefetched by `labcore figure --jobs`
FIG_ALGORITHMS = ("asd", "scaled_asd", "lmafit", "niht", "cgiht", "scaled_gd", "lrgeomcg", "irls", "soft_impute")
TABLE_ALGORITHMS = ("asd", "scaled_asd", "lmafit", "niht", "lrgeomcg", "irls")
REAL_ALGORITHMS = ("asd", "scaled_asd", "lmafit", "niht", "scaled_gd", "lrgeomcg", "irls", "soft_impute")
SMOKE = dict(budget_s=0.3, log_points=8)
SMOKE_ALGORITHMS = ("asd", "irls")
SMOKE_NOTE = "smoke run: tiny synthetic problem, not the paper's numbers"

# Table 1's stored grid: the report's own n = 1000 half (its n = 10000 half does not fit a laptop's time budget) at a
# 20 s CPU budget instead of 60 s: 27 problems x 3 seeds x 6 algorithms, 159 CPU minutes inside the runs
PAPER_GRID = dict(n=1000, ranks=(2, 20, 200), shares=(0.05, 0.1, 0.2, 0.4), kappas=(2.0, 200.0, 20000.0),
                  budget_s=20.0, seeds=(0, 1, 2))


def jobs() -> int:
    return max(1, int(os.environ.get(JOBS_ENV, "1")))


def _runs(problem: dict, algorithms, size: str, full: dict) -> list[CompletionConfig]:
    if size == "smoke":
        base = {**problem, "n": 150, "m": 150, **SMOKE}
        algorithms = SMOKE_ALGORITHMS
    else:
        base = {**problem, **full}
    return [CompletionConfig(**base, algorithm=a) for a in algorithms]


def _compute(configs_fn):
    def compute(size: str, progress: bool) -> R.Computed:
        df = run_many(configs_fn(size), jobs=jobs() if size == "full" else 1, progress=progress)
        return _timed(df.assign(size=size), df)
    return compute


def _timed(ours: pd.DataFrame, runs: pd.DataFrame) -> R.Computed:
    """The card's numbers and the seconds its runs took: `t` is the CPU clock the budget counts, `wall_s` the
    wall-clock beside it (a run's last row holds its totals)."""
    last = runs.sort_values("t").groupby("key").last()
    timings = {k: {"seconds": w, "cpu_seconds": t} for k, w, t in zip(last.index, last["wall_s"], last["t"])}
    return R.Computed(ours, {**R.timing_meta(timings), "machine_load": machine_load()})


def _is_smoke(ours: pd.DataFrame) -> bool:
    return "size" in ours.columns and len(ours) > 0 and (ours["size"] == "smoke").all()


def _title(text: str, ours: pd.DataFrame) -> str:
    return f"{text} ({SMOKE_NOTE})" if _is_smoke(ours) else text


def best_by_algorithm(df: pd.DataFrame) -> pd.Series:
    return df.groupby("algorithm")["error"].min().sort_values()


def time_to(df: pd.DataFrame, level: float) -> pd.Series:
    """Seconds each algorithm took to a logged error below `level` (inf if never)."""
    out = {}
    for alg, d in df.groupby("algorithm"):
        hit = d[d["error"] < level]
        out[alg] = float(hit["t"].min()) if len(hit) else math.inf
    return pd.Series(out).sort_values()


def _row(quantity, paper, ours, ok, kind, note=""):
    """kind: "number" (a number the report prints), "claim" (a claim it states) or "shown"; a row not checked
    (ok None, e.g. at smoke size) is shown whatever it would be."""
    return {"quantity": quantity, "paper": paper, "ours": ours, "ok": ok,
            "kind": kind if ok is not None else "shown", "note": note}


# --- Fig. 1: only IRLS converges --------------------------------------------------------------------------
FIG1_PROBLEM = dict(rank=2, share=0.05, kappa=200.0)
FIG1_FULL = dict(n=1000, m=1000, budget_s=20.0, log_points=40)


def _fig1_configs(size):
    return _runs(FIG1_PROBLEM, FIG_ALGORITHMS, size, FIG1_FULL)


def _fig1_compare(ours, paper):
    best = best_by_algorithm(ours)
    converged = [a for a, e in best.items() if e < 1e-6]
    rows = [_row("MatrixIRLS best error", "converges", f"{best.get('irls', math.nan):.2g}",
                 bool(best.get("irls", 1) < 1e-6), "claim", "converged = below 1e-6"),
            _row("ASD best error", "does not converge", f"{best.get('asd', math.nan):.2g}",
                 bool(best.get("asd", 0) > 1e-2), "claim",
                 "the lab's check (the report shows ASD stalling): above 1e-2")]
    if not _is_smoke(ours):
        rows.append(_row("algorithms that converge", "only MatrixIRLS", ", ".join(LABELS[a] for a in converged),
                         converged == ["irls"], "claim", "the report: 'the only one to converge at all'"))
    return pd.DataFrame(rows)


def _fig1_plot(ours, paper):
    return plots.race(ours, _title("Fig. 1: n 1000, rank 2, 5% seen, kappa 200", ours))


# --- Fig. 2: the easy problem, alternating and Riemannian methods best --------------------------------------
FIG2_PROBLEM = dict(rank=2, share=0.4, kappa=2.0)
FIG2_FULL = dict(n=2000, m=2000, budget_s=10.0, log_points=40)


def _fig2_configs(size):
    return _runs(FIG2_PROBLEM, FIG_ALGORITHMS, size, FIG2_FULL)


BEST_FAMILIES = ("alternating", "Riemannian")


def _fig2_compare(ours, paper):
    fastest = time_to(ours, 1e-8)
    best = best_by_algorithm(ours)
    n_conv = int((best < 1e-6).sum())
    # "perform the best" names two families: the fastest of each must beat every method of the other families
    leaders = {f: fastest[[a for a in fastest.index if FAMILIES[a] == f]].min() for f in BEST_FAMILIES}
    others = fastest[[a for a in fastest.index if FAMILIES[a] not in BEST_FAMILIES]]
    first_other = others.index[0] if len(others) else None
    top3 = [a for a in fastest.index[:3] if math.isfinite(fastest[a])]
    slowest = fastest.index[-1]
    return pd.DataFrame([
        _row("fastest to 1e-8", "alternating descent and Riemannian methods",
             ", ".join(f"{LABELS[a]} {fastest[a]:.2f} s" for a in top3),
             all(t < others.min() for t in leaders.values()) if len(others) else True, "claim",
             "the fastest alternating and the fastest Riemannian method both ahead of every other method"
             + (f" (first other: {LABELS[first_other]})" if first_other else "")),
        _row("algorithms below 1e-6 in the budget", "nearly every algorithm", f"{n_conv} of {len(best)}",
             n_conv >= len(best) - 1, "claim", "nearly every = all but at most one"),
        _row("slowest to 1e-8", "MatrixIRLS ('performed the worst' on n 10000)",
             f"{LABELS[slowest]} ({fastest[slowest]:.2f} s; MatrixIRLS {fastest.get('irls', math.nan):.2f} s)",
             slowest == "irls", "claim", "ours is n 2000: MatrixIRLS's cost per step grows faster with n than "
             "the others'"),
    ])


def _fig2_plot(ours, paper):
    n = int(ours["n"].iloc[0]) if len(ours) else 0
    return plots.race(ours, _title(f"Fig. 2: n {n} (report: 10000), rank 2, 40% seen, kappa 2", ours))


# --- Fig. 3: rank 20, 10 %, kappa 20000: no real progress --------------------------------------------------
FIG3_PROBLEM = dict(rank=20, share=0.1, kappa=20000.0)
FIG3_FULL = dict(n=2000, m=2000, budget_s=10.0, log_points=40)


def _fig3_configs(size):
    if size == "smoke":
        return [CompletionConfig(rank=5, share=0.3, kappa=20000.0, n=150, m=150, algorithm=a, **SMOKE)
                for a in SMOKE_ALGORITHMS]
    return _runs(FIG3_PROBLEM, FIG_ALGORITHMS, size, FIG3_FULL)


def _fig3_compare(ours, paper):
    best = best_by_algorithm(ours)
    start = ours.sort_values("t").groupby("algorithm")["error"].first()
    gain = (start / best.reindex(start.index)).max()
    return pd.DataFrame([
        _row("best error of any algorithm", "no real progress", f"{best.min():.2g} ({LABELS[best.index[0]]})",
             bool(best.min() > 1e-3), "claim", "no progress = nobody below 1e-3"),
        _row("largest improvement over the start", "-", f"x{gain:.3g}", None, "shown"),
    ])


def _fig3_plot(ours, paper):
    n = int(ours["n"].iloc[0]) if len(ours) else 0
    r = int(ours["rank"].iloc[0]) if len(ours) else 0
    return plots.race(ours, _title(f"Fig. 3: n {n} (report: 10000), rank {r}, 10% seen, kappa 20000", ours))


# --- Fig. 4: real ratings, held-out error against time -------------------------------------------------------
FIG4_FULL = dict(dataset="ml-100k", m=100_000, n=100_000, rank=5, share=0.3, kappa=1.0, budget_s=10.0,
                 log_points=40)


def _fig4_configs(size):
    if size == "smoke":  # a noisy synthetic stand-in: fitting the noise shows the same rise of the error
        return [CompletionConfig(n=150, m=150, rank=5, share=0.2, kappa=2.0, noise=0.5, algorithm=a, **SMOKE)
                for a in SMOKE_ALGORITHMS]
    return [CompletionConfig(**FIG4_FULL, algorithm=a) for a in REAL_ALGORITHMS]


def overfitting(df: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm: the lowest held-out error, when, and how much it rose from there to the end."""
    rows = []
    for alg, d in df.sort_values("t").groupby("algorithm"):
        i = d["error"].idxmin()
        rows.append({"algorithm": alg, "min_error": d["error"].min(), "t_min": d.loc[i, "t"],
                     "final_error": d["error"].iloc[-1], "rise": d["error"].iloc[-1] / d["error"].min() - 1})
    return pd.DataFrame(rows)


def _fig4_compare(ours, paper):
    o = overfitting(ours)
    diverged = sorted(set(ours.loc[ours["diverged"].astype(bool), "algorithm"])) if "diverged" in ours else []
    rising = o[o["rise"] > 0.05]
    spread = o["min_error"].max() / o["min_error"].min()  # "all" means all: a diverged method counts too
    note = "within a factor 1.5" + (f"; diverged: {', '.join(LABELS[a] for a in diverged)}" if diverged else "")
    return pd.DataFrame([
        _row("minimum held-out error", "about the same for all", f"{o['min_error'].min():.3f} to "
             f"{o['min_error'].max():.3f}", bool(spread < 1.5) if not _is_smoke(ours) else None, "claim", note),
        _row("overfitting (held-out error rises > 5%)", "many of the algorithms get worse over time",
             f"{len(rising)} of {len(o)}: " + (", ".join(LABELS[a] for a in rising["algorithm"]) or "none"),
             bool(len(rising) >= len(o) / 2), "claim", "many = at least half"),
    ])


def _fig4_plot(ours, paper):
    real = not _is_smoke(ours) and "dataset" in ours.columns and ours["dataset"].iloc[0] != "synthetic"
    name = ours["dataset"].iloc[0] if real else "noisy synthetic"
    return plots.race(ours, _title(f"Fig. 4: {name}, 30% of the known ratings seen, error on the other 70%"
                                   if real else "Fig. 4 stand-in: noisy low-rank matrix", ours),
                      y_title="held-out relative error" if real else "relative error to M*")


# --- Table 1: solved or failed, little in between -------------------------------------------------------------
def grid_configs(n, ranks, shares, kappas, budget_s, algorithms=TABLE_ALGORITHMS, log_points=20,
                 skip_below_limit=True, seeds=(0,)) -> list[CompletionConfig]:
    """Every (rank, share, kappa) problem of the grid, drawn once per seed (the problem's and the algorithm's), for
    every algorithm."""
    out = []
    for seed in seeds:
        for r in ranks:
            for s in shares:
                for k in kappas:
                    for a in algorithms:
                        c = CompletionConfig(n=n, m=n, rank=r, share=s, kappa=k, algorithm=a, budget_s=budget_s,
                                             log_points=log_points, problem_seed=seed, seed=seed)
                        if not (skip_below_limit and c.below_information_limit()):
                            out.append(c)
    return out


def _table1_configs(size):
    if size == "smoke":
        return grid_configs(120, (2, 30), (0.1, 0.4), (2.0,), 0.2, algorithms=SMOKE_ALGORITHMS, log_points=6,
                            seeds=(0, 1, 2))
    return grid_configs(**PAPER_GRID)


def paper_distance(rel_error, rank, kappa):
    """The report's Table 1 counts log10 of the absolute distance ||M - M*||_F for matrices whose singular values
    run from kappa down to 1 (MatrixIRLS's test framework, which the report builds on; its failed problems sit at
    0 < d < 4 = log10 of kappa 20000). Our M* has them from 1 to 1/kappa and the harness reports the relative
    error, so the distance on the report's scale is  rel_error * kappa * ||spectrum||_2."""
    from .problem import spectrum

    norms = np.array([np.linalg.norm(spectrum(int(r), float(k))) for r, k in zip(np.atleast_1d(rank),
                                                                                np.atleast_1d(kappa))])
    return np.asarray(rel_error, dtype=float) * np.atleast_1d(kappa).astype(float) * norms


def problems_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per problem: the best error of each algorithm, the best of all, the distance on the report's
    scale, d = log10 of it, and Table 1's range of d."""
    keys = ["m", "n", "rank", "share", "kappa"] + (["problem_seed"] if "problem_seed" in df.columns else [])
    per = df.groupby(keys + ["algorithm"])["error"].min().unstack("algorithm")
    out = per.add_prefix("best_").reset_index()
    best = per.min(axis=1).to_numpy()
    out["best_error"] = best
    out["best_algorithm"] = per.idxmin(axis=1).to_numpy()
    out["distance"] = paper_distance(best, out["rank"], out["kappa"])
    out["d"] = np.log10(np.clip(out["distance"], 1e-17, None))
    out["range"] = [P.bucket(d) for d in out["d"]]
    return out


def _table1_compute(size, progress):
    df = run_many(_table1_configs(size), jobs=jobs() if size == "full" else 1, progress=progress)
    return _timed(problems_table(df).assign(size=size, budget_s=float(df["budget_s"].iloc[0])), df)


def split(problems: pd.DataFrame) -> pd.DataFrame:
    counts = problems["range"].value_counts().reindex(P.TABLE1["range"], fill_value=0)
    return pd.DataFrame({"range": counts.index, "count": counts.to_numpy(),
                         "percent": 100.0 * counts.to_numpy() / max(1, counts.sum())})


TABLE1_SIGMAS = 2.0


def share_tolerance(percent: float, problems: int) -> float:
    """Points a range's share may differ from the report's where we have no seed spread: TABLE1_SIGMAS binomial
    standard deviations of a share of `percent` % counted on `problems` problems (12 to 19 points on 27)."""
    p = percent / 100.0
    return 100.0 * TABLE1_SIGMAS * math.sqrt(p * (1 - p) / max(1, problems))


def seed_splits(problems: pd.DataFrame) -> pd.DataFrame:
    """Each range's share (%) among the problems of each seed: one row per seed, one column per range."""
    seeds = problems["problem_seed"] if "problem_seed" in problems.columns else pd.Series(0, index=problems.index)
    return pd.DataFrame({int(k): split(g).set_index("range")["percent"] for k, g in problems.groupby(seeds)}).T


def _table1_compare(ours, paper):
    s = split(ours)
    total = int(s["count"].sum())
    by_seed = seed_splits(ours)
    seeds = len(by_seed)
    rows = []
    for r, p, o, c in zip(s["range"], paper["percent"], s["percent"], s["count"]):
        std = float(by_seed[r].std(ddof=0))
        tol = R.seed_tolerance(std, seeds, 1, share_tolerance(p, total))
        shares = " / ".join(f"{x:.1f}" for x in by_seed[r])
        how = (f"within {tol:.1f} points: 2 standard deviations of the difference, from our {seeds} seeds' spread "
               f"({shares} %)") if seeds > 1 else f"within {tol:.1f} points (2 binomial standard deviations)"
        rows.append(_row(f"% of problems with {r}", p, round(o, 1), bool(abs(o - p) <= tol), "number",
                         f"{c} of {total} problems; {how}"))
    middle = s["percent"].iloc[1]
    sharp = bool(middle <= s["percent"].min())
    shares = " / ".join(f"{x:.1f} %" for x in s["percent"])
    rows.append(_row("the middle range is the smallest (a sharp frontier)", "yes (11%)", "yes" if sharp else "no",
                     sharp, "claim", f"our shares by range: {shares}" + ("" if sharp else
                     "; why the middle range is not the smallest: docs/topics/completion.md, Table 1")))
    return pd.DataFrame(rows)


def _table1_plot(ours, paper):
    n = int(ours["n"].iloc[0]) if len(ours) else 0
    b = float(ours["budget_s"].iloc[0]) if len(ours) else 0
    return plots.table1(split(ours), paper, _title(f"Table 1 on {len(ours)} problems (n {n}, {b:g} CPU s each; "
                                                   "report: 63 problems, n 1000 and 10000, 60 s)", ours))


# --- registration ------------------------------------------------------------------------------------------------
RACE_COLUMNS = ("algorithm", "t", "iteration", "error")
STATED = ("Budgets are CPU seconds of one thread (one BLAS thread per run), not wall-clock: the machine is a "
          "shared 2-core one with other work running, and a wall-clock budget would give each run a "
          "load-dependent amount of computing; the wall-clock is logged beside it (wall_s). The report ran MATLAB "
          "implementations for 60 s of wall-clock; ours are the Python implementations of this folder (spectral "
          "start for all: the exact top-r SVD of the seen entries / share), so absolute times differ; the "
          "ordering is what is compared.")


CARDS: dict[str, R.FigureCard] = {}


def _register():
    _add(R.FigureCard(
        id="completion-fig1-irls", title="Fig. 1: a hard, ill-conditioned problem only MatrixIRLS solves",
        caption=P.CAPTIONS["fig1"], kind="figure", paper=P.FIG1, configs=_fig1_configs,
        compute_fn=_compute(_fig1_configs), plot_fn=_fig1_plot, compare_fn=_fig1_compare, tolerance=None,
        tolerance_text="ordering: MatrixIRLS below 1e-6, ASD above 1e-2, no other algorithm below 1e-6",
        expected="In the report, MatrixIRLS drops to ~1e-13 within seconds and is the only method to converge.",
        columns=RACE_COLUMNS, paper_ref="Fig. 1 and section 4", dataset="synthetic",
        notes=(f"Budget 20 s per algorithm (report: 60 s). FGD is left out: it needs a PSD problem. {STATED}",
               "Miss: ASD ends at 9.0e-3, below the lab's 1e-2 line, and still creeping down (it does not converge "
               "by the card's 1e-6). Cause, measured: its 20 CPU s held 28,373 steps here (28,511 in a second run), "
               "against 15,400 to 19,600 when the machine was loaded (then 1.8e-2); CPU seconds still depend on "
               "other processes' contention for caches and memory. "
               "Miss: CGIHT converges too (below 1e-14 by 0.8 CPU s) from the exact spectral start; from the old "
               "sketch it stalled at 4.0e-2. The report's 'only MatrixIRLS' holds for the other seven methods.")))
    _add(R.FigureCard(
        id="completion-fig2-easy", title="Fig. 2: an easy problem, alternating and Riemannian methods first",
        caption=P.CAPTIONS["fig2"], kind="figure", paper=P.FIG2, configs=_fig2_configs,
        compute_fn=_compute(_fig2_configs), plot_fn=_fig2_plot, compare_fn=_fig2_compare, tolerance=None,
        tolerance_text="claims: the fastest alternating and the fastest Riemannian method reach 1e-8 before every "
                       "other method; all but at most one below 1e-6; MatrixIRLS the slowest to 1e-8",
        expected="In the report, almost every method converges and ScaledASD / LMaFit / LRGeomCG reach 1e-8 first.",
        columns=RACE_COLUMNS, paper_ref="Fig. 2", dataset="synthetic",
        notes=(f"n = 2000 instead of 10000 and a 10 s budget instead of 60 s, to fit a laptop. {STATED}",
               "Miss: the report's MatrixIRLS 'performed the worst' here (it ran a couple of iterations in 60 s at "
               "n = 10000); at n = 2000 it reaches 1e-8 in 1.2 s, second slowest after soft-impute (3.6 s).",
               "Miss: ScaledGD (gradient descent, neither alternating nor Riemannian) reaches 1e-8 at 0.39 s, "
               "ScaledASD (the fastest alternating method) at 0.41 s (0.39 and 0.40 in a second run): 5 % apart, "
               "inside the 16 % spacing of the logged times. With the machine loaded ScaledASD was ahead (0.39 "
               "against 0.53 s).")))
    _add(R.FigureCard(
        id="completion-fig3-hard", title="Fig. 3: rank 20, 10 % seen, kappa 20000: no real progress",
        caption=P.CAPTIONS["fig3"], kind="figure", paper=P.FIG3, configs=_fig3_configs,
        compute_fn=_compute(_fig3_configs), plot_fn=_fig3_plot, compare_fn=_fig3_compare, tolerance=None,
        tolerance_text="no algorithm below 1e-3 within the budget",
        expected="Every method stays far from M*: the tiny singular values are not identified in time.",
        columns=RACE_COLUMNS, paper_ref="Fig. 3", dataset="synthetic",
        notes=(f"n = 2000 instead of 10000 (relative to n the problem has 5x fewer samples per degree of freedom "
               f"than the report's), 10 s budget. {STATED}",)))
    _add(R.FigureCard(
        id="completion-fig4-ml100k", title="Fig. 4: MovieLens ratings, held-out error against time",
        caption=P.CAPTIONS["fig4"], kind="figure", paper=P.FIG4, configs=_fig4_configs,
        compute_fn=_compute(_fig4_configs), plot_fn=_fig4_plot, compare_fn=_fig4_compare, tolerance=None,
        tolerance_text="claims: every algorithm's minimum held-out error within a factor 1.5 of the others' "
                       "(a diverged one counts); at least half of them rise > 5 % after their minimum",
        expected="The methods reach a similar minimum, then fit the seen ratings and the held-out error rises.",
        columns=RACE_COLUMNS, paper_ref="Fig. 4", dataset="ml-100k (u.data)",
        notes=("ML-100K (943 x 1682, 100,000 ratings) instead of ML-1M truncated to 4000 x 4000: the shared data "
               "has no ml-1m ratings.dat (dataset='ml-1m' runs the report's setting where it is present). Rank 5 "
               "(the report does not state it), raw 1-5 ratings, 30 % of the known ratings seen, relative "
               "Frobenius error on the other 70 %; 10 s per algorithm. " + STATED,
               "Miss: ScaledGD diverges (minimum 0.69 against 0.27 to 0.33 for the other seven), so 'all reach "
               "about the same minimum' does not hold for all eight.")))
    _add(R.FigureCard(
        id="completion-table1", title="Table 1: solved or failed, little in between",
        caption=P.CAPTIONS["table1"], kind="table", paper=P.TABLE1, configs=_table1_configs,
        compute_fn=_table1_compute, plot_fn=_table1_plot, compare_fn=_table1_compare, tolerance=TABLE1_SIGMAS,
        tolerance_text="each range's share (the mean of 3 seeds, 27 problems each) within 2 standard deviations of "
                       "its difference from the report's, from the spread of our seeds' shares; claim: the middle "
                       "range the smallest",
        expected="Most problems are either solved below 1e-10 or not at all; few end in between.",
        columns=("rank", "share", "kappa", "problem_seed", "best_error", "best_algorithm", "distance", "d", "range"),
        paper_ref="Table 1", dataset="synthetic",
        notes=(f"The report's n = {PAPER_GRID['n']} half of its grid (its n = 10000 half does not fit a laptop's "
               f"time budget): ranks {PAPER_GRID['ranks']}, shares 5/10/20/40 %, kappa 2/200/20000, "
               f"{len(TABLE_ALGORITHMS)} algorithms ({', '.join(LABELS[a] for a in TABLE_ALGORITHMS)}), "
               f"{PAPER_GRID['budget_s']:g} CPU seconds each (report: 60 s); the 9 settings below the information "
               "limit skipped as in the report, 27 problems, each drawn with seeds 0, 1 and 2 (81). d is log10 of "
               "the absolute distance on the report's scale (singular values kappa..1, see paper_distance): the "
               "harness's relative error times "
               "kappa ||spectrum||. " + STATED,
               "Three seeds (problem and algorithm seeds 0, 1, 2; 27 problems each): the shares spread widely from "
               "seed to seed (middle range 37.0 / 29.6 / 18.5 %, failed 11.1 / 14.8 / 29.6 %), so the tolerances from "
               "that spread are wide (21.5 and 22.6 points) and all three shares fall within them; they do not "
               "pin the report's numbers down. The check that can fail here is the claim.",
               "Miss, the middle range is not the smallest (28.4 % against the report's 11 %; it is the smallest on "
               "seed 2 only). Cause, measured on the stored problems: 17 of its 23 problems are solved to round-off "
               "by MatrixIRLS (best relative error below 1e-12; 16 at kappa 20000, one at 200) and land at d = -10 "
               "to -8 only because d scales the relative error by kappa ||spectrum|| (2e4 to 2.5e4 at kappa 20000); "
               "counted as solved, the middle range would hold 6 of 81 problems (7.4 %). Not settled: whether the "
               "report's MATLAB codes end at a lower round-off floor.",
               "The failed range (0 < d < 4) holds 18.5 % against the report's 32 %: the report found its failures on "
               "the n = 10000 matrices, the half of its grid we do not run.",
               "The budgets are CPU seconds, so how far a run gets varies a little with the machine and its load: "
               "regenerated on 2026-11-30, one problem (rank 20, 5 %, kappa 20000: relative error 1.5e-5 in the "
               "result stored on 2026-11-24, 9.6e-5 now) crossed from the middle range to the failed one.")))


def _add(card: R.FigureCard) -> None:
    CARDS[card.id] = R.register(card)


_register()


def machine_load() -> dict:
    """The 1, 5 and 15 minute load averages and the core count: how busy the machine was (CPU-time budgets
    make the numbers independent of it; only the wall-clock of a command depends on it)."""
    one, five, fifteen = os.getloadavg()
    return {"cores": os.cpu_count(), "load_1": round(one, 2), "load_5": round(five, 2), "load_15": round(fifteen, 2)}
