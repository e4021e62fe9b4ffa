"""Titles fitted to a chart's width: plotly never wraps one, so the lab does, before a page draws the chart."""
import plotly.graph_objects as go
import pytest

import labcore  # noqa: F401  (registers the lab's plotly template)
from labcore.plot_style import TITLE_CHARS, TITLE_LINE_PX, TITLE_PAD_LINES, fit_title


def _fig(title, **layout):
    return go.Figure(layout=dict(title=title, **layout))


def test_a_title_that_fits_is_the_same_figure():
    fig = _fig("Table 1: overall accuracy")
    assert fit_title(fig) is fig
    assert fit_title(go.Figure()).layout.title.text is None


def test_a_long_title_is_wrapped_on_words_and_gets_room_above_the_plot():
    fig = _fig("Goemans-Williamson rounding: ratio to the SDP value", margin_t=60)
    fitted = fit_title(fig)
    assert fitted.layout.title.text == "Goemans-Williamson rounding: ratio to the<br>SDP value"
    assert fitted.layout.margin.t == TITLE_PAD_LINES + 2 * TITLE_LINE_PX + 20
    assert fitted.layout.title.pad.t == TITLE_PAD_LINES
    assert fig.layout.title.text == "Goemans-Williamson rounding: ratio to the SDP value"  # the given one untouched
    assert fit_title(fitted) is fitted  # fitting twice changes nothing


def test_a_margin_larger_than_needed_is_kept():
    fitted = fit_title(_fig("x " * 30, margin_t=200))
    assert fitted.layout.margin.t == 200


def test_a_note_line_wraps_at_its_smaller_size_and_styled_lines_are_kept_whole():
    note = "The paper gives Fig. 2 as an image only: expected shape, N90/N99 far below d."
    fitted = fit_title(_fig(f"<b>SMOKE RUN, NOT THE PAPER'S NUMBERS</b><br>Fig. 2<br><sup>{note}</sup>"))
    assert fitted.layout.title.text == ("<b>SMOKE RUN, NOT THE PAPER'S NUMBERS</b><br>Fig. 2<br>"
                                        "<sup>The paper gives Fig. 2 as an image only: expected shape,</sup><br>"
                                        "<sup>N90/N99 far below d.</sup>")
    assert int(TITLE_CHARS * 1.4) == 58  # the first note line is the longest that fits 58 characters


def test_a_narrow_chart_takes_shorter_lines():
    title = "client drift: mean ||Delta_i - mean Delta||"
    assert fit_title(_fig(title), 43).layout.title.text == title  # 43 characters: one line where 43 fit
    assert fit_title(_fig(title), 21).layout.title.text == "client drift: mean<br>||Delta_i - mean<br>Delta||"


def test_a_page_chart_with_a_share_outside_the_page_is_refused():
    from labcore.app.charts import chart

    with pytest.raises(ValueError, match="share=1.5 is invalid"):
        chart(_fig("x"), share=1.5)


def test_every_page_draws_its_charts_through_the_fitting_helper():
    """A page calling `st.plotly_chart` itself would draw its long titles past a projector's chart edge again."""
    from pathlib import Path

    root = Path(labcore.__file__).parent
    direct = [str(p.relative_to(root)) for p in root.rglob("*.py")
              if "plotly_chart(" in p.read_text() and p.name != "charts.py"]
    assert not direct, f"pages drawing charts without labcore.app.charts.chart: {direct}"


def test_a_title_already_on_two_lines_is_hung_lower_and_only_once():
    fig = _fig("<b>SMOKE RUN</b><br>Table 1", margin_t=110)
    fitted = fit_title(fig)
    assert fitted is not fig and fitted.layout.title.text == fig.layout.title.text
    assert fitted.layout.title.pad.t == TITLE_PAD_LINES and fitted.layout.margin.t == 110
    assert fit_title(fitted) is fitted


def test_a_title_a_plot_wrapped_itself_is_drawn_as_it_is_on_a_full_width_chart():
    from labcore.plot_style import wrapped

    title = wrapped("Table 4: Recall@10 per client and imbalance (best - worst) / worst")
    assert title == "Table 4: Recall@10 per client and<br>imbalance (best - worst) / worst"
    assert fit_title(_fig(title)).layout.title.text == title  # not three lines with a short one in the middle


# --- the plot area (fit_plot_area) -------------------------------------------------------------------------------
from plotly.subplots import make_subplots  # noqa: E402

from labcore.plot_style import LEGEND_BELOW, MAX_HEIGHT_PX, MIN_PLOT_HEIGHT_PX, _slanted_labels_px, fit_plot_area  # noqa: E402


def _lines(*names, **layout):
    return go.Figure([go.Scatter(x=[0, 1], y=[0, 1], name=n) for n in names], layout=layout)


def test_a_chart_with_room_for_its_plot_is_the_same_figure():
    fig = _lines("FedMF", "CoLR@4", height=450, margin=dict(t=60, b=60))
    assert fit_plot_area(fig, 564) is fig
    hidden = _lines("a long name " * 4, "another long name " * 3, height=450, showlegend=False)
    assert fit_plot_area(hidden, 282) is hidden  # no legend drawn: nothing to move


def test_a_legend_beside_a_narrow_plot_goes_under_it_and_the_chart_grows_for_it():
    names = [f"up {b}, down {b} bits: Theorem 1 bound" for b in (4, 8, 16)]
    fig = _lines(*names, height=400, margin=dict(t=50, b=50, r=80))
    fitted = fit_plot_area(fig, 282)  # a half-width chart at 1024 px: the legend would leave the plot 10 px
    assert fitted.layout.legend.orientation == LEGEND_BELOW["orientation"] and fitted.layout.margin.r == 20
    assert fitted.layout.height > 400 and fig.layout.legend.orientation is None  # the given figure untouched
    assert fit_plot_area(fig, 1400) is fig  # at a wide screen the legend leaves the plot most of the chart


def test_the_shortest_row_of_panels_gets_the_minimum_height_and_no_chart_outgrows_a_projector():
    two = make_subplots(rows=2, cols=1)
    two.update_layout(height=450, margin=dict(t=40, b=60), showlegend=False)
    fitted = fit_plot_area(two, 564)
    row = min(a.domain[1] - a.domain[0] for a in (fitted.layout.yaxis, fitted.layout.yaxis2))
    assert (fitted.layout.height - 40 - 60) * row >= MIN_PLOT_HEIGHT_PX - 1
    five = make_subplots(rows=5, cols=1)
    five.update_layout(height=450, showlegend=False)
    assert fit_plot_area(five, 564).layout.height == MAX_HEIGHT_PX


def test_upright_category_labels_are_counted_under_the_plot():
    names = [f"STTFedRec-CLSM/ring32 ({k})" for k in range(6)]
    short = go.Figure(go.Bar(x=[str(k) for k in range(6)], y=[1] * 6), layout=dict(height=420, margin=dict(t=60, b=10)))
    long = go.Figure(go.Bar(x=names, y=[1] * 6), layout=dict(height=420, margin=dict(t=60, b=10)))
    assert fit_plot_area(short, 564) is short
    assert fit_plot_area(long, 564).layout.height > 420


def test_numbers_kept_as_a_typed_array_are_not_taken_for_bar_names():
    import numpy as np
    import plotly.io as pio

    # a figure read back from its JSON keeps numeric arrays base64-encoded: x is {"dtype": ..., "bdata": ...}
    fig = pio.from_json(go.Figure(go.Scatter(x=np.arange(50.0), y=np.arange(50.0))).to_json())
    fig.update_layout(height=420, margin=dict(t=60, b=10))
    assert isinstance(fig.data[0].x, dict)
    assert fit_plot_area(fig, 282) is fig
    assert _slanted_labels_px(fig, 40) == 0  # however narrow: no bar names ("dtype", "bdata") to turn
