"""The classroom sweep of the lab's own pages (Explorer, Compare, Encryption, Paper figures): every slider and select
box changed five times in a row in a real browser (`test_browser.sweep_every_control`).

Part of CI's second command (`-m classroom`); the other half is test_browser_sweep_topics.py. CI's workers take a file each,
so the two halves run at the same time.
"""
import pytest

from test_browser import CHROMIUM, browser, classroom_pages, page, server, sweep_every_control  # noqa: F401

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Chromium at /usr/bin/chromium")


# A page's sweep is long by design (the Explorer's 22 controls: 12 to 15 min on a 2-core machine): its hang guard is
# 30 min, not the suite's 10.
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name, path", classroom_pages(core=True))
def test_every_control_of_a_lab_page_sticks_five_times_in_a_row(server, page, name, path):
    sweep_every_control(server, page, name, path)
