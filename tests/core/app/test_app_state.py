"""The app's URL scheme (labcore.app.state): links round-trip, bad links fall back with a message."""
import random

import pytest

from labcore.app import presets, state
from labcore.app.state import COMPARE, ENCRYPTION, EXPLORER, FIGURES, PAGES, encode, link, parse
from labcore.config import RunConfig


def _random_value(c, rng):
    if c.kind in ("select", "select_slider", "chain"):
        return rng.choice(c.options)
    if c.kind == "tiers":
        return rng.choice(list(state.TIER_PRESETS.values()))
    if c.kind == "toggle":
        return rng.random() < 0.5
    if c.kind in ("slider", "number"):
        if isinstance(c.step, float) or isinstance(c.lo, float):
            return round(rng.uniform(c.lo, min(c.hi, 10.0)), 3)
        return rng.randint(int(c.lo), int(min(c.hi, 10_000)))
    raise AssertionError(c.kind)


@pytest.mark.parametrize("spec", [EXPLORER, COMPARE, ENCRYPTION], ids=lambda s: s.name)
def test_every_valid_view_round_trips_through_its_link(spec):
    rng = random.Random(0)
    n = 0
    for _ in range(400):
        values = {c.field: _random_value(c, rng) for c in spec.controls if rng.random() < 0.4}
        try:
            cfg = spec.base.replace(**values)
        except ValueError:  # an inconsistent draw (rank > d, ckks with top-k, ...): not a view
            continue
        q = encode(cfg, spec)
        assert all(isinstance(v, str) for v in q.values())
        p = parse(q, spec)
        assert p.warnings == [], (q, p.warnings)
        assert p.cfg == cfg
        n += 1
    assert n > 50


def test_the_bare_url_is_the_default_view_and_defaults_are_not_written():
    p = parse({}, EXPLORER)
    assert p.cfg == EXPLORER.base and p.warnings == [] and p.hide == frozenset()
    assert encode(EXPLORER.base, EXPLORER, p.options) == {}
    assert EXPLORER.base.rounds == 100  # the live default (the core's is 200)


def test_the_seed_and_options_are_part_of_the_link():
    cfg = EXPLORER.base.replace(seed=7, method="fedmf", up_bits=4)
    q = encode(cfg, EXPLORER, {"y": "ndcg"}, ("encryption", "bits"))
    assert q == {"method": "fedmf", "up_bits": "4", "seed": "7", "_y": "ndcg", "_hide": "encryption,bits"}
    p = parse(q, EXPLORER)
    assert p.cfg == cfg and p.options["y"] == "ndcg"
    assert p.hide == {"encryption", "he_real_every", "secagg_threshold", "up_bits", "down_bits"}  # each of a group's
    assert link(cfg, y="ndcg") == "explorer?method=fedmf&up_bits=4&seed=7&_y=ndcg"


@pytest.mark.parametrize("query, field, fragment", [
    ({"dim": "abc"}, "dim", "expected an integer"),
    ({"method": "lora"}, "method", "allowed values are"),
    ({"rank": "0"}, "rank", "allowed range"),
    ({"rank": "200"}, "rank", "must be <= dim"),
    ({"clients_per_round": "5000"}, "clients_per_round", "range is 1..500"),  # valid, but off the slider
    ({"topk_ratio": "0.05"}, "topk_ratio", "the control offers"),
    ({"bandwidth_tiers": "[[0.5,1,1]]"}, "bandwidth_tiers", "add up to 1"),
    ({"bandwidth_tiers": "not json"}, "bandwidth_tiers", "JSON list"),
    ({"up_bits": "-3"}, "up_bits", "allowed range"),
    ({"seed": "1.5"}, "seed", "expected an integer"),
])
def test_a_bad_value_falls_back_to_the_default_with_a_message_naming_the_field(query, field, fragment):
    p = parse(query, EXPLORER)
    assert p.cfg == EXPLORER.base
    assert len(p.warnings) == 1 and field in p.warnings[0] and fragment in p.warnings[0], p.warnings


def test_settings_that_do_not_fit_together_drop_the_offending_one():
    p = parse({"dim": "8", "rank": "16", "seed": "3"}, EXPLORER)
    assert (p.cfg.dim, p.cfg.rank, p.cfg.seed) == (8, EXPLORER.base.rank, 3)
    assert any("rank=16" in w for w in p.warnings)
    p = parse({"method": "svd", "encryption": "ckks"}, EXPLORER)
    assert p.cfg.method == "svd" and p.cfg.encryption == "none"
    assert any("encryption" in w and "svd" in w for w in p.warnings)
    # the offending field is not in the link: everything falls back
    p = parse({"dim": "2"}, EXPLORER)  # base rank 4 > d=2
    assert p.cfg == EXPLORER.base and p.warnings


def test_stale_and_unknown_parameters_are_reported_not_fatal():
    p = parse({"colr_rank": "4", "_zoom": "2", "_hide": "encryption,nonsense", "embed": "true",
               "_card": "colr-fig3-ml1m"}, EXPLORER)  # _card: the Figures page's option, ignored here
    assert p.cfg == EXPLORER.base
    text = " ".join(p.warnings)
    assert "colr_rank" in text and "_zoom" in text and "nonsense" in text
    assert "embed" not in text and "_card" not in text
    assert p.hide == {"encryption", "he_real_every", "secagg_threshold"}


def test_page_options_are_validated():
    p = parse({"_mode": "fig9", "_values": "1,2,999", "_base": "maybe"}, COMPARE)
    assert p.options == COMPARE.option_defaults() and len(p.warnings) == 3
    p = parse({"_mode": "ratio", "_values": "8,2,2", "_base": "0"}, COMPARE)
    assert p.options["mode"] == "ratio" and p.options["values"] == (2, 8) and p.options["base"] is False
    p = parse({"_size": "huge"}, FIGURES)
    assert p.options["size"] == "stored" and p.warnings


def test_encryption_page_takes_ckks_parameters_from_the_link():
    p = parse({"ckks_degree": "16384", "ckks_coeff_bits": "[60,40,40,60]", "ckks_scale_bits": "40"}, ENCRYPTION)
    assert p.warnings == [] and p.cfg.ckks_degree == 16384 and p.cfg.ckks_chain() == (60, 40, 40, 60)
    p = parse({"ckks_coeff_bits": "[60,60,60,60,60]"}, ENCRYPTION)  # 300 bits > 218 allowed at N=8192
    assert p.cfg.ckks_coeff_bits == () and "ckks_coeff_bits" in p.warnings[0]


@pytest.mark.parametrize("preset", [p for p in presets.PRESETS if p.page in PAGES], ids=lambda p: p.id)
def test_every_paper_preset_is_a_valid_link(preset):
    p = parse(preset.query, PAGES[preset.page])
    assert p.warnings == []
    assert p.cfg != PAGES[preset.page].base


def test_every_hide_name_is_a_control_or_group():
    for spec in (EXPLORER, COMPARE, ENCRYPTION):
        for g, members in spec.groups.items():
            assert parse({"_hide": g}, spec).hide == set(members)
        with pytest.raises(ValueError):
            RunConfig(rank=0)


def test_every_fair_and_sttfedrec_preset_uses_values_its_page_offers():
    from labcore.fair import page as fair
    from labcore.sttfedrec import page as split_learning

    offered = {"_fair_data": tuple(fair.DATASETS), "_fair_tiers": fair.TIERS, "_fair_card": fair.CARDS,
               "_fair_rounds": tuple(str(r) for r in fair.ROUNDS), "card": split_learning.CARDS,
               "negatives": ("uniform", "popular")}
    others = [p for p in presets.PRESETS if p.page not in PAGES and p.page != "privacy"]  # DP: test_dp_topic.py
    assert {p.page for p in others} == {"fair", "split_learning"} and len(others) >= 6
    for p in others:
        for name, value in p.query.items():
            if name in offered:
                assert value in offered[name], (p.id, name, value)
            else:
                assert name in split_learning.DEFAULTS, (p.id, name)
                float(value)


def test_data_skew_lives_in_the_link_and_a_bad_value_falls_back_with_a_message():
    p = parse({"data_skew": "1.5"}, EXPLORER)
    assert p.cfg.data_skew == 1.5 and p.warnings == []
    assert encode(p.cfg, EXPLORER) == {"data_skew": "1.5"}
    for raw, fragment in (("9", "range is 0.0..2.0"), ("lots", "expected a number")):
        p = parse({"data_skew": raw}, EXPLORER)
        assert p.cfg == EXPLORER.base and len(p.warnings) == 1
        assert "data_skew" in p.warnings[0] and fragment in p.warnings[0], p.warnings
    p = parse({"dataset": "ml-1m", "data_skew": "2"}, EXPLORER)
    assert p.cfg.dataset == "ml-1m" and p.cfg.data_skew == 1.0
    assert any("synthetic data only" in w for w in p.warnings)
    assert parse({"_hide": "heterogeneity"}, EXPLORER).hide >= {"data_skew", "bandwidth_tiers"}
    assert COMPARE.control("data_skew") is None  # an Explorer knob


# --- a refreshed page is one session; a missing dataset reads well on a page ----------------------------------
def test_a_refreshed_page_counts_as_one_watcher_and_a_closed_tab_stops_the_run(monkeypatch, tmp_path):
    from labcore.app import jobs
    from labcore.data import load_dataset

    connected = {"old", "new"}
    monkeypatch.setattr(jobs, "_session_alive", lambda s: s in connected)
    monkeypatch.setattr(jobs, "GONE_S", 0.0)
    monkeypatch.setattr(jobs, "LAST_GONE_S", 3600.0)
    job = jobs.Job(RunConfig(synthetic_size="tiny", rounds=2), load_dataset("synthetic", size="tiny"), tmp_path)
    job.attach("old")
    connected.discard("old")  # the page is refreshed: its old session disconnects ...
    assert job.watchers == 0 and not job.should_stop()  # ... the run waits for the page to come back
    job.attach("new")
    assert job.watchers == 1 and job.sessions() == {"new"}  # one session watching, not two
    connected.discard("new")  # the tab is closed
    monkeypatch.setattr(jobs, "LAST_GONE_S", 0.0)
    assert job.should_stop()


def test_a_missing_dataset_reads_as_markdown_with_the_raw_download_error_apart(tmp_path, monkeypatch):
    from labcore.data import load_dataset
    from labcore.data.errors import DatasetNotFoundError, readable

    monkeypatch.setenv("LABCORE_DATA", str(tmp_path))
    try:
        load_dataset("ml-1m", download=False)
        pytest.skip("ml-1m is in ./data or the lab data folder here")
    except DatasetNotFoundError as err:
        md, details = err.markdown()
    assert md.startswith("**ml-1m**: no data files found.")
    assert f"- `{tmp_path / 'ml-1m'}`" in md and "\n\n**How to get it:** put ratings.dat" in md
    assert "\\$LABCORE_DATA" in md and details == ""  # `$` would start a formula in Streamlit's markdown
    raw = ("ml-1m: no data files found. Looked for ratings.dat in:\n  - /x/ml-1m  (./data)\n"
           "Download of https://files.grouplens.org/datasets/movielens/ml-1m.zip failed: ConnectionError: "
           "HTTPSConnectionPool(host='files.grouplens.org', port=443): Max retries exceeded (Caused by "
           "NameResolutionError(\"Failed to resolve 'files.grouplens.org'\"))\nFix: put ratings.dat into /x/ml-1m/.")
    md, details = readable("DatasetNotFoundError: " + raw)
    assert "HTTPSConnectionPool" not in md and details.startswith("ConnectionError: HTTPSConnectionPool")
    assert "Downloading from files.grouplens.org failed: the server's name could not be resolved" in md


def test_fair_table_chart_puts_each_paper_diamond_on_its_bar_with_a_legend_entry():
    import pandas as pd

    from labcore.fair.plots import table_bars

    ours = pd.DataFrame({"capacity": ["-", "1x-2x", "1x-2x", "1x-8x", "1x-8x"],
                         "method": ["FedAvg", "FAIR-HET", "FedHM", "FAIR-HET", "FedHM"],
                         "ndcg": [0.27, 0.26, 0.25, 0.24, float("nan")]})
    paper = pd.DataFrame({"capacity": ["central", "-", "1x-2x", "1x-2x", "1x-8x", "1x-8x"],
                          "method": ["Central", "FedAvg", "FAIR-HET", "FedHM", "FAIR-HET", "FedHM"],
                          "ndcg": [0.28, 0.278, 0.276, 0.274, 0.274, float("nan")]})
    fig = table_bars(ours, paper, "ndcg")
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    diamonds = [t for t in fig.data if t.type == "scatter" and t.mode == "markers"]
    assert len(diamonds) == 1 and diamonds[0].showlegend is not False  # one legend entry for the paper
    bar_x = {x for t in bars.values() for x in t.x}
    on_bars = [x for x in diamonds[0].x if x in bar_x]
    assert len(on_bars) == 4  # FedAvg and the three numbers of 1x-2x / 1x-8x sit on our bars ...
    assert len(diamonds[0].x) == 5  # ... Central (no bar of ours) stands alone
    assert bars["FedAvg"].x[0] == 0  # a category's bars are centred on it (FedAvg alone at '-')
    assert any(t.type == "scatter" and t.mode == "text" and list(t.text) == ["N/A"] for t in fig.data)  # the scheme that cannot run


def test_dropout_attack_and_defense_travel_in_the_link():
    q = {"method": "fedmf", "attack": "replacement", "attacker_share": "0.05", "defense": "median", "dropout": "0.2",
         "encryption": "secagg", "secagg_threshold": "0.3"}
    p = parse(q, EXPLORER)
    assert not p.warnings
    c = p.cfg
    assert (c.attack, c.attacker_share, c.defense, c.dropout, c.secagg_threshold) == ("replacement", 0.05, "median",
                                                                                      0.2, 0.3)
    assert parse(encode(c, EXPLORER, {}, ()), EXPLORER).cfg == c
    bad = parse({**q, "attacker_share": "0.9"}, EXPLORER)  # outside the config's range: reported, default kept
    assert bad.warnings and bad.cfg.attacker_share == EXPLORER.base.attacker_share
