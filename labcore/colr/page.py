"""Encryption (CoLR's Section 5): what protecting an upload costs (the CKKS cost explorer, Table 3) and what it
protects (a curious server's attack on real runs, `curious_server.py`)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from labcore import plots
from labcore.config import ConfigError, RunConfig
from labcore.fed.engine import check_fits
from labcore.methods.compress import topk_count
from labcore.privacy.secagg import SecureAggregationError
from labcore.app import budget, controls, jobs, notices, runs
from labcore.app.charts import chart
from labcore.app.charts import table as grid
from labcore.app.state import ENCRYPTION as SPEC
from labcore.colr.curious_server import SCORE_KEYS, attack_summary, curious_server, played_config

SWEEP_RANKS = (1, 2, 4, 8, 16, 32, 64)


def _paillier(task, key_bits: int) -> dict:
    from labcore.privacy.paillier import per_value_costs

    return per_value_costs(key_bits, sample=8)


def _ckks(task, sizes: tuple[int, ...], degree: int, chain: tuple, scale: int) -> dict[int, dict]:
    """CKKS costs of uploads of each size (keys generated and costs calibrated once per parameter set)."""
    from labcore.privacy.ckks import CkksParams
    from labcore.privacy.costs import ckks_costs

    params, out = CkksParams(degree, chain, scale), {}
    for i, n in enumerate(sizes):
        out[n] = ckks_costs(n, params)
        task.report((i + 1) / len(sizes), f"{i + 1} of {len(sizes)} upload sizes")
    return out


def _table3(task, degree: int, chain: tuple, scale: int, n_items: int, d: int) -> pd.DataFrame:
    from labcore.privacy.ckks import CkksParams
    from labcore.privacy.costs import table3_rows

    rows = table3_rows(n_items=n_items, d=d, params=CkksParams(degree, chain, scale), smoke=True)
    out = []
    for r in rows:
        p = r["paper"] or {}
        out.append({"method": r["method"], "scheme": r["scheme"], "client (s)": r["client_s"],
                    "server (s)": r["server_s"], "ciphertext (KB)": r["ciphertext_kb"],
                    "plaintext (KB)": r["plaintext_kb"], "ciphertext / plaintext": r["ratio"],
                    "paper: client (s)": p.get("client_s"), "paper: server (s)": p.get("server_s"),
                    "paper: ciphertext (KB)": p.get("ciphertext_kb"), "paper: ciphertext / plaintext": p.get("ratio"),
                    "basis": r["basis"]})
    return pd.DataFrame(out)


def render() -> None:
    vs = controls.view_state(SPEC)
    st.title("Encryption")
    controls.show_warnings(vs, SPEC.name)
    cfg = controls.sidebar(SPEC, vs)
    controls.sync_url(SPEC, vs, cfg)  # the sidebar's part of the link at once, before the long work
    if cfg is None:
        cfg = vs.cfg
        st.caption("Showing the last valid settings.")
    _tabs(cfg, vs)
    # again after the tabs: the attack tab's "rounds attacked" is drawn there and belongs in the link too
    controls.share_box(SPEC, controls.sync_url(SPEC, vs, None))


def _tabs(cfg, vs) -> None:
    try:
        data = runs.dataset(cfg)
    except Exception as e:
        notices.error(e)
        return
    N, d = data.n_items, cfg.dim
    tab_cost, tab_attack = st.tabs(["CKKS cost explorer", "Attack: what a curious server learns"])
    with tab_cost:
        _costs(cfg, N, d)
    with tab_attack:
        _attack(cfg, vs)


def _costs(cfg, N: int, d: int) -> None:
    chain = cfg.ckks_chain()
    st.markdown(f"CKKS with N = {cfg.ckks_degree} ({cfg.ckks_degree // 2} values per ciphertext), primes {chain}, "
                f"scale 2^{cfg.ckks_scale_bits}; {cfg.dataset}: {N} items, d = {d}.")
    if cfg.method == "topk":
        k = topk_count(N * d, cfg.topk_ratio)
        pv = runs.in_background("encryption.paillier", str(cfg.paillier_key_bits),
                                lambda task: _paillier(task, cfg.paillier_key_bits),
                                "Measuring Paillier costs (key generation once)...")
        if pv is None:
            return
        c = st.columns(4)
        c[0].metric("values encrypted (k)", f"{k:,}")
        c[1].metric("upload (ciphertexts + clear indices)", f"{k * (pv['ciphertext_bytes'] + 4) / 1024:,.0f} KB")
        c[2].metric("ratio to plaintext", f"{(pv['ciphertext_bytes'] + 4) / 8:,.1f}x")
        c[3].metric("client encrypt + decrypt", f"{k * (pv['encrypt_s'] + pv['decrypt_s']):,.2f} s")
        st.caption(f"Top-K is encrypted value by value with Paillier ({cfg.paillier_key_bits}-bit key, "
                   f"{pv['ciphertext_bytes']} B per value, measured on {pv['sample']} values and multiplied by k); "
                   "the indices travel in clear. CKKS packs dense vectors: pick FedMF or CoLR to explore it.")
        return
    n = N * d if cfg.method == "fedmf" else cfg.rank * N
    what = f"FedMF update N x d = {n:,} values" if cfg.method == "fedmf" else f"CoLR factor A_u, r x N = {n:,} values"
    ranks = [r for r in SWEEP_RANKS if r <= d]
    sizes = tuple(sorted({n, N * d, *(r * N for r in ranks)}))
    costs = runs.in_background("encryption.ckks", f"{sizes}:{cfg.ckks_degree}:{chain}:{cfg.ckks_scale_bits}",
                               lambda task: _ckks(task, sizes, cfg.ckks_degree, chain, cfg.ckks_scale_bits),
                               "Generating CKKS keys and measuring costs (once per parameter set)...")
    if costs is None:
        return
    c = costs[n]
    st.markdown(f"One client's upload: **{what}**")
    m = st.columns(5)
    m[0].metric("ciphertexts", f"{c['n_ciphertexts']:,}")
    m[1].metric("ciphertext size", f"{c['ciphertext_bytes'] / 1024:,.0f} KB")
    m[2].metric("plaintext (float32)", f"{c['plaintext_bytes'] / 1024:,.1f} KB")
    m[3].metric("ciphertext / plaintext", f"{c['ratio']:,.1f}x")
    m[4].metric("security", f"{c['security_bits']} bits")
    t = st.columns(5)
    per_ct = f"{c['encrypt_s'] * 1e3 / c['n_ciphertexts']:,.1f} ms per ciphertext"
    t[0].metric("client: encrypt", f"{c['encrypt_s'] * 1e3:,.1f} ms", delta=per_ct, delta_color="off",
                delta_arrow="off",
                help="the whole upload. A larger degree makes each ciphertext slower but holds twice the values, so "
                     "an upload of several ciphertexts can take less time at 16384 than at 8192 (fewer of them)")
    t[1].metric("client: decrypt aggregate", f"{c['decrypt_s'] * 1e3:,.1f} ms")
    t[2].metric("server: weighted add / client", f"{c['add_s'] * 1e3:,.2f} ms")
    t[3].metric("round-trip error (max abs)", f"{c['max_abs_error']:.1e}")
    t[4].metric("aggregate rel. error", f"{c['aggregate_rel_error']:.1e}")
    st.caption(f"Bytes: {c['bytes_source']}. Times: {c['times_source']} (this machine). Errors on values of "
               f"std {c['precision_values_std']:g}.")
    rows = [{"method": "CoLR@r", "rank": r, "ciphertext_bytes": costs[r * N]["ciphertext_bytes"],
             "plaintext_bytes": costs[r * N]["plaintext_bytes"]} for r in ranks]
    full = costs[N * d]
    rows += [{"method": f"FedMF d={d}", "rank": r, "ciphertext_bytes": full["ciphertext_bytes"],
              "plaintext_bytes": full["plaintext_bytes"]} for r in ranks]
    st.markdown("**Upload size against rank: a staircase under CKKS** (one ciphertext holds "
                f"{cfg.ckks_degree // 2} values, so CoLR@r costs ceil(rN / {cfg.ckks_degree // 2}) ciphertexts)")
    chart(plots.ckks_sizes(pd.DataFrame(rows), x="rank"), key="encryption.sizes")
    with st.expander("CoLR Table 3 with the paper's numbers alongside"):
        st.caption("Smoke size: real CKKS rounds up to 2 ciphertexts per client (larger rows extrapolated from "
                   "measured per-ciphertext costs), Paillier 1024-bit with per-value costs measured on 4 values. "
                   "`python -m labcore.privacy.costs` computes the full version.")
        if st.button("Compute Table 3 (a few seconds)", key="encryption.table3"):
            st.session_state["encryption.table3.shown"] = True
        if st.session_state.get("encryption.table3.shown"):
            table = runs.in_background(
                "encryption.table3", f"{cfg.ckks_degree}:{chain}:{cfg.ckks_scale_bits}:{N}:{d}",
                lambda task: _table3(task, cfg.ckks_degree, chain, cfg.ckks_scale_bits, N, d),
                "Computing Table 3 (smoke size: real CKKS rounds, Paillier extrapolated)...")
            if table is not None:
                grid(table)


def _attack(cfg, vs) -> None:
    st.markdown(
        "A curious server runs the item-recovery attack (`labcore.privacy.attacks`) on what it receives in a real "
        "round of this configuration: which items did each client interact with? Plain uploads give the items "
        "away (rows of untouched items are zero; the sign along p_u separates positives from negatives); "
        "ciphertexts and masked vectors leave it at chance. The aggregate of many clients is what secure "
        "aggregation reveals.")
    rounds = controls.option(SPEC, vs, "attack_rounds", "slider", "rounds attacked", 1, 5)
    try:
        plain = cfg.replace(encryption="none")
    except ConfigError as e:
        st.warning(str(e))
        return
    real = ATTACKED if cfg.encryption != "none" else None
    runs_ = [plain] if cfg.encryption == "none" else [plain, cfg]
    try:
        data = runs.dataset(cfg)
        played = [played_config(c, rounds, real) for c in runs_]
        for c in played:  # before queuing: a combination the engine refuses is a message, not a failed job
            check_fits(c, data)
    except ConfigError as e:
        st.warning(str(e))
        return
    refused = budget.over([budget.cost(c, data) for c in played])  # one after the other: the larger one's memory
    if refused:
        st.warning(refused, icon=":material/speed:")
        return
    try:
        task = _attack_task(runs_, rounds, real)
    except jobs.Busy as e:
        st.warning(str(e))
        return
    if not runs.task_done("encryption.attack", task, f"The curious server attacks {rounds} round(s) of "
                          f"{cfg.clients_per_round} clients in the background (a training slot of this server)..."):
        return
    if task.error:  # too few uploads for secure aggregation is a setting to change, anything else an error
        if task.error.startswith(SecureAggregationError.__name__ + ":"):
            st.warning(task.error.split(": ", 1)[1])
        else:
            notices.error(task.error)
        return
    if task.result is None:
        st.info("The attack stopped before its end (nobody was watching it); it starts again on the next visit.")
        return
    out = list(task.result)
    if len(out) == 2:  # like with like: the plain run attacked on the very clients attacked under encryption
        out[0] = same_clients(out[0], out[1])

    summary = attack_summary(out)
    chart(plots.attack_bars(summary), key="encryption.attack")
    grid(summary.drop(columns=["method"]).rename(columns=ATTACK_COLUMNS),
         column_config={c: st.column_config.Column(label, help=c) for c, label in ATTACK_LABELS.items()})
    n = cfg.clients_per_round
    if cfg.encryption == "none":
        who = f"every one of the {n} clients of each round is attacked"
    else:
        who = (f"both runs attack the same {min(real, n)} clients of each {n}-client round: under {cfg.encryption} "
               f"only {min(real, n)} clients per round are protected for real (the costly part), and the plain "
               "run is scored on those same clients; the aggregate mixes all "
               f"{n} clients in both")
    st.caption(f"{cfg.method} on {cfg.dataset}, {n} clients per round, seed {cfg.seed}, {rounds} round(s): {who}. "
               "Pick another protection in the sidebar; `none` shows the plain run only.")


ATTACKED = 4  # clients per round protected for real (and attacked) under encryption
ATTACK_COLUMNS = {"view": "what the server attacks", "precision": "attack precision", "recall": "attack recall",
                  "base_rate": "chance (base rate)", "lift": "lift (x chance)",
                  "chance_recall": "chance recall (a guess as large)", "clients": "clients attacked"}
# shown as short headers, the full name in the header's help: the table fits a projector's 564 px
ATTACK_LABELS = {"what the server attacks": "attacked", "attack precision": "precision", "attack recall": "recall",
                 "chance (base rate)": "base rate", "lift (x chance)": "lift (x)",
                 "chance recall (a guess as large)": "chance recall", "clients attacked": "clients"}


def _attack_task(cfgs: list[RunConfig], rounds: int, real_clients: int | None) -> jobs.Task:
    """The curious-server attack on `rounds` rounds of each config (in order), as a background task of the hub:
    shared by the sessions asking for it, queued for a training slot, stopped between rounds when nobody watches.
    Its result is the list of `curious_server` outputs."""
    data = [runs.dataset(c) for c in cfgs]

    def work(task: jobs.Task):
        out = []
        for c, d in zip(cfgs, data):
            r = curious_server(c, rounds=rounds, data=d,
                               real_clients=real_clients if c.encryption != "none" else None,
                               should_stop=task.should_stop)
            if r is None:
                raise jobs.Stopped
            out.append(r)
        return out

    key = f"attack:{rounds}:{real_clients}:" + ",".join(c.key() for c in cfgs)
    return runs.hub().task(key, work, runs.session_id())


def same_clients(plain: dict, protected: dict) -> dict:
    """The plain run's attack scores restricted to the (round, client) pairs attacked in the protected run."""

    keep = set(zip(protected["per_client"]["round"], protected["per_client"]["client"]))
    t = plain["per_client"]
    t = t[[(r, c) in keep for r, c in zip(t["round"], t["client"])]]
    out = {**plain, "per_client": t}
    for view in ("upload", "aggregate", "bitmap", "topk_indices", "topk_indices_touched"):
        cols = [f"{view}_{k}" for k in SCORE_KEYS]
        if view in plain and cols[0] in t:
            out[view] = {k: float(t[c].mean()) for k, c in zip(SCORE_KEYS, cols)} | {"clients": len(t)}
    return out

if __name__ == "__main__":  # st.navigation executes this file as the page script
    render()
