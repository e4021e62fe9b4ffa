"""The lesson path: its steps fill a 50-minute lecture, each names a page, a view that page accepts, what to move,
watch and ask, and a notebook that exists; the Lesson page lists them as links to those views (AppTest)."""
import pytest

from conftest import ROOT
from test_app import app

from labcore.app import lesson
from labcore.app.pages import pages
from labcore.app.state import PAGES, parse


def test_the_steps_fill_the_lecture_and_each_says_what_to_do():
    steps = lesson.steps()
    assert lesson.total_minutes() == lesson.LECTURE_MINUTES == 50
    assert len({s.title for s in steps}) == len(steps) >= 10
    for s in steps:
        assert s.page in pages(), s.title
        assert s.move and s.watch and s.ask.endswith("?"), s.title
        assert (ROOT / s.notebook).is_file(), s.notebook


def test_the_steps_go_from_the_core_lab_to_the_topics_in_their_order():
    from labcore import topics

    pages_in_order = [s.page for s in lesson.steps()]
    assert pages_in_order[:4] == ["explorer", "explorer", "explorer", "compare"]
    order = {p.name: t.order for t in topics.all_topics() for p in t.pages}
    topic_steps = [order[p] for p in pages_in_order if p in order]
    assert topic_steps == sorted(topic_steps)


@pytest.mark.parametrize("step", [s for s in lesson.steps() if s.page in PAGES], ids=lambda s: s.title)
def test_a_core_pages_step_is_a_view_the_page_accepts(step):
    parsed = parse(step.query, PAGES[step.page])
    assert not parsed.warnings, (step.title, parsed.warnings)


def test_the_lesson_page_links_every_step_to_its_view():
    at = app({}, page="lesson")
    assert not at.warning and not at.error
    text = " ".join(m.value for m in at.markdown)
    links = [el.proto for el in at.get("page_link")]
    steps = lesson.steps()
    assert len(links) == len(steps)
    for s, link in zip(steps, links):
        assert s.title in text
        assert link.label == f"Open: {pages()[s.page][0]}"
        assert dict(link.query_string and [kv.split("=", 1) for kv in link.query_string.split("&")] or []) == {
            k: str(v) for k, v in s.query.items()}, s.title
