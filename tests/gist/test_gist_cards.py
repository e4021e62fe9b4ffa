"""The GIST cards' verdicts: the rows the report cannot be held to (CiteSeer, Table 1's m = 8) are shown, not
checked, and a chance-level result fails every card (every row's kind, for every topic: tests/core/test_figures.py)."""
import pytest

from labcore import figures
from labcore.gist import cards as G

IDS = ("gist-table1-cora", "gist-appendix-local1", "gist-appendix-c", "gist-fig4", "gist-layernorm-cora",
       "gist-bytes")
ACCURACY = ("test_last", "test_max", "test_at_best_val", "val_best")
CHANCE = 100.0 / 7  # Cora has 7 classes


def _stored(card_id):
    res = figures.stored(card_id, figure=False)
    if res is None:
        pytest.skip(f"no stored result for {card_id}")
    return res.ours


def test_the_topic_has_these_cards():
    assert set(G.CARDS) == set(IDS)


@pytest.mark.parametrize("card_id", ["gist-table1-cora", "gist-appendix-local1", "gist-appendix-c", "gist-fig4"])
def test_chance_accuracy_fails_the_accuracy_cards(card_id):
    ours = _stored(card_id).copy()
    for col in ACCURACY:
        ours[col] = CHANCE
    assert not G.CARDS[card_id].check(ours)


def test_citeseer_and_table1_m8_are_shown_not_checked():
    cmp = G.CARDS["gist-appendix-local1"].compare(_stored("gist-appendix-local1"))
    assert (cmp[cmp["quantity"].str.contains("citeseer")]["kind"] == "shown").all()
    t1 = G.CARDS["gist-table1-cora"].compare(_stored("gist-table1-cora"))
    assert (t1[t1["quantity"].str.startswith("subnets=8")]["kind"] == "shown").all()


def test_the_tolerance_comes_from_the_seed_spread():
    # std 0.5 (ddof 0) over 5 seeds against one report run: 2 x 0.559 x sqrt(1 + 1/5)
    assert G.seed_tolerance(0.5, 5, 1) == pytest.approx(2 * 0.5 * (5 / 4) ** 0.5 * 1.2 ** 0.5)
    assert G.seed_tolerance(float("nan"), 1, 5) == G.STATED_TOLERANCE


def test_layernorm_making_no_difference_fails_the_claim():
    ours = _stored("gist-layernorm-cora").copy()
    on = ours[ours["layernorm"]].set_index("subnets")["test_at_best_val"]
    ours["test_at_best_val"] = ours["subnets"].map(on)  # off as good as on at every m
    assert not G.CARDS["gist-layernorm-cora"].check(ours)


def test_a_subnet_sending_the_whole_model_fails_the_bytes_card():
    ours = _stored("gist-bytes").copy()
    whole = ours[ours["subnets"] == 1].set_index("split")["measured_block_bytes"]
    ours["measured_block_bytes"] = ours["split"].map(whole)
    assert not G.CARDS["gist-bytes"].check(ours)


def test_the_notes_say_the_checked_rows_run_the_rescaled_variant():
    for card_id in ("gist-table1-cora", "gist-appendix-local1", "gist-fig4", "gist-layernorm-cora"):
        assert any("rescale_input" in n and "report does not have" in n for n in G.CARDS[card_id].notes)


def _appendix_c(value: float):
    """Table C's rows with our result at `value` for every variant, 5 seeds of spread 0.5."""
    rows = G.paper.APPENDIX_C[G.paper.APPENDIX_C.local.isin(G.C_LOCALS)]
    out = []
    for _, r in rows.iterrows():
        for rescale, variant in G.VARIANTS.items():
            out.append({"graph": r.graph, "local": r.local, "subnets": r.subnets, "variant": variant,
                        "rescale_input": rescale, "test_max": r.test_best if value is None else value,
                        "test_last": r.test_last, "val_best": r.val_best, "test_max_std": 0.5, "seeds": 5})
    import pandas as pd

    return pd.DataFrame(out)


def test_appendix_c_checks_the_faithful_method_on_cora_and_shows_the_rest():
    card = G.CARDS["gist-appendix-c"]
    cmp = card.compare(_appendix_c(None))
    checked = cmp[cmp["kind"] == "number"]
    assert len(checked) == 6 and checked["ok"].all()  # Cora, local 10 and 20, m = 2, 4, 8: the report's numbers
    assert checked["quantity"].str.contains("variant=faithful").all()
    assert checked["quantity"].str.contains("graph=cora").all()
    assert not card.check(_appendix_c(78.9))  # no collapse at m = 8: Cora's 57.0 at local = 20 fails
