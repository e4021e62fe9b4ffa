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


# A table's grid at a projector's 1024 px is FULL_WIDTH_PX wide less its border (36 px less in an expander); a column
# is its longest text at about CHAR_PX a character plus the cell's padding (glide's own sizing, measured on the FAIR
# page's grids; it only grows a column, never wraps it). Text is wrapped to fit an expander, with a margin; a table is
# split only where its numbers alone are clearly wider than the page (the estimate runs a little over glide's sizes).
TABLE_WIDTH_PX = FULL_WIDTH_PX + 20
WRAP_WIDTH_PX = FULL_WIDTH_PX - 54
CHAR_PX = 5.6
CELL_PAD_PX = 22
MIN_TEXT_COLUMN_PX = 90
LINE_PX = 19
MAX_LINES = 6


def _sig(v, digits: int):
    """A float at `digits` significant digits (0.269272 -> 0.2693, 237860.4 -> 237860): what a student reads."""
    if isinstance(v, float) and v == v and v not in (float("inf"), float("-inf")) and v != 0:
        return float(f"{v:.{digits}g}") if abs(v) < 10 ** digits else round(v, 0)
    return v


def table(df, where=None, key: str | None = None, digits: int = 4, column_config: dict | None = None, **kw):
    """Draw `df` as a data grid that fits a column of the page at a projector's 1024 px: floats at `digits`
    significant digits, no index; where the columns' text is wider than the page, the text columns narrowed to share
    what the others leave and their cells wrapped over several lines (every word stays shown); where the other
    columns alone are too wide, the table split into parts drawn one under the other, each repeating the leading key
    columns (a dataset, a round)."""
    import math

    import pandas as pd

    df = df.copy()
    for c in df.columns:
        if pd.api.types.is_float_dtype(df[c]):
            df[c] = df[c].map(lambda v: _sig(v, digits))
    config = dict(column_config or {})
    text = [c for c in df.columns if any(isinstance(v, str) for v in df[c])]  # (pandas' str dtype, or mixed)
    shown = lambda v: "" if v is None or (isinstance(v, float) and v != v) else str(v)  # noqa: E731
    head = {c: len(str((config.get(c) or {}).get("label") or c)) * CHAR_PX + CELL_PAD_PX for c in df.columns}
    longest = {c: max([len(shown(v)) for v in df[c]] or [0]) * CHAR_PX + CELL_PAD_PX for c in df.columns}
    natural = {c: max(head[c], longest[c]) for c in df.columns}
    fixed = sum(w for c, w in natural.items() if c not in text)
    if fixed + sum(min(natural[c], MIN_TEXT_COLUMN_PX) for c in text) > TABLE_WIDTH_PX:
        keys = []
        for c in df.columns[:3]:
            if pd.api.types.is_float_dtype(df[c]) or sum(natural[k] for k in keys + [c]) > TABLE_WIDTH_PX / 3:
                break
            keys.append(c)
        room = TABLE_WIDTH_PX - sum(natural[k] for k in keys)
        parts, part, used = [], [], 0.0
        for c in [c for c in df.columns if c not in keys]:
            need = natural[c] if c not in text else min(natural[c], MIN_TEXT_COLUMN_PX)
            if part and used + need > room:
                parts.append(part)
                part, used = [], 0.0
            part.append(c)
            used += need
        parts.append(part)
        if len(parts) > 1:
            return [table(df[keys + p], where, None if key is None else f"{key}.{n}", digits,
                          {c: v for c, v in config.items() if c in keys + p} or None, **kw)
                    for n, p in enumerate(parts)]
    row_height = None
    if sum(natural.values()) > WRAP_WIDTH_PX and text:
        room = WRAP_WIDTH_PX - fixed
        width, rest = {}, sorted(text, key=natural.get)
        while rest:  # the narrow text columns keep their width, the widest share what is left
            share = room / len(rest)
            c = rest.pop(0)
            width[c] = natural[c] if natural[c] <= share else max(MIN_TEXT_COLUMN_PX, head[c], share)
            room -= width[c]
        lines = max(math.ceil(1.2 * (longest[c] - CELL_PAD_PX) / (width[c] - CELL_PAD_PX)) for c in text)
        for c in text:
            config.setdefault(c, st.column_config.Column(width=int(width[c])))
        if lines > 1:
            row_height = 12 + LINE_PX * min(lines, MAX_LINES)
    return (where or st).dataframe(df, hide_index=True, key=key, column_config=config or None,
                                   row_height=row_height, **kw)
