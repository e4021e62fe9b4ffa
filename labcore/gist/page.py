"""App page: train a GCN as m independent subnets and watch accuracy, subnet losses, block ownership, bytes
and the measured speed-up of running the subnets in real processes. Stored full-size cards below."""
from __future__ import annotations

import streamlit as st

from labcore.app.charts import chart, table
from labcore.app.runs import in_background
from labcore.app.url_widgets import UrlWidgets

EPOCH_CHOICES = (20, 50, 100, 200, 400)
LR_CHOICES = (0.005, 0.01, 0.025, 0.05, 0.1)


def simulate(cfg):
    """Train the subnets (a task of the server's job queue), reporting each sync."""
    def work(task):
        from labcore.gist.simulate import run

        return run(cfg, progress=lambda d, n: task.report(d / n, f"sync {d} of {n}"))

    return work


def distributed(cfg, rounds: int):
    """`rounds` syncs with the m subnets in m real processes (torch.distributed, gloo), timed."""
    def work(task):
        from labcore.gist.distributed import run_distributed, timing_summary

        return timing_summary(run_distributed(cfg, rounds=rounds, evaluate=False))

    return work


@st.cache_data(show_spinner=False, ttl=60)
def stored_card(card_id: str):
    from labcore import figures

    return figures.stored(card_id)


def _kib(b: float) -> str:
    return f"{b / 1024:,.1f} KiB"


def render() -> None:
    import os

    from labcore.gist import plots
    from labcore.gist.graph import default_graph
    from labcore.gist.cards import CARDS
    from labcore.gist.config import GistConfig
    from labcore.typed_config import ConfigError

    st.title("GIST: a GCN trained as independent subnets")
    st.caption("Every sync round draws a fresh random partition of the input features (and of the hidden units "
               "when both layers are split); subnet i trains only its blocks for `local` steps on the whole graph; "
               "the server writes the blocks back and averages the rest. Report 1 of the Rice course reports.")
    ui = UrlWidgets("gist")
    side = st.sidebar
    graph = ui.select("graph", "graph", ("cora", "citeseer", "synthetic"), default=default_graph(), where=side)
    m = ui.select("m", "subnets m", (1, 2, 4, 8), default=2, where=side)
    split = ui.select("split", "split", ("layer1", "both"), default="layer1", where=side, radio=True,
                      format_func={"layer1": "layer 1 only (features)", "both": "both layers (features + hidden)"}.get)
    variant = ui.select("variant", "partition", ("row", "column"), default="row", where=side, radio=True,
                        format_func={"row": "row-wise (Fig. 2)", "column": "column-wise (Fig. 5)"}.get)
    local = ui.slider("local", "local iterations between syncs", 1, 30, default=1, where=side)
    hidden = ui.select("hidden", "hidden units", (16, 32, 64), default=16, where=side)
    layernorm = ui.toggle("ln", "LayerNorm on the hidden layer", default=True, where=side)
    rescale = ui.toggle("rescale", "scale a subnet's input by m (inverted-dropout style)", default=True, where=side,
                        help="A subnet sums over F/m features; without this the merged model's first layer works "
                             "at m times the scale the subnets trained at. Off = the authors' code.")
    epochs = ui.select("epochs", "epochs", EPOCH_CHOICES, default=100, where=side)
    lr = ui.select("lr", "learning rate", LR_CHOICES, default=0.05, where=side)
    seed = ui.number("seed", "seed", 0, 999, default=0, where=side)
    ui.warnings()
    try:
        cfg = GistConfig(graph=graph, subnets=m, split=split, variant=variant, local=local, hidden=hidden,
                         layernorm=layernorm, rescale_input=rescale, epochs=epochs, lr=lr, seed=seed)
    except ConfigError as e:
        st.error(f"This combination cannot run: {e}")
        return
    data_env = os.environ.get("LABCORE_DATA")
    res = in_background("gist", f"{cfg.key()}:{data_env}", simulate(cfg), "Training the subnets...")
    if res is None:
        return
    s = res.summary()
    c = st.columns(5)
    c[0].metric("test accuracy at best validation", f"{100 * s['test_at_best_val']:.1f} %",
                help=f"best validation at epoch {s['best_epoch']}")
    c[1].metric("test accuracy, last epoch", f"{100 * s['test_last']:.1f} %")
    c[2].metric("bytes per subnet per sync (up)", _kib(res.bytes_per_subnet("up")),
                help="the whole message one subnet sends, measured by the payload ledger")
    c[3].metric("of which partitioned blocks", _kib(res.bytes_per_subnet("up", partitioned_only=True)))
    c[4].metric("syncs", f"{len(res.history)}", help=f"{cfg.epochs} epochs / {cfg.local} local iterations")
    st.caption(cfg.describe())

    left, right = st.columns(2)
    chart(plots.accuracy_curves(res.history), key="gist-acc", where=left, share=0.5)
    chart(plots.subnet_losses(res.subnet_loss), key="gist-loss", where=right, share=0.5)

    st.subheader("Which block of θ1 each subnet owns")
    rnd = ui.slider("round", "sync round", 1, len(res.partitions), default=1)
    part = res.partitions[rnd - 1]
    f, h = res.params["theta1"].shape
    chart(plots.owner_map(part.owner_map(f, h), title=f"θ1 ({f} x {h}) in sync round {rnd}"),
          key="gist-owner")
    owned = (part.owner_map(f, h) >= 0).mean()
    st.caption(f"{100 * owned:.0f} % of θ1 is trained this round (grey: kept as it was). With both layers split "
               f"each subnet owns an (F/m) x (H/m) block, so only 1/m of θ1 moves per round.")

    st.subheader("Really in parallel: m processes")
    st.caption("Each subnet in its own process; blocks exchanged with torch.distributed (gloo) on this machine. "
               "Times are this machine's, under whatever else it is running.")
    rounds = min(10, len(res.history))
    dist_key = f"{cfg.key()}:{data_env}:{rounds}"
    if m > 1 and st.button(f"run {rounds} syncs with {m} processes", key="gist.dist"):
        st.session_state["gist.dist_asked"] = dist_key  # kept over the reruns while it runs
    t = None
    if m > 1 and st.session_state.get("gist.dist_asked") == dist_key:
        t = in_background("gist.dist", dist_key, distributed(cfg, rounds),
                          f"Starting {m} worker processes (torch.distributed, gloo) for {rounds} syncs...")
    if t is not None:
        sim_epoch = res.history["sec_train"].mean() / max(1, cfg.local)
        d = st.columns(4)
        d[0].metric("wall-clock per epoch, m processes", f"{1000 * t['wall_per_epoch_s']:.0f} ms")
        d[1].metric("one process, same work", f"{1000 * sim_epoch:.0f} ms",
                    help="the simulation trains the m subnets one after the other")
        d[2].metric("speed-up", f"{sim_epoch / t['wall_per_epoch_s']:.2f} x")
        d[3].metric("exchange per sync", f"{1000 * t['comm_per_sync_s']:.1f} ms",
                    help=f"{_kib(t['bytes_sent_per_worker_per_sync'])} sent per worker per sync")

    st.subheader("Stored full-size reproductions")
    for cid, card in CARDS.items():
        with st.expander(card.title, expanded=cid == "gist-table1-cora"):
            st.code(card.describe(), language=None)
            got = stored_card(cid)
            if got is None:
                st.info(f"Not stored yet: `labcore figure {cid} --full --save --jobs 2` computes it.")
                continue
            chart(got.figure, key=f"gist-card-{cid}")
            table(card.compare(got.ours))


if __name__ == "__main__":
    render()
