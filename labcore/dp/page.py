"""App page: differential privacy with an accountant (epsilon and HR@10 round by round, the budget stop, the
curious server against the DP run) and gradient inversion of 8x8 digits under every defense."""
from __future__ import annotations


import streamlit as st

from labcore.app.charts import chart
from labcore.app.jobs import Stopped
from labcore.app.runs import in_background
from labcore.app.url_widgets import UrlWidgets
from labcore.dp import experiments as ex
from labcore.dp import plots
from labcore.privacy import dp
from labcore.results import KB, LEDGER_VIEW
from labcore.units import readable_bytes

METHODS = {"FedMF": {"method": "fedmf"}, "CoLR@4": {"method": "colr", "rank": 4},
           "SCoLR@4": {"method": "scolr", "rank": 4}, "Top-K 10%": {"method": "topk", "topk_ratio": 0.1},
           "FedMF, 8-bit uplink": {"method": "fedmf", "up_bits": 8}}
DATA = {"synthetic (small)": dict(dataset="synthetic", synthetic_size="small"),
        "synthetic (tiny)": dict(dataset="synthetic", synthetic_size="tiny")}


def _train(cfg):
    def work(task):
        from labcore.fed.engine import run

        res = run(cfg, progress=False)
        return res.table, res.notes, res.ledger_by_round()

    return work


def _curious(cfg):
    def work(task):
        from labcore.privacy.server_attack import curious_server

        out = curious_server(cfg, rounds=2, should_stop=task.should_stop)
        if out is None:
            raise Stopped
        return {v: out[v]["precision"] for v in ("upload", "aggregate")} | {"chance": out["upload"]["base_rate"]}

    return work


def _invert(setup: dict):
    def work(task):
        from labcore.dp import inversion as inv

        r = inv.attack(inv.Setup(**setup))
        return r.originals, r.reconstructions, r.psnr, r.mean_image_psnr

    return work


def _training(ui: UrlWidgets) -> None:
    st.subheader("DP-FedAvg with an accountant")
    c1, c2, c3 = st.columns(3)
    mode = ui.select("_dp_mode", "where the noise is added", ("central", "distributed", "local"),
                     default="central", where=c1)
    method = ui.select("_dp_method", "method (what is clipped)", tuple(METHODS), default="FedMF", where=c1)
    how = ui.select("_dp_by", "set", ("noise multiplier", "target epsilon"), default="noise multiplier", where=c2)
    sigma = ui.slider("_dp_sigma", "noise multiplier sigma", 0.1, 8.0, default=1.0, step=0.1, where=c2)
    target = ui.slider("_dp_eps", "target epsilon (budget)", 0.5, 50.0, default=8.0, step=0.5, where=c2)
    clip = ui.select("_dp_clip", "clip norm C", (0.01, 0.03, 0.1, 0.3, 1.0), default=0.1, where=c3)
    delta_exp = ui.slider("_dp_delta", "delta = 10^-x (0: 1 / users)", 0, 9, default=0, where=c3)
    rounds = ui.slider("_dp_rounds", "rounds", 5, 100, default=20, step=5, where=c3)
    with st.expander("data and cohort"):
        e1, e2 = st.columns(2)
        data = ui.select("_dp_data", "dataset", tuple(DATA), default="synthetic (small)", where=e1)
        m = ui.slider("_dp_m", "clients a round (expected: q = M / users)", 2, 100, default=20, where=e2)
    ui.warnings()
    settings = dict(dp_mode=mode, dp_clip=float(clip), dp_delta=0.0 if delta_exp == 0 else 10.0 ** -delta_exp,
                    rounds=int(rounds), eval_every=max(1, int(rounds) // 5), clients_per_round=int(m),
                    encryption="secagg" if mode == "distributed" else "none")
    if how == "noise multiplier":
        settings["dp_noise_multiplier"] = float(sigma)
    else:
        settings["dp_target_epsilon"] = float(target)
    try:
        cfg = ex.base("smoke", **{**ex.SMOKE, **DATA[data], **METHODS[method], **settings})
        if cfg.encryption == "secagg" and cfg.up_bits:
            cfg = cfg.replace(up_bits=0)
    except ValueError as e:  # ConfigError: it names the field
        st.error(str(e))
        return
    trained = in_background("dp.train", cfg.key(), _train(cfg), f"Training {rounds} rounds with DP...")
    if trained is None:  # still training, or refused by the accountant (the error names the field)
        return
    table, notes, ledger = trained
    last = table.iloc[-1]
    k1, k2, k3 = st.columns(3)
    k1.metric("epsilon spent", f"{last['epsilon']:.3g}")
    k2.metric("HR@10 (last evaluation)", f"{table['hr'].dropna().iloc[-1]:.4f}")
    k3.metric("rounds played", f"{len(table)} of {rounds}")
    if "Stopped by the privacy budget" in notes:
        st.warning(notes[notes.index("Stopped"):])
    chart(plots.epsilon_per_round(table, cfg.describe()), key="dp.curves")
    st.caption("Epsilon from Opacus's RDP accountant (PRV as a cross-check: "
               f"{dp.epsilon_prv(cfg.clients_per_round / _users(cfg), float(table['dp_sigma'].iloc[0]), len(table), _delta(cfg)):.3g}"
               " for the same rounds at the first round's sigma)." if mode != "local" else
               "Local DP: each round is accounted without amplification by sampling (the server sees who sent what).")
    _bytes_and_epsilon(ledger)
    with st.expander("the curious server against this run (two rounds)"):
        if st.toggle("run the attack", key="dp.attack"):
            attacked = cfg.replace(rounds=2, dp_target_epsilon=0.0, dp_noise_multiplier=float(table["dp_sigma"].iloc[0]))
            p = in_background("dp.attack", attacked.key(), _curious(attacked),
                              "The curious server attacks two rounds...")
            if p is None:
                return
            a1, a2, a3 = st.columns(3)
            a1.metric("precision on each upload", f"{p['upload']:.3f}")
            a2.metric("precision on the aggregate", f"{p['aggregate']:.3f}")
            a3.metric("chance (base rate)", f"{p['chance']:.3f}")
            st.caption("Under central DP the server sees every clipped update in clear: only what it publishes "
                       "is private. Local DP noises the upload itself.")


def _bytes_and_epsilon(ledger) -> None:
    """The payload ledger per round beside the accountant: what was sent, and the privacy spent for it."""
    chart(plots.bytes_and_epsilon(ledger), key="dp.ledger")
    up, down = (float(ledger[LEDGER_VIEW[k]].sum()) * KB for k in ("up", "down"))
    st.caption(f"From the payload ledger (every message part, all clients): {readable_bytes(up + down)} sent in "
               f"{len(ledger)} rounds (upload {readable_bytes(up)}, download {readable_bytes(down)}) for epsilon "
               f"{ledger[LEDGER_VIEW['epsilon']].iloc[-1]:.3g}. The cohort is drawn by Poisson sampling, so the "
               "bytes vary from round to round; the epsilon a round spends depends on the sampling rate q and "
               "the round's sigma, not on the bytes it sent.")


def _users(cfg) -> int:
    from labcore.figures.runs import _data
    return _data(cfg).n_users


def _delta(cfg) -> float:
    return cfg.dp_delta or 1.0 / _users(cfg)


def _inversion(ui: UrlWidgets) -> None:
    st.subheader("Gradient inversion: a digit out of one update")
    c1, c2, c3 = st.columns(3)
    n = ui.slider("_dp_inv_n", "images on the client", 1, 8, default=1, where=c1)
    steps = ui.slider("_dp_inv_steps", "local steps", 1, 5, default=1, where=c1)
    topk = ui.select("_dp_inv_topk", "Top-K share sent", (1.0, 0.3, 0.1, 0.03), default=1.0, where=c2)
    bits = ui.select("_dp_inv_bits", "QSGD bits (0: float32)", (0, 8, 4, 2), default=0, where=c2)
    rank = ui.select("_dp_inv_rank", "rank of each weight matrix (0: full)", (0, 4, 2, 1), default=0, where=c2)
    noise = ui.select("_dp_inv_dp", "DP noise sigma (C = 0.1)", (0.0, 0.01, 0.03, 0.1, 0.3), default=0.0, where=c3)
    agg = ui.select("_dp_inv_m", "secure aggregation of M clients", (1, 2, 4, 8), default=1, where=c3)
    setup = dict(n_images=int(n), local_steps=int(steps), topk_ratio=float(topk), quant_bits=int(bits),
                 rank=int(rank), dp_noise=float(noise), dp_clip=0.1, secagg_clients=int(agg), iterations=300)
    inverted = in_background("dp.invert", repr(sorted(setup.items())), _invert(setup),
                             "Inverting the update (300 optimizer steps)...")
    if inverted is None:
        return
    orig, rec, psnr, chance = inverted
    st.metric("mean PSNR", f"{float(psnr.mean()):.1f} dB", help=f"the dataset's mean image: {chance:.1f} dB")
    chart(plots.images(orig, rec, psnr), key="dp.images")


def render() -> None:
    st.title("Privacy: differential privacy and gradient inversion")
    st.caption("Lab experiments at small sizes; the cards dp-hr-epsilon, dp-curious-server and dp-inversion hold "
               "the larger runs.")
    ui = UrlWidgets("dp")
    _training(ui)
    _inversion(ui)


if __name__ == "__main__":
    render()
