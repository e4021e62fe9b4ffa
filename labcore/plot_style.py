"""The lab's plotly look, for a projector as much as a laptop: larger type, dark ticks, readable minor ticks.

Importing `labcore` registers the template "labcore", merges it over "plotly_white" once as "labcore_white" and
makes that the default, so every figure the lab draws (core plots, topic plots, figure cards) reads from the
back row without per-figure settings. (A "+"-combined default would be merged and validated again for every
figure: about 100 ms each on a busy laptop.)
"""
from __future__ import annotations

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


def wrapped(title: str, width: int = 52) -> str:
    """A long title on lines of at most `width` characters: plotly never wraps one, and a chart's edge cut the longest
    at a laptop's width. Text after a line break the caller made (a `<br><sup>` note) is kept as it is."""
    head, sep, rest = title.partition("<br>")
    return "<br>".join(textwrap.wrap(head, width)) + sep + rest
