"""Figure cards of the FAIR paper: Tables 2-6, Fig. 4 and the trade-off of Fig. 1.

Importing this module registers the cards (`labcore.figures.registry.get("fair-table2-goodreads")`).
Sizes: ``smoke`` runs every card on small synthetic data (or a few digits rounds) in seconds;
``full`` is the reproduction on the real data, stored as results/<card id>.csv / .json:

    labcore figure fair-table2-goodreads --full --save
"""
from __future__ import annotations

import math
import sys

import pandas as pd

from ..config import ConfigError
from . import paper as P
from . import plots as FP
from .config import FairConfig, paper_mlp, paper_ranking, paper_rating
from .engine import run
from .runs import run_times
from .tradeoff import tradeoff_configs, tradeoff_frame
from ..figures import registry as R

# --- full-size settings (see docs/reproduction.md, section FAIR, for why) -----------------------------
GOODREADS = dict(rounds=40, lr=3e-3)  # the paper: best of lr {1..1e-4}, T up to 1000 with early stopping
ML1M100 = dict(rounds=60, lr=3e-3)
RATING = dict(rounds=300, lr=1e-3)  # the paper: 1000 rounds (time budget: see the card notes)
DIGITS = dict(rounds=40, batch_size=64, lr=0.05)  # the paper: T = 200
RANK_SCHEMES = ("1x-2x", "1x-4x", "1x-8x", "1x-16x")
RATING_SCHEMES = ("8x-16x", "16x-32x", "32x-64x", "4x-8x-16x", "8x-16x-32x", "16x-32x-64x")
DIGIT_SCHEMES = ("2x-4x", "2x-4x-8x", "2x-4x-8x-16x-32x-64x")
SHARES = (0.01, 0.2, 0.3, 0.5)
# NDCG@20 on Goodreads-100 against the paper: SPREAD_SIGMAS standard deviations of (ours - paper's) from our
# seeds; three times the paper's std (< 0.005) where a result has one seed (the smoke size)
HEADLINE_TOL = 0.015
SEEDS = (0,) + R.SPREAD_SEEDS
POPULARITY_GOODREADS = 0.2753  # NDCG@20 of ranking by popularity alone on Goodreads-100 (the paper's level)
# Accuracy, digits 64-512-10 against the paper's MNIST 784-512-10: a floor under the seed spread's tolerance that
# admits the stand-in dataset's offset (FedAvg a few points below MNIST's) and nothing near chance (0.10)
DIGITS_TOL = 0.05


def _smoke_ranking() -> FairConfig:
    return paper_ranking("synthetic", rounds=4, eval_every=2, clients_per_round=4, batch_size=32, local_epochs=1,
                         lr=0.01)


def _ranking(dataset: str, size: str) -> FairConfig:
    if size == "smoke":
        return _smoke_ranking()
    return paper_ranking(dataset, **(GOODREADS if dataset == "goodreads-100" else ML1M100))


def _rating(size: str) -> FairConfig:
    if size == "smoke":
        return paper_rating("synthetic-ratings", rounds=4, eval_every=2, clients_per_round=4)
    return paper_rating("ml-100k-100", **RATING)


def _digits(size: str) -> FairConfig:
    if size == "smoke":
        return paper_mlp(rounds=2, eval_every=1, local_epochs=1, n_devices=6, clients_per_round=3, hidden=32)
    return paper_mlp(**DIGITS)


def _hom(base: FairConfig, scheme: str) -> FairConfig:
    """FAIR-HOM: everybody at the scheme's smallest capacity (one tier, so schemes share the run)."""
    return base.replace(method="fair-hom", capacities=f"{max(base.replace(capacities=scheme).ratios())}x")


def _fedhm(base: FairConfig, scheme: str) -> FairConfig | None:
    try:
        return base.replace(method="fedhm", capacities=scheme)
    except ConfigError:
        return None  # beyond a compression of d: N/A


def _run_rows(rows: list[tuple], metric: str, progress: bool) -> pd.DataFrame:
    """rows: (labels dict, config or None) -> one row per run with the best value and its round."""
    out = []
    for labels, cfg in rows:
        if cfg is None:
            out.append({**labels, metric: math.nan, "round_best": -1, "note": "N/A"})
            continue
        res = run(cfg, progress=progress)
        best, at = res.best
        out.append({**labels, metric: best, "round_best": at, "final": res.final, "rounds": cfg.rounds,
                    "note": ""})
    return pd.DataFrame(out)


def _over_seeds(rows: list[tuple], size: str) -> list[tuple]:
    """Every run at each of SEEDS (full size; the smoke size: seed 0): the spread a checked number is judged by.
    The seed draws the hash, the cohorts and the batches; the data and the capacity assignment stay."""
    seeds = SEEDS if size == "full" else (0,)
    return [({**labels, "seed": s}, None if cfg is None else cfg.replace(seed=s)) for s in seeds
            for labels, cfg in rows]


def _mean_over_seeds(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per labels: the metric's mean over seeds, and for a seeded card the seed count and the standard
    deviation (ddof 0; none from one seed)."""
    keys = [c for c in runs.columns if c not in (metric, "seed", "round_best", "final", "rounds", "note")]
    g = runs.groupby(keys, sort=False, dropna=False)
    out = g[metric].mean().to_frame()
    out["round_best"] = g["round_best"].first()  # seed 0's
    if "seed" in runs:  # a seeded card; one seed (the smoke size) has no spread
        out["seeds"] = g[metric].count()
        out[f"{metric}_std"] = g[metric].std(ddof=0).where(out["seeds"] > 1)
    return out.reset_index()


def _seed_tol(row: pd.Series, metric: str) -> tuple[float, str]:
    """A checked number's tolerance from our spread over seeds (`seed_tolerance`), and the note that says so."""
    n, std = int(row.get("seeds", 1)), float(row.get(f"{metric}_std", math.nan))
    tol = R.seed_tolerance(std, n, 1, HEADLINE_TOL)
    if n < 2:
        return tol, f"one seed: within the stated {HEADLINE_TOL}"
    return tol, (f"mean of {n} seeds ± {std:.4f}; |ours - paper| <= {tol:.4f} "
                 f"({R.SPREAD_SIGMAS:g} sd of the difference)")


def _digits_tol(row: pd.Series) -> tuple[float, str]:
    """A digits accuracy's tolerance against the paper's MNIST: our seed spread's (`_seed_tol`), at least the
    stated DIGITS_TOL that the other dataset needs."""
    tol, _ = _seed_tol(row, "accuracy")
    n = int(row.get("seeds", 1))
    if n < 2:
        return DIGITS_TOL, f"one seed: |ours - paper| <= {DIGITS_TOL} (digits here, MNIST in the paper)"
    return max(tol, DIGITS_TOL), (f"mean of {n} seeds ± {float(row['accuracy_std']):.4f}; |ours - paper| <= "
                                  f"max({R.SPREAD_SIGMAS:g} sd of the difference = {tol:.4f}, {DIGITS_TOL} for "
                                  "digits here against MNIST in the paper)")


def _configs(rows: list[tuple]) -> list[FairConfig]:
    seen, out = set(), []
    for _, cfg in rows:
        if cfg is not None and cfg.key() not in seen:
            seen.add(cfg.key())
            out.append(cfg)
    return out


def _label(row, metric: str) -> str:
    cap = "" if row["capacity"] == "-" else f" {row['capacity']}"
    return f"{row['method']}{cap} {metric}"


def _value_row(quantity: str, paper: float, ours: float, tol: float | None, note: str = "") -> dict:
    """One printed value: a number checked at `tol`, or shown (tol None: another dataset than the paper's). N/A on
    either side is a claim: the scheme runs exactly where the paper's runs."""
    if math.isnan(paper) or math.isnan(ours):
        return {"quantity": quantity, "paper": paper, "ours": ours, "ok": math.isnan(paper) and math.isnan(ours),
                "kind": "claim", "note": "N/A exactly where the paper has N/A"}
    if tol is None:
        return {"quantity": quantity, "paper": paper, "ours": ours, "ok": None, "kind": "shown", "note": note}
    return {"quantity": quantity, "paper": paper, "ours": ours, "ok": bool(abs(ours - paper) <= tol),
            "kind": "number", "note": note or f"|ours - paper| <= {tol}"}


def _paper_value(paper: pd.DataFrame, metric: str, **match) -> float:
    sel = paper
    for k, v in match.items():
        sel = sel[sel[k] == v]
    return float(sel[metric].iloc[0]) if len(sel) else math.nan


# --- Table 2 -------------------------------------------------------------------------------------------
def _t2_rows(dataset: str, size: str, seeded: bool = False) -> list[tuple]:
    base = _ranking(dataset, size)
    rows = [({"capacity": "-", "method": "FedAvg"}, base.replace(method="fedavg", capacities="1x"))]
    for cap in RANK_SCHEMES:
        rows += [({"capacity": cap, "method": "FAIR-HET"}, base.replace(method="fair", capacities=cap)),
                 ({"capacity": cap, "method": "FAIR-HOM"}, _hom(base, cap)),
                 ({"capacity": cap, "method": "FedHM"}, _fedhm(base, cap))]
    return _over_seeds(rows, size) if seeded else rows


def _het_above(ours: pd.DataFrame, pp: pd.DataFrame, metric: str, cap: str, other: str, lower: bool = False) -> dict:
    """The paper's claim "FAIR-HET has superior quality over <other>" at one scheme, as stated: strictly better."""
    get = lambda df, col, m: _paper_value(df, col, capacity=cap, method=m)  # noqa: E731
    het, oth = get(ours, metric, "FAIR-HET"), get(ours, metric, other)
    sign = -1 if lower else 1  # MSE: lower is better
    return {"quantity": f"FAIR-HET - {other} {metric.upper()} at {cap}", "paper": get(pp, metric, "FAIR-HET")
            - get(pp, metric, other), "ours": het - oth, "ok": bool(sign * (het - oth) > 0), "kind": "claim",
            "note": f"FAIR-HET {'below' if lower else 'above'} {other}"}


def _t2_compare(paper_set: str, same_data: bool):
    def compare(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
        pp = paper[paper["dataset"] == paper_set]
        out = [_value_row(_label(r, "NDCG@20"), _paper_value(pp, "ndcg", capacity=r["capacity"], method=r["method"]),
                          r["ndcg"], *(_seed_tol(r, "ndcg") if same_data
                                       else (None, "AmazonProduct-100 in the paper, ML-1M-100 here")))
               for _, r in ours.iterrows()]
        if same_data:  # the level the paper's FedAvg and FAIR-HET rows sit at, for the reader
            out.append({"quantity": "popularity alone (no training) NDCG@20", "paper": math.nan,
                        "ours": POPULARITY_GOODREADS, "ok": None, "kind": "shown",
                        "note": "reference: within 0.003 of the paper's FedAvg"})
        # "FAIR-HET has superior quality over FAIR-HOM and FEDHM baselines across different capacity schemes"
        for cap in RANK_SCHEMES:
            out.append(_het_above(ours, pp, "ndcg", cap, "FAIR-HOM"))
            if not math.isnan(_paper_value(ours, "ndcg", capacity=cap, method="FedHM")):
                out.append(_het_above(ours, pp, "ndcg", cap, "FedHM"))
        return pd.DataFrame(out)
    return compare


def _t2_card(dataset: str, paper_set: str, title_set: str, notes: tuple[str, ...]) -> R.FigureCard:
    seeded = dataset == "goodreads-100"  # the paper's own data: its numbers are checked, by our spread
    return R.FigureCard(
        id=f"fair-table2-{dataset.replace('-100', '').replace('ml-1m', 'ml1m')}",
        title=f"FAIR Table 2: NDCG@20 of FAIR-HET, FAIR-HOM and FedHM per capacity scheme ({title_set})",
        caption=("NDCG@20 (higher is better) on Goodreads-100, AmazonProduct-100. FAIR-HET has superior quality "
                 "over FAIR-HOM and FEDHM baselines across different capacity schemes. N/A implies that capacity "
                 "scheme cannot be run."),
        kind="table", paper=P.TABLE2,
        configs=lambda size: _configs(_t2_rows(dataset, size, seeded)),
        compute_fn=lambda size, progress: _mean_over_seeds(_run_rows(_t2_rows(dataset, size, seeded), "ndcg",
                                                                     progress), "ndcg").assign(dataset=dataset),
        plot_fn=lambda ours, paper: FP.table_bars(ours, paper[paper["dataset"] == paper_set], "ndcg"),
        compare_fn=_t2_compare(paper_set, dataset == "goodreads-100"),
        tolerance=HEADLINE_TOL if dataset == "goodreads-100" else None,
        tolerance_text=(f"every printed NDCG@20, the mean of seeds {', '.join(map(str, SEEDS))}, within "
                        f"{R.SPREAD_SIGMAS:g} standard deviations of (ours - paper's) from our spread (popularity "
                        f"alone scores {POPULARITY_GOODREADS}); FAIR-HET above FAIR-HOM and FedHM in every "
                        "scheme; FedHM N/A exactly where the paper has N/A" if dataset == "goodreads-100"
                        else "claims only (the paper's column is AmazonProduct-100, its values are shown): FAIR-HET "
                             "above FAIR-HOM and FedHM in every scheme; FedHM N/A exactly where the paper has N/A"),
        expected="FAIR-HET about FedAvg in every scheme; FAIR-HOM falls as the smallest capacity shrinks; FedHM "
                 "close to FAIR-HET at 2x and 4x and N/A from 8x (a rank-k table cannot go below k = 2 of d = 8).",
        columns=("capacity", "method", "ndcg", "round_best") + (("ndcg_std", "seeds") if seeded else ()), notes=notes,
        paper_ref="Table 2", dataset=dataset)


# --- Table 3 -------------------------------------------------------------------------------------------
def _t3_rows(dataset: str, size: str, seeded: bool = False) -> list[tuple]:
    base = _ranking(dataset, size).replace(capacities="1x-2x", assign="random")
    rows = []
    for s in SHARES:
        for m, method in (("FULL-TRN", "full-trn"), ("FAIR-HET", "fair")):
            rows.append(({"share_1x": s, "method": m}, base.replace(method=method, full_fraction=s)))
    return _over_seeds(rows, size) if seeded else rows


def _t3_compare(paper_set: str, same_data: bool):
    def compare(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
        pp = paper[paper["dataset"] == paper_set]
        out = [_value_row(f"{r['method']} with {r['share_1x']:.0%} at 1x",
                          _paper_value(pp, "ndcg", share_1x=r["share_1x"], method=r["method"]), r["ndcg"],
                          *(_seed_tol(r, "ndcg") if same_data
                            else (None, "AmazonProduct-100 in the paper, ML-1M-100 here")))
               for _, r in ours.iterrows()]
        get = lambda s, m: ours[(ours.share_1x == s) & (ours.method == m)]["ndcg"].iloc[0]  # noqa: E731
        gap = get(0.01, "FAIR-HET") - get(0.01, "FULL-TRN")
        out.append({"quantity": "FAIR-HET - FULL-TRN with 1% at 1x", "paper": _paper_value(pp, "ndcg", share_1x=0.01,
                    method="FAIR-HET") - _paper_value(pp, "ndcg", share_1x=0.01, method="FULL-TRN"), "ours": gap,
                    "ok": bool(gap >= 0.05), "kind": "claim", "note": "far above: >= 0.05"})
        return pd.DataFrame(out)
    return compare


def _t3_card(dataset: str, paper_set: str, title_set: str, notes: tuple[str, ...]) -> R.FigureCard:
    seeded = dataset == "goodreads-100"
    return R.FigureCard(
        id=f"fair-table3-{dataset.replace('-100', '').replace('ml-1m', 'ml1m')}",
        title=f"FAIR Table 3: data loss, FULL-TRN against FAIR-HET when few devices hold the full model ({title_set})",
        caption=("Comparison of FAIR-HET with the situation where data from lower-capacity devices is not used "
                 "(FULL-TRN). The columns define percentage of users that can host full models (1x capacity) and "
                 "others are assumed to have 2x compression. The users are randomly chosen with seed 101."),
        kind="table", paper=P.TABLE3,
        configs=lambda size: _configs(_t3_rows(dataset, size, seeded)),
        compute_fn=lambda size, progress: _mean_over_seeds(_run_rows(_t3_rows(dataset, size, seeded), "ndcg",
                                                                     progress), "ndcg").assign(dataset=dataset),
        plot_fn=lambda ours, paper: FP.table_bars(ours.assign(share=ours["share_1x"].map("{:.0%}".format)),
                                                  paper[paper["dataset"] == paper_set].assign(
                                                      share=lambda p: p["share_1x"].map("{:.0%}".format)),
                                                  "ndcg", x="share"),
        compare_fn=_t3_compare(paper_set, dataset == "goodreads-100"),
        tolerance=HEADLINE_TOL if dataset == "goodreads-100" else None,
        tolerance_text=((f"every printed NDCG@20, the mean of seeds {', '.join(map(str, SEEDS))}, within "
                         f"{R.SPREAD_SIGMAS:g} standard deviations of (ours - paper's), as Table 2; " if dataset ==
                         "goodreads-100" else "the paper's values shown (AmazonProduct-100); ")
                        + "FAIR-HET far above FULL-TRN (>= 0.05 NDCG@20) when 1% of the devices hold the full model"),
        expected="FULL-TRN collapses when only 1% of the devices (one user) can hold the full model; FAIR-HET keeps "
                 "every device's data at 2x and stays near FedAvg for every share.",
        columns=("share_1x", "method", "ndcg", "round_best") + (("ndcg_std", "seeds") if seeded else ()),
        notes=notes, paper_ref="Table 3", dataset=dataset)


# --- Table 4 -------------------------------------------------------------------------------------------
def _t4_rows(size: str) -> list[tuple]:
    base = _rating(size)
    rows = [({"capacity": "-", "method": "FedAvg"}, base.replace(method="fedavg", capacities="1x"))]
    for cap in RATING_SCHEMES:
        rows += [({"capacity": cap, "method": "FAIR-HET"}, base.replace(method="fair", capacities=cap)),
                 ({"capacity": cap, "method": "FAIR-HOM"}, _hom(base, cap)),
                 ({"capacity": cap, "method": "FedHM"}, _fedhm(base, cap))]
    return rows


def _t4_compare(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    out = []
    for _, r in ours.iterrows():
        pv = _paper_value(paper, "mse", capacity=r["capacity"], method=r["method"])
        if r["method"] == "FedAvg" and math.isnan(pv):  # not in Table 4: our reference row
            out.append({"quantity": _label(r, "MSE"), "paper": pv, "ours": r["mse"], "ok": None, "kind": "shown",
                        "note": "reference (not in Table 4)"})
            continue
        out.append(_value_row(_label(r, "MSE"), pv, r["mse"], None, "Goodreads in the paper, ML-100K here"))
    for cap in RATING_SCHEMES:
        out.append(_het_above(ours, paper, "mse", cap, "FAIR-HOM", lower=True))
        if not math.isnan(_paper_value(ours, "mse", capacity=cap, method="FedHM")):
            out.append(_het_above(ours, paper, "mse", cap, "FedHM", lower=True))
    return pd.DataFrame(out)


# --- Appendix Tables 8 and 9 ---------------------------------------------------------------------------
T8_DIMS = (2, 4, 8, 16, 32)
T9_RATIOS = ("2x", "4x", "8x", "16x", "32x", "64x")
SAME_STORAGE = (("4x", 8), ("8x", 4), ("16x", 2))  # FAIR at ratio M against FedAvg with a d / M table, d = 32


def _t89_rows(size: str) -> list[tuple]:
    base = _rating(size)
    # the tower halves from 2d each layer: a small table keeps as many layers as its width allows
    rows = [({"table": "8", "setting": f"d = {d}", "method": "FedAvg"},
             base.replace(method="fedavg", capacities="1x", dim=d, mlp_layers=min(base.mlp_layers, d.bit_length() - 1)))
            for d in T8_DIMS]
    rows += [({"table": "9", "setting": cap, "method": "FAIR"}, base.replace(method="fair-hom", capacities=cap))
             for cap in T9_RATIOS]
    rows += [({"table": "9", "setting": cap, "method": "LowRank"}, _fedhm(base, cap)) for cap in ("16x", "32x")]
    return rows


def _t89_compare(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    def val(frame, setting, method):
        return _paper_value(frame, "mse", setting=setting, method=method)

    out = []
    for _, r in ours.iterrows():
        pv, ov = val(paper, r["setting"], r["method"]), r["mse"]
        if r["method"] == "LowRank" and (math.isnan(pv) or math.isnan(ov)):
            out.append(_value_row(f"LowRank {r['setting']} MSE", pv, ov, None))
            continue
        out.append({"quantity": f"Table {r['table']}: {r['method']} {r['setting']} MSE", "paper": pv, "ours": ov,
                    "ok": None, "kind": "shown", "note": "Goodreads-S in the paper, ML-100K here"})
    fair, low = val(ours, "16x", "FAIR"), val(ours, "16x", "LowRank")
    out.append({"quantity": "FAIR below LowRank at 16x (MSE)", "paper": "0.6891 < 0.7092",
                "ours": f"{fair:.4f} vs {low:.4f}", "ok": bool(fair < low), "kind": "claim",
                "note": "as stated (section 6.2): where FedHM can run, the quality is better with FAIR"})
    for cap, d in SAME_STORAGE:
        f, small = val(ours, cap, "FAIR"), val(ours, f"d = {d}", "FedAvg")
        out.append({"quantity": f"FAIR {cap} below FedAvg with d = {d} (the same storage)",
                    "paper": f"{val(paper, cap, 'FAIR'):.4f} < {val(paper, f'd = {d}', 'FedAvg'):.4f}",
                    "ours": f"{f:.4f} vs {small:.4f}", "ok": bool(f < small), "kind": "claim",
                    "note": "as stated (section 1): FAIR is better than model-loss (a smaller model); checked where "
                            "Tables 8-9 show it: at 2x the paper's FAIR (0.6637) is above FedAvg d = 16 (0.6494)"})
    return pd.DataFrame(out)


# --- Tables 5 and 6, Fig. 4 --------------------------------------------------------------------------
def _t5_rows(size: str) -> list[tuple]:
    base = _digits(size)
    rows = [({"capacity": "-", "method": "FedAvg"}, base.replace(method="fedavg", capacities="1x"))]
    for cap in DIGIT_SCHEMES:
        rows += [({"capacity": cap, "method": "FAIR-HET"}, base.replace(method="fair", capacities=cap)),
                 ({"capacity": cap, "method": "FAIR-HOM"}, _hom(base, cap)),
                 ({"capacity": cap, "method": "FedHM"}, _fedhm(base, cap))]
    return rows


def _t5_compare(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    pp = paper[paper["dataset"] == "mnist"]
    out = []
    for _, r in ours.iterrows():
        pv = _paper_value(pp, "accuracy", capacity=r["capacity"], method=r["method"])
        if math.isnan(r["accuracy"]) and not math.isnan(pv):  # FedHM: digits' 64 inputs leave no room (notes)
            out.append({"quantity": _label(r, "accuracy"), "paper": pv, "ours": r["accuracy"], "ok": None,
                        "kind": "shown", "note": "N/A here: the digits' 64-value input layer (see notes)"})
            continue
        out.append(_value_row(_label(r, "accuracy"), pv, r["accuracy"], *_digits_tol(r)))
    for cap in DIGIT_SCHEMES:
        het = ours[(ours.capacity == cap) & (ours.method == "FAIR-HET")]["accuracy"].iloc[0]
        hom = ours[(ours.capacity == cap) & (ours.method == "FAIR-HOM")]["accuracy"].iloc[0]
        out.append({"quantity": f"FAIR-HET - FAIR-HOM at {cap}", "ours": het - hom, "ok": bool(het >= hom - 0.01),
                    "kind": "claim",
                    "paper": _paper_value(pp, "accuracy", capacity=cap, method="FAIR-HET")
                    - _paper_value(pp, "accuracy", capacity=cap, method="FAIR-HOM"),
                    "note": "HET >= HOM within 0.01 (the paper has HOM ahead by 0.0007 at 2x-4x)"})
    return pd.DataFrame(out)


T6_CAPS = ("4x", "8x", "64x", "2x-4x", "2x-4x-8x", "2x-4x-8x-16x-32x-64x")


def _t6_rows(size: str) -> list[tuple]:
    base = _digits(size)
    return [({"subspaces": "consistent" if c else "inconsistent", "capacity": cap},  # one tier: Table 5's FAIR-HOM
             base.replace(method="fair" if "-" in cap else "fair-hom", capacities=cap, consistent=c))
            for c in (True, False) for cap in T6_CAPS]


def _t6_compare(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    out = []
    for cap in T6_CAPS:
        rc = ours[(ours.capacity == cap) & (ours.subspaces == "consistent")].iloc[0]
        ri = ours[(ours.capacity == cap) & (ours.subspaces == "inconsistent")].iloc[0]
        c, i = rc["accuracy"], ri["accuracy"]
        pc = _paper_value(paper, "accuracy", capacity=cap, subspaces="consistent")
        pi = _paper_value(paper, "accuracy", capacity=cap, subspaces="inconsistent")
        out += [_value_row(f"consistent {cap}", pc, c, *_digits_tol(rc)),
                _value_row(f"inconsistent {cap}", pi, i, *_digits_tol(ri)),
                {"quantity": f"consistent - inconsistent {cap}", "paper": pc - pi, "ours": c - i,
                 "ok": bool(c > i), "kind": "claim", "note": "consistent above inconsistent"}]
    return pd.DataFrame(out)


def _fig4_configs(size: str) -> list[tuple[str, str, FairConfig]]:
    d = _digits(size).replace(method="fair", capacities="2x-4x-8x")
    g = _ranking("goodreads-100", size).replace(method="fair", capacities="1x-2x")
    return [("(a) digits MLP, 2x-4x-8x", "consistent", d), ("(a) digits MLP, 2x-4x-8x", "inconsistent",
                                                             d.replace(consistent=False)),
            ("(b) Goodreads-100 NeuMF, 1x-2x", "consistent", g),
            ("(b) Goodreads-100 NeuMF, 1x-2x", "inconsistent", g.replace(consistent=False))]


def _fig4_compute(size: str, progress: bool) -> pd.DataFrame:
    frames = []
    for panel, label, cfg in _fig4_configs(size):
        c = run(cfg, progress=progress).curve()
        frames.append(c.assign(panel=panel, run=f"{panel}: {label}", subspaces=label, round=c["round"] + 1))
    return pd.concat(frames, ignore_index=True)


def _fig4_plot(ours: pd.DataFrame, paper: pd.DataFrame):
    from plotly.subplots import make_subplots

    panels = list(dict.fromkeys(ours["panel"]))
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=panels)
    for j, panel in enumerate(panels, start=1):
        part = ours[ours.panel == panel]
        for label, p in part.groupby("subspaces", sort=False):
            fig.add_scatter(x=p["round"], y=p["metric"], mode="lines+markers", name=f"{label} ({panel[:3]})",
                            line=dict(color=FP.METHOD_COLORS[label], dash="dot" if label == "inconsistent" else None),
                            row=1, col=j)
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(title_text="test accuracy", row=1, col=1)
    if len(panels) > 1:
        fig.update_yaxes(title_text="NDCG@20", row=1, col=2)
    fig.update_layout(margin=dict(l=50, r=10, t=40, b=50))
    return fig


def _fig4_compare(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    out = []
    for panel in dict.fromkeys(ours["panel"]):
        part = ours[ours.panel == panel]
        c = part[part.subspaces == "consistent"]["metric"].max()
        i = part[part.subspaces == "inconsistent"]["metric"].max()
        out.append({"quantity": f"{panel}: best consistent - best inconsistent", "paper": math.nan, "ours": c - i,
                    "ok": bool(c > i), "kind": "claim",
                    "note": "consistent above inconsistent (Fig. 4 is an image: no numbers)"})
    return pd.DataFrame(out)


# --- Fig. 1: the trade-off ------------------------------------------------------------------------------
TRADEOFF_SCHEME = "1x-2x-4x-8x"


def _tradeoff_compute(size: str, progress: bool) -> pd.DataFrame:
    base = _ranking("ml-1m-100", size)
    cfgs = tradeoff_configs(base, TRADEOFF_SCHEME)
    results = [run(c, progress=progress) for c in cfgs]
    from .engine import load_data

    return tradeoff_frame(cfgs, results, load_data(cfgs[0]).n_users)


def _tradeoff_compare(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    het = float(ours[ours.strategy == "FAIR-HET"]["metric"].iloc[0])
    fixed = ours[ours.strategy == "one model size"]
    return pd.DataFrame([{"quantity": f"{int(r.model_ratio)}x model, {r.devices_share:.0%} of devices",
                          "paper": math.nan, "ours": r.metric, "ok": None, "kind": "shown", "note": ""}
                         for r in fixed.itertuples()]
                        + [{"quantity": "FAIR-HET, every device", "paper": math.nan, "ours": het,
                            "ok": bool(het > fixed["metric"].max()), "kind": "claim",
                            "note": "FAIR-HET above the best single model size (the paper: above the whole curve)"}])


# --- registration ---------------------------------------------------------------------------------------
GR_NOTES = (
    "Goodreads-100 is the authors' own file (their train/test split, 99 users, 359,014 item ids); NDCG@20 over all "
    f"items not in the user's training list, as their code. Ranking by popularity alone scores {POPULARITY_GOODREADS} "
    "here: the paper's 0.276-0.278 are at that level, so those rows alone cannot tell a trained model from popularity "
    "(the FAIR-HOM rows and the FAIR-HET claims can).",
    f"{GOODREADS['rounds']} rounds with Adam lr {GOODREADS['lr']} (lazy Adam on the tables), evaluation every 10 "
    "rounds, best value reported (the paper: up to 1000 rounds with early stopping, lr best of 1..1e-4).",
    "Tables hashed by rows (blocks of d = 8 values, as the ROBE/ROAST mappings of the paper's experiments), sizes "
    "m = the greatest power of two <= n / ratio (so '2x' is 2.74x here); user vectors stay on the devices.",
)
GR_SEEDS = (f"Seeds {', '.join(map(str, SEEDS))} (each draws the hash, the cohorts and the batches; the data and the "
            "capacity assignment stay): every NDCG@20 is their mean, and a printed one is judged by their spread.")
T2_MISSES = ("The two misses, FedAvg (0.271 against 0.278) and FAIR-HET 1x-16x (0.264 against 0.276), sit below the "
             "paper's by 2.3 and 5.5 standard deviations of (ours - paper's); their cause is not measured (40 rounds "
             "and one learning rate here, up to 1000 rounds with early stopping and a searched lr in the paper).")
T3_MISSES = ("FULL-TRN misses at every share, below the paper's (0.009 against 0.037 with 1% at 1x, 0.244 against "
             "0.261 with 50%), and FAIR-HET with 30% at 1x (0.259 against 0.270); the cause is not measured. More "
             "rounds alone would not lift FULL-TRN: seed 0's best value is at round 20 or 30 of 40.")
DIGITS_SEEDS = (f"Seeds {', '.join(map(str, SEEDS))} (each draws the initial MLP, the hash, the cohorts and the "
                "batches; the digits and their split over devices stay): every accuracy is their mean, and a printed "
                "one is judged by their spread.")
ML_NOTES = ("ML-1M-100 (the 100 most active users of ML-1M, the ReSN lists' own split) stands in for "
            "AmazonProduct-100, whose training file is not available: the paper column is AmazonProduct-100's, for "
            "the shape only.",
            f"{ML1M100['rounds']} rounds, Adam lr {ML1M100['lr']}; otherwise as the Goodreads card.")


def _register() -> None:
    cards = [
        _t2_card("goodreads-100", "goodreads-100", "Goodreads-100", GR_NOTES + (GR_SEEDS, T2_MISSES)),
        _t2_card("ml-1m-100", "amazon-100", "ML-1M-100 for AmazonProduct-100", ML_NOTES),
        _t3_card("goodreads-100", "goodreads-100", "Goodreads-100", GR_NOTES + (GR_SEEDS, T3_MISSES)),
        _t3_card("ml-1m-100", "amazon-100", "ML-1M-100 for AmazonProduct-100", ML_NOTES),
        R.FigureCard(
            id="fair-table4-ml100k", title="FAIR Table 4: explicit ratings, test MSE per capacity scheme (NeuMF-MLP)",
            caption=("Explicit feedback rating prediction on Goodreads-100 (MSE lower is better). We stop training "
                     "after 1000 rounds. The FEDHM method cannot cater to compression ratios of 32 or beyond for an "
                     "embedding table of 32 dimension. N/A implies the scheme cannot be run."),
            kind="table", paper=P.TABLE4, configs=lambda size: _configs(_t4_rows(size)),
            compute_fn=lambda size, progress: _run_rows(_t4_rows(size), "mse", progress),
            plot_fn=lambda ours, paper: FP.table_bars(ours, paper, "mse"), compare_fn=_t4_compare, tolerance=None,
            tolerance_text="claims only (Goodreads in the paper, ML-100K here: values shown): FAIR-HET below FAIR-HOM "
                           "and FedHM (MSE) in every scheme; FedHM N/A exactly where the paper has N/A (ratios >= "
                           "d = 32)",
            expected="FAIR-HET below FAIR-HOM in every scheme, more so with three tiers; FedHM worse than FAIR-HET "
                     "where it runs and N/A from 32x.",
            columns=("capacity", "method", "mse", "round_best"),
            notes=("ML-100K-100 (the 100 users with most ratings, 80/20 hold-out per user) instead of Goodreads-100, "
                   "whose ratings are not available; MSE on 1-5 stars, so the level differs from the paper's.",
                   f"NeuMF-MLP d = 32, three layers (64-32-16-8), MSE, K = 10, E = 1, {RATING['rounds']} rounds "
                   "(the paper: 1000), Adam lr 1e-3, batch 64; a full-size FedAvg row added for reference (the "
                   "paper's Appendix Table 8: 0.6527 at d = 32)."),
            paper_ref="Table 4", dataset="ml-100k-100"),
        R.FigureCard(
            id="fair-table8-9-ml100k",
            title="FAIR Tables 8-9 (appendix, stand-in): MSE by embedding size and by compression ratio",
            caption=("Table 8: Goodreads-S: Results of FEDAVG (E=1, T=1000, K=10) on two-tower model with embedding "
                     "tables for user and items [...] test mean-square error is reported. Table 9: Server model "
                     "quality on Goodreads-S with FAIR and LowRank (E=1, T=1000, K=10): results of different "
                     "compression settings for embedding table storage on devices."),
            kind="table", paper=P.TABLE8_9, configs=lambda size: _configs(_t89_rows(size)),
            compute_fn=lambda size, progress: _run_rows(_t89_rows(size), "mse", progress),
            plot_fn=lambda ours, paper: FP.table_bars(ours, paper, "mse", x="setting"),
            compare_fn=_t89_compare, tolerance=None,
            tolerance_text=("claims only (Goodreads-S in the paper, ML-100K here: values shown): FAIR below LowRank "
                            "at 16x; FAIR at 4x, 8x, 16x below FedAvg with an embedding table of the same size "
                            "(d = 8, 4, 2); LowRank N/A exactly where the paper has N/A (32x)"),
            expected="MSE falls as FedAvg's embedding grows; FAIR degrades slowly with the compression ratio and "
                     "beats both a smaller model of the same storage and LowRank.",
            columns=("table", "setting", "method", "mse", "round_best"),
            notes=("A stand-in, labelled as such: ML-100K-100 ratings (the 100 users with most ratings, 80/20 per "
                   "user) instead of Goodreads-S, whose ratings are not available; MSE on 1-5 stars.",
                   f"NeuMF-MLP for both tables, where Table 8 used an MLP 10-10-1: its tower halves from 2d, so d = 2 "
                   "and d = 4 keep one and two layers, d >= 8 three (a smaller table also means a smaller tower, "
                   "as in the paper's comparison of Table 8 with Table 9); E = 1, K = 10, "
                   f"{RATING['rounds']} rounds (the paper: 1000), Adam lr 1e-3. FAIR here is FAIR-HOM: every device "
                   "at the one ratio. LowRank is FedHM (the paper: equivalent on embedding tables, Appendix D).",
                   "Table 9's mixed-ratio rows are Table 4's schemes (card fair-table4-ml100k).",
                   "The hash is redrawn where a draw leaves rows empty: run seed 0's first item draw put ML-100K's "
                   "1,682 items on 174 of the 512 rows at 2x and the same 174 of 256 at 4x (docs/topics/fair.md)."),
            paper_ref="Appendix E, Tables 8 and 9", dataset="ml-100k-100"),
        R.FigureCard(
            id="fair-table5-digits", title="FAIR Table 5: FAIR on a general model (MLP), test accuracy per scheme",
            caption=("Test accuracy results of different model capacity settings compared to (uncompressed) full "
                     "FEDAVG MNIST and FEMNIST datasets. N/A implies the scheme cannot be run."),
            kind="table", paper=P.TABLE5, configs=lambda size: _configs(_over_seeds(_t5_rows(size), size)),
            compute_fn=lambda size, progress: _mean_over_seeds(
                _run_rows(_over_seeds(_t5_rows(size), size), "accuracy", progress), "accuracy"),
            plot_fn=lambda ours, paper: FP.table_bars(ours, paper[paper["dataset"] == "mnist"], "accuracy"),
            compare_fn=_t5_compare, tolerance=None,
            tolerance_text=(f"every printed accuracy, the mean of seeds {', '.join(map(str, SEEDS))}, within "
                            f"{R.SPREAD_SIGMAS:g} standard deviations of (ours - paper's) from our spread, and at "
                            f"least {DIGITS_TOL} (digits here, MNIST there; chance is 0.10); FAIR-HET >= FAIR-HOM - "
                            "0.01 in every scheme"),
            expected="All methods near FedAvg at 2x-4x; at 64x FedHM cannot run and FAIR still trains every device.",
            columns=("capacity", "method", "accuracy", "round_best", "accuracy_std", "seeds"),
            notes=("scikit-learn digits (8x8) instead of MNIST: the MLP is 64-512-10 (38,410 parameters, FAIR hashes "
                   "all of them element-wise); 30 devices, Dirichlet(0.5) non-IID, E = 20, K = 10.",
                   f"{DIGITS['rounds']} rounds (the paper: 200), SGD lr {DIGITS['lr']}, batch {DIGITS['batch_size']}.",
                   "FedHM factorizes the hidden layer and keeps the classifier full (as FedHM does); within n / ratio "
                   "values that works up to 4x here, so 2x-4x-8x is N/A for this small input layer (MNIST's 784 "
                   "inputs leave room down to 64x).",
                   DIGITS_SEEDS),
            paper_ref="Table 5", dataset="digits"),
        R.FigureCard(
            id="fair-table6-digits", title="FAIR Table 6: consistent against inconsistent subspaces (MLP on digits)",
            caption="Server model accuracy on MNIST (E=20, K=10) using consistent and inconsistent sub-spaces.",
            kind="table", paper=P.TABLE6, configs=lambda size: _configs(_over_seeds(_t6_rows(size), size)),
            compute_fn=lambda size, progress: _mean_over_seeds(
                _run_rows(_over_seeds(_t6_rows(size), size), "accuracy", progress), "accuracy"),
            plot_fn=lambda ours, paper: FP.table_bars(ours, paper, "accuracy", color="subspaces"),
            compare_fn=_t6_compare, tolerance=None,
            tolerance_text=("every printed accuracy as Table 5 (the mean of three seeds, within the larger of 2 "
                            f"standard deviations of the difference and {DIGITS_TOL}), inconsistent rows included; "
                            "consistent above inconsistent in every setting"),
            expected=("Inconsistent subspaces (a different hash per device) learn worse, homogeneous or not: the "
                      "paper's 0.75-0.90 against 0.96-0.98."),
            columns=("subspaces", "capacity", "accuracy", "round_best", "accuracy_std", "seeds"),
            notes=("Digits 64-512-10 instead of MNIST 784-512-10; see the Table 5 card.", DIGITS_SEEDS),
            paper_ref="Table 6", dataset="digits"),
        R.FigureCard(
            id="fair-fig4", title="FAIR Fig. 4: test metric against round, consistent and inconsistent subspaces",
            caption=("Global test metrics vs. round for consistent and inconsistent (independently drawn) sub-spaces "
                     "for MLPs on MNIST (left) and Embedding on Goodreads-100 ranking task (right) trained using FAIR"),
            kind="figure", paper=pd.DataFrame(columns=["panel", "round", "metric"]),
            configs=lambda size: [c for _, _, c in _fig4_configs(size)], compute_fn=_fig4_compute,
            plot_fn=_fig4_plot, compare_fn=_fig4_compare, tolerance=None,
            tolerance_text="shape: the best consistent value above the best inconsistent one in both panels",
            expected="Consistent subspaces train; inconsistent ones stall well below on both tasks.",
            columns=("panel", "run", "round", "metric"),
            notes=("(a) digits MLP 2x-4x-8x (Tables 5/6 settings); (b) Goodreads-100 FAIR-HET 1x-2x (Table 2 "
                   "settings): with half the devices at 1x, only the 2x half hashes inconsistently there.",),
            paper_ref="Fig. 4", dataset="digits, goodreads-100"),
        R.FigureCard(
            id="fair-fig1-tradeoff", title="FAIR Fig. 1: the model-loss / data-loss trade-off, from runs (ML-1M-100)",
            caption=("Consider the information contributed by a device as the model-size trained with local data. ... "
                     "FAIR provides smooth trade-off where each device can host a different sized model and contribute "
                     "information based on its capacity."),
            kind="figure", paper=pd.DataFrame(columns=["strategy", "devices_share", "metric"]),
            configs=lambda size: tradeoff_configs(_ranking("ml-1m-100", size), TRADEOFF_SCHEME),
            compute_fn=_tradeoff_compute, plot_fn=lambda ours, paper: FP.tradeoff(ours),
            compare_fn=_tradeoff_compare, tolerance=None,
            tolerance_text="shape: FAIR-HET above the best single model size",
            expected="One model size for all who can hold it: the full model keeps a quarter of the devices, the 8x "
                     "model all of them; FAIR-HET, every device at its own size, above the whole curve (the paper).",
            columns=("strategy", "model_ratio", "devices_share", "metric"),
            notes=("Fig. 1 is an illustration in the paper (no numbers); this card draws it from ML-1M-100 runs with "
                   f"devices in four tiers {TRADEOFF_SCHEME} by user id.",),
            paper_ref="Fig. 1 (left)", dataset="ml-1m-100"),
    ]
    for card in cards:
        if card.id not in R._CARDS:
            R.register(R.with_run_times(card, run_times))


_register()


if __name__ == "__main__":  # kept for the commands stored with older results: the same as `labcore figure`
    from ..cli import reproduce_cards

    sys.exit(reproduce_cards(sys.argv[1:], "fair-"))
