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
from labcore.config import RunConfig
from labcore.privacy import dp
from labcore.results import KB, LEDGER_VIEW
from labcore.units import readable_bytes

METHODS = {"FedMF": {"method": "fedmf"}, "CoLR@4": {"method": "colr", "rank": 4},
           "SCoLR@4": {"method": "scolr", "rank": 4}, "Top-K 10%": {"method": "topk", "topk_ratio": 0.1},
           "FedMF, 8-bit uplink": {"method": "fedmf", "up_bits": 8}}
# the page's runs: a model and local work large enough that FedMF's HR@10 without DP climbs well above a random
# ranking's 0.1 in 40 rounds (0.32-0.35 on small synthetic data, 3 seeds), so the clip's and the noise's costs both
# show at the default C = 10 (the clip alone 0.27-0.29, sigma 1 on top 0.16-0.20); docs/topics/dp.md has the grid
PAGE_RUN = dict(dim=32, local_epochs=2)
CLIPS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
_DEFAULTS = RunConfig().to_dict()
DATA = {"synthetic (small)": dict(dataset="synthetic", synthetic_size="small"),
        "synthetic (tiny)": dict(dataset="synthetic", synthetic_size="tiny")}


def _train(cfgs: dict):
    """Each labelled run: the DP run and the two it is read against (no DP, the clip alone)."""
    def work(task):
        from labcore.fed.engine import run

        out = {}
        for label, cfg in cfgs.items():
            res = run(cfg, progress=False)
            out[label] = (res.table, res.notes, res.ledger_by_round())
        return out

    return work


def _references(cfg: RunConfig) -> dict:
    """The same schedule without DP, and clipped at the same C without noise (central, in clear): HR@10 of the DP
    run read beside these two says what the clip costs and what the noise costs on top."""
    plain = {f: _DEFAULTS[f] for f in ("dp_mode", "dp_noise_multiplier", "dp_target_epsilon", "dp_delta", "dp_clip")}
    return {"no DP": cfg.replace(**plain, encryption="none"),
            "clipped, no noise": cfg.replace(dp_mode="central", dp_noise_multiplier=0.0, dp_target_epsilon=0.0,
                                             encryption="none")}


def _curious(cfg):
    def work(task):
        from labcore.colr.curious_server import curious_server

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
    clip = ui.select("_dp_clip", "clip norm C", CLIPS, default=10.0, where=c3)
    delta_exp = ui.slider("_dp_delta", "delta = 10^-x (0: 1 / users)", 0, 9, default=0, where=c3)
    rounds = ui.slider("_dp_rounds", "rounds", 5, 100, default=40, step=5, where=c3)
    with st.expander("data and cohort"):
        e1, e2 = st.columns(2)
        data = ui.select("_dp_data", "dataset", tuple(DATA), default="synthetic (small)", where=e1)
        m = ui.slider("_dp_m", "clients a round (expected: q = M / users)", 2, 100, default=40, where=e2)
    ui.warnings()
    settings = dict(dp_mode=mode, dp_clip=float(clip), dp_delta=0.0 if delta_exp == 0 else 10.0 ** -delta_exp,
                    rounds=int(rounds), eval_every=max(1, int(rounds) // 5), clients_per_round=int(m),
                    encryption="secagg" if mode == "distributed" else "none")
    if how == "noise multiplier":
        settings["dp_noise_multiplier"] = float(sigma)
    else:
        settings["dp_target_epsilon"] = float(target)
    try:
        cfg = ex.base("smoke", **{**ex.SMOKE, **PAGE_RUN, **DATA[data], **METHODS[method], **settings})
        if cfg.encryption == "secagg" and cfg.up_bits:
            cfg = cfg.replace(up_bits=0)
    except ValueError as e:  # ConfigError: it names the field
        st.error(str(e))
        return
    runs = {"DP": cfg} | _references(cfg)
    trained = in_background("dp.train", "|".join(c.key() for c in runs.values()), _train(runs),
                            f"Training {rounds} rounds with DP, without, and clipped only...")
    if trained is None:  # still training, or refused by the accountant (the error names the field)
        return
    table, notes, ledger = trained["DP"]
    hr = {label: float(t["hr"].dropna().iloc[-1]) for label, (t, _, _) in trained.items()}
    last = table.iloc[-1]
    k1, k2, k3, k4 = st.columns(4)
    k1.metric("epsilon spent", f"{last['epsilon']:.3g}")
    k2.metric("HR@10 with DP (last evaluation)", f"{hr['DP']:.4f}", delta=f"{hr['DP'] - hr['no DP']:+.4f} vs no DP")
    k3.metric("HR@10 without DP", f"{hr['no DP']:.4f}")
    k4.metric("rounds played", f"{len(table)} of {rounds}")
    chance = min(1.0, 10 / (_negatives(cfg) + 1))
    st.caption(f"Read HR@10 against two runs of the same schedule: without DP {hr['no DP']:.3f}; clipped at "
               f"C = {clip:g} without noise {hr['clipped, no noise']:.3f} (what the clip alone costs); with the "
               f"noise {hr['DP']:.3f}. A random ranking of the test item among its {_negatives(cfg)} sampled "
               f"negatives scores {chance:.2f}.")
    if "Stopped by the privacy budget" in notes:
        st.warning(notes[notes.index("Stopped"):])
    chart(plots.epsilon_per_round(table, cfg.describe(),
                                  references={k: trained[k][0] for k in ("no DP", "clipped, no noise")},
                                  chance=chance),
          key="dp.curves")
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


def _negatives(cfg) -> int:
    from labcore.figures.runs import _data
    return int(_data(cfg).test_negatives.shape[1])


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
