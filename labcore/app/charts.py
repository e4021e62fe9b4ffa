"""Every chart a page draws goes through `chart`: fitted to the share of the page's width it gets, with the lab's
chart toolbar. Plotly never wraps a title, and at a projector's 1024 px a full-width chart is 564 px wide: the
chart's edge cut the longest titles, and more of them in a column.
"""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from labcore.plot_style import FULL_WIDTH_PX, TITLE_CHARS, fit_plot_area, fit_title

CONFIG = {"displaylogo": False}


def chart(fig: go.Figure, key: str | None = None, where=None, share: float = 1.0, config: dict | None = None):
    """Draw `fig` in `where` (the page, or a column or container of it) taking `share` of the page's width."""
    if not 0 < share <= 1:
        raise ValueError(f"share={share!r} is invalid: allowed values are in (0, 1], the share of the page's width")
    fig = fit_plot_area(fit_title(fig, max(16, round(TITLE_CHARS * share))), FULL_WIDTH_PX * share)
    (where or st).plotly_chart(fig, key=key,
                               config=config or CONFIG, theme=None)
