"""Figure cards of the low-rank SDP topic. The report has no numeric results: its checked rows are its claims, each
checked by a measurement; everything else is shown."""
from __future__ import annotations

import pandas as pd

from ..figures.registry import FigureCard, register
from . import experiments as E
from . import plots
from .rounding import GW_ALPHA

REPORT = "Report 4 (Abouzeid & Fan), rice-course-reports-gist-mc-wireless-sdp-fl.txt"
CORA = {"graph": "cora"}


def _smoke_graph(n: int = 80) -> dict:
    return {"graph": "random", "n": n, "avg_degree": 4.0, "graph_seed": 1}


def _is_smoke(ours: pd.DataFrame) -> bool:
    return "n" in ours.columns and int(ours["n"].iloc[0]) < 500 if len(ours) else True


def _paper(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["quantity", "value", "source"])


def _row(q, paper, ours, ok, kind, note=""):
    """kind: "claim" (the report states it) or "shown" (not checked, ok None); the report prints no numbers."""
    return {"quantity": q, "paper": paper, "ours": ours, "ok": ok, "kind": kind if ok is not None else "shown",
            "note": note}


def _with_n(df: pd.DataFrame, graph: dict) -> pd.DataFrame:
    from .config import SdpConfig
    from .run import build_problem

    df = df.copy()
    df["n"] = build_problem(SdpConfig(**graph)).n
    return df


# --- 1: the three families on Cora -------------------------------------------------------------------------------
def _conv_compute(size, progress):
    graph = CORA if size == "full" else _smoke_graph(120)
    limit = 20.0 if size == "full" else 2.0
    return _with_n(E.convergence(graph, time_limit=limit, max_iters=3000 if size == "full" else 300,
                                 progress=progress), graph)


# The lab's pure-Python reference on Cora (not the report's: the report has no experiments), shown beside ours
REFERENCE_SECONDS, REFERENCE_VALUE = 8.7, 4490.6


def _conv_compare(ours, paper):
    rows = []
    mix = ours[ours["method"] == "mixing"].sort_values("iter")
    # the report, Sec. 2.2: "strictly decreasing in objective value" (of the minimisation; our primal is the cut
    # value, maximised); logged values are rounded to 6 digits, so a converged run may repeat one
    drops = -mix["primal"].diff().min() if len(mix) > 1 else float("nan")
    rows.append(_row("mixing method: objective never worsens between logged iterates",
                     "strictly decreasing in objective value", f"largest drop of the cut value {max(drops, 0):.3g}",
                     bool(drops <= 1e-6 * mix["primal"].abs().max()) if len(mix) > 1 else None, "claim",
                     f"{len(mix)} logged iterates; a drop above 1e-6 of the value fails"))
    hit = mix[mix["rel_gap"] < 1e-3]
    t = float(hit["seconds"].iloc[0]) if len(hit) else float("nan")
    rows.append(_row("mixing: solver seconds to a certified gap < 1e-3", None, round(t, 3), None, "shown",
                     f"the lab's pure-Python reference (not the report): {REFERENCE_SECONDS} s to gap 1.6e-4"))
    best = float(mix["primal"].max())
    rows.append(_row("SDP value (cut units)", None, round(best, 2), None, "shown",
                     "smoke: random graph" if _is_smoke(ours) else
                     f"the lab's pure-Python reference (not the report): {REFERENCE_VALUE}"))
    for m, d in ours.groupby("method", sort=False):
        rows.append(_row(f"{d['label'].iloc[0]}: final gap after {d['seconds'].iloc[-1]:.1f} s", None,
                         float(d["rel_gap"].iloc[-1]), None, "shown", f"rank {int(d['rank'].iloc[-1])}"))
    return pd.DataFrame(rows)


register(FigureCard(
    id="sdp-cora-convergence", title="Objective and certified gap against time, three families, Cora",
    caption="(The report has no figure.) Mixing method, Mixing++, Burer-Monteiro ALM, Hazan's algorithm and "
            "in-face extended Frank-Wolfe on the MaxCut SDP of Cora's citation graph.",
    kind="figure",
    paper=_paper([("the mixing method's objective", "strictly decreasing", REPORT + ", Sec. 2.2")]),
    configs=lambda size: [], compute_fn=_conv_compute,
    plot_fn=lambda ours, paper: plots.convergence(ours, "Cora: objective and certified gap against time",
                                                  smoke=_is_smoke(ours)),
    compare_fn=_conv_compare, tolerance=None, tolerance_text="claim: the mixing method's objective never worsens "
    "between logged iterates; times, the SDP value and final gaps shown (the report has no experiments)",
    expected="The mixing methods reach a certified gap of 1e-3 in well under a second of solver time; Burer-"
             "Monteiro ALM and the Frank-Wolfe methods decrease the gap far more slowly (Frank-Wolfe as about 1/t).",
    columns=("method", "label", "iter", "seconds", "primal", "bound", "rel_gap", "rank"),
    notes=("Certificates (~40 log-spaced per run, a Lanczos eigenvalue each) are not counted in `seconds`.",
           "Frank-Wolfe methods handle diag(X) = 1 by an augmented Lagrangian over {X PSD, tr X = n} "
           "(Yurtsever et al.); the report does not say how its FW methods treat the constraints.",
           "Wall-clock seconds were measured on a shared, loaded 2-core machine.",
           "The report has no experiments: the time to a gap and the SDP value are shown beside the lab's "
           f"pure-Python reference ({REFERENCE_SECONDS} s to gap 1.6e-4, value {REFERENCE_VALUE}), which is not "
           "the report's and is not checked."),
    paper_ref=REPORT + ", Sec. 2-3", dataset="planetoid/ind.cora.graph"))


# --- 2: the rank threshold -----------------------------------------------------------------------------------
def _rank_compute(size, progress):
    if size == "full":
        return E.rank_threshold(CORA, ks=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 74, 100), seeds=(0, 1, 2),
                                sweeps=1000, progress=progress)
    return E.rank_threshold(_smoke_graph(60), ks=(1, 2, 3, 5, 8, 12), seeds=(0, 1), sweeps=200)


def _rank_compare(ours, paper):
    r = float(ours["sqrt_2n"].iloc[0])
    above = ours[ours["k"] > r]
    med = ours.groupby("k")["rel_gap"].median()
    reach = med[med < 1e-4]
    k_emp = int(reach.index.min()) if len(reach) else None
    return pd.DataFrame([
        _row("max gap over starts with k > sqrt(2n)", "no stable non-optimal critical point",
             float(above["rel_gap"].max()) if len(above) else None,
             bool(above["rel_gap"].max() < 1e-4) if len(above) else None, "claim",
             f"every one of {len(above)} starts ends at the optimum: certified gap < 1e-4 (the lab's line)"),
        _row("sqrt(2n)", None, round(r, 1), None, "shown", "the Barvinok-Pataki / Boumal et al. threshold"),
        _row("smallest k whose median gap < 1e-4", None, k_emp, None, "shown",
             "the threshold is a worst-case bound: on real graphs far smaller k already suffices"),
    ])


register(FigureCard(
    id="sdp-rank-threshold", title="The rank threshold: gap at convergence against k (Cora)",
    caption="(The report states it, Sec. 2.2.1:) for a rank k > sqrt(2n) all non-optimal critical points are "
            "unstable for the mixing method.",
    kind="figure", paper=_paper([("k above which no spurious local optimum is stable", "sqrt(2n)", REPORT)]),
    configs=lambda size: [], compute_fn=_rank_compute,
    plot_fn=lambda ours, paper: plots.rank_threshold(ours, smoke=int(ours["n"].iloc[0]) < 500),
    compare_fn=_rank_compare, tolerance=1e-4, tolerance_text="every start with k > sqrt(2n) ends with gap < 1e-4",
    expected="Large certified gaps at very small k (a rank-k factor cannot represent the SDP's solutions), "
             "falling to the 1e-6 level well before sqrt(2n).",
    columns=("k", "seed", "rel_gap", "sqrt_2n"),
    notes=("1,000 cyclic sweeps per start (Cora); the certificate is taken once at the end.",),
    paper_ref=REPORT + ", Sec. 2.2.1", dataset="planetoid/ind.cora.graph"))


# --- 3: rounding ------------------------------------------------------------------------------------------------------
def _round_compute(size, progress):
    graph = CORA if size == "full" else _smoke_graph(100)
    return _with_n(E.rounding(graph, trials=100), graph)


def _round_compare(ours, paper):
    best, mean = float(ours["ratio"].max()), float(ours["ratio"].mean())
    return pd.DataFrame([
        _row("mean rounding / SDP value", f"expected cut >= {GW_ALPHA:.3f} x SDP value", round(mean, 4),
             bool(mean >= GW_ALPHA), "claim", "Goemans & Williamson 1995's guarantee (the report states the "
             "relaxation, Sec. 1.2.1, not the rounding)"),
        _row("best of 100 roundings / SDP value", None, round(best, 4), None, "shown"),
    ])


register(FigureCard(
    id="sdp-rounding", title="Goemans-Williamson rounding on Cora: ratio to the SDP value",
    caption="Hyperplane rounding of the mixing solution, 100 Gaussian directions.",
    kind="figure", paper=_paper([("GW guarantee (expected cut / SDP value)", GW_ALPHA, "Goemans & Williamson 1995")]),
    configs=lambda size: [], compute_fn=_round_compute,
    plot_fn=lambda ours, paper: plots.rounding_histogram(ours, smoke=_is_smoke(ours)),
    compare_fn=_round_compare, tolerance=0.0, tolerance_text="claim (Goemans & Williamson's): mean ratio >= 0.878",
    expected="Every rounding well above 0.878 of the certified SDP value (real graphs are far from the worst case).",
    columns=("trial", "cut", "ratio"),
    notes=("The ratio divides by the certified upper bound on the SDP value, so it is conservative.",
           "The report states the MaxCut relaxation (Sec. 1.2.1) but not the rounding: the checked 0.878 is "
           "Goemans & Williamson's guarantee, not a claim of the report."),
    paper_ref=REPORT + ", Sec. 1.2.1", dataset="planetoid/ind.cora.graph"))


# --- 4: coordinate rules and Mixing++ ----------------------------------------------------------------------------
def _rules_compute(size, progress):
    graph = CORA if size == "full" else _smoke_graph(100)
    df = E.rules(graph, tol=1e-4, max_sweeps=3000 if size == "full" else 400, cert_every=5 if size == "full" else 1,
                 progress=progress)
    return _with_n(df, graph)


SIGNIFICANT = 1.5  # the speed-up (in sweeps) the check calls significant


def _rules_compare(ours, paper):
    s = dict(zip(ours["label"], ours["sweeps"]))
    plain, pp = s.get("mixing method"), s.get("Mixing++ (momentum)")
    uni, gre, imp = (s.get(f"mixing method, {r}") for r in ("uniform", "greedy", "importance"))
    return pd.DataFrame([
        _row(f"Mixing++ sweeps x {SIGNIFICANT:g} <= plain mixing sweeps", "significant speed-up in practice",
             f"{pp} vs {plain}", bool(pp * SIGNIFICANT <= plain), "claim",
             f"significant = at least {SIGNIFICANT:g} times fewer sweeps"),
        _row("importance sweeps < uniform sweeps", "higher rate", f"{imp} vs {uni}", bool(imp < uni), "claim"),
        _row("greedy sweeps against uniform sweeps", None, f"{gre} vs {uni}", None, "shown",
             "the report gives greedy and uniform the same rate; it claims no ordering"),
    ])


register(FigureCard(
    id="sdp-rules", title="Coordinate rules and Mixing++: sweeps to a certified gap of 1e-4 (Cora)",
    caption="(Sec. 2.2.2-2.2.3:) importance sampling has a better rate than uniform; Mixing++ gives a significant "
            "speed-up in practice.",
    kind="figure", paper=_paper([("Mixing++ speed-up", "significant", REPORT),
                                 ("importance vs uniform rate", "L = ||A||_1 vs n ||A||_1", REPORT)]),
    configs=lambda size: [], compute_fn=_rules_compute,
    plot_fn=lambda ours, paper: plots.rules_bars(ours, smoke=_is_smoke(ours)),
    compare_fn=_rules_compare, tolerance=None, tolerance_text="claims: Mixing++ at least 1.5x fewer sweeps than "
    "plain mixing; importance sampling fewer sweeps than uniform; greedy shown",
    expected="Mixing++ needs far fewer sweeps than plain cyclic mixing; greedy fewer than uniform.",
    columns=("label", "sweeps", "seconds"),
    notes=("One sweep is n block updates for every rule. The gap is certified every 5 sweeps (Cora), so sweep "
           "counts are rounded up to a multiple of 5.",
           "Importance sampling uses the norms ||g_i|| of the sweep's start (not refreshed within a sweep).",
           "The greedy rule's argmax is O(n) per update: fewer sweeps, but more seconds per sweep."),
    paper_ref=REPORT + ", Sec. 2.2.2-2.2.3", dataset="planetoid/ind.cora.graph"))


# --- 5: Hazan's rate and rank ---------------------------------------------------------------------------------------
def _hazan_compute(size, progress):
    graph = {"graph": "random", "n": 200, "avg_degree": 6.0, "graph_seed": 0} if size == "full" else _smoke_graph(60)
    return _with_n(E.hazan_rate(graph, steps=2000 if size == "full" else 200), graph)


def _hazan_compare(ours, paper):
    slope = E.loglog_slope(ours["iter"], ours["objective_gap"])
    return pd.DataFrame([
        _row("log-log slope of F(X_t) - F*", "O(1/t): slope -1 or steeper", round(slope, 2), bool(slope <= -0.7),
             "claim", "O(1/t) is an upper bound: a steeper slope satisfies it; -0.7 allows for the fit"),
        _row("max over t of rank(X_t) - (t + 1)", "rank at most t", int((ours["rank"] - ours["iter"] - 1).max()),
             bool((ours["rank"] <= ours["iter"] + 1).all()), "claim", "X_0 has rank 1; each step adds one atom"),
    ])


register(FigureCard(
    id="sdp-hazan-rate", title="Hazan's algorithm: objective gap ~ 1/t and rank <= t + 1",
    caption="(Sec. 3.1:) after k steps Hazan's algorithm gives a 1/k-approximation of rank at most k.",
    kind="figure", paper=_paper([("objective gap rate", "O(1/t): slope -1", REPORT), ("rank after t steps", "<= t", REPORT)]),
    configs=lambda size: [], compute_fn=_hazan_compute,
    plot_fn=lambda ours, paper: plots.hazan_rate(ours, E.loglog_slope(ours["iter"], ours["objective_gap"]),
                                                 smoke=int(ours["n"].iloc[0]) < 150),
    compare_fn=_hazan_compare, tolerance=0.3, tolerance_text="slope <= -0.7 (at least the 1/t rate, within 0.3); "
    "rank <= t + 1 at every t",
    expected="A roughly straight line of slope -1 or steeper on log-log axes; the rank grows one per step until n.",
    columns=("iter", "objective_gap", "rank"),
    notes=("Fixed penalized objective F = <C,X> + beta/2 ||diag X - 1||^2 on {X PSD, tr X = n} (no multiplier "
           "updates) so that F* is one number; F* is bounded below by the run's best Frank-Wolfe bound.",
           "Random graph (n = 200, mean degree 6): the rate is a property of FW, and 2,000 Lanczos steps on Cora "
           "would take tens of minutes.", "Slope fitted over 10 <= t <= T/4 on ~40 log-spaced certified steps.",
           "The measured slope (the card's row) is steeper than -1: O(1/t) is the worst case."),
    paper_ref=REPORT + ", Sec. 3.1", dataset="random graph"))


def stored_result(card_id: str):
    """(card, the committed full-size DataFrame or None), read from results/ without loading other topics."""
    from ..figures.registry import _CARDS, results_dir

    card = _CARDS[card_id]
    csv = results_dir() / f"{card_id}.csv"
    return card, (pd.read_csv(csv) if csv.exists() else None)
