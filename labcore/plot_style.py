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


# The plot area a chart keeps at the narrowest width it is drawn at (a projector's 1024 px, `TITLE_CHARS`' 564 px for
# a full-width chart): a legend beside the plot took up to 85 % of a narrow chart's width (a plot area 64 px wide
# in a half-width column, 98 px in a full-width one with eight long entries), and one under it with many rows, or
# with a long title above, left a plot 97 px tall. Plotly sizes the legend itself; these estimates of it (its
# entries' text at about 0.6 em a character, plus the symbol) only decide where it goes and how tall the chart is.
FULL_WIDTH_PX = 564
MIN_PLOT_WIDTH = 0.55  # of the chart's width, with the legend beside the plot
MIN_PLOT_HEIGHT_PX = 220
MAX_HEIGHT_PX = 620  # a chart grows no taller than a projector's 768 px screen shows under the browser's bars
_CHAR_EM, _SYMBOL_PX = 0.6, 46


def _legend_entries(fig: go.Figure) -> list[tuple[str, str | None]]:
    """(name, legend group) of each entry the legend shows, in order."""
    if fig.layout.showlegend is False or (fig.layout.showlegend is None and len(fig.data) < 2):
        return []
    return [(_TAG.sub("", str(t.name)), getattr(t, "legendgroup", None) or None)
            for t in fig.data if t.showlegend is not False and getattr(t, "name", None)]


def _legend_font(fig: go.Figure) -> float:
    size = fig.layout.legend.font.size if fig.layout.legend and fig.layout.legend.font else None
    return float(size or 15)


def _entry_px(name: str, font: float) -> float:
    return len(name) * _CHAR_EM * font + _SYMBOL_PX


def _height_below(entries: list[tuple[str, str | None]], font: float, width: float) -> float:
    """About how tall plotly's horizontal legend is in `width` px: a legend group is a column of its entries, and the
    groups (an entry without one is its own) are packed left to right into rows, 10 px apart."""
    groups: dict = {}
    for k, (name, group) in enumerate(entries):
        groups.setdefault(group if group is not None else ("entry", k), []).append(name)
    line = font + 8
    total, used, tallest = 0.0, 0.0, 0
    for names in groups.values():
        w = max(_entry_px(n, font) for n in names)
        if used and used + w > width:
            total, used, tallest = total + tallest * line + 10, 0.0, 0
        used, tallest = used + w, max(tallest, len(names))
    return total + tallest * line + 10


def fit_plot_area(fig: go.Figure, width_px: float = FULL_WIDTH_PX) -> go.Figure:
    """`fig` with room for its plot at `width_px`: a legend beside the plot that would leave it less than
    `MIN_PLOT_WIDTH` of the chart's width goes under it, and the chart grows (to `MAX_HEIGHT_PX` at most) until its
    shortest row of panels keeps `MIN_PLOT_HEIGHT_PX` after the title, a legend under the plot and turned bar names.
    Returned as it is when nothing changes, else a copy (the one given may be a cached figure that other sessions
    draw)."""
    entries = _legend_entries(fig)
    legend = fig.layout.legend
    font = _legend_font(fig)
    beside = bool(entries) and legend.orientation != "h" and (legend.x is None or legend.x >= 1)
    margin = fig.layout.margin
    left = margin.l if margin.l is not None else 80
    right = margin.r if margin.r is not None else 80
    width_legend = max((_entry_px(n, font) for n, _ in entries), default=0)
    move = beside and width_px - left - width_legend < MIN_PLOT_WIDTH * width_px
    below = bool(entries) and (move or (legend.orientation == "h" and legend.yref == "container"))
    height = fig.layout.height or 450
    top = margin.t if margin.t is not None else 100
    under = max(margin.b if margin.b is not None else 80, 60)  # at least the x axis's numbers and title
    layout = fig.layout.to_plotly_json()  # the axes' domains, read once
    under += _slanted_labels_px(fig, width_px - left - right, layout)
    if below:  # plotly wraps a legend under the plot at the plot's width
        under += _height_below(entries, font, width_px - left - (min(right, 20) if move else right))
    # the plot area is shared by rows of panels: the shortest row's share of it must still be MIN_PLOT_HEIGHT_PX
    need = MIN_PLOT_HEIGHT_PX / _smallest_row(layout)
    grow = max(0, min(round(need - (height - top - under)), MAX_HEIGHT_PX - height))
    if not move and not grow:
        return fig
    fig = go.Figure(fig)
    if move:
        fig.update_layout(legend=LEGEND_BELOW, margin_r=min(right, 20))
    if grow:
        fig.update_layout(height=height + grow)
    return fig


def _slanted_labels_px(fig: go.Figure, plot_px: float, layout: dict | None = None) -> float:
    """How much taller than one line the x axis's category labels stand when plotly turns them (it does when they
    do not fit side by side: by 30 degrees where the slanted lines keep apart, else upright). Long bar names in a
    narrow panel stood 140 px tall and left the plot 128 px."""
    font = 15.0  # the template's tick font
    layout, extra = layout if layout is not None else fig.layout.to_plotly_json(), 0.0
    labels: dict[str, set] = {}
    for t in fig.data:
        x = getattr(t, "x", None)  # a tuple or an array; numbers from JSON may stay a typed array (a dict: bdata)
        if x is not None and not isinstance(x, dict) and isinstance(next(iter(x), None), str):
            labels.setdefault(getattr(t, "xaxis", None) or "x", set()).update(map(str, x))
    for ref, names in labels.items():
        dom = layout.get("xaxis" + ref[1:], {}).get("domain", (0.0, 1.0))
        per = plot_px * (dom[1] - dom[0]) / len(names)
        longest = max(len(n) for n in names) * _CHAR_EM * font
        if longest > per:  # turned by 30 degrees while the slanted lines keep apart, else upright
            extra = max(extra, (0.5 * longest if per >= 3 * font else longest) - font)
    return extra


def _smallest_row(layout: dict) -> float:
    """The smallest share of the plot area's height a row of panels has (1 for a single plot; y axes laid over
    another share its row)."""
    shares = [d[1] - d[0] for name, ax in layout.items()
              if name.startswith("yaxis") and not ax.get("overlaying") for d in [ax.get("domain", (0.0, 1.0))]]
    return max(min(shares, default=1.0), 0.1)
