"""Plotly figures and small computations for the split-learning page and notebook (and the figure cards).

Computations (no training, seconds):
* `request_composition(rho, T)`: clicks and non-clicks in one request.
* `rho_explorer(catalog, rho, ...)`: for one rho, how well the server guesses the clicks (each attack).
* `payload_table(table3_df)`: per model, the bytes and ms of one device, long form for the bars.

Figures:
* `table2_bars(ours, paper)`, `table3_bars(ours, paper)`, `rho_curves(ours, paper)` (Fig. 4),
  `k_figure(curves, costs, tower)` (Fig. 5 / 6), `privacy_curves(df)`, `linkage_curve(df)`,
  `payload_bars(parts)`, `time_bars(table3_df)`.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..plot_style import LEGEND_BELOW

COLORS = {"FL": "#1f77b4", "STTFedRec": "#d62728", "paper": "#ff7f0e", "centralized": "#444444", "FCF": "#2ca02c",
          "FedMVMF": "#9467bd", "random": "#7f7f7f", "popularity": "#ff7f0e", "linkage": "#d62728"}
LINK_COLORS = {"server->device": "#1f77b4", "device->server": "#aec7e8", "device->device": "#ff7f0e",
               "device->sas": "#d62728"}
MODEL_ORDER = ("DSSM", "CLSM", "FCF", "FedMVMF", "FL-DSSM", "FL-CLSM", "STTFedRec-DSSM", "STTFedRec-CLSM")


def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    fig.update_layout(title=title, height=height, margin=dict(l=50, r=10, t=70, b=10), legend=LEGEND_BELOW)
    return fig


# --- computations ------------------------------------------------------------------------------------------
def request_composition(rho: float, request_size: int = 10) -> dict:
    """Clicked and non-clicked items of one request for a given rho (the protocol's rounding)."""
    n_click = max(1, int(round((1 - rho) * request_size)))
    return {"rho": rho, "request_size": request_size, "clicked": n_click, "non_clicked": request_size - n_click,
            "effective_rho": (request_size - n_click) / request_size, "random_guess": n_click / request_size}


def rho_explorer(catalog, rho: float, request_size: int = 10, users: int = 200, rounds: int = 10, seed: int = 0,
                 negatives: str = "uniform") -> pd.DataFrame:
    """The server's guess precision and AUC at one rho, for each attack."""
    from .privacy import rho_sweep

    df = rho_sweep(catalog, rhos=(rho,), request_size=request_size, users=users, rounds=rounds, seed=seed,
                   negatives=(negatives,))
    return df[["attack", "precision", "auc", "chance", "n_click", "effective_rho", "negatives"]]


def payload_table(table3: pd.DataFrame) -> pd.DataFrame:
    """Long form: model, quantity (training / inference, ms or MB), value."""
    rows = []
    for _, r in table3.iterrows():
        for q, col in (("training ms", "train_ms"), ("inference ms", "infer_ms"), ("training MB", "train_mb"),
                       ("inference MB", "infer_mb")):
            rows.append({"model": r["model"], "quantity": q, "value": float(r[col])})
    return pd.DataFrame(rows)


# --- Table 2 ------------------------------------------------------------------------------------------------
def table2_bars(ours: pd.DataFrame, paper: pd.DataFrame | None = None) -> go.Figure:
    metrics = (("auc", "AUC"), ("p10", "Precision@10"), ("ndcg10", "NDCG@10"))
    fig = make_subplots(rows=1, cols=3, subplot_titles=[m[1] for m in metrics])
    order = [m for m in MODEL_ORDER if m in set(ours["model"])]
    o = ours.set_index("model").reindex(order)
    for col, (key, _) in enumerate(metrics, start=1):
        fig.add_trace(go.Bar(x=order, y=100 * o[key], name="ours", marker_color=COLORS["STTFedRec"],
                             showlegend=col == 1), row=1, col=col)
        if paper is not None and len(paper):
            p = paper.set_index("model").reindex(order)
            fig.add_trace(go.Bar(x=order, y=p[key], name="paper", marker_color=COLORS["paper"], showlegend=col == 1),
                          row=1, col=col)
    fig.update_layout(barmode="group")
    fig.update_xaxes(tickangle=45)
    return _layout(fig, "Table 2 (MovieLens-1M): AUC, Precision@10, NDCG@10 (%)", 460)


# --- Table 3 ------------------------------------------------------------------------------------------------
def table3_bars(ours: pd.DataFrame, paper: pd.DataFrame | None = None) -> go.Figure:
    # short panel titles (the legend says training and inference): long ones ran into each other at a laptop's width
    fig = make_subplots(rows=1, cols=2, subplot_titles=("device time (ms)", "device traffic (MB)"))
    for col, (tr, inf) in enumerate((("train_ms", "infer_ms"), ("train_mb", "infer_mb")), start=1):
        for src, df, pat in (("ours", ours, ""), ("paper", paper, "/")):
            if df is None or not len(df):
                continue
            fig.add_trace(go.Bar(x=df["model"], y=df[tr], name=f"{src}: training", marker_color=COLORS["FL"],
                                 marker_pattern_shape=pat, offsetgroup=src, showlegend=col == 1), row=1, col=col)
            fig.add_trace(go.Bar(x=df["model"], y=df[inf], name=f"{src}: inference", marker_color=COLORS["STTFedRec"],
                                 marker_pattern_shape=pat, offsetgroup=src, base=df[tr], showlegend=col == 1),
                          row=1, col=col)
    fig.update_yaxes(type="log")
    fig.update_yaxes(dtick=1, row=1, col=1)  # decades only: the time spans three
    fig.update_layout(barmode="group")
    return _layout(fig, "Table 3 (MovieLens-1M): per-device cost, FL vs STTFedRec (log scale)", 460)


def time_bars(table3: pd.DataFrame) -> go.Figure:
    """Where a device's training time goes: hashing raw records, towers, the chain."""
    fig = go.Figure()
    for col, name, color in (("featurize_ms", "hash raw records", "#9467bd"), ("towers_ms", "towers fwd/bwd", "#1f77b4"),
                             ("chain_ms", "chain (shares)", "#d62728")):
        fig.add_trace(go.Bar(x=table3["model"], y=table3[col], name=name, marker_color=color))
    fig.update_layout(barmode="stack", yaxis_title="ms per device per round")
    return _layout(fig, "Device training time per round, by step")


SERVER_LINKS = ("server->device", "device->server")  # what the lesson is about: the device's traffic with the server


def payload_bars(parts: pd.DataFrame, phase: str = "training") -> go.Figure:
    """Measured bytes of one device's messages by part, coloured by link, in two panels: the links with the
    server (the download STTFedRec cuts) and the secure-aggregation chain (device->device, device->SAS), which
    STTFedRec adds and naive FL does not have."""
    d = parts[parts["phase"].str.startswith(phase)]
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=("with the server", "secure-aggregation chain"))
    for link, g in d.groupby("link"):
        col = 1 if link in SERVER_LINKS else 2
        fig.add_trace(go.Bar(x=g["model"], y=g["bytes"] / 2**20, name=link, marker_color=LINK_COLORS.get(link),
                             text=g["part"], textposition="none",
                             hovertemplate="%{text}: %{y:.4f} MB<extra>" + link + "</extra>"), row=1, col=col)
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title_text="MB per device", row=1, col=1)
    fig.update_xaxes(tickangle=60)  # steeper: at 30 degrees neighbouring names crossed in a 1024 px page's panels
    fig = _layout(fig, f"Measured payload per device ({phase}), by part and link", 480)
    # beside the panels, from their top (below, it met the slanted model names; left with the bottom-anchored
    # LEGEND_BELOW's container y, it sat above the chart's top edge, out of sight)
    fig.update_layout(legend=dict(orientation="v", x=1.01, xanchor="left", y=1, yref="paper", yanchor="top"))
    return fig


# --- Fig. 4: rho -----------------------------------------------------------------------------------------------
def rho_curves(ours: pd.DataFrame, paper: pd.DataFrame | None = None) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=("AUC", "NDCG@10"))
    series = ours["series"].unique() if "series" in ours else [None]
    for tower, color in (("dssm", COLORS["STTFedRec"]), ("clsm", COLORS["FL"])):
        for s in series:
            d = ours[(ours["tower"] == tower) & ((ours["series"] == s) if s is not None else True)].sort_values("rho")
            if not len(d):
                continue
            name = f"STTFedRec-{tower.upper()}" + (f", {s}" if s is not None else "")
            dash = "solid" if s in (None, "one click") else "dash"
            for col, key in ((1, "auc"), (2, "ndcg10")):
                fig.add_trace(go.Scatter(x=d["rho"], y=100 * d[key], name=name, mode="lines+markers",
                                         line=dict(dash=dash, color=color), showlegend=col == 1), row=1, col=col)
    # short enough for a panel of a chart at a projector's 1024 px (about 250 px); the note says what rho is
    fig.update_xaxes(title_text="rho (non-clicked share)")
    # the note as the title's second line: an annotation above the panels ran into their titles
    fig = _layout(fig, "Fig. 4: effect of rho on STTFedRec (ML-1M)<br><sup>The paper's Fig. 4 is on Adressa, as an "
                       "image: expected shape, AUC and NDCG rise with rho, the share of non-clicked items in a "
                       "request.</sup>")
    fig.update_layout(margin_t=100)
    return fig


# --- Fig. 5 / 6: K -----------------------------------------------------------------------------------------------
def k_figure(curves: pd.DataFrame, costs: pd.DataFrame, tower: str = "dssm") -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=("convergence: AUC (evaluation users) by round",
                                                        "secure aggregation time per round (ms)"))
    for K, g in curves[curves["tower"] == tower].groupby("K"):
        fig.add_trace(go.Scatter(x=g["round"], y=100 * g["auc"], name=f"K = {K}", mode="lines+markers"), row=1, col=1)
    c = costs[(costs["tower"] == tower) & (costs["mode"] == "shares")].sort_values("K")
    fig.add_trace(go.Scatter(x=c["K"], y=c["sas_ms"], name="aggregation server", mode="lines+markers",
                             line=dict(color=COLORS["STTFedRec"])), row=1, col=2)
    fig.add_trace(go.Scatter(x=c["K"], y=c["device_ms"], name="one device", mode="lines+markers",
                             line=dict(color=COLORS["FL"])), row=1, col=2)
    fig.update_xaxes(title_text="round", row=1, col=1)
    fig.update_xaxes(title_text="K (clients per round)", type="log", row=1, col=2)
    n = {"dssm": 5, "clsm": 6}.get(tower, 5)
    return _layout(fig, f"Fig. {n}: effect of K (STTFedRec-{tower.upper()}, ML-1M)")


# --- privacy -------------------------------------------------------------------------------------------------------
def privacy_curves(df: pd.DataFrame, metric: str = "precision") -> go.Figure:
    fig = go.Figure()
    for (neg, attack), g in df.groupby(["negatives", "attack"]):
        g = g.sort_values("rho")
        fig.add_trace(go.Scatter(x=g["rho"], y=g[metric], name=f"{attack} ({neg} negatives)", mode="lines+markers",
                                 line=dict(color=COLORS.get(attack), dash="solid" if neg == "uniform" else "dot")))
    chance = df.drop_duplicates("rho").sort_values("rho")
    if metric == "precision":
        fig.add_trace(go.Scatter(x=chance["rho"], y=chance["chance"], name="chance (1 - rho)", mode="lines",
                                 line=dict(color="black", dash="dash")))
    fig.update_xaxes(title_text="rho")
    fig.update_yaxes(title_text="server's guess " + ("precision" if metric == "precision" else "AUC"))
    return _layout(fig, "How well the server guesses the real clicks of an obfuscated request")


def linkage_curve(df: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for neg, g in df.groupby("negatives"):
        fig.add_trace(go.Scatter(x=g["rounds_linked"], y=g["precision"], name=f"linkage ({neg} negatives)",
                                 mode="lines+markers"))
    fig.add_hline(y=float(df["chance"].iloc[0]), line=dict(dash="dash"), annotation_text="chance")
    fig.update_xaxes(title_text="participations of the device the server links", type="log")
    fig.update_yaxes(title_text="guess precision")
    return _layout(fig, "Linking a device's requests over rounds")


def stored_table(name: str) -> pd.DataFrame | None:
    """A stored full-size result (results/<name>.csv), or None."""
    from .experiments import load_table

    t = load_table(name)
    return t[0] if t else None
