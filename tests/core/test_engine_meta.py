"""pFedMe and Per-FedAvg on the core engine: each round against a per-client autograd reference, the personal
models they leave, evaluation, resume, and the settings they refuse."""
import numpy as np
import pytest
import torch

from labcore.config import ConfigError, RunConfig, check_personal
from labcore.fed import sampling as S
from labcore.fed.engine import Simulation
from oracles.fed_loop import perfedavg_loop, pfedme_loop
from labcore.fed.meta_train import perfedavg_personal, train_perfedavg, train_pfedme
from labcore.metrics import hit_ratio_ndcg

from conftest import assert_a_stopped_run_resumes

FAST = dict(method="fedmf", aggregation="weighted", clients_per_round=8, local_epochs=2, batch_size=16, dim=8,
            eval_every=3, rounds=6, rank_every=0)


def _plan(tiny, m=6, epochs=2, batch=16):
    return S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(m), 4, epochs, batch, 0, 0)


def _tables(tiny, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(tiny.n_items, 8, generator=g) * 0.3, torch.randn(tiny.n_users, 8, generator=g) * 0.3


def test_one_step_of_the_schedule_is_that_slice_of_the_dense_schedule(tiny):
    plan = _plan(tiny, epochs=1, batch=8)
    steps = plan.steps
    for t in range(steps.shape[0] + 1):  # one past the end: every client is done
        assert np.array_equal(plan.step(t), steps[t] if t < len(steps) else np.full(steps.shape[1:], -1))


@pytest.mark.parametrize("lam, K", [(0.5, 1), (1.5, 3)])
def test_a_pfedme_round_matches_a_per_client_reference(tiny, lam, K):
    Q, P = _tables(tiny)
    plan = _plan(tiny)
    local, theta_rows, theta_p, rnd = train_pfedme(Q, P[:6], plan, 0.5, 1e-3, lam, K)
    w_ref, pw_ref, theta_ref, pt_ref = pfedme_loop(Q, P[:6], plan, 0.5, 1e-3, lam, K)
    assert torch.allclose(local.rows.dense(), w_ref, atol=2e-6) and torch.allclose(local.p, pw_ref, atol=2e-6)
    theta = Q[None].expand(6, -1, -1).clone()
    theta[rnd.row_client, rnd.row_item] += theta_rows
    assert torch.allclose(theta, theta_ref, atol=2e-6) and torch.allclose(theta_p, pt_ref, atol=2e-6)
    moved = local.rows.dense().abs().sum(-1) > 0
    assert moved.any() and not (moved & ~local.rows.touched()).any()  # w moves only rows the client trained


def test_per_fedavg_round_matches_a_per_client_reference_with_an_odd_last_batch(tiny):
    Q, P = _tables(tiny)
    plan = _plan(tiny, epochs=1, batch=8)
    assert (plan.n_steps % 2 == 1).any() and (plan.n_steps % 2 == 0).any()  # both kinds of clients
    local = train_perfedavg(Q, P[:6], plan, 0.5, 1e-3, 0.3)
    w_ref, p_ref = perfedavg_loop(Q, P[:6], plan, 0.5, 1e-3, 0.3)
    assert torch.allclose(local.rows.dense(), w_ref, atol=2e-6) and torch.allclose(local.p, p_ref, atol=2e-6)


def test_per_fedavg_personal_model_is_one_step_on_the_users_first_batch(tiny):
    Q, P = _tables(tiny)
    plan = _plan(tiny, epochs=1, batch=8)
    p_new, moved = perfedavg_personal(Q, P, plan, 0.3, 1e-3)
    from oracles.fed_loop import _batch_loss_grads  # the reference's batch gradients (autograd)

    for m in range(6):
        idx = plan.steps[0, m]
        idx = torch.from_numpy(idx[idx >= 0])
        items = torch.from_numpy(plan.sample_item.astype(np.int64))[idx]
        g_table, g_user = _batch_loss_grads(Q, P[m], items, torch.from_numpy(plan.sample_label)[idx], 1e-3)
        assert torch.allclose(p_new[m], P[m] - 0.3 * g_user, atol=1e-6)
        assert torch.allclose(moved.dense()[m], -0.3 * g_table, atol=1e-6)


def test_pfedme_and_per_fedavg_run_on_the_engine_and_report_personal_quality(tiny):
    plain = Simulation(RunConfig(**FAST), tiny)
    sims = {k: Simulation(RunConfig(personalization=k, **FAST), tiny) for k in ("pfedme", "perfedavg")}
    for _ in range(3):
        a = plain.step()
        rows = {k: s.step() for k, s in sims.items()}
    for k, r in rows.items():
        assert 0.0 <= r["hr_personal"] <= 1.0 and 0.0 <= r["hr"] <= 1.0
        assert not torch.equal(sims[k].Q, plain.Q)  # they train the global update their own way
        assert r["bytes_up"] > 0 and "hr_personal" not in a
    trained = S.round_clients("uniform", tiny.n_users, 8, 0, 0)
    V = sims["pfedme"].algorithm.models.V
    assert not torch.equal(V[trained[0]], V[np.setdiff1d(np.arange(tiny.n_users), trained)[0]])


def test_per_fedavg_evaluation_with_alpha_near_zero_is_the_global_evaluation(tiny):
    cfg = RunConfig(personalization="perfedavg", perfedavg_alpha=1e-12, **FAST)
    sim = Simulation(cfg, tiny)
    for _ in range(3):
        row = sim.step()
    assert row["hr_personal"] == pytest.approx(row["hr"], abs=1e-12)
    assert row["hr"] == pytest.approx(hit_ratio_ndcg(sim.P, sim.Q, tiny.test_items, tiny.test_negatives)[0])


@pytest.mark.parametrize("kind", ["pfedme", "perfedavg"])
def test_a_stopped_run_resumes_to_the_same_personal_numbers(tiny, tmp_path, kind):
    assert_a_stopped_run_resumes(RunConfig(personalization=kind, **{**FAST, "rounds": 9}), tiny, tmp_path, 4)


def test_settings_pfedme_and_per_fedavg_cannot_run_with_are_refused_naming_the_field(tiny):
    with pytest.raises(ConfigError, match=r"pfedme_lambda=2.0 .*below 2 with lr=0.5"):
        Simulation(RunConfig(personalization="pfedme", pfedme_lambda=2.0, **FAST), tiny)
    with pytest.raises(ConfigError, match=r"prox_mu=0.1 .*must be off with personalization='perfedavg'"):
        Simulation(RunConfig(personalization="perfedavg", prox_mu=0.1, **FAST), tiny)
    with pytest.raises(ConfigError, match=r"scaffold=True .*must be off with personalization='pfedme'"):
        Simulation(RunConfig(personalization="pfedme", scaffold=True, **FAST), tiny)
    with pytest.raises(ConfigError, match=r"personalization='pfedme' .*5.3 GiB.*'perfedavg'"):
        check_personal(RunConfig(personalization="pfedme", method="fedmf", dim=64), 6040, 3706)
    check_personal(RunConfig(personalization="perfedavg", method="fedmf", dim=64), 6040, 3706)  # no tables kept
    with pytest.raises(ConfigError, match=r"pfedme_steps=0 .*1"):
        RunConfig(personalization="pfedme", pfedme_steps=0)
    with pytest.raises(ConfigError, match=r"perfedavg_alpha=0.0"):
        RunConfig(personalization="perfedavg", perfedavg_alpha=0.0)
    assert RunConfig(pfedme_steps=3).key() == RunConfig().key()
    assert RunConfig(personalization="pfedme", pfedme_steps=3).key() != RunConfig(personalization="pfedme").key()
    assert RunConfig(personalization="perfedavg", pfedme_steps=3).key() == RunConfig(personalization="perfedavg").key()
