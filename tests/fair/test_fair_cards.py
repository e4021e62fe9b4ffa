"""FAIR figure cards: every card at smoke size (seconds), full size as slow tests on the stored runs."""
import math

import pandas as pd
import pytest

from labcore.figures import registry
from labcore.fair import cards, paper_ranking, plots
from labcore.fair.tradeoff import tradeoff_configs

FAIR_CARDS = ("fair-table2-goodreads", "fair-table2-ml1m", "fair-table3-goodreads", "fair-table3-ml1m",
              "fair-table4-ml100k", "fair-table8-9-ml100k", "fair-table5-digits", "fair-table6-digits", "fair-fig4",
              "fair-fig1-tradeoff")


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One run cache for the module: cards that share a run (Fig. 4 and Tables 2/5/6) share it here too."""
    return tmp_path_factory.mktemp("fair-runs")


def test_every_fair_card_is_registered():
    ids = {c.id for c in registry.list_cards()}
    assert set(FAIR_CARDS) <= ids
    for cid in FAIR_CARDS:
        card = registry.get(cid)
        assert card.caption and card.expected and card.tolerance_text and card.notes
        assert all(hasattr(c, "key") for c in card.configs("smoke"))


@pytest.mark.parametrize("card_id", FAIR_CARDS)
def test_cards_reproduce_at_smoke_size(card_id, shared_cache, monkeypatch):
    monkeypatch.setenv("LABCORE_CACHE", str(shared_cache))
    res = registry.reproduce(card_id, "smoke")
    card = registry.get(card_id)
    assert set(card.columns) <= set(res.ours.columns)
    cmp = card.compare(res.ours)
    assert list(cmp.columns) == list(registry.COMPARE_COLUMNS) and len(cmp)
    assert res.figure is not None


def test_fedhm_rows_are_na_beyond_d(shared_cache, monkeypatch):
    monkeypatch.setenv("LABCORE_CACHE", str(shared_cache))
    ours = registry.get("fair-table2-goodreads").compute("smoke")
    hm = ours[ours.method == "FedHM"].set_index("capacity")["ndcg"]
    assert not math.isnan(hm["1x-2x"]) and not math.isnan(hm["1x-4x"])
    assert math.isnan(hm["1x-8x"]) and math.isnan(hm["1x-16x"])


def test_tradeoff_configs_span_data_loss_to_model_loss():
    cfgs = tradeoff_configs(paper_ranking("synthetic", rounds=2), "1x-2x-4x-8x")
    assert [c.model_ratio for c in cfgs[:-1]] == [1, 2, 4, 8] and cfgs[-1].method == "fair"
    df = pd.DataFrame({"strategy": ["one model size"] * 2 + ["FAIR-HET"], "model_ratio": [1, 8, 0],
                       "devices_share": [0.25, 1.0, 1.0], "metric": [0.2, 0.21, 0.25]})
    assert len(plots.tradeoff(df).data) == 2


@pytest.mark.slow
@pytest.mark.parametrize("card_id", FAIR_CARDS)
def test_cards_full_size_match_their_stored_results(card_id):
    """Full size (hours on 2 cores without the run cache): recompute and compare with results/<id>.csv."""
    stored = registry.stored(card_id)
    if stored is None:
        pytest.skip(f"no stored full-size result for {card_id}")
    res = registry.reproduce(card_id, "full")
    num = [c for c in res.ours.columns if res.ours[c].dtype.kind == "f"]
    pd.testing.assert_frame_equal(res.ours[num].reset_index(drop=True), stored.ours[num].reset_index(drop=True),
                                  check_exact=False, rtol=1e-4, atol=1e-6)


def test_fair_app_page_renders(shared_cache, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("LABCORE_CACHE", str(shared_cache))
    page = Path(__file__).resolve().parents[2] / "labcore" / "fair" / "page.py"
    at = AppTest.from_file(str(page), default_timeout=120)
    at.query_params["_fair_data"] = "synthetic"
    at.query_params["_fair_rounds"] = "4"
    at.run()
    assert not at.exception
    assert [s.value for s in at.subheader][:2] == ["What a device stores", "Model loss or data loss (Fig. 1)"]
    at.button[0].click().run()
    assert not at.exception and len(at.dataframe) >= 2  # devices, trade-off (+ a stored card if any)


# --- verdicts: a baseline or chance result fails the card (every row's kind: tests/core/test_figures.py) --------
@pytest.fixture
def committed_results(monkeypatch):
    monkeypatch.delenv(registry.RESULTS_ENV, raising=False)  # the checkout's results/


def _committed(card_id: str) -> pd.DataFrame:
    res = registry.stored(card_id, figure=False)
    if res is None:
        pytest.skip(f"no committed result for {card_id}")
    return res.ours


def _flat(ours: pd.DataFrame, column: str, value: float) -> pd.DataFrame:
    """Every run scores `value` (N/A stays N/A): popularity alone or chance, whatever the method."""
    out = ours.copy()
    out[column] = out[column].where(out[column].isna(), value)
    return out


# popularity alone (Goodreads-100), one constant for every method (other rankings), chance (ten digits)
BASELINES = [("fair-table2-goodreads", "ndcg", cards.POPULARITY_GOODREADS), ("fair-table2-ml1m", "ndcg", 0.3),
             ("fair-table3-goodreads", "ndcg", cards.POPULARITY_GOODREADS), ("fair-table3-ml1m", "ndcg", 0.3),
             ("fair-table4-ml100k", "mse", 1.0), ("fair-table8-9-ml100k", "mse", 1.0),
             ("fair-table5-digits", "accuracy", 0.1),
             ("fair-table6-digits", "accuracy", 0.1), ("fair-fig4", "metric", 0.1),
             ("fair-fig1-tradeoff", "metric", 0.3)]


@pytest.mark.parametrize("card_id, column, value", BASELINES)
def test_a_baseline_or_chance_result_fails_the_card(card_id, column, value, committed_results):
    card = registry.get(card_id)
    assert not card.check(_flat(_committed(card_id), column, value))


def test_every_fair_card_has_a_baseline_test():
    assert {b[0] for b in BASELINES} == set(FAIR_CARDS)


def test_table2_goodreads_fedhm_rows_are_numbers_against_the_papers_values(committed_results):
    cmp = registry.get("fair-table2-goodreads").compare(_committed("fair-table2-goodreads"))
    fedhm = cmp[cmp["quantity"].str.startswith("FedHM")]
    ran = fedhm["paper"].notna()
    assert (fedhm.loc[ran, "kind"] == "number").all() and (fedhm.loc[~ran, "kind"] == "claim").all()
    off = _committed("fair-table2-goodreads").copy()
    off.loc[(off.method == "FedHM") & (off.capacity == "1x-2x"), "ndcg"] = 0.66  # far from the paper's 0.274
    assert not registry.get("fair-table2-goodreads").check(off)


def test_table2_ml1m_fedhm_values_are_shown_not_checked(committed_results):
    """ML-1M-100 stands in for AmazonProduct-100: its values cannot be checked against the paper's."""
    cmp = registry.get("fair-table2-ml1m").compare(_committed("fair-table2-ml1m"))
    fedhm = cmp[cmp["quantity"].str.startswith("FedHM") & cmp["paper"].notna()]
    assert len(fedhm) and (fedhm["kind"] == "shown").all()


def test_table6_inconsistent_subspaces_at_chance_are_misses(committed_results):
    card = registry.get("fair-table6-digits")
    cmp = card.compare(_committed("fair-table6-digits"))
    inconsistent = cmp[cmp["quantity"].str.startswith("inconsistent")]
    assert len(inconsistent) == 6 and (inconsistent["kind"] == "number").all()
    assert not inconsistent["ok"].any() and not card.check(_committed("fair-table6-digits"))


def test_tables_8_9_check_fair_against_lowrank_and_a_smaller_model_of_the_same_storage():
    """On the paper's own numbers the card's claims hold; FAIR given LowRank's or the small model's MSE fails."""
    card = registry.get("fair-table8-9-ml100k")
    ours = cards.P.TABLE8_9.assign(round_best=1000)
    assert card.check(ours)
    fair = ours["method"] == "FAIR"
    as_lowrank = ours.copy()
    as_lowrank.loc[fair & (ours["setting"] == "16x"), "mse"] = 0.7092
    as_small = ours.copy()
    as_small.loc[fair & (ours["setting"] == "8x"), "mse"] = 0.7464  # FedAvg with d = 4
    for worse in (as_lowrank, as_small):
        assert not card.check(worse)


@pytest.mark.parametrize("card_id", ["fair-table2-goodreads", "fair-table3-goodreads"])
def test_goodreads_numbers_are_means_of_three_seeds_judged_by_their_spread(card_id, committed_results):
    """Each printed NDCG@20 is checked within SPREAD_SIGMAS standard deviations of (ours - paper's), from the
    spread of our seeds; moving one mean by three times its tolerance turns its row into a miss."""
    card, ours = registry.get(card_id), _committed(card_id)
    ran = ours["ndcg"].notna()
    assert (ours.loc[ran, "seeds"] == len(cards.SEEDS)).all() and (ours.loc[ran, "ndcg_std"] > 0).all()
    cmp = card.compare(ours)
    numbers = cmp[cmp["kind"] == "number"]
    assert len(numbers) and numbers["note"].str.startswith(f"mean of {len(cards.SEEDS)} seeds").all()
    row = ours[ran].index[0]
    paper = numbers.iloc[0]["paper"]
    tol = registry.seed_tolerance(float(ours.loc[row, "ndcg_std"]), int(ours.loc[row, "seeds"]), 1, cards.HEADLINE_TOL)
    moved = ours.copy()
    moved.loc[row, "ndcg"] = paper + 3 * tol
    assert not bool(card.compare(moved).iloc[0]["ok"])
