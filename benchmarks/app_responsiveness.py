"""Responsiveness of the lab's default views, as a student sees it in the browser.

    python benchmarks/app_responsiveness.py [--repeat 3]    # needs /usr/bin/chromium (DEVELOPERS.md)

A real `streamlit run app.py` on 127.0.0.1 with an empty result cache, Chromium at 1280x720. Each page is opened
on its default link and left to settle; then one control is changed as a student would (a slider one key
press, a select box one option) and two times are taken from the change:

- first visible change: the first time the page's content differs from before the change (any text outside
  the controls, or any chart's data); the target is 1 s: a run streams its rounds, so something moves at once;
- full redraw: the last such difference before the page settles (2 s with nothing changing and no script
  running); the target is a median under 3 s.

The changes are the ones a first lecture makes: the Explorer's rank, uplink bits, CKKS, then FedMF under CKKS;
GIST's local iterations. The machine's load average is printed beside them: other processes slow everything.
Times are printed, never asserted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (the link the change starts from, control kind, control label, the new value: slider key presses or the option
# to pick); each starts from its link, opened afresh and settled
CHANGES = (
    ("/", "slider", "rank r", 1),
    ("/", "slider", "uplink bits (0 = float32)", 8),
    ("/", "select", "encryption", "ckks"),
    ("/?encryption=ckks", "select", "method", "fedmf"),
    ("/gist", "slider", "local iterations between syncs", 1),
)

# What the page shows, leaving out the controls themselves (a moved slider redraws its own number at once):
# the text of the main area outside widgets, and every chart's data.
SIGNATURE = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  if (!main) return '';
  const widget = '[data-testid=stSlider], [data-testid=stSelectbox], [data-testid=stNumberInput],'
    + ' [data-testid=stCheckbox], [data-testid=stToggle], [data-testid=stRadio], [data-testid=stWidgetLabel]';
  const text = Array.from(main.querySelectorAll('[data-testid=stMarkdownContainer], [data-testid=stMetricValue],'
      + ' [data-testid=stText], [data-testid=stAlert], [data-testid=stCaptionContainer]'))
    .filter(e => !e.closest(widget)).map(e => e.innerText).join('|');
  const charts = Array.from(main.querySelectorAll('.js-plotly-plot')).map(g => g._fullData
    ? JSON.stringify(g._fullData.map(t => [Array.from(t.x || []), Array.from(t.y || [])])) : '').join('|');
  return text + '#' + charts;
}"""

BUSY = "[data-testid=stStatusWidget], [data-stale=true]"
# a run the page follows is still going (it trains in the background, so no script is running meanwhile)
TRAINING = "() => /: training|Starting the run|Waiting for a free training slot/.test(document.body.innerText)"

# Polls the signature every 20 ms in the page and keeps the times of the first and last change since arming.
WATCH = """() => {
  window.__watch = {base: (%s)(), first: null, last: null, t0: performance.now()};
  clearInterval(window.__timer);
  window.__timer = setInterval(() => {
    const w = window.__watch, now = (%s)();
    if (now !== w.base) { w.base = now; w.last = performance.now() - w.t0; if (w.first === null) w.first = w.last; }
  }, 20);
}""" % (SIGNATURE, SIGNATURE)


def _settle(page, quiet_s: float = 2.0, timeout_s: float = 300) -> None:
    """Until nothing has changed for `quiet_s` since the watch was armed, no script runs and no run trains."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(0.25)
        w = page.evaluate("() => window.__watch")
        since = (page.evaluate("() => performance.now()") - w["t0"]) - (w["last"] or 0)
        if since > quiet_s * 1e3 and not page.locator(BUSY).count() and not page.evaluate(TRAINING):
            return
    raise TimeoutError(f"the page did not settle within {timeout_s} s")


def _change(page, kind: str, label: str, value) -> None:
    if kind == "slider":
        s = page.locator(f'input[type=range][aria-label="{label}"]:visible')
        s.focus()
        page.evaluate(WATCH)
        for _ in range(value):
            page.keyboard.press("ArrowRight")
        return
    combo = page.locator(f'input[role=combobox][aria-label="{label}"]:visible')
    box = page.locator("[data-testid=stSelectbox]").filter(has=combo)
    options = page.get_by_role("option")
    for _ in range(5):  # a rerun that lands while the list opens closes it again, or takes the click: once more
        box.get_by_role("button", name="Open").click()
        try:
            options.first.wait_for(timeout=10_000)
        except Exception:
            continue
        texts = [t.strip() for t in options.all_inner_texts()]
        if value not in texts:
            raise ValueError(f"{label}: no option {value!r} in {texts}")
        page.evaluate(WATCH)
        options.nth(texts.index(value)).click()
        try:
            page.wait_for_function(f'() => document.querySelector(\'input[aria-label="{label}"]\').value === "{value}"',
                                   timeout=10_000)
            return
        except Exception:
            continue
    raise RuntimeError(f"could not pick {value!r} in {label!r}")


def measure() -> list[tuple[str, float, float]]:
    from playwright.sync_api import sync_playwright

    from benchmarks.app_load import CHROMIUM, chromium_args
    from labcore.app.server import serve

    out = []
    with serve() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=chromium_args())
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(120_000)
        for path, kind, label, value in CHANGES:
            page.goto(url + path)
            page.wait_for_selector("h1")
            page.evaluate(WATCH)
            _settle(page)
            _change(page, kind, label, value)
            _settle(page)
            w = page.evaluate("() => window.__watch")
            first, last = (None if w["first"] is None else w["first"] / 1e3), (w["last"] or 0) / 1e3
            name = f"{path} {label} -> {value if kind == 'select' else f'+{value} step'}"
            if page.evaluate("() => document.body.innerText.includes('do not fit together')"):
                name += " (refused: the settings do not fit together)"
            out.append((name, first, last))
            print(f"   {name:58s} first visible change {'none' if first is None else f'{first:5.2f} s'}, "
                  f"full redraw {last:5.2f} s", flush=True)
        browser.close()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=1,
                    help="passes, each on a new server with an empty cache; each change's median over them is used")
    a = ap.parse_args(argv)
    from benchmarks.app_load import CHROMIUM

    if not Path(CHROMIUM).exists():
        sys.exit(f"no {CHROMIUM}: install Debian's chromium (DEVELOPERS.md)")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} (1 min) at start")
    passes = []
    for k in range(a.repeat):
        if a.repeat > 1:
            print(f"pass {k + 1} of {a.repeat}")
        passes.append(measure())
    rows = passes[0]
    if a.repeat > 1:  # each change's median over the passes
        rows = [(name, statistics.median([p[i][1] for p in passes if p[i][1] is not None] or [None]),
                 statistics.median([p[i][2] for p in passes])) for i, (name, _, _) in enumerate(rows)]
        print(f"each change's median over {a.repeat} passes:")
        for name, first, last in rows:
            print(f"   {name:58s} first visible change {'none' if first is None else f'{first:5.2f} s'}, "
                  f"full redraw {last:5.2f} s")
    firsts = [f for _, f, _ in rows if f is not None]
    redraws = [r for _, _, r in rows]
    late = [n for n, f, _ in rows if f is None or f > 1]
    print(f"first visible change within 1 s: {len(rows) - len(late)} of {len(rows)}"
          + (f" (late: {'; '.join(late)})" if late else "")
          + (f"; median {statistics.median(firsts):.2f} s" if firsts else ""))
    print(f"full redraw: median {statistics.median(redraws):.2f} s (target < 3 s), max {max(redraws):.2f} s")
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")


if __name__ == "__main__":
    main()
