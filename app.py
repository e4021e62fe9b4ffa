"""The labcore Streamlit lab: `streamlit run app.py`.

Pages only render: every number comes from `labcore` (cached by config).
"""
import streamlit as st

import labcore
from labcore import plots
from labcore.config import ConfigError, RunConfig


@st.cache_data(show_spinner=False, max_entries=64)
def _run(cfg: RunConfig):
    return labcore.run(cfg, progress=False)


def explorer():
    st.title("Explorer: CoLR vs FedMF on synthetic data")
    with st.sidebar:
        method = st.selectbox("method", ["colr", "scolr", "fedmf", "svd", "topk"], key="method")
        rank = st.slider("rank r", 1, 16, 4, key="rank")
        rounds = st.slider("rounds", 10, 300, 100, step=10, key="rounds")
        clients = st.slider("clients per round", 5, 100, 30, key="clients")
        seed = st.number_input("seed", 0, 10_000, 0, key="seed")
    try:
        cfg = RunConfig(method=method, rank=rank, dim=16, rounds=rounds, clients_per_round=clients,
                        eval_every=10, seed=int(seed))
    except ConfigError as e:
        st.error(str(e))
        return
    with st.spinner(f"training {cfg.describe()}"):
        res = _run(cfg)
    f = res.final
    c1, c2, c3 = st.columns(3)
    c1.metric("HR@10", f"{f['hr']:.3f}")
    c2.metric("bytes up + down", f"{f['bytes_up'] + f['bytes_down']:,}")
    c3.metric("simulated wall-clock", f"{f['wallclock_min']:.1f} min")
    st.plotly_chart(plots.metric_curves([res], x="cum_bytes", y="hr"), key="hr_bytes")
    st.plotly_chart(plots.effective_rank(res), key="erank")
    st.caption(res.notes)


pg = st.navigation([st.Page(explorer, title="Explorer", url_path="explorer", default=True)])
pg.run()
