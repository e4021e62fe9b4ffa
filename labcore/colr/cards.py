"""CoLR (Nguyen et al., "Towards Efficient Communication and Secure Federated Recommendation System via
Low-rank Training") as figure cards: Fig. 2 to 5 and Tables 2 to 4.

Every card states where it departs from the paper (`notes`). Deviations
shared by all training cards:
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import paper as P
from . import runs as R
from ..figures.registry import SPREAD_SIGMAS, FigureCard, register, seed_tolerance

SPLIT_ML1M = ("ML-1M: the local copy (LightGCN lists) has no timestamps, so each user's test item is a seeded "
              "random interaction, not the latest one as in the paper (leave-latest-out); a random hold-out is "
              "usually a little easier, so absolute HR/NDCG run higher than the paper's.")
SPLIT_PINTEREST = (f"Pinterest: the local copy is a 37.5K-user subset (37,501 users x 9,836 pins, LightGCN lists), "
                   f"not NCF's Pinterest-20 (55,187 users x 9,916 pins) the paper uses; seeded random hold-out with "
                   f"99 seeded negatives. 1% of users = {R.PINTEREST_CLIENTS} clients a round.")
ROUNDS_PINTEREST = (f"Pinterest runs train the paper's {R.PINTEREST_ROUNDS} rounds (evaluation every "
                    f"{R.PINTEREST_ROUNDS // 10}), {R.PINTEREST_CLIENTS} clients a round.")
SCHEDULE_NOTE = ("Clients follow the CoLR authors' schedule (client_schedule='rotating'): the users shuffled once "
                 "(seeded), then M of that list a round in turn, so every user trains once every n_users / M rounds. "
                 "The paper does not say how clients are drawn; the schedule card compares it with uniform sampling.")
LR_NOTE = (f"One learning rate for every method, lr={R.LR} (the paper tuned lr per setting on a validation split "
           f"from {{0.5, 0.1, 0.05, 0.01}}); weight decay 1e-4, item-mean aggregation as in the CoLR reference code.")
FINAL_NOTE = "HR@10 / NDCG@10 are those of the last round (no early stopping, no validation-based model selection)."
SMOKE_NOTE = "Smoke size: the same grid on 600-user synthetic data for 6 rounds; it tests the pipeline only."

COLORS = {"fedmf": "#444444", "colr": "#d62728", "svd": "#1f77b4", "topk": "#2ca02c", "scolr": "#9467bd",
          "paper": "#ff7f0e"}


def _frame(rows: list[dict]) -> pd.DataFrame:
    """The compare table; every row states its kind: number (a printed number, checked at a tolerance), claim
    (a stated claim, checked as stated) or shown (not checked, ok None)."""
    return pd.DataFrame(rows, columns=["quantity", "paper", "ours", "ok", "kind", "note"])


def _pct(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.2f}"


def _no_paper_note(fig: go.Figure, text: str) -> None:
    """A second title line: what the paper gives for this figure (call after the title is set)."""
    title = fig.layout.title.text or ""
    fig.update_layout(title=dict(text=f"{title}<br><sup>{text}</sup>"), margin=dict(t=90))


# --- Fig. 2: PCA components of client updates -------------------------------------------
def _fig2_card(dataset: str) -> FigureCard:
    is_ml = dataset == "ml-1m"
    make = R.ml1m if is_ml else R.pinterest
    dim = 64 if is_ml else R.PINTEREST_DIM

    def configs(size):
        return [make(size, method="fedmf")]

    def compute(size, progress):
        cfg = configs(size)[0]
        res = R.run_all([cfg], progress)[0]
        t = res.table.dropna(subset=["n90_mean"])
        out = t[["round", "n90_mean", "n90_std", "n99_mean", "n99_std", "erank_mean"]].copy()
        out.insert(0, "dim", cfg.dim)
        out.insert(0, "dataset", cfg.dataset)
        return out.reset_index(drop=True)

    def plot(ours, paper):
        fig = go.Figure()
        for key, name, color in (("n99", "N99-PCA", "#2ca02c"), ("n90", "N90-PCA", "#1f77b4")):
            m, s = ours[f"{key}_mean"], ours[f"{key}_std"]
            band_x, band_y = pd.concat([ours["round"], ours["round"][::-1]]), pd.concat([m + s, (m - s)[::-1]])
            fig.add_trace(go.Scatter(x=band_x, y=band_y,
                                     fill="toself", line=dict(width=0), fillcolor=color, opacity=0.2,
                                     showlegend=False, hoverinfo="skip"))
            fig.add_trace(go.Scatter(x=ours["round"], y=m, name=f"{name} (ours, mean ± std over clients)",
                                     line=dict(color=color)))
        if len(ours):
            fig.add_hline(y=int(ours["dim"].iloc[0]), line=dict(dash="dash", color="black"),
                          annotation_text=f"d = {int(ours['dim'].iloc[0])}")
        fig.update_layout(title=f"Fig. 2 ({'MovieLens-1M' if is_ml else 'Pinterest'}): PCA components of client "
                                f"updates, FedMF d={dim}", xaxis_title="round", yaxis_title="components",
                          margin=dict(l=50, r=10, t=80, b=40))
        _no_paper_note(fig, "The paper gives Fig. 2 as an image only: expected shape, N90/N99 far below d.")
        return fig

    def compare(ours, paper):
        d = int(ours["dim"].iloc[0]) if len(ours) else dim
        n90, n99 = float(ours["n90_mean"].mean()), float(ours["n99_mean"].mean())
        # Isotropic (full-rank) updates need about 0.9 d and 0.99 d components: "N99 < d" alone would pass them.
        return _frame([
            {"quantity": f"N90-PCA, mean over rounds (d={d})", "paper": "small (image)", "ours": f"{n90:.2f}",
             "ok": n90 <= d / 4, "kind": "claim", "note": "low rank: N90 <= d/4"},
            {"quantity": f"N99-PCA, mean over rounds (d={d})", "paper": "well below d (image)", "ours": f"{n99:.2f}",
             "ok": n99 <= d / 2, "kind": "claim", "note": "N99 <= d/2 (full-rank updates: about 0.99 d)"},
            {"quantity": "N99-PCA, max over rounds", "paper": "-", "ours": f"{ours['n99_mean'].max():.2f}",
             "ok": None, "kind": "shown", "note": "information"},
            {"quantity": "entropy effective rank, mean", "paper": "-", "ours": f"{ours['erank_mean'].mean():.2f}",
             "ok": None, "kind": "shown", "note": "information"},
        ])

    name = "MovieLens-1M" if is_ml else "Pinterest"
    notes = (SPLIT_ML1M, SCHEDULE_NOTE) if is_ml else (SPLIT_PINTEREST, ROUNDS_PINTEREST, SCHEDULE_NOTE)
    return FigureCard(
        id=f"colr-fig2-{'ml1m' if is_ml else 'pinterest'}",
        title=f"Fig. 2: effective rank of FedMF client updates, {name}",
        caption=("Figure 2. PCA components progression. The figures show the number of components that account for "
                 "99% (N99-PCA in green) and 90% (N95-PCA in blue) explained variance of all transfer item embedding "
                 "matrix across communication rounds on MovieLens-1M (left) and Pinterest (right) datasets."),
        kind="figure", paper=pd.DataFrame(columns=["round", "n90_mean", "n99_mean"]), configs=configs,
        compute_fn=compute, plot_fn=plot, compare_fn=compare, tolerance=None,
        tolerance_text="shape: mean N90 over rounds <= d/4 and mean N99 <= d/2 (the paper gives no numbers)",
        expected=(f"Client updates of FedMF (d={dim}) are close to low rank: a few components explain 90% of the "
                  f"variance and N99 stays well below d through training."),
        columns=("round", "n90_mean", "n90_std", "n99_mean", "n99_std", "erank_mean", "dim"),
        notes=notes + ("Measured every 10th round on the sampled clients' item-table updates (items as samples), "
                       "shared with Fig. 3's FedMF run; the caption's 'N95' means N90.", SMOKE_NOTE),
        paper_ref="none (image only)", dataset=dataset,
    )


# --- Fig. 3 / Fig. 4: utility against communication size ---------------------------------
def _size_plot(ours: pd.DataFrame, paper: pd.DataFrame, title: str, methods: list[tuple[str, str]],
               base_dashed: bool = False) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=("HR@10", "NDCG@10"))
    for col, metric in ((1, "hr"), (2, "ndcg")):
        for method, name in methods:
            s = ours[ours["method"] == method].sort_values("size_kb")
            if not len(s):
                continue
            dashed = base_dashed and method == "fedmf"
            fig.add_trace(go.Scatter(x=s["size_kb"], y=s[metric], mode="lines+markers", name=name,
                                     text=s["label"], legendgroup=method, showlegend=col == 1,
                                     line=dict(color=COLORS[method], dash="dash" if dashed else "solid")),
                          row=1, col=col)
        if len(paper) and "size_kb" in paper:
            fig.add_trace(go.Scatter(x=paper["size_kb"], y=paper[metric], mode="markers", name="paper (quoted in text)",
                                     text=paper["label"], legendgroup="paper", showlegend=col == 1,
                                     marker=dict(symbol="x", size=11, color=COLORS["paper"])), row=1, col=col)
        fig.update_xaxes(type="log", title_text="KB per client per round, each way (paper accounting)", row=1, col=col)
    fig.update_layout(title=title, margin=dict(l=50, r=10, t=80, b=50))
    return fig


def _seed_pairs(ours: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Methods a and b side by side at each k (hr_a, hr_b): the mean over the seeds that both ran there, with those
    `seeds` and the per-seed HR differences `diffs` (a - b)."""
    if "seed" not in ours:
        ours = ours.assign(seed=0)
    x = ours[ours["method"] == a][["k", "seed", "hr", "ndcg"]]
    y = ours[ours["method"] == b][["k", "seed", "hr", "ndcg"]]
    both = x.merge(y, on=["k", "seed"], suffixes=(f"_{a}", f"_{b}"))
    rows = []
    for k, g in both.groupby("k", sort=True):
        rows.append({"k": k, f"hr_{a}": g[f"hr_{a}"].mean(), f"hr_{b}": g[f"hr_{b}"].mean(),
                     "seeds": tuple(int(s) for s in g["seed"]), "diffs": tuple(g[f"hr_{a}"] - g[f"hr_{b}"])})
    return pd.DataFrame(rows)


RATIO_STATED_POINTS = 5.0  # the ratio's tolerance without a seed spread (a stored result of one seed)


def _first_seed(ours: pd.DataFrame) -> pd.DataFrame:
    """The grid's own runs (seed 0): the extra seeds only give a checked number its spread."""
    return ours[ours["seed"] == 0] if "seed" in ours else ours


def _ratio_per_seed(ours: pd.DataFrame, ratio_k: int) -> pd.Series:
    """HR(CoLR@ratio_k) / HR(FedMF at the largest d), per seed that has both runs."""
    seeds = ours["seed"] if "seed" in ours else pd.Series(0, index=ours.index)
    top = ours[(ours["method"] == "fedmf") & (ours["dim"] == ours["dim"].max())].groupby(seeds)["hr"].first()
    low = ours[(ours["method"] == "colr") & (ours["k"] == ratio_k)].groupby(seeds)["hr"].first()
    return (low / top).dropna()


def _fig3_card(dataset: str) -> FigureCard:
    is_ml = dataset == "ml-1m"

    def configs(size):
        grid = R.fedmf_grid(size, dataset) + R.colr_grid(size, dataset)
        top_dim = max(c.dim for c in grid)
        ratio_pair = [c for c in grid if (c.method, c.rank if c.method == "colr" else c.dim) in
                      (("colr", ratio_k), ("fedmf", top_dim))]
        return grid + [c.replace(seed=s) for s in R.SPREAD_SEEDS for c in ratio_pair]

    def compute(size, progress):
        return R.summarize(configs(size), progress)

    if is_ml:
        paper = pd.DataFrame([{"label": "HR(CoLR@4) / HR(FedMF d=64)", "hr_ratio": P.HR_RETAINED_6PCT}])
        top = "FedMF d=64"
        ratio_k = 4
    else:
        paper = P.FIG3_PINTEREST.copy()
        paper["size_kb"] = 4 * 9916 * paper["k"] / 1024  # the paper's Pinterest-20 has 9,916 items
        top = f"FedMF d={R.PINTEREST_DIM}"
        ratio_k = 1

    def plot(ours, paper):
        ours = _first_seed(ours)
        fig = _size_plot(ours, paper, f"Fig. 3 ({'MovieLens-1M' if is_ml else 'Pinterest'}): CoLR against FedMF "
                                      f"at equal communication", [("fedmf", "FedMF, d varies"),
                                                                  ("colr", f"CoLR d={ours['dim'].max()}, r varies")])
        if is_ml:
            _no_paper_note(fig, "The paper gives Fig. 3 (ML-1M) as an image; its text: CoLR consistently beats "
                                "FedMF at equal size and keeps 93.65% of FedMF-64's HR at 6.25% of the size.")
        return fig

    def compare(ours, paper):
        # "consistently outperforms": CoLR above FedMF at every budget, one claim a budget
        every_seed, ours = ours, _first_seed(ours)
        rows = [{"quantity": f"k={int(p['k'])}: HR CoLR@k vs FedMF d=k", "paper": "CoLR higher",
                 "ours": f"{_pct(p['hr_colr'])} vs {_pct(p['hr_fedmf'])}", "ok": bool(p["hr_colr"] > p["hr_fedmf"]),
                 "kind": "claim", "note": "'consistently outperforms': every budget"}
                for _, p in _seed_pairs(ours, "colr", "fedmf").iterrows()]
        ratios = _ratio_per_seed(every_seed, ratio_k)
        if len(ratios):
            want = 100 * (P.HR_RETAINED_6PCT if is_ml else P.HR_RETAINED_6PCT_PINTEREST)
            mean, std = 100 * float(ratios.mean()), 100 * float(ratios.std(ddof=0))
            tol = seed_tolerance(std, len(ratios), 1, RATIO_STATED_POINTS)
            ok = abs(mean - want) <= tol
            note = (f"mean of {len(ratios)} seeds, ± {std:.2f} points; within {tol:.2f} points "
                    f"({SPREAD_SIGMAS:g} standard deviations of ours - paper's one run)"
                    if len(ratios) > 1 else f"one seed: within the stated {tol:g} points")
            if not ok:
                note += (f"; a miss by {abs(mean - want):.2f} points, cause not measured: our data are not the "
                         "paper's (" + ("a random hold-out on a copy without timestamps" if is_ml else
                                        "a 37.5K-user subset, random hold-out") + ")")
            rows.append({"quantity": f"HR(CoLR@{ratio_k}) / HR({top}) (6.25% of the size)",
                         "paper": f"{want:.2f}%", "ours": f"{mean:.2f}%", "ok": ok, "kind": "number", "note": note})
        if not is_ml:
            for _, p in paper.iterrows():
                o = ours[(ours["method"] == p["method"]) & (ours["k"] == p["k"])]
                for m in ("hr", "ndcg"):
                    rows.append({"quantity": f"{p['label']} {m.upper()}@10", "paper": _pct(p[m]),
                                 "ours": _pct(float(o[m].iloc[0])) if len(o) else "n/a", "ok": None,
                                 "kind": "shown",
                                 "note": "information: another Pinterest (37.5K-user subset, not Pinterest-20)"})
        return _frame(rows)

    name = "MovieLens-1M" if is_ml else "Pinterest"
    grid = (f"FedMF d in {{{', '.join(map(str, R.ML1M_DIMS))}}}, CoLR d=64 r in {{{', '.join(map(str, R.ML1M_RANKS))}}}"
            if is_ml else f"FedMF d in {{{', '.join(map(str, R.PINTEREST_DIMS))}}}, CoLR d=16 r in "
                          f"{{{', '.join(map(str, R.PINTEREST_RANKS))}}}")
    notes = (SPLIT_ML1M, SCHEDULE_NOTE) if is_ml else (SPLIT_PINTEREST, ROUNDS_PINTEREST, SCHEDULE_NOTE)
    return FigureCard(
        id=f"colr-fig3-{'ml1m' if is_ml else 'pinterest'}",
        title=f"Fig. 3: HR@10 and NDCG@10 against communication size, {name} ({grid})",
        caption=("Figure 3. HR and NDCG on MovieLens-1M dataset (Top) and Pinterest Dataset (Bottom). We plot the "
                 "utilities versus the communication size and compare CoLR with the base model with the same transfer "
                 "size. The x-axis is plotted using a log scale."),
        kind="figure", paper=paper, configs=configs, compute_fn=compute, plot_fn=plot, compare_fn=compare,
        tolerance=SPREAD_SIGMAS,
        tolerance_text=("CoLR@k above FedMF d=k in HR@10 at every budget ('consistently outperforms'), and the HR "
                        f"kept at 6.25% of the size within {SPREAD_SIGMAS:g} standard deviations of the difference "
                        f"from the paper's ratio, from our spread over seeds 0, "
                        f"{', '.join(map(str, R.SPREAD_SEEDS))}"),
        expected=("At equal transfer size CoLR beats FedMF at every budget point; small-d FedMF loses "
                  "accuracy faster than CoLR as the budget shrinks."),
        columns=("label", "method", "k", "seed", "size_kb", "up_kb", "down_kb", "hr", "ndcg"),
        notes=notes + (LR_NOTE, FINAL_NOTE, "Communication size is the paper's accounting (N x k float32 per client "
                       "and direction); the measured bytes with framing and the item mask are in up_kb / down_kb.",
                       SMOKE_NOTE),
        paper_ref=("abstract/introduction (93.65% of HR at 6.25% of the size)" if is_ml else
                   "section 5.2 (1): CoLR@1 81.03/48.50 vs FedMF d=16 84.74/51.79 (HR/NDCG %)"),
        dataset=dataset,
    )


# --- Fig. 4: CoLR against SVD and Top-K -----------------------------------------------------
def _fig4_card(dataset: str) -> FigureCard:
    is_ml = dataset == "ml-1m"
    name = "MovieLens-1M" if is_ml else "Pinterest"
    d = 64 if is_ml else R.PINTEREST_DIM
    ranks = R.fig4_ranks(dataset)

    def configs(size):
        grid = (R.colr_grid(size, dataset) + R.svd_grid(size, dataset) + R.topk_grid(size, dataset)
                + R.fedmf_grid(size, dataset))
        if is_ml:
            return grid
        close = [c for c in grid if c.method in ("colr", "topk") and R.budget(c) in R.FIG4_SEEDED_PINTEREST]
        return grid + [c.replace(seed=s) for s in R.SPREAD_SEEDS for c in close]

    def compute(size, progress):
        return R.summarize(configs(size), progress)

    def plot(ours, paper):
        ours = _first_seed(ours)
        fig = _size_plot(ours, paper, f"Fig. 4 ({name}): CoLR against SVD and Top-K at equal compression ratio",
                         [("colr", "CoLR@r"), ("svd", "SVD@r"), ("topk", "TopK r/d (values + indices)"),
                          ("fedmf", "FedMF, d varies (base)")], base_dashed=True)
        _no_paper_note(fig, "The paper gives Fig. 4 as an image; its text: CoLR is better across the range of budgets.")
        return fig

    def compare(ours, paper):
        # "better performance across the range of communication budgets": every ratio, one claim each, on the
        # mean over the seeds both methods ran at that ratio
        rows = []
        for other, label in (("svd", "SVD@r"), ("topk", "TopK r/d")):
            for _, p in _seed_pairs(ours, "colr", other).iterrows():
                seeds = p["seeds"]
                note = "'across the range': every ratio" + (
                    f"; means of seeds {', '.join(map(str, seeds))}, CoLR - {label} per seed "
                    + ", ".join(f"{100 * x:+.2f}" for x in p["diffs"]) + " points" if len(seeds) > 1 else "")
                rows.append({"quantity": f"r={int(p['k'])}: HR CoLR vs {label}", "paper": "CoLR higher",
                             "ours": f"{_pct(p['hr_colr'])} vs {_pct(p[f'hr_{other}'])}",
                             "ok": bool(p["hr_colr"] > p[f"hr_{other}"]), "kind": "claim", "note": note})
        # Top-K sends values and indices: at equal bytes it meets CoLR@2r
        ours = _first_seed(ours)
        colr = ours[ours["method"] == "colr"].set_index("k")["hr"]
        for _, p in ours[ours["method"] == "topk"].sort_values("k").iterrows():
            k2 = int(p["k"]) * 2
            if k2 in colr.index:
                rows.append({"quantity": f"equal bytes: HR CoLR@{k2} vs TopK {int(p['k'])}/{int(p['dim'])}",
                             "paper": "-", "ours": f"{_pct(colr[k2])} vs {_pct(p['hr'])}", "ok": None,
                             "kind": "shown", "note": "information"})
        return _frame(rows)

    data_notes = (SPLIT_ML1M, SCHEDULE_NOTE) if is_ml else (SPLIT_PINTEREST, ROUNDS_PINTEREST, SCHEDULE_NOTE)
    return FigureCard(
        id=f"colr-fig4-{'ml1m' if is_ml else 'pinterest'}",
        title=f"Fig. 4: CoLR against SVD and Top-K compression at equal compression ratios, {name}",
        caption=("Figure 4. HR and NDCG on MovieLens-1M dataset (Top) and Pinterest Dataset (Bottom). We plot the "
                 "utilities versus the communication size and compare CoLR with the base model with the same transfer "
                 "size. The x-axis is plotted using a log scale. The dashed black line is the base model's performance "
                 "with different embedding sizes. For fair comparisons, we set the compression ratio of each method "
                 "to be equal."),
        kind="figure", paper=pd.DataFrame(columns=["label", "size_kb", "hr", "ndcg"]), configs=configs,
        compute_fn=compute, plot_fn=plot, compare_fn=compare, tolerance=None,
        tolerance_text=("shape: CoLR@r above SVD@r and above TopK r/d at every ratio (the paper gives no numbers)"
                        + ("" if is_ml else "; at r = 4 and 8, CoLR and Top-K on the mean of seeds 0, 1, 2")),
        expected=("At equal compression ratio (uplink and downlink both compressed) CoLR beats SVD and Top-K at every "
                  "ratio (the paper: 'across the range of communication budgets'); Top-K moves twice the values of "
                  "CoLR (values + indices)."),
        columns=(("label", "method", "k") + (() if is_ml else ("seed",))
                 + ("size_kb", "up_kb", "down_kb", "hr", "ndcg")),
        notes=data_notes + (LR_NOTE, FINAL_NOTE,
               f"SVD@r sends the best rank-r factors of the client update (U S, N x r, and V, d x r) and of the "
               f"aggregate; TopK keeps r/d of the values (r in {', '.join(map(str, ranks))} of d = {d}) and sends "
               "int32 indices; both compress the downlink too.", SMOKE_NOTE),
        paper_ref="none (image only); section 5.2 (2) text", dataset=dataset,
    )


# --- Fig. 5: initializations of B ------------------------------------------------------------
def _fig5_card() -> FigureCard:
    def configs(size):
        return [c for b in R.B_INITS + (R.FIG5_DIAGNOSTIC,) for c in R.colr_grid(size, b_init=b, ranks=R.FIG5_RANKS)]

    def compute(size, progress):
        return R.summarize(configs(size), progress)

    def plot(ours, paper):
        fig = make_subplots(rows=1, cols=2, subplot_titles=("HR@10", "NDCG@10"))
        for col, metric in ((1, "hr"), (2, "ndcg")):
            for b, color in zip(R.B_INITS + (R.FIG5_DIAGNOSTIC,), ("#d62728", "#1f77b4", "#2ca02c", "#2ca02c")):
                s = ours[ours["b_init"] == b].sort_values("k")
                if s.empty:
                    continue
                name = "B ~ sphere x sqrt(d/r) (ours)" if b == R.FIG5_DIAGNOSTIC else f"B ~ {b}"
                fig.add_trace(go.Scatter(x=s["k"], y=s[metric], mode="lines+markers", name=name, legendgroup=b,
                                         showlegend=col == 1, line=dict(color=color,
                                                                        dash="dot" if b == R.FIG5_DIAGNOSTIC else None)),
                              row=1, col=col)
            fig.update_xaxes(type="log", title_text="rank r", row=1, col=col)
        fig.update_layout(title="Fig. 5 (MovieLens-1M): CoLR with three distributions of B",
                          margin=dict(l=50, r=10, t=80, b=50))
        _no_paper_note(fig, "The paper gives Fig. 5 as an image: expected shape, the three choices of B are close.")
        return fig

    def compare(ours, paper):
        rows = []
        three = ours[ours["b_init"].isin(R.B_INITS)]
        spread = three.groupby("k")["hr"].agg(lambda s: s.max() - s.min())
        rows.append({"quantity": "largest HR spread across the three B at one rank", "paper": "close (image)",
                     "ours": f"{100 * spread.max():.2f} pts", "ok": bool(spread.max() <= 0.02), "kind": "claim",
                     "note": "<= 2 HR points"})
        for k, s in ours.groupby("k"):
            hr = {b: float(s[s["b_init"] == b]["hr"].iloc[0]) for b in s["b_init"]}
            rows.append({"quantity": f"r={int(k)}: HR normal / orthonormal / sphere / sphere x sqrt(d/r)",
                         "paper": "-", "ours": " / ".join(_pct(hr.get(b)) for b in R.B_INITS + (R.FIG5_DIAGNOSTIC,)),
                         "ok": None, "kind": "shown",
                         "note": "information: the last is ours, the sphere at the others' scale"})
        return _frame(rows)

    return FigureCard(
        id="colr-fig5-ml1m",
        title="Fig. 5: CoLR with B drawn from a normal distribution, as an orthonormal matrix, or on the unit sphere",
        caption="Figure 5. Result with different initialization strategy for B on MovieLens-1M dataset",
        kind="figure", paper=pd.DataFrame(columns=["b_init", "k", "hr", "ndcg"]), configs=configs, compute_fn=compute,
        plot_fn=plot, compare_fn=compare, tolerance=0.02,
        tolerance_text="shape: at every rank the three distributions are within 2 HR points of each other",
        expected="The choice of B's distribution matters little: the three curves of HR against r nearly coincide.",
        columns=("label", "b_init", "k", "hr", "ndcg"),
        notes=(SPLIT_ML1M, SCHEDULE_NOTE, LR_NOTE, FINAL_NOTE,
               "normal: N(0, 1/r) entries; orthonormal: orthonormal columns scaled by sqrt(d/r) (E[B B^T] = I); "
               "sphere: columns uniform on the unit sphere, so E[B B^T] = (r/d) I and steps are r/d times smaller "
               "at one learning rate (the paper tuned lr per setting). The dotted curve (ours, not in the paper) "
               "scales the sphere's columns by sqrt(d/r) to the others' second moment. The appendix text is cut off "
               "after 'The result is s', so the expected shape is our reading of the figure's purpose.",
               f"Ranks r in {{{', '.join(map(str, R.FIG5_RANKS))}}} (not every rank of Fig. 3) to keep the card to "
               f"nine runs beyond Fig. 3's normal-B runs.", SMOKE_NOTE),
        paper_ref="appendix A, Fig. 5 (image only)", dataset="ml-1m",
    )


# --- Table 2: communication and computation time ------------------------------------------------
def table2_paper_accounting(n_items: int = P.ML1M_ITEMS, d: int = P.ML1M_DIM, rounds: int = P.ML1M_ROUNDS,
                            ranks=R.ML1M_RANKS, topk_ranks=R.TOPK_RANKS, bw_down: float = 0.75,
                            bw_up: float = 0.25) -> pd.DataFrame:
    """Table 2's communication column from the paper's accounting (analytic, no training).

    One client moves per round, each way: MF-d N x d float32; CoLR@r N x r; SVD@r N x r; TopK@r 2 N r
    (r/d of the values plus their indices). MB = 2**20 bytes.
    """
    rows = [(f"MF-{d}", n_items * d)]
    rows += [(f"CoLR@{r}", n_items * r) for r in ranks]
    rows += [(f"SVD@{r}", n_items * r) for r in ranks]
    rows += [(f"TopK@{r}", 2 * n_items * r) for r in topk_ranks]
    return pd.DataFrame([{"method": m, "values_per_round": v, "comm_min_paper_accounting":
                          R.comm_minutes(v, rounds, bw_down, bw_up)} for m, v in rows])


def _table2_card() -> FigureCard:
    def configs(size):
        return [R.ml1m(size, method="fedmf")] + R.colr_grid(size) + R.svd_grid(size) + R.topk_grid(size)

    def compute(size, progress):
        cfgs = configs(size)
        res = R.run_all(cfgs, progress)
        base = cfgs[0]
        acc = table2_paper_accounting(R.n_items(base), base.dim, base.rounds, bw_down=base.bw_down, bw_up=base.bw_up)
        rows = []
        for c, r in zip(cfgs, res):
            t = r.table
            rows.append({"method": R.table2_label(c), "label": R.label(c), "rounds": len(t),
                         "comm_min_measured": t["t_comm"].sum() / 60, "comp_min": t["t_comp"].sum() / 60,
                         "total_min": t["t_round"].sum() / 60,
                         "up_bytes_client": float(t["bytes_up_client"].mean()),
                         "down_bytes_client": float(t["bytes_down_client"].mean())})
        return acc.merge(pd.DataFrame(rows), on="method", how="left")

    def _with_paper(ours, paper):
        pp = paper.add_suffix("_paper").rename(columns={"method_paper": "method"})
        return ours.merge(pp, on="method", how="left")

    def plot(ours, paper):
        m = _with_paper(ours, paper)
        fig = make_subplots(rows=1, cols=2,
                            subplot_titles=("communication (min, log scale)", "total training time (min)"))
        for col, y, name, color in ((1, "comm_min_paper_accounting", "ours, paper accounting", COLORS["colr"]),
                                    (1, "comm_min_measured", "ours, measured bytes", "#e377c2"),
                                    (1, "comm_min_paper", "paper", COLORS["paper"]),
                                    (2, "total_min", "ours, total", "#7f7f7f"),
                                    (2, "total_min_paper", "paper, total", COLORS["paper"])):
            fig.add_trace(go.Bar(x=m["method"], y=m[y], name=name, marker_color=color,
                                 showlegend=not (col == 2 and y.endswith("_paper"))), row=1, col=col)
        fig.update_yaxes(type="log", row=1, col=1)
        fig.update_layout(barmode="group", title="Table 2 (MovieLens-1M, 1000 rounds): round-time model",
                          margin=dict(l=50, r=10, t=80, b=80))
        return fig

    def compare(ours, paper):
        m = _with_paper(ours, paper).dropna(subset=["comm_min_paper"])
        rows = []
        for _, p in m.iterrows():
            ok = abs(round(p["comm_min_paper_accounting"], 2) - p["comm_min_paper"]) < 1e-9
            meas = "not run" if p["comm_min_measured"] != p["comm_min_measured"] else f"{p['comm_min_measured']:.2f}"
            rows.append({"quantity": f"{p['method']} communication (min)", "paper": f"{p['comm_min_paper']:.2f}",
                         "ours": f"{p['comm_min_paper_accounting']:.2f} (measured {meas})",
                         "ok": ok, "kind": "number", "note": "paper accounting, exact to 0.01"})
        for _, p in m.dropna(subset=["comp_min"]).iterrows():
            rows.append({"quantity": f"{p['method']} computation / total (min)",
                         "paper": f"{p['comp_min_paper']:.2f} / {p['total_min_paper']:.2f}",
                         "ours": f"{p['comp_min']:.2f} / {p['total_min']:.2f}", "ok": None, "kind": "shown",
                         "note": "calibrated compute model"})
        return _frame(rows)

    return FigureCard(
        id="colr-table2-ml1m",
        title="Table 2: communication, computation and total training time (round-time model), MovieLens-1M",
        caption="Table 2. Communication times and Training times for MovieLens-1M dataset.",
        kind="table", paper=P.TABLE2.copy(), configs=configs, compute_fn=compute, plot_fn=plot, compare_fn=compare,
        tolerance=0.005,
        tolerance_text="communication column in the paper's accounting equal to the paper's to 0.01 min (exact)",
        expected=("Communication is exact (analytic): MF-64 80.43 min, CoLR@r and SVD@r 1.26 r, TopK@r twice that. "
                  "Computation is ~169 min for every method (C_comp = 10 s a round dominates)."),
        columns=("method", "comm_min_paper_accounting", "comm_min_measured", "comp_min", "total_min"),
        notes=(SCHEDULE_NOTE, "Round-time model of section 5.2 (2): B_down 0.75 MB/s, B_up 0.25 MB/s, R_comp 7, C_comp 10 s, "
               "MB = 2**20 bytes (with 10**6 the MF-64 row would be 84.3 min, not 80.43).",
               "comm_min_paper_accounting: the paper's accounting (MF-64 N x d float32 each way, CoLR@r and SVD@r "
               "N x r, TopK@r 2 N r). comm_min_measured: our serialized messages, with framing, the 1-bit-per-item "
               "mask item-mean aggregation needs, SVD's d x r factor V and the Top-K indices of the broadcast.",
               f"Measured columns for the runs Fig. 3 and Fig. 4 share: MF-64, CoLR@1..32, SVD@r and TopK@r for r in "
               f"{{{', '.join(map(str, R.FIG4_RANKS))}}}; the other SVD / TopK rows are analytic only.",
               "Computation uses calibrated constants (2 us per local sample-epoch, 2 ns per aggregated value), "
               "not this machine's timings, so it is reproducible; the paper measured its GPU machine.",
               SMOKE_NOTE),
        paper_ref="Table 2 (section 5.2 (2))", dataset="ml-1m",
    )


# --- Table 3: encryption overheads ------------------------------------------------------------
def _table3_paper() -> pd.DataFrame:
    from ..privacy.costs import PAPER_TABLE3

    return pd.DataFrame([{"method": m, "client_s": v[0], "server_s": v[1], "ciphertext_kb": v[2],
                          "plaintext_kb": v[3], "ratio": v[4]} for m, v in PAPER_TABLE3.items()])


def _table3_card() -> FigureCard:
    cols = ("method", "scheme", "n_values", "n_ciphertexts", "client_s", "server_s", "ciphertext_kb", "plaintext_kb",
            "ratio", "extrapolated", "basis")

    def compute(size, progress):
        from ..privacy.costs import table3_rows

        rows = table3_rows(smoke=size == "smoke")
        return pd.DataFrame([{c: r.get(c) for c in cols} for r in rows])

    def plot(ours, paper):
        m = ours.merge(paper, on="method", how="left", suffixes=("", "_paper"))
        fig = make_subplots(rows=1, cols=2, subplot_titles=("client + server overhead (s)", "ciphertext size (KB)"))
        fig.add_trace(go.Bar(x=m["method"], y=m["client_s"] + m["server_s"], name="ours", marker_color=COLORS["colr"]),
                      row=1, col=1)
        fig.add_trace(go.Bar(x=m["method"], y=m["client_s_paper"] + m["server_s_paper"], name="paper",
                             marker_color=COLORS["paper"]), row=1, col=1)
        fig.add_trace(go.Bar(x=m["method"], y=m["ciphertext_kb"], name="ours", marker_color=COLORS["colr"],
                             showlegend=False), row=1, col=2)
        fig.add_trace(go.Bar(x=m["method"], y=m["ciphertext_kb_paper"], name="paper", marker_color=COLORS["paper"],
                             showlegend=False), row=1, col=2)
        fig.update_yaxes(type="log")
        fig.update_layout(barmode="group",
                          title="Table 3 (MovieLens-1M): CKKS (FedMF, CoLR) and Paillier (Top-K) costs",
                          margin=dict(l=50, r=10, t=80, b=80))
        return fig

    def compare(ours, paper):
        m = ours.merge(paper, on="method", how="inner", suffixes=("", "_paper"))
        rows = []
        for _, p in m.iterrows():
            rows.append({"quantity": f"{p['method']} plaintext KB", "paper": f"{p['plaintext_kb_paper']:.0f}",
                         "ours": f"{p['plaintext_kb']:.1f}",
                         "ok": abs(p["plaintext_kb"] - p["plaintext_kb_paper"]) <= 1, "kind": "number",
                         "note": "exact up to the paper's rounding"})
        for _, p in m.iterrows():
            rows.append({"quantity": f"{p['method']} client / server s, ciphertext KB",
                         "paper": (f"{p['client_s_paper']:.2f} / {p['server_s_paper']:.2f}, "
                                   f"{p['ciphertext_kb_paper']:.0f}"),
                         "ours": f"{p['client_s']:.2f} / {p['server_s']:.2f}, {p['ciphertext_kb']:.0f}", "ok": None,
                         "kind": "shown", "note": "extrapolated" if p["extrapolated"] else "measured"})
        colr = ours[ours["method"].str.startswith("CoLR")]
        topk = ours[ours["method"].str.startswith("TopK")]
        if len(colr) and len(topk):
            worst, best = (colr["client_s"] + colr["server_s"]).max(), (topk["client_s"] + topk["server_s"]).min()
            rows.append({"quantity": "largest CoLR overhead < smallest TopK overhead (client + server)",
                         "paper": "yes (0.3 + 1.03 s < 88 + 88 s)", "ours": f"{worst:.2f} s < {best:.2f} s",
                         "ok": bool(worst < best), "kind": "claim", "note": "shape"})
            tk = (topk["client_s"] + topk["server_s"]).to_numpy()
            growth = tk[1:] / tk[:-1]
            doubles = bool(len(growth) and ((growth > 1.5) & (growth < 2.5)).all())
            # rows extrapolated from one per-value cost double by construction: that is no check
            linear = bool(topk["basis"].astype(str).str.startswith("extrapolated").all()) if "basis" in topk else False
            rows.append({"quantity": "TopK overhead growth when k doubles", "paper": "x2",
                         "ours": ", ".join(f"x{g:.2f}" for g in growth), "ok": None if linear else doubles,
                         "kind": "shown" if linear else "claim",
                         "note": "by construction: every Top-K row is extrapolated from one per-value cost"
                         if linear else "shape"})
        return _frame(rows)

    return FigureCard(
        id="colr-table3-ml1m",
        title=("Table 3: encryption overheads and ciphertext / plaintext sizes (CKKS for FedMF and CoLR, "
               "Paillier for Top-K)"),
        caption=("Table 3. Overheads, and Communication ratios for MovieLens-1M dataset; Comm Ratio is calculated by "
                 "file sizes of Ciphertext over file sizes of Plaintext."),
        kind="table", paper=_table3_paper(), configs=lambda size: [], compute_fn=compute, plot_fn=plot,
        compare_fn=compare, tolerance=1.0,
        tolerance_text=("plaintext sizes equal to the paper's (to 1 KB); CoLR's overheads below every Top-K row; "
                        "Top-K's overhead doubles with k (shown, not checked, when every Top-K row is extrapolated "
                        "linearly)"),
        expected=("CKKS packs thousands of values per ciphertext, so CoLR's cost grows in steps and stays far below "
                  "Paillier-encrypted Top-K, whose cost doubles with k."),
        columns=("method", "client_s", "server_s", "ciphertext_kb", "plaintext_kb", "ratio"),
        notes=("From labcore.privacy.costs.table3_rows (N = 3706 items, d = 64): rows with few ciphertexts run a real "
               "encrypted round, larger ones are extrapolated from measured per-ciphertext / per-value costs "
               "(`basis` says which). Times are this machine's CPU, the paper's were its own machine's.",
               "The paper does not state its HE parameters or clients per round; ours (CKKS degree, Paillier key "
               "size, clients) are in labcore.privacy.costs.TABLE3_SETTINGS. Ciphertext sizes therefore differ; "
               "the step structure of CoLR's sizes and the Top-K / CoLR cost gap are what carry over.",
               "Smoke size: 1024-bit Paillier key, small samples, no real Paillier round."),
        paper_ref="Table 3 (section 5.2 (3)), via labcore.privacy.costs.PAPER_TABLE3", dataset="ml-1m",
    )


# --- Table 4: SCoLR ---------------------------------------------------------------------------
TABLE4_STATED_POINTS = 5.0  # without a seed spread


def _table4_card() -> FigureCard:
    def configs(size):
        return [c.replace(seed=s) for s in (0,) + R.SPREAD_SEEDS for c in R.scolr_grid(size)]

    def compute(size, progress):
        runs = R.summarize(configs(size), progress)
        df = runs.groupby("rank", sort=False).agg(
            hr=("hr", "mean"), ndcg=("ndcg", "mean"), hr_std=("hr", lambda x: x.std(ddof=0)),
            ndcg_std=("ndcg", lambda x: x.std(ddof=0)), seeds=("seed", "nunique")).reset_index()
        df.insert(0, "global_rank", df.pop("rank").astype(int))
        df.insert(1, "local_rank", [f"1-{r}" for r in df["global_rank"]])
        return df

    def plot(ours, paper):
        m = ours.merge(paper, on="global_rank", how="left", suffixes=("", "_paper"))
        fig = make_subplots(rows=1, cols=2, subplot_titles=("HR@10", "NDCG@10"))
        x = [f"r_g={g} (1-{g})" for g in m["global_rank"]]
        for col, metric in ((1, "hr"), (2, "ndcg")):
            err = (dict(type="data", array=m[f"{metric}_std"], visible=True) if f"{metric}_std" in m else None)
            fig.add_trace(go.Bar(x=x, y=m[metric], name="ours (mean, ± sd of seeds)", error_y=err,
                                 marker_color=COLORS["scolr"], showlegend=col == 1), row=1, col=col)
            fig.add_trace(go.Bar(x=x, y=m[f"{metric}_paper"], name="paper", marker_color=COLORS["paper"],
                                 showlegend=col == 1), row=1, col=col)
        fig.update_layout(barmode="group", title="Table 4 (MovieLens-1M): SCoLR, local ranks drawn uniformly",
                          margin=dict(l=50, r=10, t=80, b=50))
        return fig

    def compare(ours, paper):
        m = ours.merge(paper, on="global_rank", how="inner", suffixes=("", "_paper"))
        rows = []
        for metric, name in (("hr", "HR@10"), ("ndcg", "NDCG@10")):
            for _, p in m.iterrows():
                std, seeds = 100 * float(p.get(f"{metric}_std", math.nan)), int(p.get("seeds", 1))
                tol = seed_tolerance(std, seeds, 1, TABLE4_STATED_POINTS)
                ok = abs(p[metric] - p[f"{metric}_paper"]) * 100 <= tol
                note = (f"mean of {seeds} seeds, ± {std:.2f} points; within {tol:.2f} points" if seeds > 1 else
                        f"within the stated {tol:g} points")
                if not ok:
                    note += "; a miss, cause unknown (the card's notes say what was ruled out)"
                rows.append({"quantity": f"SCoLR r_g={p['global_rank']} (1-{p['global_rank']}) {name}",
                             "paper": _pct(p[f"{metric}_paper"]), "ours": _pct(p[metric]), "ok": ok, "kind": "number",
                             "note": note})
        return _frame(rows)

    return FigureCard(
        id="colr-table4-ml1m",
        title="Table 4: SCoLR with global rank 32, 16, 8, 4 and local ranks drawn uniformly, MovieLens-1M",
        caption=("Table 4. HR, NDCG of SCoLR algorithm on the MovieLens-1M dataset under computation/device "
                 "heterogeneity settings."),
        kind="table", paper=P.TABLE4.copy(), configs=configs, compute_fn=compute, plot_fn=plot,
        compare_fn=compare, tolerance=SPREAD_SIGMAS,
        tolerance_text=(f"HR@10 and NDCG@10, means of seeds 0, {', '.join(map(str, R.SPREAD_SEEDS))}, within "
                        f"{SPREAD_SIGMAS:g} standard deviations of the difference from the paper's at every global "
                        f"rank (the stated {TABLE4_STATED_POINTS:g} points without a spread)"),
        expected="HR and NDCG fall as the global rank shrinks (64.6, 60.3, 52.8, 46.0 HR for r_g = 32, 16, 8, 4).",
        columns=("global_rank", "local_rank", "hr", "ndcg", "hr_std", "ndcg_std", "seeds"),
        notes=(SPLIT_ML1M, SCHEDULE_NOTE, LR_NOTE, FINAL_NOTE,
               "Each client draws r_u uniformly in 1..r_g and a random subset of B's columns every round, uploads "
               "its r_u columns of A and their indices; the broadcast is rank r_g.",
               "A miss, cause unknown. Ruled out from the committed runs: the random hold-out (it raises every method"
               " alike, yet our CoLR@4 keeps 95.05% of FedMF-64's HR (Fig. 3, 3 seeds) against the paper's 93.65%, "
               "while the SCoLR gap grows from 11 HR points at r_g=32 to 27 at r_g=4); the learning rate and rounds "
               "(the same as the CoLR runs of Fig. 3); our subsampling itself (our SCoLR stays near our CoLR, seed 0:"
               " r_g=4 73.29 vs CoLR@4 73.69, r_g=32 75.58 vs CoLR@32 76.74; on the mean of 3 seeds it loses 2.9 "
               "points from r_g=32 to 4, the paper 18.6); a shorter training alone (retrained, our r_g=32 and r_g=4 "
               "differ by 2.9 HR points at round 100, 3.2 at 400, 2.3 at 1000: at no round by the paper's 18.6); "
               "Algorithm 2's FedAvg weights N_u / N in place of the reference code's per-item mean (retrained with "
               "aggregation='weighted', seed 0: r_g=32 71.71, r_g=4 68.43, 3.3 points apart).", SMOKE_NOTE),
        paper_ref="Table 4 (section 5.3)", dataset="ml-1m",
    )


# --- the client schedule: uniform sampling against the authors' rotation ---------------------------
SCHEDULES = ("uniform", "rotating")
SCHEDULE_COLORS = {"uniform": "#444444", "rotating": COLORS["colr"]}


def schedule_grid(size: str) -> list:
    """CoLR@4 on ML-1M under both schedules, evaluated every 20 rounds (every round at smoke size)."""
    every = 20 if size == "full" else 1
    return [R.ml1m(size, method="colr", rank=4, eval_every=every, client_schedule=s) for s in SCHEDULES]


def trained_share(cfg, n_users: int, rounds) -> list[float]:
    """Share of the users that have trained at least once after each of `rounds` (0-based round indices)."""
    from ..fed.sampling import round_clients

    seen, out, want = np.zeros(n_users, dtype=bool), [], set(int(r) for r in rounds)
    for t in range(max(want) + 1):
        seen[round_clients(cfg.client_schedule, n_users, cfg.clients_per_round, cfg.seed, t)] = True
        if t in want:
            out.append(float(seen.mean()))
    return out


def _schedule_card() -> FigureCard:
    def compute(size, progress):
        from ..fed.engine import load_data

        cfgs = schedule_grid(size)
        n_users = load_data(cfgs[0]).n_users
        frames = []
        for cfg, res in zip(cfgs, R.run_all(cfgs, progress)):
            t = res.table.dropna(subset=["hr"])[["round", "hr", "ndcg"]].copy()
            t["round"] = t["round"] + 1  # rounds played
            t.insert(0, "schedule", cfg.client_schedule)
            t["trained_share"] = trained_share(cfg, n_users, t["round"] - 1)
            frames.append(t)
        return pd.concat(frames, ignore_index=True)

    def plot(ours, paper):
        fig = make_subplots(rows=1, cols=2, subplot_titles=("HR@10", "users trained at least once"))
        for s in SCHEDULES:
            d = ours[ours["schedule"] == s]
            name = {"uniform": "uniform (M users drawn afresh each round)",
                    "rotating": "rotating (shuffled once, M users a round in turn)"}[s]
            fig.add_trace(go.Scatter(x=d["round"], y=d["hr"], name=name, legendgroup=s,
                                     line=dict(color=SCHEDULE_COLORS[s])), row=1, col=1)
            fig.add_trace(go.Scatter(x=d["round"], y=d["trained_share"], name=name, legendgroup=s, showlegend=False,
                                     line=dict(color=SCHEDULE_COLORS[s])), row=1, col=2)
        fig.update_xaxes(title_text="round")
        fig.update_layout(title="CoLR@4 on MovieLens-1M: the client schedule", margin=dict(l=50, r=10, t=80, b=50))
        _no_paper_note(fig, "Not a figure of the paper: the authors' code rotates through the users; the paper does "
                            "not say so.")
        return fig

    def _at(ours, s, r, col="hr"):
        d = ours[(ours["schedule"] == s) & (ours["round"] <= r)]
        return float(d[col].iloc[-1]) if len(d) else math.nan

    def compare(ours, paper):
        last = int(ours["round"].max())
        early = 100 if last >= 200 else max(1, last // 2)
        u, r = _at(ours, "uniform", early), _at(ours, "rotating", early)
        fu, fr = _at(ours, "uniform", last), _at(ours, "rotating", last)
        # ahead by more than the card's 2-point tolerance: two identical schedules must not pass
        return _frame([
            {"quantity": f"HR@10 at round {early}: rotating vs uniform", "paper": "-",
             "ours": f"{_pct(r)} vs {_pct(u)}", "ok": bool(r > u + 0.02), "kind": "claim",
             "note": "rotation ahead early, by more than 2 HR points"},
            {"quantity": f"HR@10 at round {last}: rotating vs uniform", "paper": "-",
             "ours": f"{_pct(fr)} vs {_pct(fu)}", "ok": bool(abs(fr - fu) <= 0.02), "kind": "claim",
             "note": "within 2 HR points"},
            {"quantity": f"users trained by round {early}: rotating vs uniform", "paper": "-",
             "ours": f"{_pct(_at(ours, 'rotating', early, 'trained_share'))}% vs "
                     f"{_pct(_at(ours, 'uniform', early, 'trained_share'))}%", "ok": None, "kind": "shown",
             "note": "information"},
        ])

    return FigureCard(
        id="colr-schedule-ml1m",
        title="The client schedule: CoLR@4 on MovieLens-1M, users drawn uniformly vs rotated through",
        caption=("Figure (ours; not in the paper). HR@10 against rounds under two client schedules. CoLR's reference "
                 "code (NNHieu/CoLR-FedRec, fedrec/core/client.py) shuffles the users once and takes the next M of "
                 "that list each round; FedAvg usually draws M users afresh."),
        kind="figure", paper=pd.DataFrame(columns=["round", "hr"]), configs=schedule_grid, compute_fn=compute,
        plot_fn=plot, compare_fn=compare, tolerance=0.02,
        tolerance_text=("shape: the rotating schedule more than 2 HR points above uniform sampling at round 100, "
                        "and the two end within 2 HR points"),
        expected=("With rotation every user has trained once after n_users / M = 101 rounds; under uniform sampling "
                  "about 37% have not by round 100 and their user vectors are still at initialization, so HR@10 rises "
                  "sooner with rotation and the two curves meet by round 1000."),
        columns=("schedule", "round", "hr", "ndcg", "trained_share"),
        notes=(SPLIT_ML1M, LR_NOTE, "Both runs use the same seed: same initial tables, same B each round; only the "
               "cohorts differ. Evaluated every 20 rounds (the paper's runs: every 100).", SMOKE_NOTE),
        paper_ref="none (the reference code's schedule)", dataset="ml-1m",
    )


for _card in (_fig2_card("ml-1m"), _fig2_card("pinterest"), _fig3_card("ml-1m"), _fig3_card("pinterest"),
              _fig4_card("ml-1m"), _fig4_card("pinterest"), _fig5_card(), _table2_card(), _table3_card(), _table4_card(), _schedule_card()):
    register(_card)
