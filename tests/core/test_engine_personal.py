"""Ditto and APFL on the core engine (pFedMe and Per-FedAvg: test_engine_meta.py): the personal steps against a
per-client autograd reference, what stays on the device, evaluation with personal models, resume, and the settings
they refuse."""
import numpy as np
import pytest
import torch

from labcore.config import ConfigError, RunConfig, check_personal
from labcore.fed import sampling as S
from labcore.fed.engine import Simulation
from labcore.fed.local_train import train_cohort
from labcore.fed.personal import PersonalModels, train_apfl, train_personal
from oracles.fed_loop import apfl_loop, train_clients_loop
from labcore.metrics import hit_ratio_ndcg
from labcore.scale.federation import check_supported

from conftest import assert_a_stopped_run_resumes

FAST = dict(method="fedmf", aggregation="weighted", clients_per_round=8, local_epochs=2, batch_size=16, dim=8,
            eval_every=3, rounds=6, rank_every=0)


def _plan(tiny, m=6):
    return S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(m), 4, 2, 16, 0, 0)


def _tables(tiny, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(tiny.n_items, 8, generator=g) * 0.3, torch.randn(tiny.n_users, 8, generator=g) * 0.3


@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_from_the_global_model_a_personal_round_is_fedprox_local_training(tiny, lam):
    Q, P = _tables(tiny)
    plan = _plan(tiny)
    ref = train_clients_loop(Q, P[:6], plan, 0.5, 1e-3, None, prox_mu=lam)
    V, p = train_personal(Q[None].expand(6, -1, -1).clone(), P[:6].clone(), Q, plan, 0.5, 1e-3, lam)
    assert torch.allclose(V - Q, ref.update, atol=1e-6) and torch.allclose(p, ref.p, atol=1e-6)


@pytest.mark.parametrize("lam", [0.3, 1.98])  # 1.98: lr lam = 0.99, the per-client scale is folded back many times
def test_personal_steps_from_personal_tables_match_a_per_client_reference(tiny, lam):
    Q, P = _tables(tiny)
    V0 = Q[None] + 0.2 * torch.randn(6, *Q.shape, generator=torch.Generator().manual_seed(1))
    plan = _plan(tiny)
    V, p = train_personal(V0.clone(), P[:6].clone(), Q, plan, 0.5, 1e-3, lam)
    ref = train_clients_loop(Q, P[:6], plan, 0.5, 1e-3, None, prox_mu=lam, start=V0)  # client by client, autograd
    assert torch.allclose(V, Q + ref.update, atol=2e-6) and torch.allclose(p, ref.p, atol=2e-6)
    # a row no batch of client 0 touched only feels the pull: its gap to Q shrinks by (1 - lr lam) every step
    mine = np.unique(plan.sample_item[plan.sample_client == 0])
    other = np.setdiff1d(np.arange(tiny.n_items), mine)
    assert len(other)
    shrink = (1 - 0.5 * lam) ** int(plan.n_steps[0])
    assert torch.allclose(V[0, other] - Q[other], shrink * (V0[0, other] - Q[other]), atol=1e-6)


@pytest.mark.parametrize("alpha, mu", [(0.25, 0.0), (0.7, 0.0), (0.7, 0.3)])
def test_apfl_follows_algorithm_1_client_by_client(tiny, alpha, mu):
    """The personal step takes the gradient at alpha v + (1 - alpha) w with w the local copy as it moves."""
    Q, P = _tables(tiny)
    g = torch.Generator().manual_seed(2)
    V0, pv0 = Q[None] + 0.2 * torch.randn(6, *Q.shape, generator=g), P[:6] + 0.2 * torch.randn(6, 8, generator=g)
    plan = _plan(tiny)
    V, p, W, pw = train_apfl(V0.clone(), pv0.clone(), Q, P[:6], plan, 0.5, 1e-3, alpha, mu)
    ref_W, ref_pw, ref_V, ref_p = apfl_loop(Q, P[:6], V0, pv0, plan, 0.5, 1e-3, alpha, mu)  # autograd, one by one
    for ours, ref in ((V, ref_V), (p, ref_p), (W, ref_W), (pw, ref_pw)):
        assert torch.allclose(ours, ref, atol=2e-6)
    untouched = np.setdiff1d(np.arange(tiny.n_items), np.unique(plan.sample_item[plan.sample_client == 0]))
    assert torch.equal(V[0, untouched], V0[0, untouched])  # no pull on the personal table: untouched rows stay


@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_apfl_s_local_copy_is_the_round_s_global_training_replayed(tiny, mu):
    Q, P = _tables(tiny)
    plan = _plan(tiny)
    _, _, W, pw = train_apfl(Q[None].expand(6, -1, -1).clone(), P[:6].clone(), Q, P[:6], plan, 0.5, 1e-3, 0.4, mu)
    engine = train_cohort(Q, P[:6].clone(), plan, 0.5, 1e-3, prox_mu=mu)  # the compiled trainer the engine runs
    assert torch.allclose(W, engine.dense_update(), atol=1e-6) and torch.allclose(pw, engine.p, atol=1e-6)


def test_apfl_s_personal_step_moves_with_the_local_copy_not_with_the_received_table(tiny):
    """Algorithm 1's point: v's gradient is taken at the mixture with the moving w; the received Q gives other steps."""
    Q, P = _tables(tiny)
    plan = _plan(tiny)
    V0 = Q[None].expand(6, -1, -1).clone()
    moving = train_apfl(V0.clone(), P[:6].clone(), Q, P[:6], plan, 0.5, 1e-3, 0.5)[0]
    received = train_personal(V0.clone(), P[:6].clone(), Q, plan, 0.5, 1e-3, 0.0)  # w held at Q: not APFL
    assert (moving - received[0]).abs().max() > 1e-3


def test_apfl_ranks_every_user_with_the_mixture_of_its_table_and_the_current_global_one(tiny):
    Q, P = _tables(tiny)
    models = PersonalModels(Q, P, "apfl", alpha=0.3)
    models.V += 1.0
    Q_now = Q * 2
    u, items = torch.tensor([[0], [3]]), torch.tensor([[1, 2, 5], [0, 0, 4]])
    mixed = 0.3 * (Q[items] + 1.0) + 0.7 * Q_now[items]  # the rows of (alpha V_u + (1 - alpha) Q) at (u, items)
    assert torch.allclose(models.tables(Q_now)(u, items), mixed, atol=1e-6)
    full = 0.3 * models.V + 0.7 * Q_now[None]  # the same ranking as every user's whole mixed table
    assert hit_ratio_ndcg(P, models.tables(Q_now), tiny.test_items, tiny.test_negatives) == pytest.approx(
        hit_ratio_ndcg(P, full, tiny.test_items, tiny.test_negatives), abs=1e-12)
    P_now = P * 3  # the user vectors mix too: alpha p_u + (1 - alpha) of the user's global vector
    assert torch.allclose(models.users(P_now), 0.3 * P + 0.7 * P_now)
    ditto = PersonalModels(Q, P, "ditto", lam=0.1)
    assert ditto.tables(Q_now) is ditto.V and ditto.users(P_now) is ditto.p


def test_personal_evaluation_with_every_user_holding_the_global_table_is_the_global_evaluation(tiny):
    Q, P = _tables(tiny)
    V = Q[None].expand(tiny.n_users, -1, -1)
    assert hit_ratio_ndcg(P, V, tiny.test_items, tiny.test_negatives) == pytest.approx(
        hit_ratio_ndcg(P, Q, tiny.test_items, tiny.test_negatives), abs=1e-12)


def test_ditto_leaves_the_global_model_and_the_wire_as_fedavg_and_reports_personal_quality(tiny):
    plain, ditto = Simulation(RunConfig(**FAST), tiny), Simulation(RunConfig(personalization="ditto", **FAST), tiny)
    for _ in range(3):
        a, b = plain.step(), ditto.step()
    assert torch.equal(plain.Q, ditto.Q) and torch.equal(plain.P, ditto.P)  # the global training is FedAvg's
    assert plain.ledger.frame().equals(ditto.ledger.frame())  # nothing personal leaves the device
    assert b["hr"] == a["hr"] and 0.0 <= b["hr_personal"] <= 1.0 and "hr_personal" not in a
    trained = S.round_clients("uniform", tiny.n_users, 8, 0, 0)
    assert not torch.equal(ditto.personal.models.V[trained[0]], ditto.personal.models.V[np.setdiff1d(np.arange(tiny.n_users),
                                                                                         trained)[0]])


def test_apfl_leaves_the_global_model_and_the_wire_as_fedavg_and_its_personal_quality_moves_with_alpha(tiny):
    plain = Simulation(RunConfig(**FAST), tiny)
    apfl = [Simulation(RunConfig(personalization="apfl", apfl_alpha=a, **FAST), tiny) for a in (0.2, 0.9)]
    for _ in range(3):
        a, b, c = plain.step(), apfl[0].step(), apfl[1].step()
    assert all(torch.equal(plain.Q, s.Q) for s in apfl)
    assert all(plain.ledger.frame().equals(s.ledger.frame()) for s in apfl)
    assert b["hr"] == c["hr"] == a["hr"] and 0.0 <= b["hr_personal"] <= 1.0
    assert b["hr_personal"] != c["hr_personal"] or b["ndcg_personal"] != c["ndcg_personal"]


@pytest.mark.parametrize("kind", ["ditto", "apfl"])
def test_a_stopped_run_resumes_to_the_same_personal_numbers(tiny, tmp_path, kind):
    cfg = RunConfig(personalization=kind, ditto_lambda=0.5, **{**FAST, "rounds": 9})
    assert_a_stopped_run_resumes(cfg, tiny, tmp_path, 4)


def test_settings_ditto_cannot_run_with_are_refused_naming_the_field(tiny):
    with pytest.raises(ConfigError, match=r"personalization='ditto' .*method='fedmf' only"):
        Simulation(RunConfig(personalization="ditto", **{**FAST, "method": "colr", "rank": 2}), tiny)
    with pytest.raises(ConfigError, match=r"ditto_lambda=2.0 .*below 2 with lr=0.5"):
        Simulation(RunConfig(personalization="ditto", ditto_lambda=2.0, **FAST), tiny)
    with pytest.raises(ConfigError, match=r"personalization='ditto' .*6,040 users x 3,706 items x d=64 = 5.3 GiB"):
        check_personal(RunConfig(personalization="ditto", method="fedmf", dim=64), 6040, 3706)
    with pytest.raises(ConfigError, match=r"personalization='apfl' .*6,040 users x 3,706 items x d=64 = 5.3 GiB"):
        check_personal(RunConfig(personalization="apfl", method="fedmf", dim=64), 6040, 3706)
    with pytest.raises(ConfigError, match=r"apfl_alpha=1.5 .*0.0.*1.0"):
        RunConfig(personalization="apfl", apfl_alpha=1.5)
    check_personal(RunConfig(personalization="apfl", method="fedmf", ditto_lambda=5.0), tiny.n_users, tiny.n_items)
    with pytest.raises(ConfigError, match=r"scaffold=True .*personalization='apfl'.*FedAvg's and FedProx's"):
        Simulation(RunConfig(personalization="apfl", scaffold=True, **FAST), tiny)
    with pytest.raises(ConfigError, match=r"personalization='fedper' .*none, ditto, apfl, pfedme, perfedavg"):
        RunConfig(personalization="fedper")
    with pytest.raises(ConfigError, match=r"ditto_lambda=-1.0"):
        RunConfig(personalization="ditto", ditto_lambda=-1.0)
    with pytest.raises(ValueError, match="personalization='ditto' is not available over Flower"):
        check_supported(RunConfig(personalization="ditto"))
    assert RunConfig(ditto_lambda=0.7).key() == RunConfig().key()
    assert RunConfig(personalization="ditto", ditto_lambda=0.7).key() != RunConfig(personalization="ditto").key()
    assert RunConfig(personalization="ditto", apfl_alpha=0.7).key() == RunConfig(personalization="ditto").key()
    assert RunConfig(personalization="apfl", apfl_alpha=0.7).key() != RunConfig(personalization="apfl").key()
