"""Plotly figures shared by the notebooks and the app (the same DataFrames, the same charts)."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from .results import Result

X_LABELS = {"round": "round", "cum_bytes": "cumulative bytes (up + down, all clients)",
            "wallclock": "simulated wall-clock (s)"}
Y_LABELS = {"hr": "HR@10", "ndcg": "NDCG@10", "loss": "training loss"}


def _long(results: Sequence[Result], labels: Sequence[str] | None, cols: list[str]) -> pd.DataFrame:
    frames = []
    for i, r in enumerate(results):
        f = r.table[cols].copy()
        f["run"] = labels[i] if labels else r.config.describe()
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def metric_curves(results: Sequence[Result], x: str = "round", y: str = "hr",
                  labels: Sequence[str] | None = None) -> go.Figure:
    """HR / NDCG / loss against rounds, cumulative bytes or simulated wall-clock."""
    df = _long(results, labels, ["round", "cum_bytes", "wallclock", y]).dropna(subset=[y])
    fig = px.line(df, x=x, y=y, color="run", markers=True, log_x=(x == "cum_bytes"),
                  labels={x: X_LABELS.get(x, x), y: Y_LABELS.get(y, y)})
    fig.update_layout(legend_title_text="", margin=dict(l=40, r=10, t=30, b=40))
    return fig


def effective_rank(result: Result) -> go.Figure:
    """N90 / N99 PCA components of the round's client updates (mean ± std), as CoLR Fig. 2."""
    t = result.table.dropna(subset=["n90_mean"])
    fig = go.Figure()
    for key, name in (("n90", "N90-PCA"), ("n99", "N99-PCA")):
        fig.add_trace(go.Scatter(x=t["round"], y=t[f"{key}_mean"], name=name, mode="lines",
                                 error_y=dict(type="data", array=t[f"{key}_std"], visible=True, thickness=0.5)))
    fig.add_trace(go.Scatter(x=t["round"], y=t["erank_mean"], name="entropy rank", mode="lines",
                             line=dict(dash="dot")))
    fig.update_layout(xaxis_title="round", yaxis_title="components", margin=dict(l=40, r=10, t=30, b=40))
    return fig


def payload_parts(result: Result) -> go.Figure:
    """Measured bytes per message part and direction, with the theoretical size beside them."""
    g = result.part_bytes()
    g["label"] = g["direction"] + ": " + g["part"]
    fig = go.Figure([go.Bar(x=g["label"], y=g["bytes"], name="measured (serialized)"),
                     go.Bar(x=g["label"], y=g["theoretical_bytes"], name="theoretical")])
    fig.update_layout(barmode="group", yaxis_title="bytes (whole run)", margin=dict(l=40, r=10, t=30, b=40))
    return fig


def round_time(results: Sequence[Result], labels: Sequence[str] | None = None) -> go.Figure:
    """Communication vs computation time per run (CoLR Table 2's breakdown), in minutes."""
    rows = []
    for i, r in enumerate(results):
        name = labels[i] if labels else r.config.describe()
        rows += [{"run": name, "part": "communication", "minutes": r.table["t_comm"].sum() / 60},
                 {"run": name, "part": "computation", "minutes": r.table["t_comp"].sum() / 60}]
    fig = px.bar(pd.DataFrame(rows), x="run", y="minutes", color="part", barmode="stack")
    fig.update_layout(legend_title_text="", margin=dict(l=40, r=10, t=30, b=40))
    return fig
