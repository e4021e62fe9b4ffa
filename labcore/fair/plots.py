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


GROUP_WIDTH = 0.8  # share of a category's width its bars fill
SHORT_BAR = 0.25  # bars below this share of the tallest carry their value above them
LABEL_ZONE = 0.2  # share of the tallest bar's height a value written along a bar takes


def _slots(ours: pd.DataFrame, paper: pd.DataFrame | None, x: str, color: str) -> tuple[list, dict, float]:
    """Categories in order and the x position of every (category, method) shown, ours or the paper's.

    Each category centres only the methods it has (FedAvg alone at '-', the paper's Central alone at 'central'),
    all bars one width: placed by hand, since Plotly's grouped bars keep a slot for every method everywhere and
    put scatter points (the paper's diamonds) between them."""
    frames = [ours] + ([paper] if paper is not None else [])
    cats = list(dict.fromkeys(str(v) for f in frames for v in f[x]))
    methods = list(dict.fromkeys(str(v) for f in frames for v in f[color]))
    present = {c: [m for m in methods if any(((f[x].astype(str) == c) & (f[color].astype(str) == m)).any()
                                             for f in frames)] for c in cats}
    width = GROUP_WIDTH / max(len(v) for v in present.values())
    pos = {(c, m): i + (j - (len(present[c]) - 1) / 2) * width
           for i, c in enumerate(cats) for j, m in enumerate(present[c])}
    return cats, pos, width


def _label_end(part: pd.DataFrame, paper: pd.DataFrame | None, x: str, color: str, metric: str, top: float) -> str:
    """Where a method's bars carry their value: at the base, unless the paper's diamonds fall there more
    often than on the bars' tops (ours far above the paper's numbers)."""
    zone = LABEL_ZONE * top
    base = tops = 0
    for _, r in part.iterrows():
        if paper is None:
            break
        pv = paper[(paper[x].astype(str) == str(r[x])) & (paper[color].astype(str) == str(r[color]))][metric]
        if not len(pv) or pd.isna(pv.iloc[0]) or pd.isna(r[metric]):
            continue
        pv, v = float(pv.iloc[0]), float(r[metric])
        base += pv <= zone
        tops += v - zone <= pv <= v + 0.04 * top
    return "end" if base > tops else "start"


def table_bars(ours: pd.DataFrame, paper: pd.DataFrame, metric: str, x: str = "capacity",
               color: str = "method") -> go.Figure:
    """Ours as bars with their value written inside (N/A where a scheme cannot run), the paper's number as a
    black diamond on the same bar."""
    paper = paper if paper is not None and len(paper) and metric in paper else None
    cats, pos, width = _slots(ours, paper, x, color)
    top = float(ours[metric].max()) if ours[metric].notna().any() else 1.0
    fig = go.Figure()
    for name, part in ours.groupby(color, sort=False):
        xs = [pos[(str(c), str(name))] for c in part[x]]
        vals = part[metric].astype(float)
        fig.add_trace(go.Bar(x=xs, y=vals, width=width, name=str(name), marker_color=METHOD_COLORS.get(str(name)),
                             text=[f"{v:.3f}" for v in vals], textangle=-90,
                             insidetextanchor=_label_end(part, paper, x, color, metric, top),
                             # a label fits inside a bar a quarter of the tallest high; a shorter one gets it above
                             textposition=["inside" if v >= SHORT_BAR * top else "outside" for v in vals],
                             insidetextfont=dict(color="white"), cliponaxis=False,
                             hovertemplate=f"{name} %{{customdata}}: %{{y:.4f}}<extra>ours</extra>",
                             customdata=part[x].astype(str)))
        na = vals.isna().to_numpy()
        if na.any():
            fig.add_trace(go.Scatter(x=[v for v, n in zip(xs, na) if n], y=[0] * int(na.sum()), mode="text",
                                     text=["N/A"] * int(na.sum()), textposition="top center", showlegend=False,
                                     hoverinfo="skip", textfont=dict(color=METHOD_COLORS.get(str(name), "#444444"))))
    if paper is not None:
        shown = paper.dropna(subset=[metric])
        fig.add_trace(go.Scatter(
            x=[pos[(str(c), str(m))] for c, m in zip(shown[x], shown[color])], y=shown[metric], mode="markers",
            name="the paper", marker=dict(symbol="diamond", color="black", size=11, line=dict(color="white", width=1)),
            customdata=[f"{m} {c}" for c, m in zip(shown[x], shown[color])],
            hovertemplate="%{customdata}: %{y:.4f}<extra>paper</extra>"))
    fig.update_xaxes(tickvals=list(range(len(cats))), ticktext=cats, range=[-0.6, len(cats) - 0.4],
                     tickangle=-30 if max(map(len, cats)) > 12 else 0)
    fig = _layout(fig, METRIC_LABELS.get(metric, metric), x)
    fig.update_layout(barmode="overlay", uniformtext=dict(minsize=11, mode="show"))
    return fig


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
