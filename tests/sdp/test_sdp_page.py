"""The SDP app page renders, and moving the rank control moves the certified gap the right way."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from conftest import ROOT

PAGE = str(ROOT / "labcore/sdp/page.py")


def _metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def test_page_renders_and_rank_one_cannot_close_the_gap():
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["n"] = "60"
    at.run()
    assert not at.exception
    gap_auto = float(_metric(at, "relative gap"))
    assert gap_auto < 1e-4
    at.number_input(key="sdp.k").set_value(1).run()  # a rank-1 factor is a +-1 cut: far from the SDP optimum
    assert not at.exception
    assert float(_metric(at, "relative gap")) > 100 * gap_auto
    assert _metric(at, "rank of the iterate") == "1"
