"""Matrix completion: a race of completion algorithms under one time budget, and a phase map.

Pick a problem (size, rank, share seen, condition number, noise) and algorithms; every algorithm gets the same
CPU-time budget (one thread) and the chart draws their error as the harness logs it. The phase map shows, over
ranks and shares, the best error any chosen algorithm reached; crosses mark problems below the information limit.
The view lives in the URL; every number comes from `labcore.completion` (runs are cached by config).
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from labcore.app.charts import chart, table
from labcore.app.runs import in_background
from labcore.app.url_widgets import UrlWidgets
from labcore.completion import plots
from labcore.completion.config import ALGORITHMS, LABELS, CompletionConfig, ConfigError

KAPPAS = (1.0, 2.0, 20.0, 200.0, 2000.0, 20000.0)
NOISES = (0.0, 1e-6, 1e-3, 0.1)
BUDGETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0)
DEFAULT_ALGS = ["asd", "scaled_asd", "lrgeomcg", "irls"]
CARDS = ("completion-fig1-irls", "completion-fig2-easy", "completion-fig3-hard", "completion-fig4-ml100k",
         "completion-table1")
PHASE_RANKS = (1, 2, 5, 10, 20)
PHASE_SHARES = (0.05, 0.1, 0.2, 0.4)
ASPECTS = (1, 2, 4)
DATA = {"synthetic": "synthetic low-rank M*", "ml-100k": "MovieLens-100K ratings (error on held-out ratings)"}


def _race(cfgs: list[CompletionConfig]):
    """Every config once, one after the other (cached runs come back at once): a task of the server's job queue."""
    def work(task):
        from labcore.completion.harness import run

        frames = []
        for i, cfg in enumerate(cfgs):
            task.report(i / len(cfgs), f"run {i + 1} of {len(cfgs)}: {LABELS[cfg.algorithm]}, {cfg.budget_s:g} s")
            frames.append(run(cfg))
        return pd.concat(frames, ignore_index=True)

    return work


def _problem_controls(ui: UrlWidgets) -> dict:
    data = ui.select("data", "matrix", tuple(DATA), default="synthetic", format_func=DATA.get, radio=True,
                     horizontal=True)
    c1, c2, c3 = st.columns(3)
    rank = ui.slider("rank", "rank r", 1, 50, default=2, where=c2)
    budget = ui.select("budget", "time budget per algorithm (s)", BUDGETS, default=0.5, where=c3,
                       format_func=lambda v: f"{v:g} s")
    if data != "synthetic":  # every user and item; `share` of the known ratings seen, the rest held out
        share = ui.slider("rshare", "share of the known ratings seen", 0.1, 0.9, default=0.3, step=0.05, where=c1)
        return dict(dataset=data, n=100_000, m=100_000, rank=rank, share=share, kappa=1.0, budget_s=budget)
    n = ui.slider("n", "columns n", 100, 2000, default=300, step=50, where=c1)
    c4, c5, c6 = st.columns(3)
    share = ui.slider("share", "share of entries seen", 0.02, 1.0, default=0.4, step=0.01, where=c4)
    kappa = ui.select("kappa", "condition number kappa", KAPPAS, default=2.0, where=c5, format_func=lambda k: f"{k:g}")
    noise = ui.select("noise", "noise (relative)", NOISES, default=0.0, where=c6, format_func=lambda v: f"{v:g}")
    c7, c8 = st.columns(2)
    psd = ui.toggle("psd", "symmetric PSD M* (FGD needs it)", default=False, where=c7)
    aspect = 1 if psd else ui.select("aspect", "rows m = n x", ASPECTS, default=1, where=c8)
    return dict(n=n, m=n * aspect, rank=rank, share=share, kappa=kappa, noise=noise, psd=psd, budget_s=budget)


def render() -> None:
    st.title("Matrix completion: the same time budget for every algorithm")
    st.caption("Report 2: low-rank matrix completion. One BLAS thread; error ||M - M*||_F / ||M*||_F of the factors "
               "logged at fixed times.")
    ui = UrlWidgets("completion")
    problem = _problem_controls(ui)
    algs = ui.multiselect("algs", "algorithms", ALGORITHMS, default=DEFAULT_ALGS, format_func=LABELS.get)
    ui.warnings()
    try:
        base = CompletionConfig(**problem, log_points=25)
    except ConfigError as e:
        st.error(str(e))
        return
    if base.dataset == "synthetic":
        seen, dof = base.expected_seen(), base.degrees_of_freedom()
        m1, m2, m3 = st.columns(3)
        m1.metric("entries seen", f"{seen:,.0f}")
        m2.metric("degrees of freedom r(m + n - r)", f"{dof:,}")
        m3.metric("seen per degree of freedom", f"{seen / dof:.2f}")
    else:
        st.caption(f"{base.dataset}: every user and item, {base.share:.0%} of the known ratings seen, the error is "
                   "measured on the others (the report's Fig. 4). Needs the ratings file under $LABCORE_DATA.")
    if base.below_information_limit():
        st.warning(f"Below the information-theoretic limit: {seen:,.0f} seen entries < {dof:,} degrees of freedom. "
                   "No algorithm can recover M*; the race shows what they do anyway.")
    runnable, skipped = [], []
    for a in algs:
        try:
            runnable.append(base.replace(algorithm=a))
        except ConfigError as e:
            skipped.append(str(e))
    for s in skipped:
        st.info(s)

    tab_race, tab_map, tab_cards = st.tabs(["Live race", "Phase map", "The report's figures"])
    with tab_race:
        df, title = None, base.describe().split(" on ", 1)[1]
        if runnable:
            df = in_background("completion.race", ",".join(c.key() for c in runnable), _race(runnable),
                               f"Racing {len(runnable)} algorithms, {base.budget_s:g} s each...")
        if df is not None:
            chart(plots.race(df, title), key="race")
            best = df.groupby("label", as_index=False).agg(best_error=("error", "min"), steps=("iteration", "max"),
                                                           seconds=("t", "max"))
            best = best.sort_values("best_error").rename(columns={
                "label": "algorithm", "best_error": "best relative error", "steps": "iterations",
                "seconds": "CPU time"})
            st.dataframe(best.style.format({"best relative error": "{:.2e}", "CPU time": "{:.2f} s"}),
                         hide_index=True)
    with tab_map:
        _phase_map(ui, base, [c.algorithm for c in runnable])
    with tab_cards:
        _stored_cards(ui)


def _phase_map(ui: UrlWidgets, base: CompletionConfig, algs: list[str]) -> None:
    from labcore.completion.cards import grid_configs, problems_table

    st.markdown("Best error any chosen algorithm reached, over ranks and shares seen, at this page's n, kappa and "
                "a 0.25 s budget each (crosses: below the information limit).")
    n = min(base.n, 300)
    if not algs:
        _stored_phase_map()
        return
    key = f"{n}:{base.kappa:g}:{','.join(algs)}"
    if st.button(f"compute the phase map (n {n}, {len(PHASE_RANKS) * len(PHASE_SHARES)} problems x "
                          f"{len(algs)} algorithms)", key="completion.phase_go"):
        st.session_state["completion.map_asked"] = key  # kept over the reruns while it computes
    if st.session_state.get("completion.map_asked") != key:
        _stored_phase_map()
        return
    try:
        cfgs = [c for c in grid_configs(n, PHASE_RANKS, PHASE_SHARES, (base.kappa,), 0.25, algorithms=tuple(algs),
                                        log_points=6, skip_below_limit=False) if c.rank < n]
    except ConfigError as e:
        st.error(str(e))
        return
    df = in_background("completion.map", key, _race(cfgs), f"{len(cfgs)} runs of 0.25 s...")
    if df is None:
        return
    table = problems_table(df)
    limit = pd.DataFrame([c.problem_dict() for c in cfgs if c.below_information_limit()]).drop_duplicates()
    chart(plots.phase_map(table, "share", "rank", f"Best error, n {n}, kappa {base.kappa:g}", limit),
          key="phase-live")


def _stored_phase_map() -> None:
    from labcore.figures import stored

    res = stored("completion-table1")
    if res is None:
        st.info("No stored Table 1 grid yet: `labcore figure completion-table1 --full --save --jobs 2` stores it.")
        return
    for kappa, part in res.ours.groupby("kappa"):
        chart(plots.phase_map(part, "share", "rank", f"Stored grid (Table 1 card): kappa {kappa:g}"),
              key=f"phase-stored-{kappa:g}")


def _stored_cards(ui: UrlWidgets) -> None:
    from labcore.completion.cards import CARDS as REGISTERED
    from labcore.figures import stored

    card_id = ui.select("card", "figure card", CARDS, default=CARDS[0])
    card = REGISTERED[card_id]
    res = stored(card_id)
    st.code(card.describe(), language=None)
    if res is None:
        st.info(f"No stored full-size result: `labcore figure {card_id} --full --save --jobs 2` computes it.")
        return
    chart(res.figure, key=f"card-{card_id}")
    table(card.compare(res.ours))
    st.caption(f"Stored {res.meta.get('date', '?')} with `{res.meta.get('command', '?')}`")


if __name__ == "__main__":
    render()
