"""Plotly figures of the DP topic: HR@10 and the curious server against epsilon, epsilon per round, bytes and
epsilon per round from the payload ledger, PSNR per defense, and the inversion's images beside the originals."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from labcore.plot_style import LEGEND_BELOW
from labcore.results import LEDGER_VIEW


def _eps_axis(eps: pd.Series) -> pd.Series:
    """Epsilon with the no-DP runs (inf) drawn at the right edge."""
    finite = eps[np.isfinite(eps)]
    edge = float(finite.max()) * 2 if len(finite) else 1.0
    return eps.where(np.isfinite(eps), edge)


def hr_vs_epsilon(ours: pd.DataFrame, paper: pd.DataFrame | None = None, title: str = "") -> go.Figure:
    fig = go.Figure()
    g = ours.groupby(["method", "clipped", "sigma"], as_index=False).agg(
        epsilon=("epsilon", "mean"), hr=("hr", "mean"), hr_sd=("hr", "std"))
    for (method, d), color in zip(g.groupby("method"), itertools.cycle(qualitative.Plotly)):
        dp_runs = d[d["clipped"]].sort_values("sigma", ascending=False)
        fig.add_trace(go.Scatter(x=_eps_axis(dp_runs["epsilon"]), y=dp_runs["hr"], mode="lines+markers", name=method,
                                 line_color=color, error_y=dict(type="data", array=dp_runs["hr_sd"].fillna(0)),
                                 text=[f"sigma {s:g}" if s else "clipped, no noise" for s in dp_runs["sigma"]]))
        plain = d[~d["clipped"]]
        if len(plain):
            fig.add_hline(y=float(plain["hr"].iloc[0]), line_dash="dot", line_color=color,
                          annotation_text=f"{method}, no DP", annotation_position="bottom left")
    fig.update_layout(title=title or "HR@10 against epsilon (rightmost point: clipped, no noise; dotted: no DP)",
                      xaxis_title="epsilon (delta = 1 / users)", yaxis_title="HR@10")
    fig.update_xaxes(type="log")
    return fig


def curious_vs_epsilon(ours: pd.DataFrame, paper: pd.DataFrame | None = None) -> go.Figure:
    fig = go.Figure()
    for (mode, view), d in ours.melt(id_vars=["mode", "sigma", "epsilon"],
                                     value_vars=["upload_precision", "aggregate_precision"],
                                     var_name="view").groupby(["mode", "view"]):
        if mode == "no DP":
            continue
        d = d.sort_values("epsilon")
        fig.add_trace(go.Scatter(x=d["epsilon"], y=d["value"], mode="lines+markers",
                                 name=f"{mode} DP, {view.split('_')[0]}"))
    plain = ours[ours["mode"] == "no DP"]
    if len(plain):
        fig.add_hline(y=float(plain["upload_precision"].iloc[0]), line_dash="dot",
                      annotation_text="no DP, upload")
    if "base_rate" in ours:
        fig.add_hline(y=float(ours["base_rate"].mean()), line_dash="dash", annotation_text="chance")
    fig.update_layout(title="Curious server: precision of the recovered item sets against epsilon",
                      xaxis_title="epsilon after the attacked rounds", yaxis_title="precision")
    fig.update_xaxes(type="log")
    return fig


def psnr_by_defense(ours: pd.DataFrame, paper: pd.DataFrame | None = None) -> go.Figure:
    g = ours.groupby("defense", sort=False, as_index=False).agg(psnr=("psnr", "mean"), sd=("psnr", "std"),
                                                                chance=("chance_psnr", "mean"))
    fig = go.Figure(go.Bar(x=g["defense"], y=g["psnr"], error_y=dict(type="data", array=g["sd"].fillna(0)),
                           name="reconstruction"))
    fig.add_hline(y=float(g["chance"].mean()), line_dash="dash", annotation_text="the mean image (chance)")
    fig.update_layout(title="Gradient inversion of one 8x8 digit: PSNR under each defense",
                      yaxis_title="PSNR (dB)", xaxis_title="defense")
    return fig


def epsilon_per_round(table: pd.DataFrame, label: str = "", references: dict | None = None,
                      chance: float | None = None) -> go.Figure:
    """Epsilon spent (left) and HR@10 (right) round by round; `references` (label: round table) adds runs to read the
    DP run's HR@10 against, dotted (the page's: the same schedule without DP, and clipped without noise); `chance`
    draws a random ranking's HR@10."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("epsilon spent", "HR@10"))
    fig.add_trace(go.Scatter(x=table["round"] + 1, y=table["epsilon"], mode="lines", name=label or "epsilon",
                             showlegend=False), 1, 1)
    ev = table.dropna(subset=["hr"])
    fig.add_trace(go.Scatter(x=ev["round"] + 1, y=ev["hr"], mode="lines+markers", name="with DP",
                             line_color=qualitative.Plotly[0]), 1, 2)
    for (name, ref), color in zip((references or {}).items(), qualitative.Plotly[1:]):
        r = ref.dropna(subset=["hr"])
        fig.add_trace(go.Scatter(x=r["round"] + 1, y=r["hr"], mode="lines+markers", name=name, line_color=color,
                                 line_dash="dot"), 1, 2)
    if chance is not None:
        fig.add_hline(y=chance, line_dash="dash", line_color="grey", annotation_text="random ranking", row=1, col=2)
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(rangemode="tozero", col=2)
    fig.update_layout(title="The accountant's epsilon and HR@10, round by round", showlegend=bool(references),
                      legend=LEGEND_BELOW)
    return fig


def bytes_and_epsilon(view: pd.DataFrame) -> go.Figure:
    """`Result.ledger_by_round()` of a DP run: each round's upload and download of all clients (stacked bars, KB,
    left axis) and the accountant's epsilon after the round (line, right axis), rounds from 1 as in
    `epsilon_per_round`. Hovering a point of the line gives the traffic so far beside the epsilon spent."""
    x = view[LEDGER_VIEW["round"]] + 1
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for key, name, color in (("up", "upload", "#1f77b4"), ("down", "download", "#9ecae1")):
        fig.add_trace(go.Bar(x=x, y=view[LEDGER_VIEW[key]], name=f"{name} (KB)", marker_color=color,
                             hovertemplate=f"round %{{x}}: %{{y:,.1f}} KB {name}<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=view[LEDGER_VIEW["epsilon"]], mode="lines+markers", name="epsilon spent",
                             customdata=view[LEDGER_VIEW["cum"]], line=dict(color="#d62728"),
                             hovertemplate="after round %{x}: epsilon %{y:.3g}, %{customdata:,.3f} MB sent so far"
                                           "<extra></extra>"), secondary_y=True)
    fig.update_layout(barmode="stack", title="Bytes sent and epsilon spent per round", legend=LEGEND_BELOW,
                      margin=dict(l=50, r=50, t=60, b=10))
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(title_text="KB in the round (all clients)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="epsilon spent", rangemode="tozero", showgrid=False, secondary_y=True)
    return fig


def images(originals: np.ndarray, reconstructions: np.ndarray, psnr: np.ndarray) -> go.Figure:
    n = len(originals)
    fig = make_subplots(rows=2, cols=n, vertical_spacing=0.12,
                        subplot_titles=[f"original {i + 1}" for i in range(n)]
                        + [f"{p:.1f} dB" for p in psnr])
    for i in range(n):
        for r, img in ((1, originals[i]), (2, reconstructions[i])):
            fig.add_trace(go.Heatmap(z=img[::-1], colorscale="gray_r", zmin=0, zmax=1, showscale=False), r, i + 1)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, scaleanchor="x")
    fig.update_layout(title="Originals (top) and what the server rebuilt from the update (bottom, PSNR)")
    return fig
