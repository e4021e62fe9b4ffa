"""Plotly figures shared by the notebooks and the app (the same DataFrames, the same charts)."""
from __future__ import annotations

from typing import Sequence

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from .plot_style import LEGEND_BELOW
from .results import Result

MB = 2 ** 20  # bytes are drawn in KB / MB (2^10 / 2^20 bytes), the unit on the axis, never Plotly's "1.4B"
X_LABELS = {"round": "round", "cum_bytes": "cumulative traffic, MB (up + down, all clients)",
            "wallclock": "simulated wall-clock (s)"}
Y_LABELS = {"hr": "HR@10", "ndcg": "NDCG@10", "loss": "training loss", "backdoor_success": "backdoor success",
            "hr_personal": "HR@10, personal models"}


def _template() -> str:
    """The default template, merged once and registered under its own name.

    A figure built with a "+"-combined default ("plotly_white+labcore") merges and validates the templates
    again, ~100 ms a figure on a busy laptop; the figures redrawn live (and when a bandwidth moves) name the
    merged one instead: the same look, ~10x cheaper to build.
    """
    import plotly.io as pio

    name = str(pio.templates.default).replace("+", "_") + "_merged"
    if name not in pio.templates:
        pio.templates[name] = pio.templates[pio.templates.default]
    return name


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
    df["cum_bytes"] = df["cum_bytes"] / MB
    fig = px.line(df, x=x, y=y, color="run", markers=True, log_x=(x == "cum_bytes"),
                  labels={x: X_LABELS.get(x, x), y: Y_LABELS.get(y, y)})
    fig.update_layout(legend_title_text="", margin=dict(l=40, r=10, t=30, b=40))
    return fig


def effective_rank(result: Result, ceiling: float | None = None) -> go.Figure:
    """N90 / N99 PCA components of the round's client updates (mean ± std, as CoLR Fig. 2), and of the
    aggregated update when the run measured it (columns agg_n90, agg_n99, agg_erank; older runs lack them).

    The y axis starts at 0 and reaches at least `ceiling` (the update's width: r or d), so a wobble of a few
    hundredths around 1 looks like what it is.
    """
    t = result.table.dropna(subset=["n90_mean"])
    fig = go.Figure(layout=dict(template=_template()))
    top = 1.0
    for key, name, dash, symbol in (("n90", "N90 per client", "solid", "circle"),
                                    ("n99", "N99 per client", "dash", "x")):
        fig.add_trace(go.Scatter(x=t["round"], y=t[f"{key}_mean"], name=name, mode="lines+markers",
                                 line=dict(color="#1f77b4", dash=dash, width=3 if key == "n90" else 1.5),
                                 marker=dict(symbol=symbol, size=7 if key == "n90" else 9),
                                 error_y=dict(type="data", array=t[f"{key}_std"], visible=True, thickness=0.5)))
        top = max(top, float((t[f"{key}_mean"] + t[f"{key}_std"].fillna(0)).max() or 1))
    fig.add_trace(go.Scatter(x=t["round"], y=t["erank_mean"], name="entropy rank per client", mode="lines",
                             line=dict(color="#1f77b4", dash="dot")))
    agg = [c for c in ("agg_n90", "agg_n99", "agg_erank") if c in result.table and result.table[c].notna().any()]
    for key in agg:
        a = result.table.dropna(subset=[key])
        name = {"agg_n90": "N90 aggregated", "agg_n99": "N99 aggregated", "agg_erank": "entropy rank aggregated"}[key]
        style = {"agg_n90": dict(dash="solid", width=3), "agg_n99": dict(dash="dash", width=1.5),
                 "agg_erank": dict(dash="dot", width=1.5)}[key]
        fig.add_trace(go.Scatter(x=a["round"], y=a[key], name=name, mode="lines+markers" if key != "agg_erank"
                                 else "lines", line=dict(color="#d62728", **style),
                                 marker=dict(symbol="circle" if key == "agg_n90" else "x", size=7)))
        top = max(top, float(a[key].max()))
    top = max(top, float(ceiling or 0), 2.0)
    fig.update_layout(xaxis_title="round", yaxis_title="PCA components", yaxis_range=[0, top * 1.05],
                      margin=dict(l=50, r=10, t=30, b=10), legend=LEGEND_BELOW)
    return fig


def payload_parts(result: Result) -> go.Figure:
    """Measured bytes per message part and direction, with the theoretical size beside them."""
    g = result.part_bytes()
    g["label"] = g["direction"] + ": " + g["part"]
    fig = go.Figure(layout=dict(template=_template()),
                    data=[go.Bar(x=g["label"], y=g["bytes"] / MB, name="measured (serialized)"),
                          go.Bar(x=g["label"], y=g["theoretical_bytes"] / MB, name="theoretical")])
    fig.update_layout(barmode="group", yaxis_title="MB (whole run)", margin=dict(l=40, r=10, t=30, b=10),
                      legend=LEGEND_BELOW)  # below the bars: in a narrow column, beside them it covered them
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


# --- the app's live views (also usable from notebooks) -------------------------------------------------------

# two-line titles: three panels side by side at a projector's 1024 px leave each about 190 px
_PANEL_X = (("round", "round"), ("cum_bytes", "cumulative traffic<br>MB (log)"),
            ("wallclock", "simulated<br>wall-clock (s)"))


def metric_panel(results: Sequence[Result], y: str = "hr", labels: Sequence[str] | None = None,
                 dashed: Sequence[int] = ()) -> go.Figure:
    """One metric against rounds, cumulative bytes and simulated wall-clock, side by side (shared y axis).

    A lighter cousin of `metric_curves` (plain graph objects, one figure), made to be redrawn while a run
    streams. `dashed`: indices of the runs drawn with dashed lines (e.g. a baseline).
    """
    from plotly.colors import DEFAULT_PLOTLY_COLORS

    traces = []
    for i, r in enumerate(results):
        t = r.table.dropna(subset=[y]) if y in r.table else r.table.iloc[:0]
        name = labels[i] if labels else r.config.describe()
        color = DEFAULT_PLOTLY_COLORS[i % len(DEFAULT_PLOTLY_COLORS)]
        line = dict(color=color, dash="dash" if i in dashed else "solid")
        for c, (x, _) in enumerate(_PANEL_X, start=1):
            xs = t[x] / MB if x == "cum_bytes" else t[x]
            ax = "" if c == 1 else str(c)
            traces.append(go.Scatter(x=xs, y=t[y], mode="lines+markers", name=name, legendgroup=name,
                                     showlegend=(c == 1), line=line, marker=dict(size=4), xaxis="x" + ax,
                                     yaxis="y" + ax))
    # three panels side by side with a shared y axis, laid out by hand: make_subplots costs ~50 ms a figure,
    # and these figures are rebuilt whenever a bandwidth or a tier moves
    layout = _panels([t for _, t in _PANEL_X], across=True)
    layout["xaxis2"]["type"] = "log"
    layout["yaxis"]["title"] = Y_LABELS.get(y, y)
    for k in ("yaxis2", "yaxis3"):
        layout[k].update(matches="y", showticklabels=False)
    layout.update(margin=dict(l=50, r=10, t=60, b=10), legend=LEGEND_BELOW, height=380,
                  template=_template())
    return go.Figure(traces, layout)


def _panels(titles: Sequence[str], across: bool, gap: float = 0.03, title_size: int = 16) -> dict:
    """Layout of len(titles) panels side by side (across) or stacked, each with its own axes and title."""
    n = len(titles)
    size = (1 - gap * (n - 1)) / n
    layout: dict = {"annotations": []}
    for i, title in enumerate(titles):
        ax = "" if i == 0 else str(i + 1)
        lo = i * (size + gap) if across else 1 - (i + 1) * size - i * gap
        dom = [max(lo, 0.0), min(lo + size, 1.0)]
        if across:
            layout["xaxis" + ax] = dict(domain=dom, anchor="y" + ax)
            layout["yaxis" + ax] = dict(anchor="x" + ax)
        else:
            layout["xaxis" + ax] = dict(anchor="y" + ax, matches="x" if i else None, showticklabels=(i == n - 1))
            layout["yaxis" + ax] = dict(domain=dom, anchor="x" + ax)
        x = (dom[0] + dom[1]) / 2 if across else 0.5
        yy = 1.0 if across else dom[1]
        layout["annotations"].append(dict(text=title, x=x, y=yy, xref="paper", yref="paper", showarrow=False,
                                          xanchor="center", yanchor="bottom", font=dict(size=title_size)))
    return layout


def round_breakdown(result: Result) -> go.Figure:
    """Simulated time of every round: communication and computation each on its own panel and scale.

    Stacked on one axis, a 0.05 s upload under 10 s of computation is invisible; here each part has its own
    y axis and the title gives communication's share of the total.
    """
    t = result.table
    total = float(t["t_round"].sum()) or 1.0
    share = float(t["t_comm"].sum()) / total
    layout = _panels((f"communication, s ({share:.1%})", "computation + server, s"), across=False, gap=0.14,
                     title_size=14)  # titles that fit a third of a 1280 px page
    layout["xaxis2"]["title"] = "round"
    layout.update(bargap=0, showlegend=False, margin=dict(l=50, r=10, t=30, b=40), template=_template())
    return go.Figure([go.Bar(x=t["round"], y=t["t_comm"], name="communication", marker_color="#1f77b4"),
                      go.Bar(x=t["round"], y=t["t_comp"], name="computation", marker_color="#ff7f0e", xaxis="x2",
                             yaxis="y2")], layout)


def tradeoff(results: Sequence[Result], groups: Sequence[str], y: str = "hr",
             dashed: Sequence[str] = ()) -> go.Figure:
    """Final metric against bytes per client per round (up + down), one line per group (CoLR Fig. 3 / 4 form).

    x is log scaled as in the paper; `dashed` groups (e.g. FedMF at smaller d) are drawn as a dashed baseline.
    """
    rows = []
    for r, g in zip(results, groups):
        t = r.table
        ev = t.dropna(subset=[y]) if y in t else t.iloc[:0]
        if not len(ev):
            continue
        rows.append({"group": g, "run": r.config.describe(), y: float(ev[y].iloc[-1]),
                     "bytes": float((t["bytes_up_client"] + t["bytes_down_client"]).mean())})
    df = pd.DataFrame(rows, columns=["group", "run", y, "bytes"])
    fig = go.Figure()
    for g in dict.fromkeys(groups):
        d = df[df["group"] == g].sort_values("bytes")
        fig.add_trace(go.Scatter(x=d["bytes"] / 1024, y=d[y], name=g, text=d["run"], mode="lines+markers",
                                 line=dict(dash="dash", color="black") if g in dashed else None,
                                 hovertemplate="%{text}<br>%{x:,.1f} KB<br>%{y:.4f}<extra></extra>"))
    fig.update_layout(xaxis_type="log", xaxis_title="KB per client per round (up + down, log)",
                      yaxis_title=Y_LABELS.get(y, y), margin=dict(l=50, r=10, t=30, b=40))
    return fig


def ckks_sizes(table: pd.DataFrame, x: str = "rank") -> go.Figure:
    """Ciphertext and plaintext size of one upload against `x` (columns ciphertext_bytes, plaintext_bytes, method).

    CKKS packs N/2 values per ciphertext, so the ciphertext size is a staircase while the plaintext grows
    linearly: the step structure of CoLR's Table 3.
    """
    fig = go.Figure()
    for m, d in table.groupby("method", sort=False):
        d = d.sort_values(x)
        fig.add_trace(go.Scatter(x=d[x], y=d["ciphertext_bytes"] / 1024, name=f"{m}: ciphertext",
                                 mode="lines+markers", line_shape="hv"))
        fig.add_trace(go.Scatter(x=d[x], y=d["plaintext_bytes"] / 1024, name=f"{m}: plaintext (float32)",
                                 mode="lines+markers", line=dict(dash="dot")))
    fig.update_layout(xaxis_title=x, yaxis_title="KB per client upload", yaxis=dict(type="log", dtick=1),
                      margin=dict(l=50, r=10, t=30, b=40))
    return fig


def attack_bars(summary: pd.DataFrame) -> go.Figure:
    """Item-recovery precision and recall per view of the server, each against chance (attack_summary's table):
    a guess as large as the attack's recalls that share of anyone's items."""
    s = summary.copy()
    s["label"] = s["encryption"] + ": " + s["view"]
    fig = go.Figure([go.Bar(x=s["label"], y=s["precision"], name="attack precision"),
                     go.Bar(x=s["label"], y=s["recall"], name="attack recall"),
                     go.Bar(x=s["label"], y=s["base_rate"], name="chance precision"),
                     go.Bar(x=s["label"], y=s["chance_recall"], name="chance recall")])
    fig.update_layout(barmode="group", yaxis_title="share of items", yaxis_range=[0, 1.05],
                      margin=dict(l=50, r=10, t=30, b=40))
    return fig


# --- the lab notebooks' views (labs/) ----------------------------------------------------------------------

def variance_spectrum(ratios, labels: Sequence[str] | None = None, max_clients: int = 12) -> go.Figure:
    """Variance of client updates left unexplained by the first k PCA components, against k (log scale).

    `ratios` (M, d): explained-variance ratios per client, descending (labcore.metrics.explained_variance_ratios).
    A client's line crosses the dotted 10% and 1% lines at its N90 and N99 (CoLR Fig. 2's measure); the log
    scale shows how far below them the rest of the spectrum lies.
    """
    import math

    import numpy as np

    r = np.asarray(ratios, dtype=float)
    r = r[~np.isnan(r[:, 0])][:max_clients]
    fig = go.Figure()
    for i, row in enumerate(r):
        name = labels[i] if labels else f"client {i}"
        left = np.clip(1.0 - np.cumsum(row[:-1]), 1e-12, 1.0)  # k = 0 .. d-1 (at k = d nothing is left)
        fig.add_trace(go.Scatter(x=np.arange(0, row.size), y=np.concatenate([[1.0], left]), mode="lines+markers",
                                 name=name, marker=dict(size=4)))
    for share, label in ((0.1, "10% left: N90"), (0.01, "1% left: N99")):
        fig.add_hline(y=share, line=dict(dash="dot", color="gray"))
        # on a log axis annotation positions are in log10 units
        fig.add_annotation(x=1, xref="paper", xanchor="right", y=math.log10(share), yref="y", yshift=9,
                           text=label, showarrow=False, font=dict(color="gray"))
    fig.update_layout(xaxis_title="PCA components kept (k)", yaxis_title="variance left unexplained",
                      yaxis_type="log", yaxis_exponentformat="power", margin=dict(l=50, r=10, t=30, b=40))
    return fig


def link_times(results: Sequence[Result], labels: Sequence[str] | None = None) -> go.Figure:
    """Mean seconds per round one client spends downloading and uploading (S/B on each link), per run.

    Runs with bandwidth tiers are shown at the base bandwidths (bw_down, bw_up) of their config.
    """
    from .net.wallclock import MB

    rows = []
    for i, r in enumerate(results):
        name = labels[i] if labels else r.config.describe()
        t, c = r.table, r.config
        rows += [{"run": name, "link": "downlink", "seconds": float(t["bytes_down_client"].mean()) / MB / c.bw_down},
                 {"run": name, "link": "uplink", "seconds": float(t["bytes_up_client"].mean()) / MB / c.bw_up}]
    fig = px.bar(pd.DataFrame(rows), x="run", y="seconds", color="link", barmode="stack")
    fig.update_layout(legend_title_text="", yaxis_title="seconds per round (one client, S / B)",
                      margin=dict(l=50, r=10, t=30, b=40))
    return fig
