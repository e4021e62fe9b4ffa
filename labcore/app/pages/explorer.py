"""Explorer: one configuration, every knob, charts that stream round by round."""
from __future__ import annotations

import math

import streamlit as st

from labcore import plots
from labcore.app import analytic, controls, runs
from labcore.app.state import EXPLORER as SPEC
from labcore.app.state import Y_METRICS
from labcore.metrics import client_data_summary


def _fmt_bytes(b: float) -> str:
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return "-"
    for unit, s in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if b >= s:
            return f"{b / s:,.2f} {unit}"
    return f"{b:,.0f} B"


def render() -> None:
    vs = controls.view_state(SPEC)
    st.title("Explorer")
    controls.show_warnings(vs, SPEC.name)
    cfg = controls.sidebar(SPEC, vs, slots=("data_skew",))
    top = st.columns([3, 2])
    y = controls.option(SPEC, vs, "y", "segmented_control", "metric", Y_METRICS, where=top[1],
                        format_func={"hr": "HR@10", "ndcg": "NDCG@10", "loss": "training loss"}.get)
    if y is None:  # a segmented control can be cleared
        y = vs.options["y"] = "hr"
    query = controls.sync_url(SPEC, vs, cfg)
    controls.share_box(SPEC, query)
    if cfg is None:
        return
    if "data_skew" in vs.slots:
        _data_sizes(cfg, vs.slots["data_skew"])
    top[0].markdown(f"**{cfg.describe()}** on {cfg.dataset}"
                    + (f" ({cfg.synthetic_size})" if cfg.dataset == "synthetic" else "")
                    + (f", data skew {cfg.data_skew:g}" if cfg.data_skew != 1.0 else "")
                    + f", d={cfg.dim}, {cfg.clients_per_round} clients per round, {cfg.rounds} rounds, seed {cfg.seed}")

    stopped = st.session_state.setdefault("_lab_stopped", set())
    key = cfg.key()
    done = runs.finished(cfg) is not None
    if not done:
        if key in stopped:
            if st.button("Resume", key="explorer.resume", type="primary",
                         help="continue from the last round (the run was checkpointed)"):
                stopped.discard(key)
                st.rerun()
        elif st.button("Stop", key="explorer.stop", help="stop between two rounds; Resume continues"):
            runs.stop(cfg)
            stopped.add(key)
            st.rerun()

    _payload_preview(cfg)

    def status(views, final, key):
        v = views[0]
        if v.error:
            st.error(v.error)
            return
        res = v.result
        if v.queued is not None:
            st.info(f"Waiting for a free training slot on this server: {v.queued} run(s) ahead of this one. "
                    "It starts by itself.", icon=":material/hourglass_top:")
        if res is None:
            if v.queued is None:
                st.info("Stopped before its first round." if v.stopped else "Starting the run...")
            return
        t = res.table
        k = len(t)
        state = ("finished (cached)" if v.cached else "finished") if (v.done and not v.stopped) else \
            ("stopped" if v.stopped else "training")
        extra = f", resumed at round {v.resumed_from}" if v.resumed_from else ""
        extra += f", {v.watchers} sessions watching" if v.watchers > 1 else ""
        st.progress(min(1.0, k / cfg.rounds), text=f"round {k} / {cfg.rounds}: {state}{extra}")
        last = t.iloc[-1]
        ev = t.dropna(subset=["hr"])
        m = st.columns(6)
        m[0].metric("HR@10", f"{ev['hr'].iloc[-1]:.4f}" if len(ev) else "-")
        m[1].metric("NDCG@10", f"{ev['ndcg'].iloc[-1]:.4f}" if len(ev) else "-")
        m[2].metric("bytes per round", _fmt_bytes(last["bytes_up"] + last["bytes_down"]),
                    help="all clients: every sampled client's upload + the broadcast each of them downloads, "
                         "measured")
        m[3].metric("upload / client / round", _fmt_bytes(last["bytes_up_client"]))
        m[4].metric("cumulative traffic", _fmt_bytes(last["cum_bytes"]))
        m[5].metric("simulated wall-clock", f"{last['wallclock'] / 60:,.1f} min")

    def charts(views, final, key):
        v = views[0]
        res = v.result
        if res is None or v.error:
            return
        t = res.table
        run, prog = cfg.key(), (v.version, len(t))
        yy = y if y in t else "hr"
        conf = runs.chart_config(final)
        st.plotly_chart(runs.figure("explorer.panel", (run, yy), prog, lambda: plots.metric_panel([res], yy)),
                        key=key("panel"), config=conf, theme=None)
        c1, c2, c3 = st.columns(3)
        c1.markdown("**Effective rank of the client updates**")
        if cfg.rank_every:
            c1.plotly_chart(runs.figure("explorer.erank", run, prog, lambda: plots.effective_rank(res)),
                            key=key("erank"), config=conf, theme=None)
        else:
            c1.caption("off (advanced: effective rank every 0 rounds)")
        c2.markdown("**Payload per message part (whole run)**")
        c2.plotly_chart(runs.figure("explorer.parts", run, prog, lambda: plots.payload_parts(res)),
                        key=key("parts"), config=conf, theme=None)
        c3.markdown("**Round time: communication vs computation**")
        c3.plotly_chart(runs.figure("explorer.time", run, prog, lambda: plots.round_breakdown(res)),
                        key=key("time"), config=conf, theme=None)
        if v.done:
            he = t["he_client_s"].dropna() if "he_client_s" in t else []
            txt = res.notes
            if len(he):
                txt += (f"  \nEncryption ({cfg.encryption}): client HE time {he.mean():.3f} s per round (mean), "
                        f"server {t['he_server_s'].dropna().mean():.3f} s; real-vs-plain check error "
                        f"{t['he_check_err'].dropna().max():.2e}"
                        + (" (costs of the clients not encrypted for real are scaled from the real ones)"
                           if t["he_extrapolated"].fillna(False).astype(bool).any() else ""))
            st.caption(txt)

    runs.follow("explorer", [cfg], status, charts, stopped=stopped)


def _data_sizes(cfg, where) -> None:
    """Measured next to the data-skew knob: how unequally the clients hold this dataset's training data."""
    try:
        data = runs.dataset(cfg)
    except Exception:  # the payload preview reports why the dataset cannot be loaded
        return
    s = client_data_summary(data)
    if cfg.dataset != "synthetic":
        where.caption(f"Data skew: {cfg.dataset} has its own, fixed data sizes per client (the knob applies "
                      "to synthetic data). Measured:")
    m = where.columns(2)
    m[0].metric("data-size Gini", f"{s['gini']:.2f}",
                help="Gini coefficient of the training interactions per client: 0 = all equal, 1 = one holds all")
    m[1].metric("top 10% hold", f"{s['top10_share']:.0%}", help="share of the interactions held by the 10% of "
                                                               "clients with the most data")
    where.caption(f"{s['min']}-{s['max']} interactions per client, median {s['median']:g} ({s['clients']:,} "
                  "clients)")


def _payload_preview(cfg) -> None:
    """Instant: message sizes for this config before (and while) it trains."""
    try:
        data = runs.dataset(cfg)
    except Exception as e:
        st.error(f"{type(e).__name__}: {e}")
        return
    s = analytic.payload_summary(cfg, data.n_items)
    with st.expander(f"Payload per message: upload {_fmt_bytes(s['up_client'])} per client "
                     f"({s['up_ratio']:.1%} of FedMF at d={cfg.dim}), broadcast {_fmt_bytes(s['down_client'])}, "
                     f"{_fmt_bytes(s['round_total'])} per round", expanded=False):
        t = analytic.payload_table(cfg, data.n_items)
        st.markdown(controls.md_table(t))
        if cfg.encryption != "none":
            st.caption("With encryption the upload is ciphertexts (measured during the run); these are the "
                       "plaintext sizes. The Encryption page shows the CKKS sizes.")
        elif cfg.method == "scolr":
            st.caption("SCoLR: expected sizes over the local rank r_u drawn per client and round.")


if __name__ == "__main__":  # st.navigation executes this file as the page script
    render()
