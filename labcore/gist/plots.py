"""Plotly figures of the GIST topic, shared by the cards, the app page and the notebook."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..plot_style import LEGEND_BELOW

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _title(ours: pd.DataFrame, title: str) -> str:
    return title  # a smoke run's title is marked by the card registry (labcore.figures.reproduce)


def accuracy_curves(history: pd.DataFrame, title: str = "Merged model") -> go.Figure:
    """Validation and test accuracy of the merged model after every sync."""
    fig = go.Figure()
    for col, name in (("val_acc", "validation"), ("test_acc", "test"), ("train_acc", "train")):
        if col in history:
            fig.add_scatter(x=history["epoch"], y=100 * history[col], mode="lines", name=name)
    fig.update_layout(title=title, xaxis_title="epoch", yaxis_title="accuracy (%)", height=340,
                      margin=dict(t=50, b=40))
    return fig


def subnet_losses(loss: pd.DataFrame) -> go.Figure:
    """Each subnet's training loss at every local iteration."""
    fig = go.Figure()
    for i, g in loss.groupby("subnet"):
        fig.add_scatter(x=g["epoch"], y=g["loss"], mode="lines", name=f"subnet {i}",
                        line=dict(color=COLORS[int(i) % len(COLORS)], width=1))
    fig.update_layout(title="Each subnet's training loss", xaxis_title="epoch", yaxis_title="cross-entropy",
                      height=340, margin=dict(t=50, b=40))
    return fig


def owner_map(owner: np.ndarray, max_rows: int = 120, title: str = "Who owns which block of θ1 this round"
              ) -> go.Figure:
    """θ1 (features x hidden units) coloured by the subnet that trains each entry; grey = kept this round."""
    rows = np.linspace(0, owner.shape[0] - 1, min(max_rows, owner.shape[0])).astype(int)
    z = owner[rows].astype(float)
    m = int(owner.max()) + 1
    scale = [[0.0, "#dddddd"], [1.0 / (m + 1), "#dddddd"]]
    for i in range(m):
        scale += [[(i + 1) / (m + 1), COLORS[i % len(COLORS)]], [(i + 2) / (m + 1), COLORS[i % len(COLORS)]]]
    fig = go.Figure(go.Heatmap(z=z, x=np.arange(owner.shape[1]), y=rows, zmin=-1.5, zmax=m - 0.5,
                               colorscale=scale, showscale=False,
                               hovertemplate="feature %{y}, hidden unit %{x}: subnet %{z}<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="hidden unit", yaxis_title=f"input feature ({len(rows)} rows shown)",
                      height=360, margin=dict(t=50, b=40))
    return fig


def bytes_bars(frame: pd.DataFrame) -> go.Figure:
    """Measured bytes one subnet sends per sync against the formula, per m and split."""
    fig = go.Figure()
    for j, (split, g) in enumerate(frame.groupby("split", sort=False)):
        fig.add_bar(x=g["subnets"].astype(str), y=g["measured_bytes"] / 1024, name=f"{split}: measured",
                    marker_color=COLORS[j])
        fig.add_scatter(x=g["subnets"].astype(str), y=g["formula_bytes"] / 1024, mode="markers",
                        name=f"{split}: formula (blocks only)", marker=dict(symbol="x", size=11, color="black"))
    fig.update_layout(title=_title(frame, "Bytes one subnet sends per sync (ledger)"), xaxis_title="subnets m",
                      yaxis_title="KiB per subnet per sync", barmode="group", height=360)
    return fig


def ours_vs_paper(ours: pd.DataFrame, paper: pd.DataFrame, x: str, metric: str, paper_metric: str,
                  facet: str | None = None, series: str | None = None, title: str = "") -> go.Figure:
    """Bars of ours (mean ± std over seeds) beside the paper's numbers, one panel per `facet` value."""
    facets = list(dict.fromkeys(ours[facet])) if facet else [None]
    fig = make_subplots(rows=1, cols=len(facets), subplot_titles=[str(f) for f in facets] if facet else None)
    for k, f in enumerate(facets):
        o = ours if f is None else ours[ours[facet] == f]
        p = paper if f is None or facet not in paper else paper[paper[facet] == f]
        groups = list(dict.fromkeys(o[series])) if series else [None]
        for j, s in enumerate(groups):
            oo = o if s is None else o[o[series] == s]
            label = "ours" if s is None else f"ours {s}"
            fig.add_bar(x=oo[x].astype(str), y=oo[metric], name=label, legendgroup=label, showlegend=k == 0,
                        error_y=dict(type="data", array=oo.get(f"{metric}_std")), marker_color=COLORS[2 * j],
                        row=1, col=k + 1)
            pp = p if s is None or series not in p else p[p[series] == s]
            if len(pp) and paper_metric in pp:
                lab = "paper" if s is None else f"paper {s}"
                fig.add_bar(x=pp[x].astype(str), y=pp[paper_metric], name=lab, legendgroup=lab, showlegend=k == 0,
                            marker_color=COLORS[2 * j + 1], row=1, col=k + 1)
    fig.update_layout(title=_title(ours, title), barmode="group", height=380, yaxis_title="accuracy (%)")
    fig.update_xaxes(title_text=x)
    return fig


def fig4_lines(ours: pd.DataFrame, paper: pd.DataFrame, metric: str = "test_max") -> go.Figure:
    """Accuracy against local iterations, one line per m; panels: graph x split (Fig. 4)."""
    panels = list(dict.fromkeys(zip(ours["graph"], ours["split"])))
    # four panels in a row: two-line panel titles and the legend underneath leave them room at a projector's width
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[f"{g},<br>{s}" for g, s in panels])
    for k, (g, s) in enumerate(panels):
        for j, m in enumerate(sorted(ours["subnets"].unique())):
            o = ours[(ours.graph == g) & (ours.split == s) & (ours.subnets == m)].sort_values("local")
            fig.add_scatter(x=o["local"], y=o[metric], error_y=dict(type="data", array=o.get(f"{metric}_std")),
                            mode="lines+markers", name=f"ours m={m}", legendgroup=f"o{m}", showlegend=k == 0,
                            line=dict(color=COLORS[j]), row=1, col=k + 1)
            p = paper[(paper.graph == g) & (paper.split == s) & (paper.subnets == m)].sort_values("local")
            if len(p):
                fig.add_scatter(x=p["local"], y=p["test_best"], mode="lines+markers", name=f"paper m={m}",
                                legendgroup=f"p{m}", showlegend=k == 0, line=dict(color=COLORS[j], dash="dot"),
                                row=1, col=k + 1)
    fig.update_layout(title=_title(ours, "Fig. 4: best test accuracy against local iterations"), height=440,
                      yaxis_title="test accuracy (%)", legend=LEGEND_BELOW, margin_t=110)
    fig.update_xaxes(title_text="local iterations")
    return fig
