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
