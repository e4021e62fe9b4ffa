"""Every card of the SDP topic computes and plots at smoke size, says so in its title, and is registered."""
from __future__ import annotations

import pytest

from labcore import topics

def _card(card_id):
    """This topic's card, without importing the other topics' card modules."""
    from labcore.figures.registry import _CARDS

    topics.get("sdp").load_cards()
    return _CARDS[card_id]


SDP_CARDS = ["sdp-cora-convergence", "sdp-rank-threshold", "sdp-rounding", "sdp-rules", "sdp-hazan-rate"]


def test_topic_is_declared_and_its_cards_are_listed():
    t = topics.get("sdp")
    assert t.section == "Course reports" and t.order == 150 and t.notebook == "labs/12_low_rank_sdp.ipynb"
    t.load_cards()
    from labcore.figures.registry import _CARDS

    assert set(SDP_CARDS) <= set(_CARDS)
    assert topics.card_topic("sdp-rounding").name == "sdp"


def test_smoke_rounding_ratio_and_hazan_rank_claims_hold():
    card = _card("sdp-rounding")
    assert card.check(card.compute("smoke"))
    hz = _card("sdp-hazan-rate")
    cmp = hz.compare(hz.compute("smoke")).set_index("quantity")
    assert cmp.loc["max over t of rank(X_t) - (t + 1)", "ok"]


def test_the_rank_thresholds_label_sits_at_sqrt_2n_on_the_log_axis():
    """On a log axis an annotation's x is log10 of the value: the label at x = sqrt(2n) once stretched the axis to
    10^sqrt(2n), and every point crowded at its left end."""
    import numpy as np
    import pandas as pd

    from labcore.sdp.plots import rank_threshold

    df = pd.DataFrame({"k": [2, 4, 8, 16], "rel_gap": [1e-1, 1e-3, 1e-6, 1e-9], "sqrt_2n": 73.6})
    fig = rank_threshold(df)
    (label,) = [a for a in fig.layout.annotations if a.text.startswith("sqrt(2n)")]
    assert label.x == pytest.approx(np.log10(73.6)) and label.yref == "paper"
    assert fig.layout.shapes[0].x0 == 73.6  # the dashed line: in the axis's values


def test_the_lab_reference_is_never_the_papers():
    from labcore.sdp.cards import stored_result

    _card("sdp-cora-convergence")
    card, ours = stored_result("sdp-cora-convergence")
    if ours is None:
        pytest.skip("no stored result")
    cmp = card.compare(ours)
    assert not cmp["paper"].astype(str).str.contains("8.7|4490", regex=True).any()
    assert not card.paper["value"].astype(str).str.contains("8.7|4490", regex=True).any()


def _baseline(card_id, change):
    from labcore.sdp.cards import stored_result

    _card(card_id)
    card, ours = stored_result(card_id)
    if ours is None:
        pytest.skip(f"no stored result for {card_id}")
    return card, change(ours.copy())


def _random_cut(df):
    df["ratio"] = 0.6  # about what a random cut gets on Cora (half the edges, against the SDP value)
    return df


def _equal_sweeps(df):
    df["sweeps"] = 300
    return df


def _slow_rate(df):
    df["objective_gap"] = 100.0 / df["iter"] ** 0.5  # 1/sqrt(t), slower than the report's 1/t
    return df


def _stuck(df):
    df["rel_gap"] = 0.1
    return df


def _worsening(df):
    mix = df["method"] == "mixing"
    df.loc[mix, "primal"] = df.loc[mix, "primal"].iloc[0] - df.loc[mix, "iter"]  # the cut value falls
    return df


@pytest.mark.parametrize("card_id,change", [("sdp-rounding", _random_cut), ("sdp-rules", _equal_sweeps),
                                            ("sdp-hazan-rate", _slow_rate), ("sdp-rank-threshold", _stuck),
                                            ("sdp-cora-convergence", _worsening)])
def test_a_baseline_result_fails_the_card(card_id, change):
    card, ours = _baseline(card_id, change)
    assert not card.check(ours)
