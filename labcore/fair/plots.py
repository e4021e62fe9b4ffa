"""Plotly figures of the FAIR lesson (shared by the figure cards, the notebooks and the app)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

METHOD_COLORS = {"FedAvg": "#444444", "FAIR-HET": "#1f77b4", "FAIR-HOM": "#ff7f0e", "FULL-TRN": "#d62728",
                 "FedHM": "#2ca02c", "consistent": "#1f77b4", "inconsistent": "#d62728"}
METRIC_LABELS = {"ndcg": "NDCG@20", "mse": "test MSE (lower is better)", "accuracy": "test accuracy"}


def _layout(fig: go.Figure, y: str, x: str = "") -> go.Figure:
    fig.update_layout(margin=dict(l=50, r=10, t=30, b=50), legend_title_text="", yaxis_title=y, xaxis_title=x,
                      barmode="group")
    return fig


def table_bars(ours: pd.DataFrame, paper: pd.DataFrame, metric: str, x: str = "capacity",
               color: str = "method") -> go.Figure:
    """Ours as bars (N/A as an empty slot with a label), the paper's numbers as black diamonds."""
    fig = go.Figure()
    for name, part in ours.groupby(color, sort=False):
        fig.add_trace(go.Bar(x=part[x], y=part[metric], name=str(name), marker_color=METHOD_COLORS.get(str(name)),
                             text=[("N/A" if pd.isna(v) else f"{v:.3f}") for v in part[metric]],
                             textposition="outside", offsetgroup=str(name)))
    if paper is not None and len(paper) and metric in paper:
        for name, part in paper.groupby(color, sort=False):
            fig.add_trace(go.Scatter(x=part[x], y=part[metric], mode="markers", name=f"paper {name}",
                                     marker=dict(symbol="diamond", color="black", size=8), offsetgroup=str(name),
                                     showlegend=False))
    return _layout(fig, METRIC_LABELS.get(metric, metric), x)


def curves(frame: pd.DataFrame, metric: str = "metric", label: str = "run") -> go.Figure:
    """Metric against round, one line per run (Fig. 4)."""
    fig = go.Figure()
    for name, part in frame.groupby(label, sort=False):
        dash = "dot" if "inconsistent" in str(name) else None
        fig.add_trace(go.Scatter(x=part["round"], y=part[metric], mode="lines+markers", name=str(name),
                                 line=dict(dash=dash)))
    return _layout(fig, METRIC_LABELS.get(metric, metric), "round")


def tradeoff(frame: pd.DataFrame, metric_label: str = "NDCG@20") -> go.Figure:
    """Fig. 1 (left) from runs: one model size for everyone who can hold it (data loss to the left,
    model loss to the right) against FAIR, where every device trains at its own size."""
    fig = go.Figure()
    fixed = frame[frame["strategy"] == "one model size"].sort_values("devices_share")
    fig.add_trace(go.Scatter(x=fixed["devices_share"], y=fixed["metric"], mode="lines+markers+text",
                             name="one model size for all who fit", line=dict(color="#d62728"),
                             text=[f"{r}x" for r in fixed["model_ratio"]], textposition="top center"))
    het = frame[frame["strategy"] == "FAIR-HET"]
    fig.add_trace(go.Scatter(x=het["devices_share"], y=het["metric"], mode="markers",
                             name="FAIR (each at its own size)",
                             marker=dict(size=14, symbol="star", color="#1f77b4")))
    fig.update_xaxes(tickformat=".0%")
    return _layout(fig, metric_label, "share of devices that take part")


def device_memory(devices: pd.DataFrame) -> go.Figure:
    """Bytes a device stores per capacity tier."""
    d = devices[devices["takes_part"]]
    fig = go.Figure(go.Bar(x=d["tier"], y=d["bytes"] / 2**20, text=[f"{r:.1f}x" for r in d["ratio_actual"]],
                           textposition="outside"))
    return _layout(fig, "model on the device (MiB)", "capacity tier")


def _unit(values) -> tuple[float, str]:
    top = max([float(v) for v in values if pd.notna(v)] or [0.0])
    return (2**20, "MiB") if top >= 2**20 else (1024, "KiB")


def scheme_panels(curves: pd.DataFrame, devices: pd.DataFrame, traffic: pd.DataFrame,
                  metric_label: str = "NDCG@20") -> go.Figure:
    """One capacity scheme, the strategies side by side (frames of `labcore.fair.tradeoff.scheme_*`):
    the metric per round, what a device of each tier stores, and the bytes of a round by direction."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=3, column_widths=[0.45, 0.3, 0.25],
                        subplot_titles=(f"{metric_label} per round", "model on a device, per tier",
                                        "bytes per round"))
    for name, part in curves.groupby("method", sort=False):
        fig.add_scatter(x=part["round"], y=part["metric"], mode="lines+markers", name=str(name), legendgroup=str(name),
                        line=dict(color=METHOD_COLORS.get(str(name))), row=1, col=1)
    div, unit = _unit(devices["bytes"])
    for name, part in devices.groupby("method", sort=False):
        fig.add_bar(x=part["tier"], y=part["bytes"] / div, name=str(name), legendgroup=str(name), showlegend=False,
                    marker_color=METHOD_COLORS.get(str(name)), offsetgroup=str(name),
                    text=[f"{v / div:.1f}" if t else "left out" for v, t in zip(part["bytes"], part["takes_part"])],
                    textposition="outside", textangle=-90, constraintext="none", cliponaxis=False, row=1, col=2)
    tdiv, tunit = _unit(traffic["bytes_per_round"])
    for direction, part in traffic.groupby("direction", sort=False):
        fig.add_bar(x=part["method"], y=part["bytes_per_round"] / tdiv, name=f"{direction}link", offsetgroup=direction,
                    marker=dict(color="#999999" if direction == "down" else "#333333"), row=1, col=3)
    fig.update_xaxes(title_text="round", row=1, col=1)
    fig.update_xaxes(title_text="capacity tier", row=1, col=2)
    fig.update_yaxes(title_text=metric_label, row=1, col=1)
    fig.update_yaxes(title_text=unit, range=[0, 1.35 * devices["bytes"].max() / div], row=1, col=2)
    fig.update_yaxes(title_text=tunit, row=1, col=3)
    fig.update_layout(margin=dict(l=50, r=10, t=40, b=50), barmode="group", legend_title_text="", height=420)
    return fig
