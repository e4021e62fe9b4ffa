"""The federated-optimization topic: cards at smoke size, the topic declaration, exercises, the app page."""
from __future__ import annotations

import pandas as pd
import pytest

from conftest import ROOT
from labcore.flalgos import cards  # noqa: F401  (registers the cards)
from labcore.flalgos import exercises as ex
from labcore.flalgos import experiments
from labcore.figures import registry

CARD_IDS = ["flalgos-fedprox-stragglers", "flalgos-scaffold-quadratics", "flalgos-scaffold-digits",
            "flalgos-qffl-fairness", "flalgos-personalization", "flalgos-backdoor", "flalgos-bytes"]


def test_topic_declares_itself():
    from labcore import topics
    from labcore.flalgos.topic import TOPIC

    assert TOPIC.name == "flalgos" and TOPIC.section == "Course reports" and TOPIC.order == 110
    assert (ROOT / TOPIC.notebook).exists() and all(p.file.exists() for p in TOPIC.pages)
    assert "flalgos" in topics.names()
    assert topics.card_topic("flalgos-backdoor").name == "flalgos"


@pytest.mark.parametrize("card_id", CARD_IDS)
def test_cards_smoke_and_full_sizes_run_the_same_configs_of_the_topic(card_id):
    """(Every card's smoke size runs in tests/core/test_figures.py.)"""
    card = registry.get(card_id)
    assert all(c.key().startswith("flalgos-") for c in card.configs("smoke"))
    assert len(card.configs("full")) == len(card.configs("smoke"))


def test_stored_full_results_are_within_tolerance():
    """Whatever full-size results are committed must meet their cards' checks."""
    for cid in CARD_IDS:
        res = registry.stored(cid)
        if res is not None:
            assert res.size == "full"
            assert registry.get(cid).check(res.ours), f"{cid}: stored result misses its tolerance"


def test_bytes_card_smoke_measures_two_x_for_scaffold():
    card = registry.get("flalgos-bytes")
    ours = card.compute("smoke")
    assert card.check(ours)
    q = ours[(ours.algorithm == "scaffold") & (ours.quantize_bits == 4)]["up_bytes_per_client"].iloc[0]
    assert q < 0.25 * ours[(ours.algorithm == "scaffold") & (ours.quantize_bits == 0)]["up_bytes_per_client"].iloc[0]


def test_exercises_say_what_to_fill_and_judge_answers():
    assert ex.check_scaffold_uplink_factor(...).ok is None
    fb = ex.check_mu_zero(0.0)
    assert fb.ok, fb.message
    assert not ex.check_mu_zero(0.5).ok
    assert ex.check_scaffold_uplink_factor(2.0).ok
    assert not ex.check_scaffold_uplink_factor(1.0).ok
    assert ex.check_more_heterogeneous(0.1).ok and not ex.check_more_heterogeneous(10.0).ok
    assert ex.lab_config(paper=True).n_clients == 30 and ex.lab_config(paper=False).rounds == 20


def test_engine_exercises_judge_answers_from_real_runs():
    """Section 5 and 6 of the notebook: CoLR's downlink under FedAdam, SCAFFOLD's first round."""
    assert ex.check_server_step_downlink(...).ok is None and ex.check_scaffold_first_round(...).ok is None
    assert ex.check_server_step_downlink(16.0).ok and not ex.check_server_step_downlink(1.0).ok
    fb = ex.check_scaffold_first_round(0.0)
    assert fb.ok, fb.message
    assert not ex.check_scaffold_first_round(0.01).ok
    tables = ex.scaffold_pair(rounds=2)  # from the second round on the variates are no longer zero
    assert float((tables["scaffold"] - tables["fedavg"]).abs().max()) > 0


def test_dropout_exercises_recover_the_sum_and_report_the_refusal():
    """Section 7: secure aggregation with dropout gives the plaintext sum; below the threshold the server refuses."""
    assert ex.check_secagg_threshold(...).ok is None
    assert ex.check_secagg_threshold(11).ok and not ex.check_secagg_threshold(10).ok
    assert ex.check_secagg_threshold(7, n_sampled=20, share=0.3).ok
    tables = ex.dropout_pair(dropout=0.3)
    assert sum(tables["dropped"]) > 0 and float((tables["secagg"] - tables["plain"]).abs().max()) < 1e-6
    assert ex.secagg_refusal(0.45, 0.5).startswith("round 2: only 6 of the 20 sampled clients uploaded")
    assert ex.secagg_refusal(0.3, 0.25).startswith("all 6 rounds unmasked")


def test_full_sizes_follow_the_papers_settings():
    fp = experiments.stragglers_runs("full")
    assert {c.stragglers for _, c in fp} == {0.0, 0.5, 0.9}
    assert all(c.lr == 0.01 and c.batch_size == 10 and c.n_clients == 30 and c.clients_per_round == 10
               for _, c in fp)
    assert {(c.algorithm, c.mu) for _, c in fp} == {("fedavg", 0.0), ("fedprox", 0.0), ("fedprox", 1.0)}
    assert all(c.drops_stragglers() == (c.algorithm == "fedavg") for _, c in fp)


def test_page_renders_and_scaffold_doubles_the_uplink_metric():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "labcore/flalgos/page.py"), default_timeout=120)
    at.run()
    assert not at.exception
    up = lambda: float(next(m.value for m in at.metric if m.label.startswith("uplink")).split()[0])  # noqa: E731
    scaffold_up = up()
    at.selectbox(key="flalgos.algorithm").select("fedavg").run()
    assert not at.exception
    assert 1.9 < scaffold_up / up() < 2.1
    at.slider(key="flalgos.attackers").set_value(2).run()
    assert not at.exception
    assert any(m.label == "backdoor success" for m in at.metric)
    at.selectbox(key="flalgos.algorithm").select("ditto").run()
    at.selectbox(key="flalgos.task").select("mf").run()  # personalization does not run on MF: back to FedAvg
    assert not at.exception
    assert at.selectbox(key="flalgos.algorithm").value == "fedavg"
    assert any(m.label == "HR@10" for m in at.metric)
    at.selectbox(key="flalgos.task").select("digits").run()
    at.selectbox(key="flalgos.algorithm").select("qffl").run()
    at.selectbox(key="flalgos.defense").select("median").run()
    assert any("defense" in e.value for e in at.error)  # a defense that cannot run with q-FedAvg's aggregation


def test_engine_card_runs_the_algorithms_on_the_labs_engine():
    """The recommendation card trains on the core engine (RunConfig, its compiled trainer and ledger): FedProx
    and the server optimizers compose with CoLR, and a stateful server makes CoLR's downlink dense."""
    from labcore.config import RunConfig

    card = registry.get("flalgos-engine-ml1m")
    smoke, full = card.configs("smoke"), card.configs("full")
    assert all(isinstance(c, RunConfig) for c in smoke + full) and len(smoke) == len(full) == 10
    algorithms = {(c.method, c.server_optimizer, c.prox_mu) for c in full}
    assert algorithms >= {("colr", "fedadam", 0.0), ("fedmf", "fedavg", 0.01)}
    assert all((c.dataset, c.clients_per_round, c.rounds, c.client_schedule) == ("ml-1m", 60, 1000, "rotating")
               for c in full)
    ours = card.compute("smoke")
    cmp = card.compare(ours)
    ratio = float(cmp[cmp.quantity.str.contains("CoLR@4: downlink")]["ours"].iloc[0])
    assert 15 < ratio < 16.5  # items x d against items x r (+ B's seed and framing)
    assert len(card.plot(ours).data) > 0
    res = registry.stored("flalgos-engine-ml1m")
    if res is not None:
        assert res.size == "full" and card.check(res.ours)


def test_drift_card_runs_scaffold_and_qffl_on_the_labs_engine():
    """SCAFFOLD and q-FFL on the core engine (FedMF, the FedAvg weights): the card's smoke size runs them for real,
    the ledger doubles SCAFFOLD's bytes both ways, and the stored full result passes its checks."""
    from labcore.config import RunConfig

    card = registry.get("flalgos-engine-drift-ml1m")
    full = card.configs("full")
    assert all(isinstance(c, RunConfig) and c.method == "fedmf" and c.aggregation == "weighted" for c in full)
    assert sum(c.scaffold for c in full) == 1 and sorted(c.qffl_q for c in full) == [0.0, 0.0, 0.001, 0.01, 1.0]
    assert all((c.dataset, c.clients_per_round, c.rounds) == ("ml-1m", 60, 1000) for c in full)
    ours = card.compute("smoke")
    cmp = card.compare(ours).set_index("quantity")
    assert float(cmp.loc["uplink per client, SCAFFOLD / FedAvg", "ours"]) == pytest.approx(2, abs=0.01)
    assert float(cmp.loc["downlink per client, SCAFFOLD / FedAvg", "ours"]) == pytest.approx(2, abs=0.01)
    assert ours["client_loss_std"].notna().all() and len(card.plot(ours).data) > 0
    res = registry.stored("flalgos-engine-drift-ml1m")
    assert res is not None and res.size == "full" and card.check(res.ours)


def test_stragglers_card_runs_on_the_labs_engine():
    """Stragglers on the core engine: 0, 50 and 90 % of each cohort, FedAvg dropping them and FedProx keeping their
    partial work; the smoke size runs for real and the stored full result passes its checks."""
    card = registry.get("flalgos-engine-stragglers-ml1m")
    full = card.configs("full")
    assert sorted({c.stragglers for c in full}) == [0.0, 0.5, 0.9]
    assert {c.drops_stragglers() for c in full} == {True, False}
    ours = card.compute("smoke")
    drop = ours[(ours.stragglers == 0.9) & ours.algorithm.str.startswith("FedAvg")]["bytes_up"]
    keep = ours[(ours.stragglers == 0.9) & (ours.algorithm == "FedProx mu=0.01")]["bytes_up"]
    assert float(keep.iloc[-1]) == pytest.approx(10 * float(drop.iloc[-1]), rel=1e-6)  # 20 clients send, not 2
    assert len(card.plot(ours).data) == 9
    res = registry.stored("flalgos-engine-stragglers-ml1m")
    assert res is not None and res.size == "full" and card.check(res.ours)


def test_backdoor_exercises_judge_the_boost_and_run_the_defenses():
    """Section 8: model replacement's boost, and the small engine run under three defenses."""
    assert ex.check_replacement_boost(...).ok is None
    assert ex.check_replacement_boost(25).ok and not ex.check_replacement_boost(4).ok
    assert ex.check_replacement_boost(10, attackers_weight=0.1).ok
    t = ex.backdoor_runs(("none", "clip"), rounds=4).set_index("defense")
    assert t.loc["none", "backdoor success"] > t.loc["clip", "backdoor success"]
    assert ex.check_krum_counts(...).ok is None
    assert ex.check_krum_counts((53, 55)).ok and not ex.check_krum_counts((55, 53)).ok
    assert not ex.check_krum_counts(55).ok
    t = ex.backdoor_runs(("none", "krum"), rounds=4, attack="dba").set_index("defense")
    assert t.loc["none", "backdoor success"] > t.loc["krum", "backdoor success"]


def test_ditto_exercises_judge_the_pull_and_compare_personal_and_global_models():
    """Section 9: the lambda that erases an untouched row's gap, and the small run's two HR@10."""
    assert ex.check_ditto_full_pull(...).ok is None
    assert ex.check_ditto_full_pull(2).ok and not ex.check_ditto_full_pull(0.5).ok
    assert ex.check_ditto_full_pull(10, lr=0.1).ok
    t = ex.ditto_quality((0.01, 1.0), rounds=3)
    assert len(t) == 2 and t["global HR@10"].nunique() == 1  # Ditto leaves the global model as FedAvg's
    assert t["personal HR@10"].between(0, 1).all()


def test_apfl_exercises_judge_the_gradient_share_and_compare_personal_and_global_models():
    """Section 9's APFL part: the chain rule through the mixture, and the small run's two HR@10."""
    assert ex.check_apfl_gradient_share(...).ok is None
    assert ex.check_apfl_gradient_share(0.25).ok and not ex.check_apfl_gradient_share(0.75).ok
    t = ex.personal_quality((0.25, 1.0), rounds=3, kind="apfl")
    assert list(t["alpha"]) == [0.25, 1.0] and t["global HR@10"].nunique() == 1
    assert t["personal HR@10"].between(0, 1).all()


def test_pfedme_exercise_judges_the_local_step_and_the_small_runs_report_personal_quality():
    assert ex.check_pfedme_local_step(...).ok is None
    assert ex.check_pfedme_local_step(0.5).ok and not ex.check_pfedme_local_step(1.0).ok
    for kind in ("pfedme", "perfedavg"):
        t = ex.personal_quality((0.5,), rounds=3, kind=kind)
        assert t["personal HR@10"].between(0, 1).all() and t["global HR@10"].between(0, 1).all()


# --- verdicts: every row says what it is, and a baseline fed as the method fails -------------------------------------
TOPIC_CARDS = CARD_IDS + [
    "flalgos-engine-ml1m", "flalgos-engine-drift-ml1m", "flalgos-engine-stragglers-ml1m",
    "flalgos-engine-dropout-ml1m", "flalgos-engine-backdoor-ml1m", "flalgos-engine-ditto-ml100k",
    "flalgos-engine-apfl-ml100k", "flalgos-engine-personal-ml100k"]


def test_the_list_covers_every_card_of_the_topic():
    assert sorted(TOPIC_CARDS) == sorted(c for c in registry.card_ids() if c.startswith("flalgos-"))


@pytest.mark.parametrize("card_id", TOPIC_CARDS)
def test_every_compared_row_is_a_claim_or_shown(card_id):
    """These papers print figures, not numbers: a row is a claim (checked) or shown (ok None), never a number."""
    res = registry.stored(card_id, figure=False)
    assert res is not None, f"{card_id}: no committed result"
    table = registry.get(card_id).compare_fn(res.ours, res.paper)  # the card's own kinds, before the registry
    assert "kind" in table and table["kind"].isin(["claim", "shown"]).all()
    assert ((table["kind"] == "shown") == table["ok"].isna()).all()


def _as(df, dst: dict, src: dict, cols) -> "pd.DataFrame":
    """A copy of `df` whose rows matching `dst` carry the values of the rows matching `src` (same order)."""
    out = df.copy()
    pick = lambda where: (out[list(where)] == pd.Series(where)).all(axis=1)  # noqa: E731
    a, b = pick(dst), pick(src)
    assert a.sum() == b.sum() > 0, (dst, src)
    out.loc[a, cols] = out.loc[b, cols].values
    return out


def _baseline(card_id: str, ours):
    """The method replaced by its baseline (FedAvg, the undefended run, q = 0, an untrained model)."""
    hr = ["hr"]
    if card_id == "flalgos-fedprox-stragglers":
        return _as(ours, {"method": "FedProx mu=1"}, {"method": "FedAvg (drops stragglers)"}, ["train_loss"])
    if card_id == "flalgos-scaffold-quadratics":
        return _as(ours, {"method": "SCAFFOLD"}, {"method": "FedAvg"}, ["distance", "up_bytes"])
    if card_id == "flalgos-scaffold-digits":
        return _as(ours, {"method": "SCAFFOLD"}, {"method": "FedAvg"}, ["test_acc", "up_bytes"])
    if card_id == "flalgos-qffl-fairness":
        return ours.assign(**{c: ours.loc[ours.q == 0, c].iloc[0] for c in ours.columns if c not in ("q", "size")})
    if card_id == "flalgos-personalization":
        out = ours.copy()
        for m in ("Ditto", "pFedMe", "APFL"):
            out = _as(out, {"method": m}, {"method": "FedAvg (global)"}, ["accuracy"])
        return out
    if card_id == "flalgos-backdoor":  # every defense as the undefended run
        out = ours.copy()
        for d in ("norm clipping", "median"):
            out = _as(out, {"attack": "replacement", "defense": d}, {"attack": "replacement", "defense": "none"},
                      ["clean_acc", "backdoor"])
        return out
    if card_id == "flalgos-bytes":
        return _as(ours, {"algorithm": "scaffold", "quantize_bits": 0}, {"algorithm": "fedavg", "quantize_bits": 0},
                   ["up_bytes_per_client", "down_bytes_per_client", "up_vs_fedavg"])
    if card_id == "flalgos-engine-ml1m":  # an untrained FedProx (chance: 1 positive among 100 candidates)
        return ours.assign(hr=ours["hr"].where(ours.algorithm != "FedProx mu=0.01", 0.1))
    if card_id == "flalgos-engine-drift-ml1m":
        return _as(ours, {"algorithm": "SCAFFOLD"}, {"algorithm": "FedAvg"},
                   hr + ["bytes_up_client", "bytes_down_client"])
    if card_id == "flalgos-engine-stragglers-ml1m":
        out = ours.copy()
        for s in (0.5, 0.9):
            out = _as(out, {"stragglers": s, "algorithm": "FedProx mu=0.01"},
                      {"stragglers": s, "algorithm": "FedAvg (drops stragglers)"}, hr + ["loss_smooth"])
        return out
    if card_id == "flalgos-engine-dropout-ml1m":  # SecAgg off by a dozen users' hits, more than float rounding
        secure = ours["arm"] == "FedAvg + SecAgg"
        return ours.assign(hr=ours["hr"].where(~secure, ours["hr"] - 0.002))
    if card_id == "flalgos-engine-backdoor-ml1m":  # Krum, which stops it, as the undefended run
        return ours.assign(backdoor_success=ours["backdoor_success"].where(~ours.arm.str.contains("Krum"), 1.0))
    return ours.assign(hr_personal=ours["hr"])  # personal models that are the global model


@pytest.mark.parametrize("card_id", TOPIC_CARDS)
def test_a_baseline_fed_as_the_method_fails_the_check(card_id):
    card, res = registry.get(card_id), registry.stored(card_id, figure=False)
    assert not card.check(_baseline(card_id, res.ours))


def test_every_result_file_holds_the_command_that_regenerates_it():
    import json

    for cid in TOPIC_CARDS:
        meta = json.loads((ROOT / "results" / f"{cid}.json").read_text())
        assert meta["command"] == f"labcore figure {cid} --full --save", cid
