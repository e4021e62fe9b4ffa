"""Federated optimization: pick an algorithm, a task and how heterogeneous the clients are.

Runs the chosen algorithm beside FedAvg on the same clients and draws convergence, per-client accuracy, drift
and the measured bytes; below, the stored full-size cards. Every number comes from `labcore.flalgos`; the view
lives in the URL (`?algorithm=scaffold&alpha=0.1&stragglers=0.5`).
"""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from labcore.app.charts import chart, table
from labcore.app.runs import in_background
from labcore.app.url_widgets import UrlWidgets
from labcore.flalgos import plots
from labcore.flalgos.config import ALGORITHM_LABELS, ALGORITHMS, DEFENSES, PERSONALIZED
from labcore.typed_config import ConfigError

TASKS = {"digits": "digits (scikit-learn, 8x8)", "synthetic": "Synthetic(1,1) (FedProx)",
         "quadratic": "heterogeneous quadratics", "mf": "recommendation: MF, private user vectors (HR@10)"}
CARDS = ("flalgos-fedprox-stragglers", "flalgos-scaffold-quadratics", "flalgos-scaffold-digits",
         "flalgos-qffl-fairness", "flalgos-personalization", "flalgos-backdoor", "flalgos-bytes")


def _train_both(runs: dict[str, dict]):
    """Train each named config in turn (a task of the server's job queue): name -> (history, clients, ledger)."""
    from labcore.flalgos.config import from_dict
    from labcore.flalgos.simulation import run

    def work(task):
        out = {}
        for i, (name, d) in enumerate(runs.items()):
            def progress(done, total, i=i, name=name):
                task.report((i + done / total) / len(runs), f"training {name}: round {done} of {total}")

            res = run(from_dict(d), progress=progress)
            out[name] = (res.history, res.clients, res.ledger)
        return out

    return work


def _controls(ui: UrlWidgets) -> dict:
    sb = st.sidebar
    task = ui.select("task", "task", tuple(TASKS), "digits", where=sb, format_func=TASKS.get)
    algorithms = [a for a in ALGORITHMS if task in ("digits", "synthetic") or a not in PERSONALIZED]
    if st.session_state.get(ui.key("algorithm"), algorithms[0]) not in algorithms:  # the new task cannot run it
        st.session_state[ui.key("algorithm")] = "fedavg"
    alg = ui.select("algorithm", "algorithm", algorithms, "scaffold", where=sb, format_func=ALGORITHM_LABELS.get)
    d = dict(task=task, algorithm=alg)
    if alg == "fedprox":
        d["mu"] = ui.slider("mu", "mu (proximal weight)", 0.0, 2.0, 0.1, step=0.05, where=sb)
    if alg == "qffl":
        d["q"] = ui.slider("q", "q (fairness)", 0.0, 10.0, 1.0, step=0.5, where=sb)
    if alg in ("ditto", "pfedme"):
        d["lam"] = ui.slider("lam", "lambda", 0.0, 2.0, 0.1, step=0.05, where=sb)
    if alg in ("fedadam", "fedyogi"):
        d["server_lr"] = ui.select_slider("server_lr", "server learning rate", (0.01, 0.03, 0.1, 0.3), 0.03, where=sb)
    d["local_steps"] = ui.slider("steps", "local steps K", 1, 50, 10, where=sb)
    if task == "quadratic":
        d.update(n_clients=10, weighting="uniform", lr=0.1)
        d["clients_per_round"] = ui.slider("participation", "clients a round (of 10)", 1, 10, 10, where=sb)
    elif task == "mf":  # the core's small synthetic set: 600 users (every user a client), 400 items
        d.update(weighting="uniform", lr=10.0, batch_size=16)
        d["clients_per_round"] = ui.slider("participation", "clients a round (of 600)", 10, 200, 60, where=sb)
    else:
        d.update(n_clients=20, lr=0.05 if task == "digits" else 0.01)
        d["clients_per_round"] = ui.slider("participation", "clients a round (of 20)", 1, 20, 10, where=sb)
        if task == "digits":
            d["dirichlet_alpha"] = ui.select_slider("alpha", "Dirichlet alpha (small = skewed)",
                                                    (0.05, 0.1, 0.3, 1.0, 10.0), 0.3, where=sb)
    d["stragglers"] = ui.slider("stragglers", "share of stragglers", 0.0, 0.9, 0.0, step=0.1, where=sb)
    d["rounds"] = ui.select_slider("rounds", "rounds", (10, 20, 50, 100, 200), 20, where=sb)
    d["eval_every"] = max(1, d["rounds"] // 10)
    if task in ("digits", "synthetic"):
        attackers = ui.slider("attackers", "malicious clients (model replacement)", 0, 5, 0, where=sb)
        if attackers:
            d.update(attack="replacement", attackers=attackers, attack_from=d["rounds"] // 2)
        d["defense"] = ui.select("defense", "robust aggregation", DEFENSES, "none", where=sb)
        if d["defense"] == "krum":
            d["krum_f"] = 1
    return d


def _summary(h: pd.DataFrame, led: pd.DataFrame, clients_per_round: int, rounds: int) -> dict:
    last = h.iloc[-1]
    up = led[led.direction == "up"]["bytes"].sum() / max(1, rounds * clients_per_round)
    down = led[led.direction == "down"]["bytes"].sum() / max(1, rounds * clients_per_round)
    out = {"uplink per client and round": f"{up / 1024:,.1f} KiB", "downlink per client and round":
           f"{down / 1024:,.1f} KiB"}
    if "distance" in h:
        out["distance to x*"] = f"{last['distance']:.2e}"
    else:
        out["HR@10" if "train_acc_mean" not in h else "test accuracy (global)"] = f"{100 * last['test_acc']:.1f} %"
        out["variance of client accuracy"] = f"{last['acc_var']:.4f}"
        if "personal_acc_mean" in h:
            out["personalized accuracy"] = f"{100 * last['personal_acc_mean']:.1f} %"
        if "backdoor" in h:
            out["backdoor success"] = f"{100 * last['backdoor']:.1f} %"
    return out


def render() -> None:
    st.title("Federated optimization: drift, fairness, personalization, attacks")
    st.caption("The chosen algorithm beside FedAvg on the same clients and the same minibatches. FedAvg drops "
               "stragglers; every other algorithm keeps their partial work.")
    ui = UrlWidgets("flalgos")
    d = _controls(ui)
    ui.warnings()
    todo = {ALGORITHM_LABELS[d["algorithm"]]: d, "FedAvg": {**d, "algorithm": "fedavg"}}
    try:
        from labcore.flalgos.config import from_dict

        for dd in todo.values():
            from_dict(dd)  # validate before training: a bad combination is an error message, not a crash
    except ConfigError as e:
        st.error(str(e))
        return
    runs = in_background("flalgos", json.dumps(todo, sort_keys=True), _train_both(todo),
                         f"Training {' and '.join(todo)} in the background ({d['rounds']} rounds)...")
    if runs is None:
        _stored(ui)
        return
    chosen = ALGORITHM_LABELS[d["algorithm"]]
    h, clients, led = runs[chosen]
    cols = st.columns(3)
    for i, (k, v) in enumerate(_summary(h, led, d["clients_per_round"], d["rounds"]).items()):
        cols[i % 3].metric(k, v)
    both = pd.concat([r[0].assign(method=name) for name, r in runs.items()], ignore_index=True)
    metric = "distance" if d["task"] == "quadratic" else "test_acc"
    c1, c2 = st.columns(2)
    chart(plots.history(both, metric, log_y=metric == "distance", title=metric.replace("_", " ")),
          key="curve", where=c1, share=0.5)
    chart(plots.history(both, "drift", title="client drift: mean ||Delta_i - mean Delta||"), key="drift", where=c2,
          share=0.5)
    if d["task"] in ("digits", "synthetic"):
        chart(plots.client_accuracy(clients, f"{chosen}: per-client test accuracy"), key="clients")
    with st.expander("Measured bytes (payload ledger)"):
        table(led.groupby(["direction", "part", "kind"], as_index=False)[["messages", "bytes"]].sum())
    _stored(ui)


def _stored(ui: UrlWidgets) -> None:
    from labcore.figures import registry
    from labcore.flalgos import cards  # noqa: F401  (registers the cards)

    st.subheader("The papers' figures, reproduced (stored full-size runs)")
    card_id = ui.select("card", "card", CARDS, CARDS[0])
    ui.warnings()
    card = registry.get(card_id)
    st.caption(card.describe())
    res = registry.stored(card_id)
    if res is None:
        st.info(f"No stored full-size result for {card_id} yet (figures.reproduce('{card_id}', 'full') then "
                "figures.save).")
        return
    chart(res.figure, key="card")
    table(card.compare(res.ours, res.paper))


if __name__ == "__main__":
    render()
