"""Explorer: one configuration, every knob, charts that stream round by round."""
from __future__ import annotations

import streamlit as st

from labcore import plots
from labcore.app import analytic, controls, downloads, notices, runs
from labcore.app.charts import chart
from labcore.app.state import EXPLORER as SPEC
from labcore.app.state import EXPLORER_Y
from labcore.metrics import client_data_summary
from labcore.units import readable_bytes


def render() -> None:
    vs = controls.view_state(SPEC)
    st.title("Explorer")
    _start_here()
    controls.show_warnings(vs, SPEC.name)
    cfg = controls.sidebar(SPEC, vs, slots=("data_skew",))
    # the run's description above, the metric's five choices below on the page's whole width (beside it, in a
    # column, the last ones were cut off at a laptop's width)
    described = st.empty()
    y = controls.option(SPEC, vs, "y", "segmented_control", "metric", EXPLORER_Y,
                        format_func={"hr": "HR@10", "ndcg": "NDCG@10", "loss": "training loss",
                                     "hr_personal": "personal HR@10",
                                     "backdoor_success": "backdoor success"}.get)
    query = controls.sync_url(SPEC, vs, cfg)
    controls.share_box(SPEC, query)
    if cfg is None:
        return
    described.markdown(f"**{cfg.describe()}** on {cfg.dataset}"
                       + (f" ({cfg.synthetic_size})" if cfg.dataset == "synthetic" else "")
                       + (f", data skew {cfg.data_skew:g}" if cfg.data_skew != 1.0 else "")
                       + f", d={cfg.dim}, {cfg.clients_per_round} clients per round, {cfg.rounds} rounds, seed {cfg.seed}")
    try:  # once, before anything that needs it: a missing dataset is reported once and nothing runs
        data = runs.dataset(cfg)
    except Exception as e:
        notices.error(e)
        return
    if "data_skew" in vs.slots:
        _data_sizes(data, cfg, vs.slots["data_skew"])

    stopped = st.session_state.setdefault("_lab_stopped", set())
    key = runs.train_key(cfg)  # bandwidths and tiers re-time a run, they never retrain it
    if key in stopped and runs.finished(cfg) is None:
        if st.button("Resume", key="explorer.resume", type="primary",
                     help="continue from the last round (the run was checkpointed)"):
            stopped.discard(key)
            st.rerun()

    _payload_preview(cfg, data)

    def status(views, final, key):
        v = views[0]
        if v.error:
            notices.error(v.error)
            return
        if not v.done and st.button("Stop", key=key("stop"), help="stop between two rounds; Resume continues"):
            runs.stop(cfg)  # drawn here, so only while the run trains
            stopped.add(runs.train_key(cfg))
            st.rerun()
        res = v.result
        if v.queued is not None:
            st.info(f"Waiting for a free training slot on this server: {v.queued} run(s) ahead of this one. "
                    "It starts by itself.", icon=":material/hourglass_top:")
        if res is None:
            if v.elsewhere:
                st.info("Another process (a `labcore figure` command, another app server) is training this "
                        "configuration into the same result cache: this page shows its result when it is done, "
                        "or carries on from where it stops.", icon=":material/hourglass_top:")
            elif v.queued is None:
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
        m[2].metric("bytes per round", readable_bytes(last["bytes_up"] + last["bytes_down"]),
                    help="all clients: every sampled client's upload + the broadcast each of them downloads, "
                         "measured")
        m[3].metric("upload / client / round", readable_bytes(last["bytes_up_client"]))
        m[4].metric("cumulative traffic", readable_bytes(last["cum_bytes"]))
        m[5].metric("simulated wall-clock", f"{last['wallclock'] / 60:,.1f} min",
                    help="recomputed from the measured bytes when only bandwidths or tiers change: no retraining")
        downloads.table_button(t, f"{cfg.describe()} {cfg.dataset} seed {cfg.seed}", key("csv"),
                               partial=not v.done or v.stopped)

    def charts(views, final, key):
        v = views[0]
        res = v.result
        if res is None or v.error:
            return
        t = res.table
        run, prog = cfg.key(), (v.version, len(t))
        yy = y if y in t and t[y].notna().any() else "hr"  # backdoor success: only with an attack
        conf = runs.chart_config(final)
        panel = runs.figure("explorer.panel", (run, yy), prog, lambda: plots.metric_panel([res], yy))
        chart(panel, key=key("panel"), config=conf)
        name = f"{cfg.describe()} {cfg.dataset}"
        downloads.chart_button(panel, f"{name} {yy}", key("panel.html"))
        c1, c2 = st.columns(2)  # two a row, the round-time panels below at full width: in three columns at a
        c3 = st.container()  # projector's 1024 px, their legends and panel titles were cut by the charts' edges
        c1.markdown("**Effective rank of the updates**")
        if cfg.rank_every:
            width = cfg.dim if cfg.method in ("fedmf", "topk") else cfg.rank
            fig = runs.figure("explorer.erank", (run, width), prog, lambda: plots.effective_rank(res, width))
            chart(fig, key=key("erank"), config=conf, where=c1, share=0.5)
            aggregated = "agg_n90" in t and t["agg_n90"].notna().any()
            c1.caption("Blue: each client's update. An MF client's update is rank 1 by construction (every item row "
                       "moves along its own user vector p_u; only the drift of p_u over the local epochs adds a "
                       "little), so N90 = N99 = 1. "
                       + ("Red: the aggregated update (what the server applies), whose rank grows with the cohort, "
                          "up to "
                          f"{'d' if cfg.method in ('fedmf', 'topk') else 'r'} = {width}."
                          if aggregated else "The aggregated update's rank is not in this run's table (a run "
                          "stored before it was measured)."))
            downloads.chart_button(fig, f"{name} effective rank", key("erank.html"), where=c1)
        else:
            c1.caption("off (advanced: effective rank every 0 rounds)")
        c2.markdown("**Payload per message part (whole run)**")
        parts = runs.figure("explorer.parts", run, prog, lambda: plots.payload_parts(res))
        chart(parts, key=key("parts"), config=conf, where=c2, share=0.5)
        downloads.chart_button(parts, f"{name} payload parts", key("parts.html"), where=c2)
        c3.markdown("**Round time: communication vs computation**")
        time_fig = runs.figure("explorer.time", run, prog, lambda: plots.round_breakdown(res))
        chart(time_fig, key=key("time"), config=conf, where=c3)
        comm, total = float(t["t_comm"].sum()), float(t["t_round"].sum()) or 1.0
        c3.caption(f"Each part on its own scale: communication is {comm / total:.1%} of the simulated time at "
                   f"{cfg.bw_up:g} MB/s up, {cfg.bw_down:g} MB/s down"
                   + (" with bandwidth tiers" if cfg.bandwidth_tiers else "")
                   + ". Lower the bandwidth (Communication) or add a straggler tier (Heterogeneity) to see it take "
                     "over; changing them re-times this run from its measured bytes, without retraining.")
        downloads.chart_button(time_fig, f"{name} round time", key("time.html"), where=c3)
        if v.done:
            he = t["he_client_s"].dropna() if "he_client_s" in t else []
            txt = res.notes
            if len(he):
                txt += (f"  \nEncryption ({cfg.encryption}): client HE time {he.mean():.3f} s per round (mean), "
                        f"server {t['he_server_s'].dropna().mean():.3f} s; real-vs-plain check error "
                        f"{t['he_check_err'].dropna().max():.2e}"
                        + (" (costs of the clients not encrypted for real are scaled from the real ones)"
                           if t["he_extrapolated"].fillna(False).astype(bool).any() else "")
                        + (f"; one round in every {cfg.he_real_every} is encrypted for real, the rounds between "
                           "sum in plaintext with their bytes and times scaled from the last real round"
                           if cfg.encryption == "ckks" and cfg.he_real_every > 1 else ""))
            st.caption(txt)

    runs.follow("explorer", [cfg], status, charts, stopped=stopped)


def _start_here() -> None:
    c = st.columns([5, 1])
    c[0].info("**Start here.** Change the **method** and **rank r**, then the **uplink bits** and **bandwidth**. "
              "Watch HR@10 against the traffic (middle panel) and communication's share of the round time "
              "(bottom): about 1 % of a CoLR@4 round here, about 16 % of a FedMF one. Bandwidths re-time a "
              "finished run at once; other knobs train a new run.",
              icon=":material/school:")
    c[1].button("Reset", key="explorer.reset", on_click=controls.reset, args=(SPEC,),
                help="every control back to the Explorer's defaults (the link is cleared too)",
                icon=":material/restart_alt:")


def _data_sizes(data, cfg, where) -> None:
    """Measured next to the data-skew knob: how unequally the clients hold this dataset's training data."""
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


def _payload_preview(cfg, data) -> None:
    """Instant: message sizes for this config before (and while) it trains."""
    s = analytic.payload_summary(cfg, data.n_items)
    up, up_note = s["up_client"], f"({s['up_ratio']:.1%} of FedMF at d={cfg.dim})"
    down = f"broadcast {readable_bytes(s['down_client'])}, {readable_bytes(s['round_total'])} per round"
    ct = _ciphertext_upload(cfg, data.n_items) if cfg.encryption == "ckks" else None
    if ct is not None:
        up_note = f"CKKS ciphertexts, {ct / max(s['up_client'], 1):.0f}x the plaintext {readable_bytes(s['up_client'])}"
        up, down = ct, "broadcast: ciphertexts too (measured during the run)"
    elif cfg.encryption != "none":
        down += f" (plaintext sizes: under {cfg.encryption} the upload is measured during the run)"
    with st.expander(f"Payload per message: upload {readable_bytes(up)} per client {up_note}, {down}", expanded=False):
        t = analytic.payload_table(cfg, data.n_items).rename(columns=PAYLOAD_COLUMNS)
        st.markdown(controls.md_table(t))
        if cfg.encryption != "none":
            st.caption("With encryption the upload is ciphertexts (measured during the run); the table lists the "
                       "plaintext parts. " + ("The headline is the ciphertext size of one upload (the update and, "
                       "with per-item averaging, the item bitmap), measured by encrypting once with these CKKS "
                       "parameters. " if ct is not None else "") + "The Encryption page shows the CKKS sizes.")
        elif cfg.method == "scolr":
            st.caption("SCoLR: expected sizes over the local rank r_u drawn per client and round.")


PAYLOAD_COLUMNS = {"part": "message part", "bytes": "bytes (serialized)", "bits": "bits (theoretical)"}


def _ciphertext_upload(cfg, n_items: int) -> float | None:
    """One client's CKKS upload: the update's ciphertexts (+ the item bitmap's), measured on a real encryption."""
    if cfg.method not in ("fedmf", "colr", "scolr"):
        return None
    n = n_items * (cfg.dim if cfg.method == "fedmf" else cfg.rank)
    chain = cfg.ckks_chain()
    try:
        b = runs.ckks_costs(n, cfg.ckks_degree, chain, cfg.ckks_scale_bits)["ciphertext_bytes"]
        if cfg.aggregation == "item_mean":
            b += runs.ckks_costs(n_items, cfg.ckks_degree, chain, cfg.ckks_scale_bits)["ciphertext_bytes"]
    except Exception:  # invalid CKKS parameters are reported by the run itself
        return None
    return float(b)

if __name__ == "__main__":  # st.navigation executes this file as the page script
    render()
