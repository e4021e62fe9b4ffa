"""The lesson path in a real browser: each step opened from the Lesson page by its link, each in a fresh browser
context (as a student's first click would be), lands on its page with the step's view in the link, no unknown
parameter and no exception. Part of the classroom command (`-m classroom`)."""
from urllib.parse import parse_qsl, urlparse

import pytest

from test_browser import ARGS, CHROMIUM, NEEDS_DATA, _idle, _no_exception, browser, server  # noqa: F401

from labcore.app import lesson
from labcore.app.pages import pages

pytestmark = [pytest.mark.classroom,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Chromium at /usr/bin/chromium")]

STEPS = list(enumerate(lesson.steps(), 1))
ML_1M_PAGES = ("fair", "split_learning")  # their steps' views read ML-1M from $LABCORE_DATA


@pytest.mark.parametrize("k, step", [pytest.param(k, s, marks=NEEDS_DATA if s.page in ML_1M_PAGES else ())
                                     for k, s in STEPS], ids=[f"{k}-{s.page}" for k, s in STEPS])
def test_each_step_opens_its_view_from_the_lesson_page(server, browser, k, step):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        pg = context.new_page()
        pg.set_default_timeout(90_000)
        pg.goto(server + "/lesson")
        pg.wait_for_selector("h1:has-text('Lesson')")
        pg.wait_for_selector("[data-testid=stPageLink-NavLink]")
        _idle(pg)
        links = pg.locator("[data-testid=stPageLink-NavLink]")
        assert links.count() == len(STEPS)
        link = links.nth(k - 1)
        link.scroll_into_view_if_needed()
        assert link.inner_text().strip().endswith(pages()[step.page][0])
        link.click()
        path = "" if step.page == "explorer" else step.page  # the Explorer is served at the root
        pg.wait_for_url(lambda url: urlparse(url).path.strip("/") == path)
        pg.wait_for_selector("h1")
        _idle(pg)
        _no_exception(pg, step.title)
        shown = dict(parse_qsl(urlparse(pg.url).query))  # (a value equal to the page's default leaves the link)
        assert all(shown.get(name) in (None, str(v)) for name, v in step.query.items()), (step.title, shown)
        assert pg.locator("text=Link parameter not used").count() == 0, step.title
    finally:
        context.close()
