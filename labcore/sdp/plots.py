"""Plotly figures of the SDP lab (notebook and app draw the same ones)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..plot_style import LEGEND_BELOW
from .rounding import GW_ALPHA


def _title(title: str, smoke: bool) -> str:
    return title + (" (smoke run on a small random graph, not the paper's setting)" if smoke else "")


def convergence(trace: pd.DataFrame, title: str = "Objective and certified gap against time",
                smoke: bool = False, x: str = "seconds") -> go.Figure:
    """Left: the feasible value (solid) and the certified bound (dotted); right: the relative gap (log)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("SDP value: feasible point<br>and dual bound",
                                                        "relative duality gap<br>(certified)"))
    for i, (label, d) in enumerate(trace.groupby("label", sort=False)):
        color = f"hsl({(i * 67) % 360},65%,45%)"
        d = d[d[x] > 0] if x == "seconds" else d
        fig.add_scatter(x=d[x], y=d["primal"], name=label, line=dict(color=color), row=1, col=1, legendgroup=label)
        fig.add_scatter(x=d[x], y=d["bound"], name=label + " bound", line=dict(color=color, dash="dot"),
                        showlegend=False, row=1, col=1, legendgroup=label)
        fig.add_scatter(x=d[x], y=d["rel_gap"], name=label, line=dict(color=color), showlegend=False,
                        row=1, col=2, legendgroup=label)
    xlab = "solver seconds (log)" if x == "seconds" else x
    fig.update_xaxes(type="log", title=xlab)
    fig.update_yaxes(type="log", title="relative gap", row=1, col=2, exponentformat="power")
    fig.update_yaxes(title="cut value (SDP)", row=1, col=1)
    lo, hi = trace["primal"].quantile(0.3), trace["bound"].quantile(0.7)
    if np.isfinite(lo) and np.isfinite(hi) and hi > lo:
        fig.update_yaxes(range=[lo - 0.2 * (hi - lo), hi + 0.2 * (hi - lo)], row=1, col=1)
    fig.update_layout(title=_title(title, smoke), height=440, legend=LEGEND_BELOW)
    return fig


def rank_threshold(df: pd.DataFrame, smoke: bool = False) -> go.Figure:
    fig = go.Figure()
    fig.add_scatter(x=df["k"], y=df["rel_gap"].clip(lower=1e-12), mode="markers", name="one random start",
                    marker=dict(opacity=0.6))
    med = df.groupby("k")["rel_gap"].median()
    fig.add_scatter(x=med.index, y=med.clip(lower=1e-12), mode="lines", name="median")
    r = float(df["sqrt_2n"].iloc[0])
    fig.add_vline(x=r, line_dash="dash")
    # on a log axis an annotation's x is log10 of the value (a line's is the value): add_vline's own label at x = r
    # stretched the axis to 10^r
    fig.add_annotation(x=np.log10(r), y=1, yref="paper", text=f"sqrt(2n) = {r:.1f}", showarrow=False,
                       xanchor="left", yanchor="bottom")
    fig.update_xaxes(type="log", title="rank k of V")
    # short enough for the plot's height at a projector's 1024 px (the title says where the gap is taken)
    fig.update_yaxes(type="log", title="certified relative gap", exponentformat="power")
    fig.update_layout(title=_title("The rank threshold: gap where the mixing method stops, against k", smoke),
                      height=420, legend=LEGEND_BELOW)
    return fig


def rounding_histogram(df: pd.DataFrame, smoke: bool = False) -> go.Figure:
    fig = go.Figure()
    fig.add_histogram(x=df["ratio"], nbinsx=30, name="hyperplane roundings")
    fig.add_vline(x=GW_ALPHA, line_dash="dash", line_color="red", annotation_text="0.878 (GW guarantee)")
    fig.add_vline(x=float(df["ratio"].max()), line_color="green", annotation_text="best of "
                  f"{len(df)}", annotation_position="top left")
    fig.update_xaxes(title="cut / certified SDP value")
    fig.update_yaxes(title="roundings")
    fig.update_layout(title=_title("Goemans-Williamson rounding: ratio to the SDP value", smoke), height=380)
    return fig


def rules_bars(df: pd.DataFrame, smoke: bool = False) -> go.Figure:
    tol = float(df["tol"].iloc[0])
    fig = go.Figure(go.Bar(x=df["label"], y=df["sweeps"], text=[f"{s:.3g} s" for s in df["seconds"]],
                           textposition="outside"))
    fig.update_yaxes(title=f"sweeps to gap < {tol:g}")  # (certified: the title says so) short enough for 380 px
    fig.update_layout(title=_title("Coordinate rules and momentum: sweeps to the target gap", smoke), height=380)
    return fig


def hazan_rate(df: pd.DataFrame, slope: float | None = None, smoke: bool = False) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, subplot_titles=("F(X_t) - F* (log-log)", "rank of X_t"))
    fig.add_scatter(x=df["iter"], y=df["objective_gap"], name="Hazan: F(X_t) - F*", row=1, col=1)
    t = df["iter"].to_numpy(float)
    ref = df["objective_gap"].iloc[min(9, len(df) - 1)] * t[min(9, len(t) - 1)] / t
    fig.add_scatter(x=t, y=ref, name="slope -1", line=dict(dash="dot"), row=1, col=1)
    fig.add_scatter(x=df["iter"], y=df["rank"], name="rank(X_t)", row=1, col=2)
    fig.add_scatter(x=t, y=t + 1, name="t + 1", line=dict(dash="dot"), row=1, col=2)
    fig.update_xaxes(type="log", title="step t")
    fig.update_yaxes(type="log", row=1, col=1, exponentformat="power")
    title = "Hazan's algorithm: O(1/t) objective gap, rank <= t + 1"
    if slope is not None and slope == slope:
        title += f" (fitted slope {slope:.2f})"
    fig.update_layout(title=_title(title, smoke), height=420, legend=LEGEND_BELOW)
    return fig
