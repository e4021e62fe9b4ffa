"""Paper figures: pick a card, see the paper's numbers overlaid on ours.

Stored full-size reproductions (results/<card>.csv, written by
`labcore figure <id> --full --save`) are shown when they exist; otherwise,
or on request, the card's smoke size runs here (seconds, synthetic data: it
shows the pipeline and the figure's form, its numbers are not the paper's).
"""
from __future__ import annotations

import streamlit as st

from labcore.runtime import default_cache_dir
from labcore.app import controls, presets, runs
from labcore.app.charts import chart, table
from labcore.app.downloads import human_columns
from labcore.app.state import FIGURES as SPEC

SIZES = {"stored": "stored full-size result", "smoke": "smoke run here (seconds, synthetic)"}


def _smoke(card_id: str):
    def work(task):
        from labcore.figures import reproduce

        return reproduce(card_id, size="smoke")

    return work


@st.cache_data(show_spinner=False, max_entries=32, ttl=60)
def _stored(card_id: str):
    from labcore.figures import stored

    return stored(card_id)


def _paper(card_id: str) -> str:
    """The short name of the card's topic ('CoLR', 'FAIR', ...), from `labcore.topics`."""
    from labcore import topics

    t = topics.card_topic(card_id)
    return t.title.split(":")[0] if t else card_id.split("-")[0]


def _label(card) -> str:
    """'CoLR Fig. 3 (ml-1m)': the paper, the figure or table, the dataset."""
    paper = _paper(card.id)
    name = card.title.split(":")[0]
    name = name[len(paper):].strip() if name.startswith(paper) else name
    return f"{paper} {name}" + (f" ({card.dataset})" if card.dataset else "")


def render() -> None:
    vs = controls.view_state(SPEC)
    st.title("Paper figures")
    controls.show_warnings(vs, SPEC.name)
    try:
        from labcore.figures import list_cards
    except ImportError:
        st.info("The figure registry (labcore.figures) is not available in this checkout.")
        return
    cards = {c.id: c for c in list_cards()}
    if vs.options["card"] not in cards:
        if vs.options["card"]:
            st.warning(f"Link parameter not used: _card={vs.options['card']!r} is not a figure card; valid ids: "
                       + ", ".join(cards), icon="⚠️")
        vs.options["card"] = next(iter(cards))
        st.session_state.pop(controls.wkey(SPEC, "_card"), None)
    c = st.columns([3, 2])
    card_id = controls.option(SPEC, vs, "card", "selectbox", "figure or table", list(cards), where=c[0],
                              format_func=lambda i: _label(cards[i]))
    card = cards[card_id]
    stored = _stored(card_id)
    size = controls.option(SPEC, vs, "size", "radio", "show", list(SIZES), where=c[1], format_func=SIZES.get,
                           horizontal=True)
    query = controls.sync_url(SPEC, vs, None)
    controls.share_box(SPEC, query)

    st.subheader(card.title)
    st.caption(f"Paper: {card.caption}")
    if size == "stored" and stored is None:
        st.info("No stored full-size result for this card yet (`labcore figure "
                f"{card_id} --full --save` writes one); showing a smoke run.")
        size = "smoke"
    if size == "stored":
        res = stored
    else:
        res = runs.in_background("figures.smoke", f"{card_id}:{default_cache_dir()}", _smoke(card_id),
                                 "Running the card's smoke size (kept after the first time)...")
        if res is None:
            return
    label = "full size" if res.size == "full" else "smoke size (synthetic data: the numbers are not comparable)"
    ok = res.verdict
    if res.size == "full":
        secs = res.meta.get("standalone_runtime_s") or res.runtime_s
        when = f"stored {res.meta['date'][:10]}, " if res.meta.get("date") else "stored, "
        cost = when + (f"{secs / 60:,.1f} min of training" if secs == secs and secs else "training time not recorded")
    else:
        cost = f"{res.runtime_s:,.1f} s to compute here"
    tolerance = "" if res.size == "smoke" else f" ({card.tolerance_text})"
    st.markdown(f"**Ours, {label}: {ok}**{tolerance}; {cost}.")
    if res.figure is not None:
        chart(res.figure, key=f"figures.{card_id}.{res.size}")
    st.markdown(f"**Expected:** {card.expected}")
    table(res.comparison())
    for n in card.notes:
        st.caption(f"Note: {n}")
    with st.expander("Our numbers"):
        table(human_columns(res.ours))
    with st.expander("The paper's numbers" + (f" ({card.paper_ref})" if card.paper_ref else "")):
        table(human_columns(res.paper))
    if res.meta:
        with st.expander("How this was computed"):
            st.json(res.meta, expanded=False)
    live = presets.for_card(card_id)
    if live is not None:
        from labcore.app.pages import page_object

        st.page_link(page_object(live.page), label=f"Explore it live: {live.label}", query_params=live.query,
                     icon=":material/play_arrow:", help=live.note)


if __name__ == "__main__":  # st.navigation executes this file as the page script
    render()
