"""End to end in a real browser: `streamlit run app.py` driven by Chromium through Playwright.

Opens the app, moves the rank slider and checks that the chart and the byte counter change, then
saves a screenshot of every page under artifacts/ (git-ignored). Needs the system Chromium at
/usr/bin/chromium (scripts/setup.sh installs it on CI; DEVELOPERS.md explains the set-up).
"""
import json
import re
import time
from pathlib import Path

import pytest

from conftest import ROOT, shared_data
from labcore.app.server import serve

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = ROOT / "artifacts"
# a light Explorer run (synthetic small, 30 rounds): the test checks the mechanics, not the numbers
EXPLORER_QUERY = "?synthetic_size=small&rounds=30&clients_per_round=30&dim=32&eval_every=3&rank_every=3"

# the other papers' pages read ML-1M (and more) from $LABCORE_DATA
NEEDS_DATA = pytest.mark.skipif(shared_data() is None, reason="needs $LABCORE_DATA (the other papers' pages use ML-1M)")

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="needs Chromium at /usr/bin/chromium (scripts/setup.sh installs it as root "
                                       "with apt-get; see DEVELOPERS.md)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`streamlit run app.py` on a free loopback port, with its own result cache."""
    with serve(cache_dir=tmp_path_factory.mktemp("runs")) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module (Playwright's sync API allows one instance at a time)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def _new_page(browser, width: int, height: int):
    pg = browser.new_page(viewport={"width": width, "height": height})
    pg.set_default_timeout(90_000)
    return pg


@pytest.fixture(scope="module")
def page(browser):
    pg = _new_page(browser, 1500, 2000)
    yield pg
    pg.close()


BUSY = "[data-testid=stStatusWidget], [data-stale=true]"


def _idle(pg, timeout=120):
    """Wait until the script run is over and the page settles: Streamlit's 'running' indicator is gone and no
    element of the previous run is still shown as stale (the indicator can be absent for a second or more
    while a rerun redraws, and a widget moved then is the previous run's and snaps back)."""
    deadline = time.monotonic() + timeout
    time.sleep(0.5)
    while pg.locator(BUSY).count() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.8)


def _finished(pg, rounds: int) -> None:
    pg.wait_for_function(f"() => document.body.innerText.includes('round {rounds} / {rounds}: finished')",
                         polling=200)
    _idle(pg)


def _press_until(pg, name: str, done: str, tries: int = 8) -> None:
    """Press a button of the live part until the page text matches the regex `done`. The live part redraws
    every 0.75 s, and where a redraw takes about as long (a slow or loaded machine) the button is replaced so
    often that Playwright's click, which waits for a stable element, never lands (seen: 90 s of "element was
    detached"). A click event dispatched to the button found at that instant is one step; a press the redraw
    lost is pressed again, as a person would."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    test = f"() => /{done}/.test(document.body.innerText)"
    for _ in range(tries):
        try:
            pg.get_by_role("button", name=name).first.dispatch_event("click", timeout=20_000)
            pg.wait_for_function(test, timeout=20_000, polling=200)
            return
        except PlaywrightTimeout:
            if pg.evaluate(test):
                return
    raise AssertionError(f"pressing {name!r} did not lead to /{done}/ in {tries} tries")


def _metric(pg, label):
    for text in pg.locator("[data-testid=stMetric]").all_inner_texts():
        name, _, value = text.partition("\n")
        if name.strip() == label:
            return value.strip()
    raise AssertionError(f"no metric {label!r}")


def _panel_bytes(pg) -> float:
    """Largest cumulative-bytes x value plotted in the Explorer's metric panel (second subplot)."""
    return pg.evaluate("""() => {
        const gd = document.querySelector('.js-plotly-plot');
        let m = 0;
        for (const t of gd._fullData) if (t.xaxis === 'x2') for (const v of Array.from(t.x)) m = Math.max(m, v);
        return m;
    }""")


def _shot(pg, name):
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_moving_the_rank_slider_changes_the_chart_and_the_byte_counter(server, page):
    page.goto(server + "/" + EXPLORER_QUERY)
    page.wait_for_selector(".js-plotly-plot")
    _finished(page, 30)
    _no_exception(page)
    assert "round 30 / 30" in page.locator("[data-testid=stProgress]").first.inner_text()
    up_before, bytes_before = _metric(page, "upload / client / round"), _panel_bytes(page)
    _shot(page, "explorer")

    slider = page.locator('input[type=range][aria-label="rank r"]')
    # the default rank, once the slider has its value (a loaded machine can show it a moment at its minimum)
    page.wait_for_function("() => document.querySelector('input[type=range][aria-label=\"rank r\"]').value === '4'",
                           timeout=30_000)
    assert slider.get_attribute("value") == "4"
    slider.focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    page.wait_for_function("() => new URL(location.href).searchParams.get('rank') === '8'")
    page.wait_for_function(
        "(before) => Array.from(document.querySelectorAll('[data-testid=stMetric]'))"
        ".some(m => m.innerText.startsWith('upload / client / round') && !m.innerText.includes(before))",
        arg=up_before)
    _finished(page, 30)
    _no_exception(page)
    up_after = _metric(page, "upload / client / round")
    assert up_after != up_before
    num = lambda s: float(re.sub(r"[^0-9.]", "", s)) * (1024 if "KB" in s else 1)  # noqa: E731
    assert num(up_after) > 1.5 * num(up_before)  # rank 8 sends twice the factor of rank 4
    assert _panel_bytes(page) > 1.5 * bytes_before  # and the plotted cumulative bytes moved with it
    _shot(page, "explorer-rank8")


def test_stop_halts_the_run_between_rounds_and_resume_continues_it(server, page):
    # a run of several seconds (200 clients, d=64): long enough to stop, resume and reload during it
    page.goto(server + "/?rounds=1000&clients_per_round=200&dim=64&eval_every=50&rank_every=0&seed=5")
    page.wait_for_function("() => /round ([1-9][0-9]+) \\/ 1000: training/.test(document.body.innerText)")
    _press_until(page, "Stop", "round [0-9]+ \\/ 1000: stopped")
    resume = page.get_by_role("button", name="Resume")
    resume.wait_for()
    at_stop = page.locator("[data-testid=stProgress]").first.inner_text()
    time.sleep(2)
    assert page.locator("[data-testid=stProgress]").first.inner_text() == at_stop  # nothing trains any more
    stopped_round = int(re.search(r"round (\d+) /", at_stop).group(1))
    resume.click()
    page.wait_for_function(f"() => document.body.innerText.includes('resumed at round {stopped_round}')")
    # A refreshed page is one session: the closed one no longer counts as watching ("2 sessions watching")
    page.reload()
    page.wait_for_function("() => /round [0-9]+ \\/ 1000: (training|finished)/.test(document.body.innerText)")
    seen = page.locator("[data-testid=stProgress]").first.inner_text()
    # the run goes on after the refresh (or has just finished: a fast machine trains the rest in seconds)
    page.wait_for_function("(seen) => { const p = document.querySelector('[data-testid=stProgress]');"
                           " return p && (p.innerText !== seen || /: finished/.test(seen))"
                           " && /: (training|finished)/.test(p.innerText); }", arg=seen)
    now = page.locator("[data-testid=stProgress]").first.inner_text()
    assert "sessions watching" not in now
    assert int(re.search(r"round (\d+) /", now).group(1)) > stopped_round
    if ": training" in now:  # leave the server idle for the next test
        _press_until(page, "Stop", ": (stopped|finished)")


def test_a_crafted_link_is_refused_by_name_and_bounded_by_the_work_budget(server, page):
    """The hosted mode in a real browser (tests/core/app/test_app_hosted.py drives 22 such links with AppTest): the Explorer
    link of a thousand negatives per positive names the ignored field, shows the budget's message, runs nothing."""
    page.goto(server + "/?num_negatives=1000&local_epochs=10&clients_per_round=50&synthetic_size=ml1m&rounds=1000")
    page.wait_for_function("() => document.body.innerText.includes('work budget')", polling=250)
    _idle(page)
    text = page.inner_text("body")
    assert "num_negatives" in text and "times the budget" in text
    assert page.locator("[data-testid=stProgress]").count() == 0  # no run
    _no_exception(page)
    assert "num_negatives" not in page.url and "rounds=1000" in page.url  # the view's link keeps what the page shows


@pytest.mark.parametrize("name, path", [
    ("compare", "/compare?synthetic_size=small&rounds=10&_values=2,8"),
    ("encryption", "/encryption"),
    ("figures", "/figures?_card=colr-fig2-ml1m"),
    pytest.param("fair", "/fair", marks=NEEDS_DATA),
    pytest.param("split_learning", "/split_learning", marks=NEEDS_DATA),
])
def test_every_page_renders_in_the_browser(server, page, name, path):
    page.goto(server + path)
    page.wait_for_selector("h1")
    page.wait_for_selector(".js-plotly-plot")
    _idle(page)
    _no_exception(page)
    _shot(page, name)
    if name == "encryption":
        page.get_by_role("tab", name="Attack: what a curious server learns").click()
        _idle(page)
        _shot(page, "encryption-attack")


# A choice shown as a row (segmented control, pills, horizontal radio) is cut off, not wrapped, where its row is wider
# than the column it sits in: at 1280 px the Explorer's metric row lost "HR@10, personal models" and "backdoor success".
CHOICES = ("[data-testid=stButtonGroup] button:visible, "
           "[data-testid=stRadio] [role=radiogroup] label:visible")


@pytest.mark.parametrize("name, path", [
    ("explorer", "/" + EXPLORER_QUERY),
    ("compare", "/compare?synthetic_size=small&rounds=10&_values=2,8"),
    ("figures", "/figures?_card=colr-fig2-ml1m"),
    pytest.param("split_learning", "/split_learning", marks=NEEDS_DATA),
    pytest.param("completion", "/completion", marks=NEEDS_DATA),
])
def test_every_choice_of_a_row_is_on_screen_at_a_laptops_width(server, browser, name, path):
    pg = _new_page(browser, 1280, 800)
    try:
        pg.goto(server + path)
        pg.wait_for_selector("h1")
        pg.locator(CHOICES).first.wait_for()
        _idle(pg)
        cut = pg.locator(CHOICES).evaluate_all("""els => els.filter(e => {
            const r = e.getBoundingClientRect();
            const main = document.querySelector('[data-testid=stMainBlockContainer]').getBoundingClientRect();
            let clip = main.right;  // and the nearest ancestor that hides its overflow
            for (let a = e.parentElement; a; a = a.parentElement) {
                const o = getComputedStyle(a).overflowX;
                if (o !== 'visible') { clip = Math.min(clip, a.getBoundingClientRect().right); break; }
            }
            return r.width > 0 && r.right > clip + 1;
        }).map(e => e.innerText.trim())""")
        assert pg.locator(CHOICES).count() > 0
        assert not cut, f"{name}: choices cut off at 1280 px: {cut}"
    finally:
        pg.close()


# --- every control sticks and reaches the link (the classroom sweep: sweep_every_control below) ---------------
# Shown sliders only: a control a change removed can stay in the DOM, hidden, for a while (on the sdp page, the
# random graph's sliders after picking a real graph), and counting it made the reloaded view look incomplete.
SLIDER = "input[type=range]:visible"


def _slider_values(pg) -> list[str]:
    return pg.locator(SLIDER).evaluate_all("els => els.map(e => e.value)")


def _select_texts(pg) -> list[str]:
    """The value shown by each select box (its combobox input holds it)."""
    return pg.locator("[data-testid=stSelectbox] input[role=combobox]").evaluate_all("els => els.map(e => e.value)")


def _step(pg, s, presses: int) -> str:
    """Move slider element `s` by `presses` steps (right, or left at the top end); its value as shown."""
    s.focus()
    before = s.get_attribute("value")
    for _ in range(presses):
        pg.keyboard.press("ArrowRight")
    if s.get_attribute("value") == before:  # at the top end: go down instead
        for _ in range(presses):
            pg.keyboard.press("ArrowLeft")
    return s.get_attribute("value")


def _move_slider(pg, i: int, presses: int) -> str:
    """Move slider i by `presses` steps; its value as the browser shows it."""
    return _step(pg, pg.locator(SLIDER).nth(i), presses)


def _kth_other(k: int):
    """The k-th option other than the current one (the select boxes' k-th change)."""
    def choose(texts, current):
        others = [t for t in texts if t != current] or texts
        return others[k % len(others)]
    return choose


def _choose(pg, box, current: str, choose) -> str:
    """Open select box `box` and click the option `choose(texts, current)` names; the option's text."""
    options = pg.locator("[role=option]")
    for tries in range(3):
        for attempt in range(3):  # a rerun that lands while the list opens closes it again: open it once more
            box.get_by_role("button", name="Open").click()
            try:
                options.first.wait_for(timeout=10_000)
                break
            except Exception:
                if attempt == 2:
                    raise
                _idle(pg)
        texts = [t.strip() for t in options.all_inner_texts()]
        choice = choose(texts, current)
        if choice in texts:
            try:
                options.nth(texts.index(choice)).click(timeout=10_000)
                return choice
            except Exception:  # the list was redrawn under the click ("not stable", detached): open it again
                pass
        # or the options on the page were not this box's (seen once in CI: a rerun redrew the page as the list
        # opened, two browsers on two cores): close whatever list is open and open this box's again
        pg.keyboard.press("Escape")
        _idle(pg)
    raise AssertionError(f"could not pick {choice!r} in this select box (options shown: {texts})")


def _pick(pg, i: int, k: int) -> str:
    """Open select box i and pick its k-th other option; the option's text."""
    return _choose(pg, pg.locator("[data-testid=stSelectbox]").nth(i), _select_texts(pg)[i], _kth_other(k))


def _no_exception(pg, where=None) -> None:
    """No error box on the page; the message names the exception a student would see."""
    shown = pg.locator("[data-testid=stException]")
    assert shown.count() == 0, (where, shown.all_inner_texts())


def _open_expanders(pg) -> None:
    """Controls in a collapsed expander cannot be clicked: open every expander of the main area."""
    closed = pg.locator("[data-testid=stMain] details:not([open]) > summary")
    for _ in range(20):  # one at a time: the list shrinks as they open
        if not closed.count():
            break
        closed.first.click()
        _idle(pg)


# --- the classroom sweep: every control of every page, five changes each ---------------------------------------
# Controls are found by their label, not their position: a change can add or remove controls (picking a real
# dataset removes "synthetic size"), and some sit in a collapsed expander (the sidebar's "Advanced") or a tab.
SHOWN = {"slider": "input[type=range][aria-label={}]:visible",
         "select": "[data-testid=stSelectbox] input[role=combobox][aria-label={}]:visible"}


def _shown_controls(pg) -> list[tuple[str, str, int]]:
    """(kind, label, occurrence) of every slider and select box on screen, in page order."""
    out = []
    for kind, css in (("slider", "input[type=range]"), ("select", "[data-testid=stSelectbox] input[role=combobox]")):
        labels = pg.locator(css + ":visible").evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
        out += [(kind, label, labels[:j].count(label)) for j, label in enumerate(labels)]
    return out


def _input(pg, control):
    kind, label, j = control
    return pg.locator(SHOWN[kind].format(json.dumps(label))).nth(j)


def _open_all_expanders(pg) -> None:
    """Open every collapsed expander, the sidebar's too (opening one reruns nothing)."""
    closed = pg.locator("details:not([open]) > summary:visible")
    for _ in range(20):
        if not closed.count():
            break
        closed.first.click()
        time.sleep(0.3)


def _discover(pg) -> list[tuple[str, str, int]]:
    """Every control of the page's view: the shown ones, then those of each other tab of the main area."""
    _open_all_expanders(pg)
    found = _shown_controls(pg)
    tabs = pg.locator("[data-testid=stMain] [role=tab]")
    for t in range(tabs.count()):
        tabs.nth(t).click()
        time.sleep(0.3)
        _open_all_expanders(pg)
        found += [c for c in _shown_controls(pg) if c not in found]
    if tabs.count():
        tabs.first.click()
    return found


def _reveal(pg, control) -> bool:
    """Bring a control on screen: open the expanders, then try each tab of the main area."""
    if _input(pg, control).count():
        return True
    _open_all_expanders(pg)
    if _input(pg, control).count():
        return True
    tabs = pg.locator("[data-testid=stMain] [role=tab]")
    for t in range(tabs.count()):
        tabs.nth(t).click()
        time.sleep(0.3)
        _open_all_expanders(pg)
        if _input(pg, control).count():
            return True
    return False


def _reveal_soon(pg, control, timeout: float = 120) -> bool:
    """`_reveal`, tried until `timeout`: a fresh session draws the page's title first and its controls over the
    next seconds, and on a loaded 2-core machine `_idle` can return in between."""
    deadline = time.monotonic() + timeout
    while not _reveal(pg, control):
        if time.monotonic() > deadline:
            return False
        time.sleep(1)
    return True


def _value(pg, control) -> str:
    return _input(pg, control).evaluate("e => e.value")


def _change(pg, control, k: int) -> str:
    """The k-th change of a control: slider k steps, select box its k-th other option; the value shown."""
    if control[0] == "slider":
        return _step(pg, _input(pg, control), k)
    return _pick_option(pg, control, _kth_other(k))


def _pick_option(pg, control, choose) -> str:
    kind, label, j = control
    box = pg.locator("[data-testid=stSelectbox]").filter(
        has=pg.locator(f"input[role=combobox][aria-label={json.dumps(label)}]:visible")).nth(j)
    return _choose(pg, box, _value(pg, control), choose)


def _set(pg, control, value: str) -> None:
    """Put a control back to a value it showed before."""
    if control[0] == "select":
        if _value(pg, control) != value:
            _pick_option(pg, control, lambda texts, current: value)
        return
    s = _input(pg, control)
    s.focus()
    step = s.get_attribute("step") or ""
    step = float(step) if step.replace(".", "", 1).isdigit() and float(step) > 0 else None  # else a press at a time
    for _ in range(400):
        now = float(s.evaluate("e => e.value"))
        if now == float(value):
            return
        # all presses in one burst: a slow press-and-read loop lets the slider commit a value on the way, whose
        # rerun can land after the last press
        presses = max(1, round(abs(float(value) - now) / step)) if step else 1
        for _ in range(presses):
            pg.keyboard.press("ArrowRight" if now < float(value) else "ArrowLeft")


def _link_moved(pg, before_link: str) -> None:
    """Wait until the link differs from `before_link`, or the page says the settings do not fit together
    (the link then keeps the last view that runs); this also waits for the server to have taken the change."""
    pg.wait_for_function("before => location.href !== before"
                         " || document.body.innerText.includes('do not fit together')",
                         arg=before_link, timeout=240_000, polling=200)


def _sweep_one(pg, name, control, changes: int, seen_while: dict) -> None:
    start = _value(pg, control)
    for k in range(1, changes + 1):
        before_link, before = pg.url, _value(pg, control)
        shown = _change(pg, control, k)
        try:
            _link_moved(pg, before_link)
        except Exception:
            if _value(pg, control) != before:
                raise AssertionError((name, control, k, shown, "the change did not reach the link")) from None
            # the control shows its old value: a rerun replaced it while the keys were pressed, so the press
            # never happened (seen once in CI, on a loaded machine); press again, as a person would
            _idle(pg, timeout=240)
            _reveal(pg, control)
            shown = _change(pg, control, k)
            try:
                _link_moved(pg, before_link)
            except Exception:
                raise AssertionError((name, control, k, shown, "the change did not reach the link")) from None
        _idle(pg, timeout=240)
        assert _reveal(pg, control), (name, control, k, "vanished after its own change")
        assert _value(pg, control) == shown, (name, control, k, "snapped back")
        _no_exception(pg, (name, control, k))
        for other in _shown_controls(pg):  # a control this value shows: remember how to bring it back
            seen_while.setdefault(other, (control, _value(pg, control)))
    before_link, moved = pg.url, _value(pg, control) != start
    _set(pg, control, start)
    if moved:
        _link_moved(pg, before_link)
    _idle(pg, timeout=240)
    _reveal(pg, control)
    _settle(pg, control, start, tries=4)
    assert _value(pg, control) == start, (name, control, "could not be put back")


def _settle(pg, control, value: str, tries: int = 3) -> None:
    """Set a shown `control` to `value` and wait for the page, again while it shows another value: on a loaded
    machine (the two halves of the sweep side by side) a rerun that lands between the arrow presses that put a
    slider back can leave it a step off. Setting controls back is the sweep's own housekeeping; each change's
    sticking is checked without a retry."""
    for _ in range(tries):
        if _value(pg, control) == value:
            return
        _set(pg, control, value)
        _idle(pg, timeout=240)
        _reveal(pg, control)


def _bring(pg, name, control, seen_while: dict) -> list:
    """Put `control` on screen. One shown only under another control's value gets that value set first, and that
    control in turn its own (a select that only another choice shows, and a slider only its choice shows).
    Returns the (control, value before) pairs set, outermost first, to put back."""
    if _reveal(pg, control):
        return []
    recipe = seen_while.get(control)
    assert recipe, (name, control, "not on screen and no control shows it")
    parent, value = recipe
    undo = _bring(pg, name, parent, seen_while)
    start = _value(pg, parent)
    _settle(pg, parent, value)
    assert _reveal(pg, control), (name, control, "not shown by", parent, value)
    return undo + [(parent, start)]


def classroom_pages(core: bool) -> list:
    """The lab's own pages (`core`) or the topics' pages, as (name, path) parameters of the classroom sweep."""
    from labcore.app.pages import CORE_PAGES, pages

    # each page from a light view of its own (every control is still changed five times from it): the sweep checks
    # that controls stick and links round-trip, and a lighter rerun leaves more of the 2 cores to the browser
    light = {"explorer": "/?synthetic_size=small&dim=16&rounds=10&clients_per_round=20",
             "compare": "/compare?synthetic_size=small&rounds=10&_values=2,8",
             "wireless": "/wireless?d=50&T=60&R=5", "gist": "/gist?graph=synthetic&epochs=20",
             "completion": "/completion?budget=0.25&n=100", "privacy": "/privacy?_dp_rounds=5",
             "flalgos": "/flalgos?steps=2"}
    return [pytest.param(name, light.get(name, f"/{name}"), marks=[pytest.mark.classroom]
                         + ([] if name in CORE_PAGES else [NEEDS_DATA]))
            for name in pages() if (name in CORE_PAGES) == core and name not in WITHOUT_CONTROLS]


WITHOUT_CONTROLS = ("lesson",)  # links only: test_browser_lesson.py opens each of them


def sweep_every_control(server, page, name: str, path: str) -> None:
    """The classroom sweep of one page (`-m classroom`, run by CI after the default suite; its tests are in
    test_browser_sweep_lab.py and test_browser_sweep_topics.py, which CI's two workers run at once): every slider and select box of the page, the ones in expanders, tabs
    and those another choice shows included, changed five times in a row. Each value sticks, each change reaches
    the link, and the control is put back before the next one so every control is tried from the page's own
    view. Then the final view comes back from its link."""
    page.goto(server + path)
    page.wait_for_selector("h1")
    page.wait_for_selector("input[type=range], [data-testid=stSelectbox]", state="attached")
    _idle(page, timeout=240)
    queue, done, seen_while = _discover(page), set(), {}
    assert queue, f"page {name} has no slider or select box"
    for c in queue:
        seen_while[c] = None
    while queue:
        control = queue.pop(0)
        if control in done:
            continue
        undo = _bring(page, name, control, seen_while)
        _sweep_one(page, name, control, 5, seen_while)
        done.add(control)
        for parent, start in reversed(undo):  # put the controls that showed it back, innermost first
            _reveal(page, parent)
            _settle(page, parent, start)
        queue += [c for c in seen_while if c not in done and c not in queue]
    print(f"{name}: {len(done)} controls changed five times each:", ", ".join(label for _, label, _ in done))
    # the link of a changed view comes back in a fresh session
    first = next((c for c in _shown_controls(page) if c[0] == "slider"), None)
    if first:
        moved = _change(page, first, 1)
        _idle(page, timeout=240)
    link = page.url
    page.goto(link)
    page.wait_for_selector("h1")
    _idle(page, timeout=240)
    assert page.url == link  # the link is not rewritten: every value it carries was taken
    _no_exception(page)
    if first:
        assert _reveal_soon(page, first) and _value(page, first) == moved, (name, first)
