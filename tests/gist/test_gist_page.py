"""GIST: every card's smoke size computes, plots and compares; the app page runs and reacts to its controls."""
from pathlib import Path

import pytest

from labcore import figures
from labcore.gist import cards

ROOT = Path(__file__).resolve().parents[2]


def test_bytes_card_is_exact_even_on_the_smoke_graph():
    """(Every card's smoke size runs in tests/core/test_figures.py.)"""
    res = figures.reproduce("gist-bytes", "smoke")
    assert "not the paper" in res.figure.layout.title.text
    assert cards.CARDS["gist-bytes"].check(res.ours)


def test_cards_through_the_registry(tmp_path):
    """The shared registry serves this topic's cards: stored results, no verdict at smoke size, unknown ids."""
    assert all(figures.get(cid) is card for cid, card in cards.CARDS.items())
    assert figures.reproduce("gist-bytes", "smoke").within_tolerance is None  # smoke: no verdict on the paper
    assert figures.stored("gist-fig4", folder=tmp_path) is None
    with pytest.raises(figures.UnknownCardError, match="gist-nope"):
        figures.stored("gist-nope")


def test_topic_is_declared():
    from labcore.gist.topic import TOPIC

    assert TOPIC.name == "gist" and TOPIC.notebook == "labs/10_gist.ipynb" and TOPIC.pages[0].file.exists()
    assert all(cid.startswith(TOPIC.card_prefix) for cid in cards.CARDS)


def test_page_runs_and_reacts(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("LABCORE_DATA", raising=False)  # the synthetic graph: fast and needs no data
    monkeypatch.chdir(ROOT / "tests")
    at = AppTest.from_file(str(ROOT / "labcore/gist/page.py"), default_timeout=120)
    at.run()
    assert not at.exception
    assert at.sidebar.selectbox(key="gist.graph").value == "synthetic"

    def metric(label):
        return next(m.value for m in at.metric if m.label == label)

    two = metric("of which partitioned blocks")
    at.sidebar.selectbox(key="gist.m").set_value(4).run()
    assert not at.exception
    four = metric("of which partitioned blocks")
    assert float(four.split()[0]) == pytest.approx(float(two.split()[0]) / 2, rel=0.02)  # |θ1|/m
    at.sidebar.radio(key="gist.split").set_value("both").run()
    assert not at.exception
    both = metric("of which partitioned blocks")
    assert float(both.split()[0]) < float(four.split()[0]) / 2  # |θ1|/m² + |θ2|/m
    # an impossible combination says which field and why, instead of failing
    at.sidebar.selectbox(key="gist.m").set_value(8).run()
    at.sidebar.selectbox(key="gist.hidden").set_value(16).run()
    at.sidebar.radio(key="gist.variant").set_value("column").run()
    assert not at.exception
    assert any("variant='column' is invalid" in e.value for e in at.error)
