"""The classroom sweep of the topics' pages (FAIR, STTFedRec, FELLRec, the course reports' pages): every slider and
select box changed five times in a row in a real browser (`test_browser.sweep_every_control`).

Part of CI's second command (`-m classroom`); the other half is test_browser_sweep_lab.py. CI's workers take a file each,
so the two halves run at the same time.
"""
import pytest

from test_browser import CHROMIUM, browser, classroom_pages, page, server, sweep_every_control  # noqa: F401

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Chromium at /usr/bin/chromium")


# The longest topic page's sweep (the matrix-completion race's) takes about 4 min; the hang guard is the lab pages'.
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name, path", classroom_pages(core=False))
def test_every_control_of_a_topic_page_sticks_five_times_in_a_row(server, page, name, path):
    sweep_every_control(server, page, name, path)
