"""Every chart of every page, drawn by a real browser at a projector's 1024 px and a laptop's 1280 px: no legend entry,
panel title, axis title or tick label on top of another, and none cut by the chart's edge. (A legend placed at a
fraction of the plot's height under it met slanted tick labels; long panel titles ran into each other; a note above the
panels covered their titles; at 1024 px the chart's edge cut the longest titles, which `labcore.app.charts.chart` now
wraps to the chart's column.) At 1024 px each plot also keeps room beside its legend and under its title, legend and
bar names. The pages' expanders are opened, so the stored cards' charts in them are checked too.

On the same page load, at a projector's 1024x768 and a laptop's 1280x720: the first chart and the first control are
on the first screen, and no table, caption, alert or code box is wider than its box (a data grid's own scroll bar
hid its last columns).

Part of the classroom command (`-m classroom`): a page load each, about five minutes in all.
"""
import time

import pytest

from test_browser import CHROMIUM, EXPLORER_QUERY, NEEDS_DATA, _idle, _new_page, _open_all_expanders, browser, server  # noqa: F401

pytestmark = [pytest.mark.classroom,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Chromium at /usr/bin/chromium")]

PATHS = {"explorer": "/" + EXPLORER_QUERY, "compare": "/compare?synthetic_size=small&rounds=10&_values=2,8"}

# The text boxes plotly drew, by kind, and the pairs of them that overlap by more than 2 px each way (an axis's own tick
# labels are plotly's to space, and the same element can match two selectors: neither is reported); with `clipped`,
# also every text the chart's edge cuts.
OVERLAPS = """(clipped) => {
  const hit = (a, b) => a.width > 0 && b.width > 0 && a.height > 0 && b.height > 0 &&
      a.left < b.right - 2 && b.left < a.right - 2 && a.top < b.bottom - 2 && b.top < a.bottom - 2;
  const out = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, n) => {
    const name = (plot.querySelector('.g-gtitle text') || {}).textContent || `chart ${n}`;
    const items = [];
    const add = (kind, css, group) => plot.querySelectorAll(css).forEach(e =>
        items.push({kind, group: group(e), text: e.textContent, box: e.getBoundingClientRect()}));
    add('legend', 'g.legend g.traces', e => 'legend');
    add('tick', 'g.xaxislayer-above g[class$=tick] text, g.yaxislayer-above g[class$=tick] text',
        e => e.parentElement.getAttribute('class'));
    add('axis title', 'text.xtitle, text.ytitle, [class*=xtitle], [class*=ytitle]', e => e.getAttribute('class'));
    add('panel title', 'g.annotation text', e => 'annotation ' + e.textContent);
    add('title', '.g-gtitle text', e => 'title');
    if (clipped) {  // a text the figure's edge cuts (legend entries: their text only, not their symbol)
      const edge = plot.querySelector('.main-svg').getBoundingClientRect();
      const cut = (kind, text, r) => { if (r.width > 0 && (r.right > edge.right + 1 || r.left < edge.left - 1 ||
                                                          r.bottom > edge.bottom + 1 || r.top < edge.top - 1))
          out.push(`${name}: ${kind} '${text}' cut by the chart's edge`); };
      items.filter(it => it.kind !== 'legend').forEach(it => cut(it.kind, it.text, it.box));
      plot.querySelectorAll('g.legend text').forEach(e => cut('legend', e.textContent, e.getBoundingClientRect()));
    }
    for (let i = 0; i < items.length; i++) for (let j = i + 1; j < items.length; j++) {
      const a = items[i], b = items[j];
      if ((a.kind === 'tick' && b.kind === 'tick') || (a.kind === 'legend' && b.kind === 'legend')) continue;
      if (a.group === b.group || (a.kind === b.kind && a.text === b.text)) continue;
      if (hit(a.box, b.box)) out.push(`${name}: ${a.kind} '${a.text}' on ${b.kind} '${b.text}'`);
    }
  });
  return out;
}"""


# Each chart's plot area as drawn: the union of its panels and the height of its shortest one. At 1024 px a legend
# beside the plot left it 64 px of a 274 px chart, and legends under the plot or turned bar names left 97 px of height.
PLOT_AREAS = """() => {
  const out = [];
  document.querySelectorAll('.js-plotly-plot').forEach((plot, n) => {
    const name = (plot.querySelector('.g-gtitle text') || {}).textContent || `chart ${n}`;
    const svg = plot.querySelector('.main-svg').getBoundingClientRect();
    const panels = [...plot.querySelectorAll('g.draglayer rect.nsewdrag')].map(r => r.getBoundingClientRect());
    if (!panels.length || svg.width === 0) return;  // a table drawn by plotly, or a chart in a closed tab
    const width = Math.max(...panels.map(r => r.right)) - Math.min(...panels.map(r => r.left));
    out.push({name, width: svg.width, plot_width: width, shortest: Math.min(...panels.map(r => r.height))});
  });
  return out;
}"""
MIN_PLOT_SHARE = 0.45  # of the chart's width
MIN_PANEL_PX = 180


def _cramped(pg) -> list[str]:
    return [f"{c['name']}: plot {c['plot_width']:.0f} px of {c['width']:.0f} wide, shortest panel {c['shortest']:.0f} px"
            for c in pg.evaluate(PLOT_AREAS)
            if c["plot_width"] < MIN_PLOT_SHARE * c["width"] or c["shortest"] < MIN_PANEL_PX]


def _pages() -> list:
    from labcore.app.pages import CORE_PAGES, pages

    return [pytest.param(name, marks=[] if name in CORE_PAGES else [NEEDS_DATA]) for name in pages()
            if name not in WITHOUT_CHARTS]


WITHOUT_CHARTS = ("lesson",)  # its steps' links: opened by test_browser_lesson.py


# The top of the first chart and of the first control, the page scrolled to its top.
FOLD = """() => {
  window.scrollTo(0, 0);
  document.querySelectorAll('*').forEach(e => { if (e.scrollTop) e.scrollTop = 0; });
  const top = css => { const e = document.querySelector(css); return e ? e.getBoundingClientRect().top : null; };
  return {height: window.innerHeight, chart: top('.js-plotly-plot'),
          control: top('input[type=range], [data-testid=stSelectbox], [data-testid=stNumberInput], ' +
                       '[data-testid=stRadio], [data-testid=stButtonGroup]')};
}"""

# Every table, caption, alert and code box wider inside than its box (it scrolls sideways or cuts its end), and every
# data grid whose columns are wider than the grid. A data grid's resize grip, a small square centred on its corner,
# sticks out of every grid: it is hidden while the widths are read.
OVERFLOWS = """() => {
  const out = [];
  const grips = [];
  document.querySelectorAll('[data-testid=stDataFrame]').forEach(d => {
    const right = d.getBoundingClientRect().right;
    d.querySelectorAll('div').forEach(e => { const r = e.getBoundingClientRect();
      if (getComputedStyle(e).position === 'absolute' && r.width <= 24 && r.right > right + 1) grips.push(e); });
  });
  grips.forEach(e => e.style.display = 'none');
  const check = (css, kind) => document.querySelectorAll(css).forEach(e => {
    if (e.scrollWidth > e.clientWidth + 1 && e.getClientRects().length)
      out.push(`${kind} ${e.scrollWidth - e.clientWidth} px wider than its ${e.clientWidth} px: ` +
               (e.innerText || '').replace(/\\s+/g, ' ').slice(0, 60));
  });
  check('[data-testid=stMarkdownContainer] table', 'table');
  check('[data-testid=stTable]', 'table');
  check('[data-testid=stDataFrame]', 'data grid');
  check('[data-testid=stDataFrame] .dvn-scroller', 'data grid columns');
  check('[data-testid=stCaptionContainer]', 'caption');
  check('[data-testid=stAlert]', 'alert');
  check('[data-testid=stMarkdownContainer] pre', 'code box');
  grips.forEach(e => e.style.display = '');
  return out;
}"""


def _below_the_fold(pg, width: int, height: int) -> list[str]:
    """The first chart and control on the first screen at width x height (the page's charts redraw at a new width)."""
    pg.set_viewport_size({"width": width, "height": height})
    time.sleep(2)
    f = pg.evaluate(FOLD)
    return [f"{what} at {f[what]:.0f} px, below the first {f['height']} px at {width}x{height}"
            for what in ("chart", "control") if f[what] is not None and f[what] >= f["height"]]


def _overflowing(pg, width: int) -> list[str]:
    return [f"at {width} px: {o}" for o in pg.evaluate(OVERFLOWS)]


def _lasting(pg, clipped: bool) -> list[str]:
    first = set(pg.evaluate(OVERLAPS, clipped))
    time.sleep(1.5)
    return sorted(first & set(pg.evaluate(OVERLAPS, clipped)))  # not a chart caught mid-redraw


# Views a button opens (work that runs only when asked): pressed once the default view is checked
PRESS = {"fair": ("Run the trade-off",)}  # its chart and its table of the Fig. 1 points (about 20 s of training)


def _after_pressing(pg, buttons) -> list[str]:
    """Each button pressed, its work waited for, and what it drew checked at 1280 and 1024 px."""
    out = []
    for label in buttons:
        pg.set_viewport_size({"width": 1280, "height": 2400})
        pg.get_by_role("button", name=label).click()
        time.sleep(2)
        _idle(pg, timeout=240)
        for width in (1280, 1024):
            pg.set_viewport_size({"width": width, "height": 2400})
            time.sleep(2)
            out += [f"after '{label}' at {width} px: {o}" for o in
                    _lasting(pg, clipped=True) + (_cramped(pg) if width == 1024 else []) + _overflowing(pg, width)]
    return out


def _other_tabs(pg) -> list[str]:
    """Each tab of the main area shown in turn (the Encryption page's attack, the Completion page's phase map and
    stored figures): its charts and tables checked as the default view's are, at 1280 and at 1024 px. A tab's
    content is drawn with the page, so showing it reruns nothing."""
    tabs = pg.locator("[data-testid=stMain] [role=tab]")
    shown = [tabs.nth(t).get_attribute("aria-selected") == "true" for t in range(tabs.count())]  # checked already
    out = []
    for t in (t for t in range(tabs.count()) if not shown[t]):
        label = tabs.nth(t).inner_text().strip()
        for width in (1280, 1024):
            pg.set_viewport_size({"width": width, "height": 2400})
            tabs.nth(t).click()
            time.sleep(2)  # the tab's charts draw at their column's width
            _open_all_expanders(pg)
            out += [f"tab '{label}' at {width} px: {o}" for o in
                    _lasting(pg, clipped=True) + (_cramped(pg) if width == 1024 else []) + _overflowing(pg, width)]
    return out


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", _pages())
def test_no_label_of_a_chart_covers_another_at_a_projectors_width(server, browser, name):  # noqa: F811
    """At a projector's 1024 px and at a laptop's 1280 px nothing overlaps and no text is cut by the chart's edge; at
    1024 px every plot keeps room (`fit_plot_area`): MIN_PLOT_SHARE of its chart's width, MIN_PANEL_PX of height.
    At 1024x768 and 1280x720 the first chart and control are on the first screen; no table is wider than its box."""
    pg = _new_page(browser, 1024, 2400)
    try:
        pg.goto(server + PATHS.get(name, "/" + name))
        pg.wait_for_selector("h1")
        pg.wait_for_selector(".js-plotly-plot", timeout=180_000)  # every page draws one (GIST once it has trained)
        _idle(pg, timeout=240)
        # the first screen as a student opens the page: every expander closed
        fold = _below_the_fold(pg, 1024, 768) + _below_the_fold(pg, 1280, 720)
        pg.set_viewport_size({"width": 1024, "height": 2400})
        time.sleep(2)  # the charts redraw at their columns' width
        _open_all_expanders(pg)
        time.sleep(2)  # the charts in them draw, and redraw once at their column's width
        _idle(pg, timeout=240)
        at_1024 = _lasting(pg, clipped=True) + _cramped(pg)
        overflow = _overflowing(pg, 1024)
        pg.set_viewport_size({"width": 1280, "height": 2400})
        time.sleep(2)  # the charts redraw at their columns' new width
        at_1280 = _lasting(pg, clipped=True)
        overflow += _overflowing(pg, 1280)
        in_tabs = _other_tabs(pg) + _after_pressing(pg, PRESS.get(name, ()))
        assert not at_1024 and not at_1280, (f"{name} at 1024 px:\n" + "\n".join(at_1024)
                                            + f"\n{name} at 1280 px:\n" + "\n".join(at_1280))
        assert not in_tabs, f"{name}, in its tabs and the views its buttons open:\n" + "\n".join(in_tabs)
        assert not fold, f"{name}: " + "; ".join(fold)
        assert not overflow, f"{name}, wider than its box:\n" + "\n".join(overflow)
    finally:
        pg.close()
