"""Plotly figures of the completion benchmark, shared by the cards, the app page and the notebook."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..plot_style import LEGEND_BELOW
from .config import ALGORITHMS, LABELS
from .paper import TABLE1

COLORS = dict(zip(ALGORITHMS, ("#1f77b4", "#17becf", "#2ca02c", "#d62728", "#ff7f0e", "#8c564b", "#e377c2",
                               "#9467bd", "#000000", "#7f7f7f")))


def race(df: pd.DataFrame, title: str, y_title: str = "relative error ||M - M*||_F / ||M*||_F",
         log_x: bool = False) -> go.Figure:
    """Error against CPU time (one thread), one line per algorithm (the report's Fig. 1 to 4)."""
    fig = go.Figure()
    for alg in [a for a in ALGORITHMS if a in set(df["algorithm"])]:
        d = df[df["algorithm"] == alg].sort_values("t")
        err = d["error"].replace(np.inf, np.nan)
        fig.add_trace(go.Scatter(x=d["t"], y=err, mode="lines+markers", name=LABELS[alg],
                                 line=dict(color=COLORS[alg]), marker=dict(size=4),
                                 hovertemplate="%{x:.2f} s: %{y:.3g}<extra>" + LABELS[alg] + "</extra>"))
    fig.update_layout(title=title, xaxis_title="CPU time (s, one thread)", yaxis_title=y_title, template="plotly_white",
                      legend=LEGEND_BELOW)
    fig.update_yaxes(type="log", exponentformat="power")
    if log_x:
        fig.update_xaxes(type="log")
    return fig


def table1(ours: pd.DataFrame, paper: pd.DataFrame = TABLE1, title: str = "") -> go.Figure:
    """Share of problems per range of the best log10 error, ours beside the report's."""
    fig = go.Figure()
    fig.add_trace(go.Bar(x=paper["range"], y=paper["percent"], name="report (63 matrices)", marker_color="#bbbbbb",
                         text=[f"{c}" for c in paper["count"]], textposition="outside"))
    fig.add_trace(go.Bar(x=ours["range"], y=ours["percent"], name=f"ours ({int(ours['count'].sum())} matrices)",
                         marker_color="#1f77b4", text=[f"{c}" for c in ours["count"]], textposition="outside"))
    fig.update_layout(title=title or "Best log10 error over the grid", barmode="group", template="plotly_white",
                      xaxis_title="d = log10 of the best error any algorithm reached", yaxis_title="% of problems")
    return fig


def phase_map(best: pd.DataFrame, x: str = "share", y: str = "rank", title: str = "",
              limit: pd.DataFrame | None = None, value: str = "best_error") -> go.Figure:
    """log10 of the best error per (x, y) cell (over the other columns too, e.g. kappa), from a table with one
    row per problem (`cards.problems_table`); problems below the information limit are marked with an x."""
    cell = best.groupby([y, x], as_index=False)[value].min()
    piv = cell.pivot(index=y, columns=x, values=value)
    z = np.log10(np.clip(piv.to_numpy(dtype=float), 1e-16, 1e4))
    xs, ys = [f"{v:g}" for v in piv.columns], [f"{v:g}" for v in piv.index]
    fig = go.Figure(go.Heatmap(z=z, x=xs, y=ys, colorscale="RdYlGn_r", zmin=-16, zmax=1,
                               colorbar=dict(title="log10 error"),
                               text=[[f"{v:.1f}" for v in row] for row in z], texttemplate="%{text}",
                               hovertemplate=f"{x} %{{x}}, {y} %{{y}}: log10 error %{{z:.1f}}<extra></extra>"))
    if limit is not None and len(limit):
        fig.add_trace(go.Scatter(x=[f"{v:g}" for v in limit[x]], y=[f"{v:g}" for v in limit[y]], mode="markers",
                                 marker=dict(symbol="x", size=16, color="black"),
                                 name="below the information limit"))
    fig.update_layout(title=title or "Phase map: best log10 error", xaxis_title=x, yaxis_title=y,
                      template="plotly_white", xaxis_type="category", yaxis_type="category")
    return fig
