"""Presets: one link per paper figure or table, the page and query that show its form live.

Each topic lists its own presets (`labcore/<topic>/presets.py`, declared in its `topic.py`); this module
holds the `Preset` record, the lookup over every topic and the sidebar that links them. A preset names the
figure cards whose form it shows (`cards`), so the Paper figures page can offer "open live" beside a card.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    id: str
    label: str
    page: str  # a page name of the navigation (core page or a topic's page)
    query: dict
    note: str
    cards: tuple[str, ...] = ()  # figure cards whose form this view shows

    @property
    def paper(self) -> str:
        """The short name of the topic that declares this preset (the sidebar's group)."""
        return _owner().get(self.id, "")


def _owner() -> dict[str, str]:
    from .. import topics

    return {p.id: t.title.split(":")[0] for t in topics.all_topics() for p in t.preset_list()}


def all_presets() -> tuple[Preset, ...]:
    from .. import topics

    return topics.all_presets()


def __getattr__(name: str):
    if name == "PRESETS":  # every topic's presets, in the topics' order
        return all_presets()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def by_id(pid: str) -> Preset | None:
    return next((p for p in all_presets() if p.id == pid), None)


def for_card(card_id: str) -> Preset | None:
    """The live view that shows a card's form, if a topic declares one."""
    return next((p for p in all_presets() if card_id in p.cards), None)


def matching(page_name: str, query: dict) -> Preset | None:
    """The preset this view was opened from: same page, every parameter of the preset in the link."""
    for p in all_presets():
        if p.page == page_name and p.query and all(str(query.get(k)) == str(v) for k, v in p.query.items()):
            return p
    return None


def banner(page_name: str, query: dict) -> None:
    """Say what a paper preset's live view is (often a short run) and link the stored full-size card."""
    import streamlit as st

    p = matching(page_name, query)
    if p is None:
        return
    st.info(f"**Preset: {p.label}.** {p.note}", icon=":material/bookmark:")
    if p.cards:
        from .pages import page_object

        st.page_link(page_object("figures"), label=f"The paper's figure, reproduced at full size: {p.cards[0]}",
                     query_params={"_card": p.cards[0]}, icon=":material/insert_chart:")


def sidebar(page_name: str) -> None:
    import streamlit as st

    from .pages import page_object

    presets = all_presets()
    with st.sidebar.expander("Paper presets"):
        for paper in dict.fromkeys(p.paper for p in presets):
            st.caption(paper)
            for p in presets:
                if p.paper == paper:
                    st.page_link(page_object(p.page), label=p.label, query_params=p.query, help=p.note)
