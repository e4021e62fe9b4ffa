"""Plotly figures of the wireless topic (notebook, app page and cards draw the same ones)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..net.channel import RateRegion

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def error_curves(df: pd.DataFrame, title: str = "", bound: bool = True, band: bool = True) -> go.Figure:
    """r_k / ||x*||^2 against k, one colour per `curve`, Theorem 1's bound dashed in the same colour."""
    fig = go.Figure()
    curves = list(dict.fromkeys(df["curve"])) if "curve" in df else [None]
    for i, name in enumerate(curves):
        d = df if name is None else df[df["curve"] == name]
        color = PALETTE[i % len(PALETTE)]
        label = name or "measured"
        if band and "err_lo" in d:
            fig.add_trace(go.Scatter(x=np.r_[d["iteration"], d["iteration"][::-1]], y=np.r_[d["err_hi"], d["err_lo"][::-1]],
                                     fill="toself", line=dict(width=0), fillcolor=color, opacity=0.15,
                                     hoverinfo="skip", showlegend=False, legendgroup=label))
        fig.add_trace(go.Scatter(x=d["iteration"], y=d["err"], name=label, line=dict(color=color), legendgroup=label))
        if bound and "bound" in d and np.isfinite(d["bound"]).any():
            fig.add_trace(go.Scatter(x=d["iteration"], y=d["bound"], name=f"{label}: Theorem 1 bound",
                                     line=dict(color=color, dash="dash", width=1), legendgroup=label))
    fig.update_layout(title=title, xaxis_title="iteration k", yaxis_title="E||x_k - x*||² / ||x*||²",
                      yaxis_type="log", yaxis_exponentformat="power", legend=dict(font=dict(size=10)),
                      margin=dict(l=60, r=20, t=50, b=50))
    return fig


def rate_region(region: RateRegion, optimum=None, closed_form=None, threshold: float | None = None,
                title: str = "Two-user rate region (bits per coordinate, log2 k)") -> go.Figure:
    """The region of Eq. (8) for two users in (log2 k1, log2 k2), with the optimum and Theorem 1's threshold."""
    b = region.budgets
    s = b.get(frozenset({0, 1}), np.inf)
    K1 = b.get(frozenset({0}), s)
    K2 = b.get(frozenset({1}), s)
    top = float(min(max(K1, K2, 1.0) if np.isfinite(max(K1, K2)) else s, 24)) + 1.5
    # vertices of {0 <= t1 <= K1, 0 <= t2 <= K2, t1 + t2 <= s}, counter-clockwise
    pts = [(0, 0), (min(K1, s), 0)]
    if K1 + K2 > s:
        pts += [(min(K1, s), max(0.0, s - K1)), (max(0.0, s - K2), min(K2, s))]
    else:
        pts += [(K1, K2)]
    pts += [(0, min(K2, s))]
    xs, ys = zip(*(pts + [pts[0]]))
    fig = go.Figure(go.Scatter(x=xs, y=ys, fill="toself", name="feasible (Eq. 8)", line=dict(color="#1f77b4")))
    if threshold is not None and np.isfinite(threshold):
        fig.add_trace(go.Scatter(x=[threshold, threshold, top], y=[top, threshold, threshold], mode="lines",
                                 name=f"Theorem 1: k ≥ 2^{threshold:.2f}", line=dict(color="#d62728", dash="dot")))
    if optimum is not None:
        fig.add_trace(go.Scatter(x=[optimum[0]], y=[optimum[1]], mode="markers", name="optimum (solver)",
                                 marker=dict(size=14, symbol="star", color="#ff7f0e")))
    if closed_form is not None:
        fig.add_trace(go.Scatter(x=[closed_form[0]], y=[closed_form[1]], mode="markers", name="Eq. (12)",
                                 marker=dict(size=9, symbol="circle-open", color="black", line=dict(width=2))))
    fig.update_layout(title=title, xaxis_title="user 1: log2 k1", yaxis_title="user 2: log2 k2",
                      xaxis_range=[0, top], yaxis_range=[0, top], margin=dict(l=60, r=20, t=50, b=50))
    return fig


def table1_figure(ours: pd.DataFrame, paper: pd.DataFrame, title: str = "Table 1: optimal user budgets") -> go.Figure:
    """Ours beside the report's, one row per K2."""
    def pair(a, b):
        return "infeasible" if not np.isfinite(a) else f"(2^{a:g}, 2^{b:g})"

    cells = [[f"2^{k:g}" for k in ours["K2_bits"]],
             [pair(a, b) for a, b in zip(ours["up_k1_bits"].round(6), ours["up_k2_bits"].round(6))],
             list(paper["up"]) if len(paper) == len(ours) else [""] * len(ours),
             [pair(a, b) for a, b in zip(ours["down_k1_bits"].round(6), ours["down_k2_bits"].round(6))],
             list(paper["down"]) if len(paper) == len(ours) else [""] * len(ours)]
    fig = go.Figure(go.Table(header=dict(values=["K2 (K1 = 2^9, K(s) = 2^14)", "uplink: ours", "uplink: report",
                                                 "downlink: ours", "downlink: report"]),
                             cells=dict(values=cells)))
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=50, b=10))
    return fig
