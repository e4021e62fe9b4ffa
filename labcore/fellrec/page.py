"""FELLRec app page: curriculum heating (alpha, beta), layer offloading (k), the stored cards."""
from __future__ import annotations

import streamlit as st

from labcore.app.charts import chart, table
from labcore.app.runs import in_background
from labcore.app.url_widgets import UrlWidgets


BACKBONES = {"minilm": "all-MiniLM-L6-v2 (6 layers, RecFormer style)", "tiny": "small transformer (8 layers)"}


def _measure(backbone: str):
    """Device memory, bytes and probe similarity for every k at smoke size: a task of the server's job queue."""
    def work(task):
        from labcore.fellrec.experiments import costs, probes

        cost = costs("smoke", backbone)
        task.report(0.5, "probing what the server can read at each layer")
        return cost, probes("smoke", backbone)

    return work


def _stored(card_id: str):
    from labcore.figures import stored

    return stored(card_id)


def render() -> None:
    from labcore.fellrec import cards, plots
    from labcore.fellrec.aggregate import warmup

    st.title("FELLRec: federated fine-tuning of a language-model recommender")
    st.caption("A language model reads each user's movies by their titles; clients fine-tune LoRA adapters; "
               "FELLRec aggregates by similarity of the adapters and heats each client up by its loss.")
    ui = UrlWidgets("fellrec")
    ui.warnings()
    backbone = ui.select("backbone", "backbone", list(BACKBONES), default="minilm", format_func=BACKBONES.get)
    n_layers = 6 if backbone == "minilm" else 8

    st.header("Curriculum heating (eq. 4)")
    c1, c2 = st.columns(2)
    alpha = ui.slider("alpha", "alpha (speed-related warm-up factor)", 0.05, 1.5, default=0.1, step=0.05, where=c1)
    beta = ui.slider("beta", "beta (time-related warm-up factor)", 1.0, 20.0, default=3.0, step=1.0, where=c2)
    losses = [5.8, 6.1, 6.4, 6.7, 7.0]
    w = warmup(losses, 1, alpha, beta)
    chart(plots.warmup_curves(losses, alpha, beta), key="fellrec-warmup")
    st.metric("w_c of the highest-loss client in round 1", f"{float(w[-1]):.3f}")
    st.caption("w_c scales how much a client takes from the others; low-loss clients heat up first, and all "
               "approach 1. Larger alpha or smaller beta heat faster.")

    st.header("Layer offloading: what k costs and what it exposes")
    k = ui.slider("k", f"k: layers 1..k and {n_layers} stay on the device", 1, n_layers - 2, default=2)
    measured = in_background("fellrec", backbone, _measure(backbone),
                             "Measuring device memory, bytes and probes for every k (smoke size)...")
    if measured is None:
        return
    cost, probes = measured
    row = cost[(cost["k"] == k) & cost["offload"]].iloc[0]
    m1, m2, m3 = st.columns(3)
    m1.metric("device memory", f"{row['device_memory_MiB']:.3f} MiB")
    m2.metric("upload per local epoch", f"{row['upload_bytes'] / 1024:.1f} KiB")
    sim = probes[(probes["probe"] == "linear") & (probes["layer"] == k)]["similarity"].iloc[0]
    m3.metric("linear probe similarity on h_k", f"{sim:.3f}")
    chart(plots.cost_lines(cost, smoke=True), key="fellrec-costs")
    chart(plots.probe_lines(probes, smoke=True, k=k), key="fellrec-probes")
    st.markdown("The server sees layer k's output. The deeper that layer, the less a probe can reconstruct of "
                "what the user watched (Fig. 3), but the device stores and computes more (Table 3: O(k+1)). "
                "Choose the smallest k whose probe similarity is low enough for your threat model.")

    st.header("Stored full-size reproductions")
    ids = cards.MINILM_CARD_IDS if backbone == "minilm" else cards.CARD_IDS
    for cid in ids:
        res = _stored(cid)
        with st.expander(cards.CARDS[cid].title, expanded=False):
            st.text(cards.CARDS[cid].describe())
            if res is None:
                st.info(f"No stored result yet: `labcore figure {cid} --full --save --jobs 2` computes it.")
                continue
            chart(res.figure, key=f"stored-{cid}")
            table(cards.CARDS[cid].compare(res.ours))


if __name__ == "__main__":
    render()
