"""FAIR: devices of different memory train one model (hashed random subspaces).

A capacity-tier control, what each tier stores on the device, the model-loss /
data-loss trade-off of the paper's Fig. 1 drawn from runs, and the stored
full-size reproductions of Tables 2-6 and Fig. 4. The view lives in the URL
(`?_fair_data=ml-1m-100&_fair_tiers=1x-2x-4x-8x&_fair_rounds=30&_fair_card=fair-table2-ml1m`);
every number comes from `labcore.fair` (runs are cached by config).
"""
from __future__ import annotations

import streamlit as st

from labcore.app import presets
from labcore.app.charts import chart, table
from labcore.app.runs import in_background
from labcore.app.url_widgets import UrlWidgets
from labcore.fair import plots as fplots
from labcore.fair.config import paper_ranking

DATASETS = {"ml-1m-100": "ML-1M, 100 most active users (fast)", "goodreads-100": "Goodreads-100 (the paper's)",
            "synthetic": "synthetic (seconds)"}
TIERS = ("1x-2x", "1x-4x", "1x-8x", "1x-16x", "1x-2x-4x", "1x-2x-4x-8x", "2x-4x-8x", "1x-4x-16x-64x")
ROUNDS = (4, 10, 30, 60, 100)
CARDS = ("fair-table2-goodreads", "fair-table3-goodreads", "fair-table2-ml1m", "fair-table3-ml1m",
         "fair-table4-ml100k", "fair-table5-digits", "fair-table6-digits", "fair-fig4", "fair-fig1-tradeoff")


def _devices(dataset: str, tiers: str):
    def work(task):
        from labcore.fair import FairSimulation

        return FairSimulation(paper_ranking(dataset, capacities=tiers, rounds=1)).device_table()

    return work


def _tradeoff(dataset: str, tiers: str, rounds: int):
    def work(task):
        from labcore.fair.tradeoff import tradeoff_curve

        base = paper_ranking(dataset, rounds=rounds, eval_every=max(1, rounds // 5), lr=3e-3)
        return tradeoff_curve(base, tiers, on_point=lambda d, n: task.report(d / n, f"point {d} of {n} trained"))

    return work


def render() -> None:
    st.title("FAIR: one model, devices of different memory")
    ui = UrlWidgets("fair")
    c1, c2, c3 = st.columns([2, 2, 1])
    dataset = ui.select("_fair_data", "data", tuple(DATASETS), "ml-1m-100", where=c1, format_func=DATASETS.get)
    tiers = ui.select("_fair_tiers", "capacity tiers (users split by id, first group first)", TIERS, "1x-2x-4x-8x",
                      where=c2)
    rounds = ui.select_slider("_fair_rounds", "rounds", ROUNDS, 30, where=c3)
    presets.sidebar("fair")
    ui.later("_fair_card")  # the stored tables' selector, drawn once the devices and the trade-off are done
    ui.warnings()
    # an error (a data file missing) is shown by name; the stored paper tables below need no data: still shown
    devices = in_background("fair.devices", f"{dataset}:{tiers}", _devices(dataset, tiers),
                            "Loading the devices' tiers...")
    if devices is not None:
        _live(devices, dataset, tiers, rounds)
    st.subheader("Paper tables, reproduced")
    from labcore.figures import registry
    card_id = ui.select("_fair_card", "card", CARDS, CARDS[0])
    ui.warnings()
    res = registry.stored(card_id)
    card = registry.get(card_id)
    _card_text(card)
    if res is None:
        st.info(f"No stored full-size result yet: labcore figure {card_id} --full --save")
        return
    chart(res.figure)
    table(res.comparison())


def _card_text(card) -> None:
    """The card as short paragraphs and bullets (its `describe()` is terminal text: one paragraph here)."""
    st.markdown(f"**{card.title}**")
    st.markdown(f"*The paper:* {card.caption}")
    lines = [f"- **Expected:** {card.expected}", f"- **Tolerance:** {card.tolerance_text}"]
    lines += [f"- {n}" for n in card.notes]
    st.markdown("\n".join(lines).replace("$", "\\$"))


# the tables' columns as a reader says them
DEVICE_COLUMNS = {"tier": "capacity tier", "takes_part": "trains", "train_ratio": "trains at (times smaller)",
                  "table_values": "values of an item table", "values": "values on the device",
                  "bytes": "bytes on the device", "ratio_actual": "smaller than the full model (times)"}
# shown as short headers, the full name in the header's help: seven columns in a projector's 564 px
DEVICE_LABELS = {"capacity tier": "tier", "trains at (times smaller)": "target (x smaller)",
                 "values of an item table": "item table", "values on the device": "values",
                 "bytes on the device": "bytes", "smaller than the full model (times)": "actual (x smaller)"}
TRADEOFF_COLUMNS = {"strategy": "strategy", "model_ratio": "model size (times smaller)",
                    "devices_share": "share of devices training", "round_best": "at round",
                    "capacities": "capacity tiers"}
TRADEOFF_LABELS = {"model size (times smaller)": "model (x smaller)", "share of devices training": "devices",
                   "capacity tiers": "tiers"}


def _live(devices, dataset: str, tiers: str, rounds: int) -> None:
    """What a device stores and the Fig. 1 trade-off, computed here from the chosen data."""
    st.subheader("What a device stores")
    st.caption("psi: m values per item table (m = the greatest power of two <= n / ratio), its own user vectors "
               "and the small dense layers. 1x devices hold the server's table itself. The table: the model a tier "
               "trains (target) and holds (actual), times smaller than the full model; values and bytes on the device.")
    chart(fplots.device_memory(devices))
    table(devices.rename(columns=DEVICE_COLUMNS),
          column_config={c: st.column_config.Column(label, help=c) for c, label in DEVICE_LABELS.items()})
    st.subheader("Model loss or data loss (Fig. 1)")
    st.caption("One model size for everyone who can hold it drops the smaller devices (left) or shrinks the model "
               "for all (right); FAIR trains every device at its own size.")
    if st.button("Run the trade-off", type="primary"):
        st.session_state["fair_tradeoff"] = (dataset, tiers, rounds)
    if st.session_state.get("fair_tradeoff") == (dataset, tiers, rounds):
        df = in_background("fair.tradeoff", f"{dataset}:{tiers}:{rounds}", _tradeoff(dataset, tiers, rounds),
                           "Training every point of the trade-off (stored runs are read back)...")
        if df is None:
            return
        chart(fplots.tradeoff(df))
        table(df.drop(columns=["metric_name"]).rename(columns={**TRADEOFF_COLUMNS,
                                                               "metric": f"best {df['metric_name'].iloc[0]}"}),
              column_config={c: st.column_config.Column(label, help=c) for c, label in TRADEOFF_LABELS.items()})


if __name__ == "__main__":  # st.navigation executes this file as the page script
    render()
