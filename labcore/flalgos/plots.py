"""Plotly figures of the topic (cards, page, notebook). Each takes a DataFrame from `experiments` or a run."""
from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

SMOKE_NOTE = " (smoke run: tiny sizes, not the paper's numbers)"


def _title(df: pd.DataFrame, title: str) -> str:
    return title + (SMOKE_NOTE if "size" in df and (df["size"] == "smoke").any() else "")


def _layout(fig, title):
    fig.update_layout(title=title, template="plotly_white", height=420, legend_title_text="")
    return fig


def stragglers(df: pd.DataFrame, paper=None):
    fig = px.line(df, x="round", y="train_loss", color="method", facet_col="stragglers", markers=False,
                  labels={"train_loss": "training loss", "stragglers": "stragglers"})
    fig.for_each_annotation(lambda a: a.update(text=f"{float(a.text.split('=')[1]):.0%} stragglers"))
    return _layout(fig, _title(df, "FedProx Fig. 1 shape: Synthetic(1,1), training loss against rounds"))


def quadratics(df: pd.DataFrame, paper=None):
    fig = _log_ticks(px.line(df, x="round", y="distance", color="method", log_y=True,
                             labels={"distance": "||x - x*|| (log scale)"}))
    return _layout(fig, _title(df, "Heterogeneous quadratics: SCAFFOLD reaches x*, FedAvg stalls at a floor"))


def drift(df: pd.DataFrame, paper=None):
    fig = px.line(df, x="round", y="test_acc", color="method", facet_col="dirichlet_alpha",
                  labels={"test_acc": "test accuracy", "dirichlet_alpha": "Dirichlet alpha"})
    return _layout(fig, _title(df, "Client drift on digits: FedAvg, FedProx, SCAFFOLD"))


def qffl(df: pd.DataFrame, paper=None):
    fig = make_subplots(rows=1, cols=2, subplot_titles=("variance of per-device accuracy", "mean per-device accuracy"))
    x = df["q"].astype(str)
    for col, name, dash in (("train_acc", "training rows", None), ("acc", "test split (noisy)", "dot")):
        fig.add_trace(go.Scatter(x=x, y=df[f"{col}_var"], mode="lines+markers", name=name, line_dash=dash,
                                 legendgroup=name), 1, 1)
        fig.add_trace(go.Scatter(x=x, y=df[f"{col}_mean"], mode="lines+markers", name=name, line_dash=dash,
                                 legendgroup=name, showlegend=False), 1, 2)
    fig.update_xaxes(title_text="q")
    return _layout(fig, _title(df, "q-FFL: raising q evens out the devices' accuracy"))


def personalization(df: pd.DataFrame, paper=None):
    fig = px.box(df, x="method", y="accuracy", points="all",
                 labels={"accuracy": "per-client test accuracy", "method": ""})
    return _layout(fig, _title(df, "Personalized vs global accuracy per client, digits at Dirichlet 0.1"))


def backdoor(df: pd.DataFrame, paper=None):
    long = df.melt(id_vars=["attack", "defense"], value_vars=["clean_acc", "backdoor"], var_name="metric")
    long["metric"] = long["metric"].map({"clean_acc": "clean accuracy", "backdoor": "backdoor success"})
    fig = px.bar(long, x="defense", y="value", color="metric", barmode="group", facet_col="attack",
                 labels={"value": "", "defense": ""})
    return _layout(fig, _title(df, "Backdoors (model replacement, DBA) against robust aggregation"))


def bytes_bars(df: pd.DataFrame, paper=None):
    d = df.assign(label=df["algorithm"] + df["quantize_bits"].map(lambda b: f" +{b}-bit" if b else ""))
    long = d.melt(id_vars=["label"], value_vars=["up_bytes_per_client", "down_bytes_per_client"], var_name="dir")
    long["dir"] = long["dir"].map({"up_bytes_per_client": "uplink", "down_bytes_per_client": "downlink"})
    fig = px.bar(long, x="label", y="value", color="dir", barmode="group",
                 labels={"value": "measured bytes per client per round", "label": ""})
    return _layout(fig, _title(df, "Bytes on the wire per round (payload ledger)"))


# the history columns in words, for axis titles
HISTORY_LABELS = {"test_acc": "test accuracy", "train_acc": "training accuracy", "train_loss": "training loss",
                  "distance": "distance to the optimum ||x - x*||", "drift": "client drift (mean ||Δ_i - mean Δ||)",
                  "round": "round"}


def _log_ticks(fig):
    """Powers of ten on a log axis: plotly's default writes 0.001 as "1m" and 1e-6 as "1µ"."""
    return fig.update_yaxes(exponentformat="power")


def history(h: pd.DataFrame, y: str = "test_acc", color: str = "method", log_y: bool = False, title: str = ""):
    """Curves of one metric from several runs' histories (a `method` column tells them apart)."""
    fig = px.line(h, x="round", y=y, color=color if color in h else None, log_y=log_y, markers=True,
                  labels={y: HISTORY_LABELS.get(y, y.replace("_", " ")) + (" (log scale)" if log_y else ""),
                          color: ""})
    if log_y:
        _log_ticks(fig)
    return _layout(fig, title or HISTORY_LABELS.get(y, y.replace("_", " ")))


def final_values(h: pd.DataFrame, y: str, color: str = "method") -> pd.DataFrame:
    """Each run's last round and its value of `y`: the numbers a plot's curves end at."""
    last = h.sort_values("round").groupby(color, sort=False).tail(1)
    return last[[color, "round", y]].rename(columns={y: HISTORY_LABELS.get(y, y)}).reset_index(drop=True)


def client_accuracy(clients: pd.DataFrame, title: str = "per-client test accuracy"):
    cols = [c for c in ("test_acc", "personal_acc") if c in clients]
    long = clients.melt(id_vars=["client"], value_vars=cols, var_name="model", value_name="accuracy")
    long["model"] = long["model"].map({"test_acc": "global", "personal_acc": "personalized"})
    fig = px.bar(long.sort_values("client"), x="client", y="accuracy", color="model", barmode="group")
    return _layout(fig, title)


def engine(df: pd.DataFrame, paper=None):
    """HR@10 against rounds per algorithm (one panel per method) and the downlink a client receives a round."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=(*df["method"].unique()[:2], "downlink per client a round"),
                        column_widths=[0.36, 0.36, 0.28])
    colors = dict(zip(df["algorithm"].unique(), px.colors.qualitative.D3))
    for col, method in enumerate(df["method"].unique()[:2], start=1):
        for algo, d in df[df["method"] == method].groupby("algorithm", sort=False):
            fig.add_trace(go.Scatter(x=d["round"], y=d["hr"], name=algo, legendgroup=algo, showlegend=col == 1,
                                     line=dict(color=colors[algo])), row=1, col=col)
        fig.update_yaxes(title_text="HR@10" if col == 1 else None, row=1, col=col)
        fig.update_xaxes(title_text="round", row=1, col=col)
    last = df.sort_values("round").groupby(["method", "algorithm"], sort=False).tail(1)
    for algo, d in last.groupby("algorithm", sort=False):
        fig.add_trace(go.Bar(x=d["method"], y=d["bytes_down_client"] / 2**20, name=algo, legendgroup=algo,
                             showlegend=False, marker_color=colors[algo]), row=1, col=3)
    fig.update_yaxes(title_text="MB (2^20 bytes)", type="log", row=1, col=3)
    return _layout(fig, _title(df, "The algorithms on the lab's engine: MovieLens-1M, private user vectors"))


def engine_drift(df: pd.DataFrame, paper=None):
    """HR@10 against rounds per algorithm, and the per-client loss (mean, spread, worst tenth) at the end."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.55, 0.45],
                        subplot_titles=("HR@10", "per-client loss at the end (every user)"))
    colors = dict(zip(df["algorithm"].unique(), px.colors.qualitative.D3))
    for algo, d in df.groupby("algorithm", sort=False):
        fig.add_trace(go.Scatter(x=d["round"], y=d["hr"], name=algo, line=dict(color=colors[algo])), row=1, col=1)
    last = df.sort_values("round").groupby("algorithm", sort=False).tail(1)
    for col, label in (("client_loss_mean", "mean"), ("client_loss_std", "std"), ("client_loss_worst10", "worst 10 %")):
        fig.add_trace(go.Bar(x=last["algorithm"], y=last[col], name=label, text=[f"{v:.3f}" for v in last[col]]),
                      row=1, col=2)
    fig.update_xaxes(title_text="round", row=1, col=1)
    fig.update_yaxes(title_text="HR@10", row=1, col=1)
    fig.update_yaxes(title_text="BCE", row=1, col=2)
    return _layout(fig, _title(df, "Client drift and fairness on the lab's engine: FedMF on MovieLens-1M"))


def engine_stragglers(df: pd.DataFrame, paper=None):
    """HR@10 against rounds, one panel per straggler share, one line per algorithm."""
    shares = sorted(df["stragglers"].unique())
    fig = make_subplots(rows=1, cols=len(shares), shared_yaxes=True,
                        subplot_titles=[f"{s:.0%} stragglers" for s in shares])
    colors = dict(zip(df["algorithm"].unique(), px.colors.qualitative.D3))
    for col, share in enumerate(shares, start=1):
        for algo, d in df[df["stragglers"] == share].groupby("algorithm", sort=False):
            fig.add_trace(go.Scatter(x=d["round"], y=d["hr"], name=algo, legendgroup=algo, showlegend=col == 1,
                                     line=dict(color=colors[algo])), row=1, col=col)
        fig.update_xaxes(title_text="round", row=1, col=col)
    fig.update_yaxes(title_text="HR@10", row=1, col=1)
    return _layout(fig, _title(df, "Stragglers on the lab's engine: FedMF on MovieLens-1M"))


def engine_dropout(df: pd.DataFrame, paper=None):
    """HR@10 against rounds per dropout share (solid: plaintext, dashed: secure aggregation, on top of each other
    when the sums agree), the uplink a client sends each round, and where the run with too high a threshold
    stopped."""
    done = df[df["status"] == "complete"]
    fig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38],
                        subplot_titles=("HR@10 against rounds", "uplink per client and round (MB)"))
    colors = dict(zip(sorted(done["dropout"].unique()), px.colors.qualitative.D3))
    for (share, arm), d in done.groupby(["dropout", "arm"], sort=False):
        secure = "SecAgg" in arm
        fig.add_trace(go.Scatter(x=d["round"], y=d["hr"], name=f"{arm}, dropout {share:.0%}",
                                 line=dict(color=colors[share], dash="dash" if secure else "solid")), row=1, col=1)
    fin = done.sort_values("round").groupby(["dropout", "arm"], as_index=False, sort=False).tail(1)
    for arm, d in fin.groupby("arm", sort=False):
        fig.add_trace(go.Bar(x=[f"{s:.0%}" for s in d["dropout"]], y=d["bytes_up_client"] / 2**20, name=arm,
                             customdata=d["recovery_bytes_round"],
                             hovertemplate="%{y:.3f} MB; revealed seeds %{customdata:.0f} B a round"),
                      row=1, col=2)
    fig.update_xaxes(title_text="round", row=1, col=1)
    fig.update_xaxes(title_text="dropout", row=1, col=2)
    fig.update_yaxes(title_text="HR@10", row=1, col=1)
    stopped = df[df["status"] != "complete"]
    for _, r in stopped.iterrows():
        fig.add_annotation(text=f"{r['arm']}, dropout {r['dropout']:.0%}: stopped at round {int(r['round'])} "
                                "(too few survivors to unmask)", xref="paper", yref="paper", x=0, y=-0.36,
                           showarrow=False, align="left")
    fig = _layout(fig, _title(df, "Clients that drop out, in plaintext and under secure aggregation: FedMF on "
                                  "MovieLens-1M"))
    fig.update_layout(margin=dict(b=120), height=470)
    return fig


def engine_backdoor(df: pd.DataFrame, paper=None):
    """Backdoor success and clean HR@10 against rounds, one line per arm (DBA's arms dashed)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("backdoor success (target in the top 10)", "clean HR@10"))
    colors = dict(zip(df["arm"].unique(), px.colors.qualitative.D3))
    for arm, d in df.groupby("arm", sort=False):
        line = dict(color=colors[arm], dash="dash" if arm.startswith("DBA") else "solid")
        if d["backdoor_success"].notna().any():
            fig.add_trace(go.Scatter(x=d["round"], y=d["backdoor_success"], name=arm, legendgroup=arm, line=line),
                          row=1, col=1)
        fig.add_trace(go.Scatter(x=d["round"], y=d["hr"], name=arm, legendgroup=arm,
                                 showlegend=not d["backdoor_success"].notna().any(), line=line), row=1, col=2)
    for col in (1, 2):
        fig.update_xaxes(title_text="round", row=1, col=col)
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%", row=1, col=1)
    return _layout(fig, _title(df, "Model-replacement and distributed backdoors against robust aggregation: FedMF on "
                                   "MovieLens-1M"))


def _engine_personal(df: pd.DataFrame, label: str, name: str) -> go.Figure:
    """HR@10 against rounds: the global model (one FedAvg curve) and each setting's personal models."""
    fig = go.Figure()
    g = df[df[label] == df[label].iloc[0]]
    fig.add_trace(go.Scatter(x=g["round"], y=g["hr"], name="global model (FedAvg)", line=dict(color="black", width=3)))
    for (v, d), color in zip(df.groupby(label, sort=False), px.colors.qualitative.D3):
        fig.add_trace(go.Scatter(x=d["round"], y=d["hr_personal"], name=f"{name} personal, {label} {v:g}",
                                 line=dict(color=color, dash="dash")))
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(title_text="HR@10")
    return _layout(fig, _title(df, f"{name}'s personal models against the global model: FedMF on MovieLens-100K"))


def engine_ditto(df: pd.DataFrame, paper=None):
    return _engine_personal(df, "lambda", "Ditto")


def engine_apfl(df: pd.DataFrame, paper=None):
    return _engine_personal(df, "alpha", "APFL")



def engine_personal_compare(df: pd.DataFrame, paper=None):
    """HR@10 against rounds: FedAvg's global model, and each method's personal models (dashed) and global model."""
    fig = go.Figure()
    arms = list(df["arm"].unique())
    for arm, color in zip(arms, ["black"] + list(px.colors.qualitative.D3)):
        d = df[df["arm"] == arm]
        fig.add_trace(go.Scatter(x=d["round"], y=d["hr"], name=f"{arm}: global model", legendgroup=arm,
                                 line=dict(color=color, width=3 if arm == arms[0] else 1)))
        if d["hr_personal"].notna().any():
            fig.add_trace(go.Scatter(x=d["round"], y=d["hr_personal"], name=f"{arm}: personal models",
                                     legendgroup=arm, line=dict(color=color, dash="dash")))
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(title_text="HR@10")
    return _layout(fig, _title(df, "Personal models against the global model: FedMF on MovieLens-100K"))
