"""Wireless topic: the cards at smoke size, the app page (AppTest), the notebook checks and the topic declaration."""
from __future__ import annotations

import pytest

from conftest import ROOT
from labcore import figures, topics
from labcore.wireless import cards, exercises  # noqa: F401  (registers the cards)

CARD_IDS = ("wireless-fig2", "wireless-fig3", "wireless-fig4", "wireless-table1")


def test_topic_is_declared():
    t = topics.get("wireless")
    assert t.section == "Course reports" and t.order == 120 and t.notebook == "labs/09_wireless_quantization.ipynb"
    assert (ROOT / t.notebook).exists() and all(p.file.exists() for p in t.pages)


@pytest.mark.parametrize("card_id", CARD_IDS)
def test_figure_cards_run_the_reports_dimension_at_full_size(card_id):
    """(Every card's smoke size runs in tests/core/test_figures.py.)"""
    card = cards.CARDS[card_id]
    if card.kind == "figure":
        assert len(card.configs("full")) >= 4 and card.configs("full")[0].d == 200


def test_stored_full_cards_are_within_tolerance():
    for cid in CARD_IDS:
        res = figures.stored(cid)
        assert res is not None and res.size == "full", cid
        assert res.within_tolerance, cards.CARDS[cid].compare(res.ours)


def test_exercise_checks():
    assert exercises.check_omega(..., 200, 8).ok is None
    assert exercises.check_omega(200 / (4 * 256**2), 200, 8).ok
    assert not exercises.check_omega(200 / 256**2, 200, 8).ok
    assert exercises.check_message_bits(32 + 2 * 200 + 200 * 8, 200, 8).ok
    assert exercises.check_threshold_bits(5.37, "up").ok and not exercises.check_threshold_bits(6.43, "up").ok
    assert exercises.check_allocation((8, 6), 9, 6, 14).ok and not exercises.check_allocation((7, 7), 9, 6, 14).ok
    assert exercises.check_allocation("infeasible", 9, 6, 14, link="down").ok
    assert exercises.lab_config(paper=False).d == 20 and exercises.lab_config(paper=True).d == 200


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_page_runs_and_reacts():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "labcore/wireless/page.py"), default_timeout=120)
    at.query_params["d"] = "20"
    at.query_params["T"] = "60"
    at.query_params["R"] = "4"
    at.run()
    assert not at.exception
    floor8 = float(_metric(at, "measured error floor"))
    bits8 = _metric(at, "uplink per user per round")
    assert bits8 == f"{32 + 2 * 20 + 20 * 8:,} bits"
    at.slider(key="wireless.ku").set_value(4).run()  # fewer uplink bits: a higher floor, fewer bits
    assert not at.exception
    assert float(_metric(at, "measured error floor")) > floor8
    assert _metric(at, "uplink per user per round") == f"{32 + 2 * 20 + 20 * 4:,} bits"
    at.slider(key="wireless.K2").set_value(6).run()
    at.radio(key="wireless.link").set_value("down").run()
    assert not at.exception and any("Theorem 1 needs" in w.value for w in at.warning)
