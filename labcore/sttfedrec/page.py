"""Split learning (STTFedRec): what a device computes and sends, and what the server learns from its requests.

* rho control: the composition of one obfuscated request and how well a curious server guesses its clicks
  (random, popularity, linkage attacks; uniform or popularity-matched non-clicks).
* Payload and time: one device's training round and inference, naive FL vs STTFedRec (Table 3 form), from
  the stored full-size measurement (results/sttfedrec-table3-ml1m.csv) or measured here at smoke size.
* The paper's figures and tables, reproduced (stored full-size results: the rho and K sweeps, Tables 2-3).

The view lives in the URL (?rho=0.9&T=10&factor=1.0&negatives=uniform&card=sttfedrec-fig4-ml1m), so any view is
a link.
"""
from __future__ import annotations

import functools

import streamlit as st

from labcore.app import presets
from labcore.app.charts import chart, table
from labcore.app.runs import in_background
from labcore.app.url_widgets import UrlWidgets
from labcore.sttfedrec import plots

CARDS = ("sttfedrec-fig4-ml1m", "sttfedrec-fig5-ml1m", "sttfedrec-fig6-ml1m", "sttfedrec-table2-ml1m",
         "sttfedrec-table3-ml1m", "sttfedrec-privacy-ml1m")
DEFAULTS = {"rho": 0.9, "T": 10, "factor": 1.0, "negatives": "uniform", "card": CARDS[0]}


@functools.lru_cache(maxsize=1)
def _catalog():
    from labcore.sttfedrec.frameworks import load_bundle
    from labcore.sttfedrec.config import STTConfig

    try:
        return load_bundle(STTConfig(dataset="ml-1m", n_features=512)).catalog, "ml-1m"
    except Exception:  # no ML-1M on this machine: the synthetic catalogue
        return load_bundle(STTConfig(n_features=512)).catalog, "synthetic (ML-1M not found)"


def _attack(rho: float, T: int, negatives: str):
    """The server's attacks on 200 devices' requests, in the catalogue: a task of the server's job queue."""
    def work(task):
        cat, name = _catalog()
        return plots.rho_explorer(cat, rho, request_size=T, users=200, rounds=10, negatives=negatives), name

    return work


def _table3_smoke(task):
    from labcore.sttfedrec.experiments import table3

    return table3("smoke", reps=4)


def _stored_table3():
    from labcore.sttfedrec.experiments import load_table

    a, b = load_table("sttfedrec-table3-ml1m"), load_table("sttfedrec-table3-parts-ml1m")
    return (a[0], b[0] if b else None) if a else None


def render() -> None:
    st.title("Split learning: STTFedRec")
    ui = UrlWidgets("split_learning")
    c = st.columns(4)
    rho = ui.slider("rho", "rho: share of non-clicked items", 0.5, 0.95, DEFAULTS["rho"], 0.05, where=c[0])
    T = ui.slider("T", "items per request (T)", 4, 40, DEFAULTS["T"], 1, where=c[1])
    negatives = ui.select("negatives", "non-clicked items drawn", ("uniform", "popular"), DEFAULTS["negatives"],
                          where=c[2], radio=True, horizontal=True)
    factor = ui.number("factor", "device slowdown factor (phone)", 0.1, 100.0, DEFAULTS["factor"], 0.5, where=c[3])
    presets.sidebar("split_learning")
    ui.later("card")  # the stored cards' selector, drawn once the attack is done
    ui.warnings()

    comp = plots.request_composition(rho, T)
    st.subheader("One obfuscated request")
    st.markdown(f"**{comp['clicked']}** clicked + **{comp['non_clicked']}** sampled non-clicked items "
                f"(effective rho {comp['effective_rho']:.2f}); a random guess finds a click with probability "
                f"{comp['random_guess']:.2f}.")
    attacked = in_background("split_learning.attack", f"{rho}:{T}:{negatives}", _attack(rho, T, negatives),
                             "The server attacks 200 devices' requests...")
    if attacked is None:
        return
    df, name = attacked
    same = [c for c in ("n_click", "effective_rho", "negatives") if c in df and df[c].nunique() == 1]
    table(df.drop(columns=same).rename(columns=ATTACK_COLUMNS))  # the request's make-up: one value, said below
    made = "; ".join(f"{ATTACK_COLUMNS[c]}: {df[c].iloc[0]:.3g}" if c != "negatives" else
                     f"{ATTACK_COLUMNS[c]}: {df[c].iloc[0]}" for c in same)
    st.caption(f"Catalogue: {name}. 200 devices, 10 requests each; 'linkage' links a device's 10 requests, "
               "'popularity' is given the true click counts (the worst case)." + (f" Every request: {made}." if made
                                                                                  else ""))

    st.subheader("One device: payload and time, naive FL vs STTFedRec")
    stored = _stored_table3()
    if stored is not None:
        t3, parts = stored
        st.caption("Stored full-size measurement on ML-1M (results/sttfedrec-table3-ml1m.csv).")
    else:
        measured = in_background("split_learning.table3", "smoke", _table3_smoke,
                                 "Measuring one device (smoke size, synthetic)...")
        if measured is None:
            return
        t3, parts = measured
        st.caption("No stored full-size measurement: measured here at smoke size (synthetic catalogue).")
    t3 = t3.copy()
    for col in ("train_ms", "infer_ms", "total_ms", "featurize_ms", "towers_ms", "chain_ms", "train_with_chain_ms"):
        if col in t3:
            t3[col] = t3[col] / t3["device_factor"] * factor
    chart(plots.table3_bars(t3), key="split.table3")
    st.caption(_mb_caption(t3, parts))
    chart(plots.time_bars(t3), key="split.time")
    if parts is not None:
        chart(plots.payload_bars(parts), key="split.payload")
        st.caption("Left: what the lesson is about, the device's traffic with the server. Right: the chain, "
                   "which only STTFedRec has (ring32 rows use 32-bit shares, half the size).")
    table(plots.payload_table(t3).rename(columns={"quantity": "per device", "value": "value"}))
    _paper_card(ui)


ATTACK_COLUMNS = {"attack": "server's attack", "precision": "precision of its guess", "auc": "AUC",
                  "chance": "chance (random guess)", "n_click": "clicked items per request",
                  "effective_rho": "effective rho", "negatives": "non-clicked items drawn"}


def _mb_caption(t3, parts) -> str:
    """Why STTFedRec's MB bar is the taller one, with the measured numbers: the download is what it cuts."""
    text = ("Why is STTFedRec's MB bar taller? The lesson is the download: naive FL sends every device both "
            "towers and takes both gradients back; STTFedRec sends only the user tower and the embeddings of the "
            "request's items, and sends the server nothing but its request. What it adds is the secure-aggregation "
            "chain: the user-tower gradient travels as ring shares to the next device and to the aggregation "
            "server (64-bit shares: twice the float32 size).")
    if parts is None:
        return text
    p = parts[parts["phase"].str.startswith("training")]
    down = p[p["link"] == "server->device"].groupby("model")["bytes"].sum() / 2**20
    chain = p[~p["link"].isin(plots.SERVER_LINKS)].groupby("model")["bytes"].sum() / 2**20
    pairs = [(f, s) for f, s in (("FL-DSSM", "STTFedRec-DSSM"), ("FL-CLSM", "STTFedRec-CLSM"))
             if f in down and s in down]
    if pairs:
        f, s = pairs[0]
        text += (f" Measured ({s.split('-')[1]}): download {down[f]:.1f} MB (FL) vs {down[s]:.1f} MB (STTFedRec); "
                 f"the chain adds {chain.get(s, 0):.1f} MB per device (the payload chart below splits the two).")
    return text


def _paper_card(ui: UrlWidgets) -> None:
    """A stored full-size reproduction: the rho and K sweeps need hundreds of rounds, too long to run here."""
    st.subheader("Paper figures and tables, reproduced")
    from labcore.figures import registry
    card_id = ui.select("card", "card", CARDS, DEFAULTS["card"],
                        format_func=lambda i: registry.get(i).title.split(":")[0] + f" ({i})")
    ui.warnings()
    card, res = registry.get(card_id), registry.stored(card_id)
    st.caption(card.describe())
    if res is None:
        st.info("No stored full-size result yet: labcore figure 'sttfedrec-*' --full --save --jobs 2")
        return
    if res.figure is not None:
        chart(res.figure, key=f"split.{card_id}")
    table(res.comparison())


if __name__ == "__main__":  # st.navigation executes this file as the page script
    render()
