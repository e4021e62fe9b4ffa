"""Compare: several configurations on the same axes (the forms of CoLR's Fig. 3, Fig. 4, Fig. 5, Table 4)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from labcore import plots
from labcore.net.wallclock import table2
from labcore.app import controls, downloads, notices, runs, sweeps
from labcore.app.charts import chart, table
from labcore.app.state import COMPARE as SPEC
from labcore.app.state import Y_METRICS

_Y = {"hr": "HR@10", "ndcg": "NDCG@10", "loss": "training loss"}
# the table's long headers as shown (the full name in the header's help): six columns in a projector's 564 px
SHORT = {"communication (min)": "comm (min)", "computation (min)": "comp (min)",
         "traffic per client per round (MB)": "MB/client/round"}


def render() -> None:
    vs = controls.view_state(SPEC)
    st.title("Compare")
    controls.show_warnings(vs, SPEC.name)
    cfg = controls.sidebar(SPEC, vs)
    c = st.columns([3, 3]) + st.columns([1.2, 3, 1.8])[:2]  # two rows: nothing clipped at 1280x720
    mode = controls.option(SPEC, vs, "mode", "selectbox", "comparison", list(sweeps.MODES), where=c[0],
                           format_func=sweeps.MODES.get)
    values = controls.option(SPEC, vs, "values", "multiselect", sweeps.VALUE_LABELS[mode],
                             [1, 2, 4, 8, 16, 32, 64] if mode != "bits" else [1, 2, 3, 4, 6, 8, 12, 16],
                             where=c[1], max_selections=8)
    with_base = controls.option(SPEC, vs, "base", "toggle", "baseline", where=c[2],
                                help="rank / ratio: FedMF with d = r; bits: the float32 run")
    y = controls.option(SPEC, vs, "y", "segmented_control", "metric", Y_METRICS, where=c[3], format_func=_Y.get)
    values = tuple(sorted(values))
    if values:
        vs.options["values"] = values
    query = controls.sync_url(SPEC, vs, cfg)
    controls.share_box(SPEC, query)
    if cfg is None:
        return
    if not values:
        st.warning("Pick at least one value to compare.")
        return
    plan, skipped = sweeps.sweep(cfg, mode, values, with_base)
    for s in skipped:
        st.info(f"skipped {s}")
    if not plan:
        st.warning("Nothing to compare: pick at least one value.")
        return
    for data_cfg in {(p.cfg.dataset, p.cfg.data_seed, p.cfg.synthetic_size, p.cfg.data_skew): p.cfg
                     for p in plan}.values():  # every dataset the runs need, checked once before any starts
        try:
            runs.dataset(data_cfg)
        except Exception as e:
            notices.error(e)
            return
    st.caption(f"{len(plan)} runs on {cfg.dataset}, {cfg.rounds} rounds, {cfg.clients_per_round} clients per round, "
               f"seed {cfg.seed}. Finished runs are cached: revisiting a comparison is instant.")

    def status(views, final, key):
        n_done = sum(v.done and not v.error for v in views)
        n_queued = sum(v.queued is not None for v in views)
        rounds = sum(v.rounds_done for v in views)
        st.progress(min(1.0, rounds / (len(plan) * cfg.rounds)),
                    text=f"{n_done} of {len(plan)} runs finished ({rounds} of {len(plan) * cfg.rounds} rounds)"
                    + (f"; {n_queued} waiting for a training slot" if n_queued else ""))
        failed: dict[str, list[str]] = {}  # the same error of several runs is shown once, naming them all
        for p, v in zip(plan, views):
            if v.error:
                failed.setdefault(v.error, []).append(p.label)
        for error, labels in failed.items():
            notices.error(error, prefix=(f"All {len(plan)} runs" if len(labels) == len(plan) > 1
                                         else ", ".join(labels)) + ":")

    def charts(views, final, key):
        ready = [(p, v) for p, v in zip(plan, views) if v.result is not None and len(v.result.table)]
        if not ready:
            return
        res = [v.result for _, v in ready]
        labels = [p.label for p, _ in ready]
        groups = [p.group for p, _ in ready]
        dashed = [p.group for p, _ in ready if p.dashed]
        ident = (tuple(p.cfg.key() for p, _ in ready), y)
        prog = tuple((v.version, v.rounds_done) for _, v in ready)
        conf = runs.chart_config(final)
        trade = runs.figure("compare.tradeoff", ident, prog, lambda: _titled(
            plots.tradeoff(res, groups, y, dashed), f"final {_Y[y]} vs bytes per client per round"))
        chart(trade, key=key("tradeoff"), config=conf)
        downloads.chart_button(trade, f"compare {mode} tradeoff", key("tradeoff.html"))
        panel = runs.figure("compare.panel", ident, prog, lambda: plots.metric_panel(
            res, y, labels, dashed=[i for i, (p, _) in enumerate(ready) if p.dashed]))
        chart(panel, key=key("panel"), config=conf)
        downloads.chart_button(panel, f"compare {mode} {y}", key("panel.html"))
        st.markdown("**Round time: communication vs computation (Table 2 form)**")
        time_fig = runs.figure("compare.time", ident, prog, lambda: plots.round_time(res, labels))
        chart(time_fig, key=key("time"), config=conf)
        downloads.chart_button(time_fig, f"compare {mode} round time", key("time.html"))
        t2 = table2(res, labels).rename(columns={"method": "run"})
        t2["final " + _Y[y]] = [float(r.table[y].dropna().iloc[-1]) if r.table[y].notna().any() else float("nan")
                                for r in res]
        t2["traffic per client per round (MB)"] = [
            float((r.table.bytes_up_client + r.table.bytes_down_client).mean() / 2**20) for r in res]
        table(pd.DataFrame(t2), key=key("table"), column_config={
            c: st.column_config.Column(label, help=c) for c, label in SHORT.items()})
        every = pd.concat([downloads.human_table(r.table, drop_empty=False).assign(run=lab) for r, lab in
                           zip(res, labels)], ignore_index=True)
        downloads.table_button(every, f"compare {mode}", key("csv"), partial=not final)

    runs.follow("compare", [p.cfg for p in plan], status, charts)


def _titled(fig, title):
    fig.update_layout(title=title)
    return fig


if __name__ == "__main__":  # st.navigation executes this file as the page script
    render()
