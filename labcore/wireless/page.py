"""App page: link budgets, bits and users; live error curves with Theorem 1's bound; the two-user rate region."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from labcore.app.charts import chart
from labcore.app.charts import table as grid
from labcore.app.runs import in_background
from labcore.app.url_widgets import UrlWidgets
from labcore.net.channel import ChannelError, LinkModel, RateRegion
from labcore.typed_config import ConfigError
from labcore.wireless import allocation, plots, theory
from labcore.wireless.config import WirelessConfig
from labcore.wireless.fedavg import bits_per_round, error_floor, simulate

CARD_IDS = ("wireless-fig2", "wireless-fig3", "wireless-fig4", "wireless-table1")


def _simulate_both(cfg: WirelessConfig, ref: WirelessConfig):
    """The chosen links and the full-precision reference, as one task of the server's job queue."""
    def work(task):
        out = simulate(cfg)
        task.report(0.5, "the full-precision reference")
        return out, simulate(ref)

    return work


def _bits(b: int) -> str:
    return "full precision" if b == 0 else f"{b} bits (k = 2^{b})"


def _curves(ui: UrlWidgets) -> None:
    st.subheader("Quantized FedAvg over budgeted links")
    c1, c2, c3 = st.columns(3)
    budget_up = ui.slider("Ku", "uplink budget K_U (bits, 0 = no limit)", 0, 16, default=8, where=c1)
    budget_down = ui.slider("Kd", "downlink budget K_D (bits, 0 = no limit)", 0, 16, default=8, where=c1)
    bits_up = ui.slider("ku", "uplink bits k_u (0 = full precision)", 0, 16, default=8, where=c2)
    bits_down = ui.slider("kd", "downlink bits k_d (0 = full precision)", 0, 16, default=8, where=c2)
    users = ui.slider("n", "users n", 1, 32, default=1, where=c3)
    kappa = ui.slider("kappa", "condition number kappa", 1.0, 20.0, default=2.0, step=0.5, where=c3)
    step = ui.slider("step", "step size gamma L", 0.05, 1.0, default=0.25, step=0.05, where=c3)
    with st.expander("problem size and links"):
        e1, e2, e3 = st.columns(3)
        d = ui.select("d", "dimension d", (20, 50, 100, 200), default=200, where=e1)
        iterations = ui.slider("T", "iterations", 20, 400, default=150, step=10, where=e2)
        trials = ui.slider("R", "trials averaged", 1, 100, default=20, where=e3)
        rate_up = ui.slider("rup", "uplink rate (Mbit/s)", 0.1, 100.0, default=1.0, step=0.1, where=e1)
        rate_down = ui.slider("rdown", "downlink rate (Mbit/s)", 0.1, 100.0, default=10.0, step=0.1, where=e2)
    ui.warnings()
    try:
        cfg = WirelessConfig(d=d, users=users, kappa=kappa, step=step, bits_up=bits_up, bits_down=bits_down,
                             budget_up_bits=budget_up, budget_down_bits=budget_down, iterations=iterations,
                             trials=trials, samples=max(400, -(-2 * d // users)))
    except ConfigError as e:
        st.error(str(e))
        return
    ref = cfg.replace(bits_up=0, bits_down=0, budget_up_bits=0, budget_down_bits=0)
    both = in_background("wireless", cfg.key() + ref.key(), _simulate_both(cfg, ref),
                         f"{iterations} rounds x {trials} trials x {users} users ...")
    if both is None:
        return
    (table, ledger), (ref_table, _) = both
    shown = pd.concat([table.assign(curve=cfg.label()), ref_table.assign(curve="full precision, no channel")])
    chart(plots.error_curves(shown, "E||x_k - x*||² / ||x*||² (band: 10-90% of trials)"),
          key="wireless.curves")

    from labcore.wireless.fedavg import WirelessFedAvg

    w_u, w_d = WirelessFedAvg.omegas(type("C", (), {"cfg": cfg})())
    mu, L, gamma = cfg.mu, cfg.L, cfg.gamma
    m = st.columns(4)
    m[0].metric("measured error floor", f"{error_floor(table):.3g}", help="mean of the last quarter of iterations")
    nb = theory.neighbourhood(mu, L, gamma, w_u, w_d)
    ok = theory.conditions_hold(mu, L, gamma, w_u, w_d)
    m[1].metric("Theorem 1 neighbourhood", f"{nb:.3g}" if ok else "no bound",
                help="2 (C1 + C2) / (mu gamma - 4 w_u (1 + gamma² L²)(1 + 2 w_d)), relative to ||x*||²")
    m[2].metric("contraction rho", f"{theory.contraction(mu, L, gamma, w_u, w_d):.4f}")
    m[3].metric("omega up / down", f"{w_u:.2g} / {w_d:.2g}")
    if not ok:
        up_t = theory.threshold_bits(d, mu, L, gamma, "up")
        dn_t = theory.threshold_bits(d, mu, L, gamma, "down")
        st.info(f"Theorem 1's conditions fail for these links, so it gives no bound: one link alone needs "
                f"k_u >= 2^{up_t:.2f} (uplink) or k_d >= 2^{dn_t:.2f} (downlink) at d = {d}, kappa = {kappa:g}, "
                f"gamma L = {step:g}.")
    over = [name for name, b, K in (("uplink", bits_up, budget_up), ("downlink", bits_down, budget_down))
            if K and b and b > K]
    if over:
        st.caption(f"Over budget on the {' and '.join(over)}: the levels arrive with channel noise of std 1/(2K) "
                   "(Eq. 6), so bits beyond the budget buy nothing and add noise.")

    per = bits_per_round(ledger)
    link = LinkModel(budget_up, budget_down, rate_up * 1e6, rate_down * 1e6)
    up_bits = float(per.loc[per.direction == "up", "bits"].sum()) / users
    down_bits = float(per.loc[per.direction == "down", "bits"].sum()) / users
    b = st.columns(3)
    b[0].metric("uplink per user per round", f"{up_bits:,.0f} bits",
                help="Eq. (5): 32-bit norm + 2 bits per sign + d log2 k bits of levels")
    b[1].metric("downlink per user per round", f"{down_bits:,.0f} bits")
    b[2].metric("communication time per round", f"{link.seconds(up_bits, down_bits) * 1e3:.3g} ms",
                help="download then upload at the link rates")
    grid(per.rename(columns={"bytes": "measured bytes", "bits": "Eq. (5) bits"}))


def _region(ui: UrlWidgets) -> None:
    st.subheader("Two users on one link: the rate region and the optimal split (Eq. 8-12)")
    c1, c2 = st.columns([1, 2])
    K1 = ui.slider("K1", "user 1 budget log2 K1", 1, 16, default=9, where=c1)
    K2 = ui.slider("K2", "user 2 budget log2 K2", 1, 16, default=6, where=c1)
    Ks = ui.slider("Ks", "sum budget log2 K(s)", 1, 24, default=14, where=c1)
    link = ui.select("link", "allocate on", ("up", "down"), default="up", where=c1, radio=True)
    setting = allocation.Setting()
    try:
        region = RateRegion.two_users(K1, K2, Ks)
    except ChannelError as e:
        c1.error(str(e))
        return
    thr = setting.threshold(link)
    opt = cf = None
    try:
        opt = allocation.solve(region, setting, link)
        cf = allocation.closed_form_two_users(region, setting) if link == "up" else None
        c1.success(f"optimum: k1 = 2^{opt[0]:.3f}, k2 = 2^{opt[1]:.3f}; sum of neighbourhoods "
                   f"{allocation.objective(opt, setting, link):.4g} ||x*||²")
    except allocation.InfeasibleAllocation as e:
        c1.warning(str(e))
    c1.caption(f"d = {setting.d}, kappa = {setting.L / setting.mu:g}, gamma = 1/(4L); the other link at full precision.")
    chart(plots.rate_region(region, opt, cf, thr), key="wireless.region", where=c2, share=2 / 3)


def _stored() -> None:
    from labcore import figures
    import labcore.wireless.cards  # noqa: F401  (registers the cards)

    st.subheader("The report's figures, reproduced (stored full-size runs)")
    for cid in CARD_IDS:
        card = labcore.wireless.cards.CARDS[cid]
        try:
            res = figures.stored(cid)
        except Exception as e:  # another topic's cards failing to import must not hide these
            st.warning(f"stored result of {cid} not readable: {e}")
            res = None
        with st.expander(f"{card.title}" + ("" if res is None else f"  ({res.verdict})")):
            if res is None:
                st.info(f"No stored result yet: reproduce it with figures.reproduce('{cid}', 'full').")
            else:
                chart(res.figure, key=f"wireless.card.{cid}")
                grid(card.compare(res.ours))
            st.code(card.describe(), language=None)


def render() -> None:
    st.title("Wireless FL: uplink and downlink quantization under channel budgets")
    st.caption("Report 3 of the Rice course reports: FedAvg with the stochastic quantizer of Eq. (4)-(5) on both "
               "links, over the budget channel of Eq. (6), against Theorem 1; Table 1's budget allocation.")
    ui = UrlWidgets("wireless")
    _curves(ui)
    _region(ui)
    _stored()


if __name__ == "__main__":
    render()
