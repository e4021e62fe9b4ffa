"""App page: solve the MaxCut SDP with a chosen method and rank, watch the certified gap, round to a cut."""
from __future__ import annotations

import streamlit as st

from labcore.app.charts import chart, table
from labcore.app.runs import in_background
from labcore.app.url_widgets import UrlWidgets
from labcore.sdp import cards as _cards  # noqa: F401  (registers the topic's cards)
from labcore.sdp import plots
from labcore.sdp.config import METHOD_LABELS, METHODS, RULES, SdpConfig
from labcore.sdp.problem import default_rank
from labcore.sdp.rounding import GW_ALPHA

# Solver seconds of a live solve: the stored full-size results below ran with minutes.
LIVE_TIME_LIMIT_S = 8.0
CARD_IDS = ("sdp-cora-convergence", "sdp-rank-threshold", "sdp-rounding", "sdp-rules", "sdp-hazan-rate")


def _solve(cfg: SdpConfig, trials: int):
    """Solve, then round `trials` cuts: a task of the server's job queue."""
    def work(task):
        from labcore.sdp.rounding import round_cuts
        from labcore.sdp.run import run

        res = run(cfg)
        task.report(0.9, f"rounding {trials} cuts")
        return res.trace, round_cuts(res.problem, res.V, trials), res.problem.n, res.problem.name

    return work


def _controls(ui: UrlWidgets) -> SdpConfig:
    side = st.sidebar
    graph = ui.select("graph", "graph", ("random", "cora", "lastfm"), default="random", where=side)
    extra = {}
    if graph == "random":
        extra["n"] = ui.slider("n", "nodes n", 20, 400, default=200, step=10, where=side)
        extra["avg_degree"] = ui.slider("deg", "mean degree", 1.0, 20.0, default=4.0, step=0.5, where=side)
        extra["graph_seed"] = ui.number("gseed", "graph seed", 0, 10_000, default=0, where=side)
    method = ui.select("method", "method", METHODS, default="mixing", where=side, format_func=METHOD_LABELS.get)
    rule = "cyclic"
    if method in ("mixing", "mixing++"):
        rules = RULES if method == "mixing" else RULES[:3]
        rule = ui.select("rule", "coordinate rule", rules, default="cyclic", where=side)
    k = ui.number("k", "rank k of V (0 = ceil(sqrt(2n)) + 1)", 0, 400, default=0, where=side,
                  help="Mixing and Burer-Monteiro only; the Frank-Wolfe methods grow their rank one atom a step.")
    iters = ui.number("iters", "max iterations", 1, 5000, default=300, where=side)
    tol = ui.select("tol", "stop at certified gap", (1e-3, 1e-4, 1e-5, 1e-6), default=1e-5, where=side)
    ui.warnings()
    return SdpConfig(graph=graph, method=method, rule=rule, k=int(k), max_iters=int(iters), tol=float(tol),
                     cert_every=0, time_limit=LIVE_TIME_LIMIT_S, **extra)


def render() -> None:
    st.title("Low-rank SDP: MaxCut by Burer-Monteiro, mixing and Frank-Wolfe")
    st.caption("Report 4 of the Rice course reports. Every gap shown is certified: a dual-feasible point "
               "built from y_i = -||g_i|| and the smallest eigenvalue (Lanczos) proves the bound.")
    ui = UrlWidgets("sdp")
    cfg = _controls(ui)
    trials = ui.slider("trials", "roundings R", 1, 500, default=100)
    solved = in_background("sdp", f"{cfg.key()}:{int(trials)}", _solve(cfg, int(trials)),
                           f"Solving with {cfg.label()} (at most {LIVE_TIME_LIMIT_S:g} s of solver time)...")
    if solved is None:
        _stored_cards()
        return
    trace, cuts, n, name = solved
    last = trace.iloc[-1]
    c = st.columns(5)
    c[0].metric("SDP value (feasible)", f"{last['primal']:,.3f}")
    c[1].metric("certified upper bound", f"{last['bound']:,.3f}")
    c[2].metric("relative gap", f"{last['rel_gap']:.2e}")
    c[3].metric("rank of the iterate", f"{int(last['rank'])}")
    c[4].metric("solver time", f"{last['seconds']:.3f} s", help=f"certificates: {last['cert_seconds']:.2f} s more")
    st.caption(f"{name}: n = {n:,} nodes; k = {cfg.k or default_rank(n)} columns for the factored methods; "
               f"{int(last['iter'])} iterations (a live solve stops after {LIVE_TIME_LIMIT_S:g} s of solver time).")
    chart(plots.convergence(trace, f"{cfg.label()} on {name}"), key="sdp-conv")
    best = float(cuts.max())
    st.subheader("Goemans-Williamson rounding")
    r = st.columns(3)
    r[0].metric(f"best of {len(cuts)} cuts", f"{best:,.1f}")
    r[1].metric("best / SDP bound", f"{best / last['bound']:.4f}", delta=f"{best / last['bound'] - GW_ALPHA:+.4f} vs 0.878")
    r[2].metric("mean / SDP bound", f"{cuts.mean() / last['bound']:.4f}")
    import pandas as pd

    chart(plots.rounding_histogram(pd.DataFrame({"ratio": cuts / last["bound"]})), key="sdp-round")
    _stored_cards()


def _stored_cards() -> None:
    from labcore.sdp.cards import stored_result

    st.header("Stored full-size results")
    for cid in CARD_IDS:
        card, ours = stored_result(cid)
        with st.expander(card.title, expanded=False):
            st.code(card.describe(), language=None)
            if ours is None:
                st.info(f"No stored result yet: `labcore figure {cid} --full` computes it.")
                continue
            chart(card.plot(ours), key=f"sdp-card-{cid}")
            table(card.compare(ours))


if __name__ == "__main__":
    render()
