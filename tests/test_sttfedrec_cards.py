"""STTFedRec: efficiency and privacy measurements, plots, figure cards (tiny sizes)."""
import numpy as np
import pandas as pd
import pytest

from labcore.sttfedrec import efficiency, exercises, plots, privacy
from labcore.sttfedrec.config import STTConfig
from labcore.sttfedrec.frameworks import load_bundle

TINY = dict(synthetic_users=60, synthetic_items=80, n_features=128, clients_per_round=6, eval_users=0)


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(STTConfig(**TINY))


def test_table3_measures_both_frameworks(bundle):
    cfg = STTConfig(**TINY)
    t3, parts = efficiency.table3(cfg, towers=("dssm",), reps=2, bundle=bundle)
    row = t3.set_index("model")
    fl, st = row.loc["FL-DSSM"], row.loc["STTFedRec-DSSM"]
    assert st["infer_ms"] < fl["infer_ms"]  # scoring 100 embeddings vs hashing + embedding the catalogue
    assert st["train_mb_server_links"] < fl["train_mb"]  # one tower down instead of two, no item-tower gradient
    assert st["train_mb_device_to_device"] > 0 and fl["train_mb_device_to_device"] == 0
    r32 = row.loc["STTFedRec-DSSM/ring32"]
    assert r32["train_mb_device_to_device"] == pytest.approx(st["train_mb_device_to_device"] / 2, rel=0.01)
    assert fl["infer_mb"] * 2**20 == len(bundle.catalog.raw_item_bytes()) + 1 + len("raw_catalog") + 11
    assert st["infer_mb"] * 2**20 > 80 * 128 * 4  # the candidate embeddings (all 80 items here), float32
    p = parts.set_index(["model", "part"])
    assert p.loc[("FL-DSSM", "item_tower_grad"), "bits"] == fl["item_params"] * 32
    assert {"share_user_grad", "mixed_user_grad", "item_embeddings"} <= set(parts[parts.model == "STTFedRec-DSSM"].part)


def test_chain_cost_sweep_is_exact_and_flat_for_devices():
    df = efficiency.chain_cost_sweep(10_000, Ks=(4, 16), measured_values=2_000, repeats=1)
    assert (df["checked_values"] == 2_000).all()
    assert df["exact"].all()
    sh = df[df["mode"] == "shares"].set_index("K")
    assert (sh["sequential_hops"] == 2).all()
    assert sh.loc[16, "sas_bytes_received"] == 4 * sh.loc[4, "sas_bytes_received"]
    assert sh.loc[16, "device_bytes_sent"] == sh.loc[4, "device_bytes_sent"]  # a device's traffic does not grow with K
    rl = df[df["mode"] == "relay"].set_index("K")
    assert list(rl["sequential_hops"]) == [5, 17]


def test_exercise_check(bundle):
    fb = exercises.check_sas_upload_bytes((100 + 5 * 8 + 1) * 8, n_user=100, union=5, d=8)
    assert fb.ok
    assert not exercises.check_sas_upload_bytes(100, n_user=100, union=5, d=8).ok
    assert exercises.check_sas_upload_bytes(..., n_user=100, union=5, d=8).ok is None
    assert exercises.check_sas_upload_bytes((100 + 40 + 1) * 4, n_user=100, union=5, d=8, ring_bits=32).ok


def test_server_guess_metrics_and_attacks(bundle):
    y = np.array([[[1, 0, 0, 0]]], np.int8)
    m = privacy.guess_metrics(np.array([[[0.9, 0.1, 0.2, 0.3]]]), y, 1)
    assert m == {"precision": 1.0, "auc": 1.0}
    m = privacy.guess_metrics(np.array([[[0.0, 0.1, 0.2, 0.3]]]), y, 1)
    assert m == {"precision": 0.0, "auc": 0.0}
    cat = bundle.catalog
    items, labels = privacy.draw_requests(cat, np.arange(10), 1, 9, 6, np.random.default_rng(0))
    assert items.shape == (10, 6, 10) and (labels.sum(-1) == 1).all()
    for a in range(10):  # every clicked item is a training click of that user
        assert np.isin(items[a][labels[a] == 1], cat.user_train(a)).all()
    link = privacy.guess_metrics(privacy.attack_scores(items, cat, "linkage", np.random.default_rng(0)), labels, 1)
    assert 0 <= link["precision"] <= 1
    df = privacy.rho_sweep(cat, rhos=(0.5, 0.9), users=20, rounds=3)
    assert set(df["attack"]) == set(privacy.ATTACKS) and set(df["negatives"]) == {"uniform", "popular"}
    d = privacy.dropout_scenarios(K=6, n=50)
    assert set(d["outcome"]) == {"sum of the live clients", "ChainBrokenError"}
    assert (d[d["outcome"] != "ChainBrokenError"]["max_error"] < 1e-6).all()


def test_plots_build_from_frames():
    t2 = pd.DataFrame([{"model": m, "auc": 0.8, "p10": 0.4, "ndcg10": 0.5} for m in plots.MODEL_ORDER])
    from labcore.sttfedrec.experiments import TABLE2_PAPER

    assert len(plots.table2_bars(t2, TABLE2_PAPER).data) == 6
    f4 = pd.DataFrame([{"tower": t, "rho": r, "auc": 0.8, "ndcg10": 0.5} for t in ("dssm", "clsm") for r in (0.5, 0.9)])
    assert len(plots.rho_curves(f4).data) == 4
    comp = plots.request_composition(0.9, 10)
    assert (comp["clicked"], comp["non_clicked"]) == (1, 9)


def test_cards_are_registered_after_the_core_cards():
    from labcore import figures
    from labcore.sttfedrec import cards as sttfedrec_cards

    ids = figures.card_ids()
    assert set(sttfedrec_cards.CARD_IDS) <= set(ids)
    assert any(i.startswith("colr-") for i in ids)  # importing ours first must not hide the registry's own cards
    card = figures.get("sttfedrec-table2-ml1m")
    ours = pd.DataFrame([{"model": "FL-DSSM", "auc": 0.80, "p10": 0.4, "ndcg10": 0.5},
                         {"model": "STTFedRec-DSSM", "auc": 0.805, "p10": 0.4, "ndcg10": 0.5}])
    assert card.check(ours)
    assert not card.check(ours.assign(auc=[0.80, 0.82]))
    assert "STTFedRec within 1 AUC point" in card.describe()


def test_split_learning_page_renders_and_keeps_rho_in_the_url(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("LABCORE_DATA", raising=False)  # the synthetic catalogue: fast and always available
    from conftest import ROOT

    at = AppTest.from_file(str(ROOT / "labcore/sttfedrec/page.py"), default_timeout=120)
    at.query_params["rho"] = "0.7"
    at.run()
    assert not at.exception
    assert at.markdown[0].value.startswith("**3** clicked + **7**")
    at.slider[0].set_value(0.8).run()
    assert not at.exception
    assert at.query_params["rho"] in ("0.8", ["0.8"])
    at.slider[0].set_value(0.6).run()  # the next change sticks too (no snapping back to the link's value)
    assert at.slider[0].value == 0.6 and at.query_params["rho"] in ("0.6", ["0.6"])
    at.slider[0].set_value(0.9).run()  # the default: the link leaves it out
    assert at.slider[0].value == 0.9 and "rho" not in at.query_params


def test_split_learning_page_warns_about_a_bad_link_until_dismissed(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.delenv("LABCORE_DATA", raising=False)
    from conftest import ROOT

    at = AppTest.from_file(str(ROOT / "labcore/sttfedrec/page.py"), default_timeout=120)
    at.query_params["rho"] = "2"
    at.run()
    assert at.slider[0].value == 0.9
    assert any("rho='2'" in w.value and "0.5 to 0.95" in w.value for w in at.warning)
    at.slider[1].set_value(12).run()  # another change: the warning stays
    assert any("rho='2'" in w.value for w in at.warning)
    at.button(key="split_learning._dismiss_0").click().run()
    assert not any("rho='2'" in w.value for w in at.warning)
