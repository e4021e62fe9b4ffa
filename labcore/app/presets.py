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
