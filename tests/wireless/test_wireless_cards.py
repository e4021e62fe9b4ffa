"""The wireless report's cards: only the numbers the report prints are rows of kind number, and a baseline result
fails the checks (every row's kind, for every topic: tests/core/test_figures.py)."""
from __future__ import annotations

import json

import pytest

from conftest import ROOT
from labcore.figures import registry
from labcore.wireless import cards

CARD_IDS = ["wireless-fig2", "wireless-fig3", "wireless-fig4", "wireless-table1"]


def test_the_list_covers_every_card_of_the_topic():
    assert sorted(CARD_IDS) == sorted(cards.CARDS)


def test_only_the_numbers_the_report_prints_are_numbers():
    def kinds(card_id):
        res = registry.stored(card_id, figure=False)
        return registry.get(card_id).compare_fn(res.ours, res.paper).set_index("quantity")["kind"]

    fig2 = kinds("wireless-fig2")
    assert fig2["downlink-only floor drop 8 -> 16 bits (decades of r_k)"] == "number"
    assert (fig2.drop("downlink-only floor drop 8 -> 16 bits (decades of r_k)") == "claim").all()
    assert (kinds("wireless-fig3") == "claim").all() and (kinds("wireless-fig4") == "claim").all()
    t1 = kinds("wireless-table1")
    assert (t1[t1.index.str.contains("allocation|threshold")] == "number").all()
    assert (t1[t1.index.str.startswith("Eq. (12)")] == "claim").all()


def _curve(ours, dst: tuple, src: tuple, factor: float = 1.0):
    """A copy of `ours` whose curve (bits up, bits down, figure) `dst` is curve `src` times `factor`."""
    out = ours.copy()
    pick = lambda bu, bd, fig: (out.bits_up == bu) & (out.bits_down == bd) & (out.figure == fig)  # noqa: E731
    a, b = pick(*dst), pick(*src)
    assert a.sum() == b.sum() > 0
    for col in ("err", "err_lo", "err_hi"):
        out.loc[a, col] = out.loc[b, col].values * factor
    return out


def _baseline(card_id, ours):
    if card_id == "wireless-fig2":  # 16 bits no better than 8: the bits do not set the floor
        return _curve(ours, (0, 16, "fig2"), (0, 8, "fig2"))
    if card_id == "wireless-fig3":  # (8, 8) no better than under-using the uplink
        return _curve(ours, (8, 8, "fig3"), (4, 8, "fig3"))
    if card_id == "wireless-fig4":  # over-using the uplink costs the downlink's floor and 0.5 %: within the noise
        return _curve(ours, (16, 8, "fig4"), (8, 16, "fig4"), 1.005)
    # Table 1: the even split (2^7, 2^7) where user 2's own budget is 2^6
    at6 = ours["K2_bits"] == 6
    return ours.assign(up_k1_bits=ours["up_k1_bits"].where(~at6, 7), up_k2_bits=ours["up_k2_bits"].where(~at6, 7))


@pytest.mark.parametrize("card_id", CARD_IDS)
def test_a_baseline_result_fails_the_check(card_id):
    card, res = registry.get(card_id), registry.stored(card_id, figure=False)
    assert card.check(res.ours)
    assert not card.check(_baseline(card_id, res.ours))


def test_an_ordering_inside_the_trials_noise_does_not_hold():
    """Fig. 4's uplink over-use: a floor 0.5 % above the downlink's is not 'deteriorates more' over 100 trials."""
    res = registry.stored("wireless-fig4", figure=False)
    ours = _curve(res.ours, (16, 8, "fig4"), (8, 16, "fig4"), 1.005)
    table = cards._fig4_compare(ours, res.paper).set_index("quantity")
    assert not table.loc["over-using the uplink vs the downlink: floor (16, 8) / floor (8, 16)", "ok"]


def test_every_result_file_holds_the_command_that_regenerates_it():
    for cid in CARD_IDS:
        meta = json.loads((ROOT / "results" / f"{cid}.json").read_text())
        assert meta["command"] == f"labcore figure {cid} --full --save", cid
