"""Plotly figures of the FELLRec topic (cards, page and notebook draw the same ones)."""
from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..plot_style import LEGEND_BELOW, wrapped

SMOKE_NOTE = "<br><sup>smoke run: synthetic data, not the paper's numbers</sup>"  # a second line: one was too wide


def _title(t: str, smoke: bool) -> str:
    return wrapped(t) + (SMOKE_NOTE if smoke else "")


def methods_bars(ours: pd.DataFrame, paper: pd.DataFrame, smoke: bool = False, backend: str = "BIGRec",
                 ours_label: str = "ours: ML-100K, small<br>transformer"):
    fig = make_subplots(rows=1, cols=2, subplot_titles=(ours_label, f"paper: Games,<br>{backend} backend"))
    for m in ("R@10", "R@20", "N@10", "N@20"):
        fig.add_bar(x=ours["method"], y=ours[m], name=f"ours {m}", row=1, col=1)
        p = paper[paper["backend"] == backend] if "backend" in paper else paper
        if len(p):
            fig.add_bar(x=p["method"], y=p[m], name=f"paper {m}", row=1, col=2)
    fig.update_layout(title=_title("Table 1: overall accuracy by method", smoke), barmode="group",
                      legend=LEGEND_BELOW)
    return fig


def table2_bars(ours: pd.DataFrame, paper: pd.DataFrame, smoke: bool = False):
    fig = make_subplots(rows=1, cols=2, subplot_titles=("ours: ML-100K, small<br>transformer", "paper: Games"))
    for m in ("R@10", "R@20", "N@10", "N@20"):
        fig.add_bar(x=ours["model"], y=ours[m], name=f"ours {m}", row=1, col=1)
        fig.add_bar(x=paper["model"], y=paper[m], name=f"paper {m}", row=1, col=2)
    fig.update_layout(title=_title("Table 2: matrix factorization against the language model", smoke),
                      barmode="group", legend=LEGEND_BELOW)
    return fig


def client_bars(ours: pd.DataFrame, paper: pd.DataFrame, smoke: bool = False):
    cols = [c for c in ours.columns if c.startswith("client ")]
    long = ours.melt(id_vars=["method", "imbalance"], value_vars=cols, var_name="client", value_name="R@10")
    long["label"] = long["method"] + " (imbalance " + long["imbalance"].map("{:.2f}".format) + ")"
    fig = px.bar(long, x="client", y="R@10", color="label", barmode="group",
                 title=_title("Table 4: Recall@10 per client and imbalance (best - worst) / worst", smoke))
    return fig


def dirichlet_lines(ours: pd.DataFrame, paper: pd.DataFrame, smoke: bool = False):
    fig = go.Figure()
    for m in ("fedavg", "fellrec"):
        o = ours[ours["method"] == m]
        fig.add_scatter(x=o["c"], y=o["R@10"], name=f"ours {m}", mode="lines+markers")
        if m in paper:
            fig.add_scatter(x=paper["c"], y=paper[m], name=f"paper {m} (Games)", mode="lines+markers",
                            line={"dash": "dot"}, yaxis="y2")
    fig.update_layout(title=_title("Table 6: R@10 under Dirichlet(c) clients", smoke), xaxis_title="c",
                      yaxis_title="ours R@10", yaxis2={"title": "paper R@10", "overlaying": "y", "side": "right"},
                      legend=LEGEND_BELOW)  # beside the plot it covered the right axis's numbers
    return fig


def client_count_lines(ours: pd.DataFrame, paper=None, smoke: bool = False):
    fig = make_subplots(rows=1, cols=2, subplot_titles=("R@10 (all client users)", "imbalance<br>(best - worst) / worst"))
    for m in ("fedavg", "fellrec"):
        o = ours[ours["method"] == m].sort_values("n_clients")
        fig.add_scatter(x=o["n_clients"], y=o["R@10"], name=m, mode="lines+markers", row=1, col=1,
                        legendgroup=m)
        fig.add_scatter(x=o["n_clients"], y=o["imbalance"], name=m, mode="lines+markers", row=1, col=2,
                        legendgroup=m, showlegend=False)
    fig.update_xaxes(title_text="clients (KMeans clusters)", type="log")
    fig.update_layout(title=_title("Fig. 6: FedAvg and FELLRec against the number of clients", smoke),
                      legend=LEGEND_BELOW, margin_t=130)  # a two-line title over a two-line panel title
    return fig


def probe_lines(ours: pd.DataFrame, paper=None, smoke: bool = False, k: int | None = None):
    fig = px.line(ours, x="layer", y="similarity", color="probe", markers=True,
                  title=_title("Fig. 3: probe reconstruction of the input from each layer's output", smoke))
    if k is not None:
        fig.add_vline(x=k, line_dash="dash", annotation_text=f"k = {k}: the server sees this layer's output")
    fig.update_layout(yaxis_title="cosine similarity (held-out users)")
    return fig


def cost_lines(ours: pd.DataFrame, paper=None, smoke: bool = False):
    # short panel titles: three panels side by side at a laptop's width
    fig = make_subplots(rows=1, cols=3, subplot_titles=("memory<br>(MiB)", "upload / epoch<br>(KiB)", "compute<br>(s)"))
    off = ours[ours["offload"]]
    fed = ours[~ours["offload"]]
    fig.add_scatter(x=off["k"], y=off["device_memory_MiB"], name="device memory", mode="lines+markers", row=1, col=1)
    fig.add_scatter(x=fed["k"], y=fed["device_memory_MiB"], name="no offloading (FedAvg)", mode="markers",
                    marker={"symbol": "x", "size": 12}, row=1, col=1)
    fig.add_scatter(x=off["k"], y=off["upload_bytes"] / 1024, name="measured upload", mode="lines+markers", row=1, col=2)
    fig.add_scatter(x=off["k"], y=off["table3_upload_bytes"] / 1024, name="Table 3: (k+1) b + 2c",
                    mode="lines", line={"dash": "dot"}, row=1, col=2)
    fig.add_scatter(x=off["k"], y=off["device_seconds"], name="device seconds", mode="lines+markers", row=1, col=3)
    fig.add_scatter(x=off["k"], y=off["server_seconds"], name="server seconds", mode="lines+markers", row=1, col=3)
    fig.update_xaxes(title_text="k")  # spelled out under the middle panel: under each, the right one's was cut
    fig.update_xaxes(title_text="k: layers 1..k and N on the device", row=1, col=2)
    fig.update_annotations(yshift=10)  # clear of the top tick label of the panel's y axis
    fig.update_layout(title=_title("Fig. 4 / Table 3: device cost against k", smoke), legend=LEGEND_BELOW,
                      margin_t=150)  # room for the two-line panel titles under a two-line title
    return fig


def ablation(ours: pd.DataFrame, paper=None, smoke: bool = False):
    fig = make_subplots(rows=1, cols=2, subplot_titles=("validation R@10 by round", "final test R@10"))
    # each variant one colour in both panels, named once by the legend (the variants' long names as slanted bar
    # labels ran into the legend at a projector's width)
    last = ours.groupby("variant", sort=False).last()  # each column's last value given
    for (v, g), color in zip(ours.groupby("variant", sort=False), px.colors.qualitative.Plotly * 4):
        fig.add_scatter(x=g["round"], y=g["val_R@10"], name=v, mode="lines+markers", line_color=color,
                        legendgroup=v, row=1, col=1)
        fig.add_bar(x=[v], y=[last.loc[v, "R@10"]], name=v, marker_color=color, legendgroup=v, showlegend=False,
                    row=1, col=2)
    fig.update_xaxes(showticklabels=False, row=1, col=2)
    fig.update_layout(title=_title("Fig. 5: contributions of dynamic aggregation and learning speed", smoke),
                      legend=LEGEND_BELOW)
    return fig


def sensitivity(ours: pd.DataFrame, paper=None, smoke: bool = False):
    fig = make_subplots(rows=1, cols=2, subplot_titles=("alpha (beta fixed)", "beta (alpha fixed)"))
    for i, s in enumerate(("alpha", "beta"), start=1):
        g = ours[ours["sweep"] == s]
        fig.add_scatter(x=g["value"], y=g["R@10"], name=f"R@10 vs {s}", mode="lines+markers", row=1, col=i)
    fig.update_layout(title=_title("Fig. 7: sensitivity to the warm-up factors", smoke), yaxis_title="R@10")
    return fig


def heating(df: pd.DataFrame, title: str = "Curriculum heating: w_c per round (eq. 4)"):
    fig = px.line(df, x="round", y="w", color=df["client"].astype(str), markers=True, hover_data=["loss"],
                  title=title, labels={"color": "client", "w": "w_c"})
    fig.update_yaxes(range=[0, 1.05])
    return fig


def warmup_curves(losses, alpha: float, beta: float, rounds: int = 20):
    """w_c(t) of eq. (4) for given client losses (no training): the curve a slider moves."""
    from .aggregate import warmup

    rows = [{"round": t, "client": f"client {c + 1} (loss {losses[c]:.2f})", "w": float(w)}
            for t in range(1, rounds + 1) for c, w in enumerate(warmup(losses, t, alpha, beta))]
    df = pd.DataFrame(rows)
    fig = px.line(df, x="round", y="w", color="client", markers=True,
                  title=f"eq. (4): w_c = tanh(alpha / softmax(L)_c^(t/beta)), alpha={alpha:g}, beta={beta:g}")
    fig.update_yaxes(range=[0, 1.05], title="w_c")
    return fig
