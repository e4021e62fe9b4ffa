"""The lab's plotly look, for a projector as much as a laptop: larger type, dark ticks, readable minor ticks.

Importing `labcore` registers the template "labcore", merges it over "plotly_white" once as "labcore_white" and
makes that the default, so every figure the lab draws (core plots, topic plots, figure cards) reads from the
back row without per-figure settings. (A "+"-combined default would be merged and validated again for every
figure: about 100 ms each on a busy laptop.)
"""
from __future__ import annotations

import re
import textwrap

import plotly.graph_objects as go
import plotly.io as pio

TEXT = "#222222"
AXIS = dict(tickfont=dict(size=15, color=TEXT), title=dict(font=dict(size=16, color=TEXT)),
            minor=dict(ticklen=4), gridcolor="#e3e3e3", zerolinecolor="#bbbbbb", exponentformat="power")

pio.templates["labcore"] = go.layout.Template(layout=go.Layout(
    font=dict(size=16, color=TEXT),
    # a title hangs from the top edge: centred in the top margin (plotly's default), a two-line one came down onto
    # the panel titles under it
    title=dict(font=dict(size=19), y=1.0, yref="container", yanchor="top", pad=dict(t=14)),
    legend=dict(font=dict(size=15)),
    hoverlabel=dict(font=dict(size=15)),
    annotationdefaults=dict(font=dict(size=16, color=TEXT)),  # subplot titles are annotations
    xaxis=AXIS, yaxis=AXIS,
))
pio.templates["labcore_white"] = pio.templates["plotly_white+labcore"]
pio.templates.default = "labcore_white"


# A legend under the plot, placed from the figure's bottom edge: the plot area then makes room for the legend and for
# whatever the x axis draws below it (slanted tick labels, its title). One placed at a fraction of the plot area's height
# below it (y=-0.2) ran into those in a narrow column or at a laptop's width.
LEGEND_BELOW = dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0, xanchor="left")


# How many characters of a title line fit a full-width chart at a projector's 1024 px (564 px wide with the sidebar
# open; measured in Chromium, a 50-character line at 19 px was cut), and the height plotly gives one line of it.
TITLE_CHARS = 42
TITLE_LINE_PX = 25


def wrapped(title: str, width: int = TITLE_CHARS) -> str:
    """A long title on lines of at most `width` characters: plotly never wraps one, and a chart's edge cut the longest
    at a laptop's width. Text after a line break the caller made (a `<br><sup>` note) is kept as it is. At
    `TITLE_CHARS`, the width `fit_title` gives a full-width chart on a page, so a page draws it as it is (wrapped at 52,
    the page wrapped its lines again, into a short middle line)."""
    head, sep, rest = title.partition("<br>")
    return "<br>".join(textwrap.wrap(head, width)) + sep + rest


# Plotly hangs a title of two or more lines 13 px higher than one of one line from the same pad: with the template's
# 14 px, their first line's top was 4 px above the chart's edge (measured in Chromium); 27 puts it where one line's is.
TITLE_PAD_LINES = 27
_NOTE = re.compile(r"<sup>(.*)</sup>")  # a note line under a title, drawn at about 70 % of its size
_TAG = re.compile(r"</?[a-z]+[^>]*>", re.I)


def fit_title(fig: go.Figure, chars: int = TITLE_CHARS) -> go.Figure:
    """`fig` with its title on lines of at most `chars` characters (its notes on lines about 1.4 times as long), hung
    from the chart's top edge, and a top margin tall enough for them. Plotly never wraps a title: the chart's edge cut
    it. A figure that needs no change is returned as it is; otherwise a copy (the one given may be a cached figure that
    other sessions draw)."""
    text = fig.layout.title.text if fig.layout.title else None
    if not text:
        return fig
    lines = []
    for line in text.split("<br>"):
        note = _NOTE.fullmatch(line)
        if note:
            lines += [f"<sup>{part}</sup>" for part in textwrap.wrap(note[1], int(chars * 1.4))] or [line]
        elif _TAG.search(line):  # styled text: a line break inside a tag would break the tag
            lines.append(line)
        else:
            lines += textwrap.wrap(line, chars) or [line]
    fitted = "<br>".join(lines)
    top = fig.layout.margin.t if fig.layout.margin.t is not None else 100  # plotly's default
    needed = TITLE_PAD_LINES + TITLE_LINE_PX * len(lines) + 20  # and room for panel titles above the plot
    if len(lines) == 1 or (fitted == text and fig.layout.title.pad.t == TITLE_PAD_LINES and top >= needed):
        return fig
    fig = go.Figure(fig)
    fig.update_layout(title_text=fitted, title_pad_t=TITLE_PAD_LINES, margin_t=max(top, needed))
    return fig
