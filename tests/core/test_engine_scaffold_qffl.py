"""SCAFFOLD and q-FFL on the core engine (FedMF, user vectors private): every engine round against a dense
reference written from the papers' equations (the per-client torch loop with SCAFFOLD's correction applied to the
whole table each step), the mistakes other frameworks' users keep reporting, the ledger, resuming, bad input."""
import numpy as np
import pytest
import torch

from conftest import assert_a_stopped_run_resumes
from labcore.config import ConfigError, RunConfig
from labcore.fed import sampling as S
from labcore.fed.aggregate import fedavg_weights
from labcore.fed.algorithms.qffl import client_losses, qffl_weights
from labcore.fed.engine import Simulation, run
from oracles.fed_loop import train_clients_loop

FAST = dict(method="fedmf", aggregation="weighted", clients_per_round=8, local_epochs=2, batch_size=16, dim=8,
            eval_every=5, rounds=10, rank_every=0, lr=0.3)


def _dense_variates(sim) -> torch.Tensor:
    """Every user's c_i as a dense (n_users, N, d) table (zero for a user who never trained)."""
    v = sim.algorithm.variates
    out = torch.zeros(v.n_users, v.n_items, v.dim)
    for u in range(v.n_users):
        if v.items[u] is not None:
            out[u, torch.from_numpy(v.items[u].astype(np.int64))] = torch.from_numpy(v.values[u])
    return out


def _reference_round(sim):
    """SCAFFOLD's round from Karimireddy et al.'s Alg. 1 (option II) on dense tables, the engine's plan."""
    cfg, t, data = sim.cfg, sim.round, sim.data
    clients = S.round_clients(cfg.client_schedule, data.n_users, cfg.clients_per_round, cfg.seed, t)
    plan = S.plan_round(data, sim.sampler, clients, cfg.num_negatives, cfg.local_epochs, cfg.batch_size, cfg.seed, t)
    x, c, ci = sim.Q.clone(), sim.algorithm.variates.c.clone(), _dense_variates(sim)[clients]
    local = train_clients_loop(x, sim.P[clients], plan, cfg.lr, cfg.weight_decay, correction=c[None] - ci)
    K = torch.from_numpy(plan.n_steps).to(torch.float32)[:, None, None]  # the steps each client took
    ci_new = ci - c[None] - local.update / (K * cfg.lr)  # + (x - y_i) / (K lr), with y_i - x = update
    w = fedavg_weights(torch.from_numpy(plan.n_pos))
    x_new = x + torch.tensordot(w, local.update, dims=1)
    c_new = c + (ci_new - ci).sum(0) / data.n_users  # 1/N over all users, not the cohort
    return clients, local, ci, ci_new, x_new, c_new


def test_scaffold_rounds_equal_the_dense_reference_of_the_paper(tiny):
    sim = Simulation(RunConfig(scaffold=True, client_schedule="rotating", **FAST), tiny)
    sim.keep_view = True
    assert torch.count_nonzero(sim.algorithm.variates.c) == 0 and sim.algorithm.variates.stored_rows() == 0  # variates start at zero
    assert len(set(S.plan_round(tiny, sim.sampler, np.arange(8), 4, 2, 16, 0, 0).n_steps.tolist())) > 1  # K varies
    for _ in range(4):  # rotating 8 a round: clients come back with the variates they kept
        clients, local, ci, ci_new, x_new, c_new = _reference_round(sim)
        sim.step()
        M = len(clients)
        up = {w.name: w for w in sim.view["up_sent"]}
        assert torch.allclose(up["delta_y"].dense(), local.update.reshape(M, -1), rtol=0, atol=2e-6)
        assert torch.allclose(up["delta_c"].dense(), (ci_new - ci).reshape(M, -1), rtol=0, atol=2e-5)
        assert torch.allclose(_dense_variates(sim)[clients], ci_new, rtol=0, atol=2e-5)
        assert torch.allclose(sim.algorithm.variates.c, c_new, rtol=0, atol=1e-6)
        assert torch.allclose(sim.Q, x_new, rtol=0, atol=2e-6)
        assert torch.allclose(sim.P[clients], local.p, rtol=0, atol=2e-6)
    assert torch.count_nonzero(sim.algorithm.variates.c) > 0 and sim.round == 4


def test_the_correction_pulls_the_drift_the_right_way(tiny):
    """With c - c_i = +v on every row, a client's update loses exactly K lr v more than without it: the sign
    the paper has (y <- y - lr (g + c - c_i)), checked on the per-client loop the engine is compared with."""
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(5), 4, 2, 16, 0, 0)
    g = torch.Generator().manual_seed(1)
    Q, P = torch.randn(tiny.n_items, 4, generator=g) * 0.3, torch.randn(5, 4, generator=g) * 0.3
    v = torch.full((5, tiny.n_items, 4), 0.01)
    plain = train_clients_loop(Q, P, plan, 0.2, 0.0)
    corrected = train_clients_loop(Q, P, plan, 0.2, 0.0, correction=v).update
    K = torch.from_numpy(plan.n_steps).to(torch.float32)
    drift = (-K[:, None, None] * 0.2 * v)[~plain.touched]  # a row no batch read moves by the drift alone
    assert torch.allclose(corrected[~plain.touched], drift, rtol=0, atol=1e-6)
    assert float(drift.max()) < -1e-3 and len(set(K.tolist())) > 1


def test_scaffold_first_round_is_fedavg_bit_for_bit_and_doubles_the_bytes(tiny):
    fedavg, scaffold = Simulation(RunConfig(**FAST), tiny), Simulation(RunConfig(scaffold=True, **FAST), tiny)
    a, b = fedavg.step(), scaffold.step()
    assert torch.equal(fedavg.Q, scaffold.Q) and torch.equal(fedavg.P, scaffold.P) and a["loss"] == b["loss"]
    assert b["bytes_up_client"] / a["bytes_up_client"] == pytest.approx(2, rel=1e-4)  # y_i - x and c_i+ - c_i
    # the update and c (their names differ in length)
    assert b["bytes_down_client"] / a["bytes_down_client"] == pytest.approx(2, rel=3e-3)
    parts = scaffold.ledger.frame().groupby("direction")["part"].unique()
    assert list(parts["up"]) == ["delta_y", "delta_c"] and list(parts["down"]) == ["delta_Q", "control_c"]
    scaffold.step()
    fedavg.step()
    assert not torch.equal(fedavg.Q, scaffold.Q)  # from the second round on, c corrects the steps


def test_a_stopped_scaffold_run_resumes_to_the_same_numbers(tiny, tmp_path):
    """The variates (the server's c and every client's c_i) are in the checkpoint."""
    assert_a_stopped_run_resumes(RunConfig(scaffold=True, checkpoint_every=3, **FAST), tiny, tmp_path)


# --- q-FFL ---------------------------------------------------------------------------------------------------------
def test_qffl_weights_by_hand_and_q_zero_gives_the_fedavg_weights():
    p = fedavg_weights(torch.tensor([30, 10, 60]))
    F, sq = np.array([0.5, 2.0, 1.0]), np.array([4.0, 1.0, 9.0])
    assert torch.equal(qffl_weights(p, F, sq, 0.0, 10.0), p)
    # q = 1, L = 10: a_k = p_k F_k / sum_j p_j (L ||D_j||^2 + F_j)
    pd = p.double().numpy()
    want = pd * F / (pd * (10 * sq + F)).sum()
    assert np.allclose(qffl_weights(p, F, sq, 1.0, 10.0).numpy(), want, rtol=1e-6, atol=0)
    # q = 2: h_k / L = 2 F_k L ||D_k||^2 + F_k^2
    want = pd * F**2 / (pd * (2 * F * 10 * sq + F**2)).sum()
    assert np.allclose(qffl_weights(p, F, sq, 2.0, 10.0).numpy(), want, rtol=1e-6, atol=0)


def test_qffl_losses_are_each_clients_loss_before_training(tiny):
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(6), 4, 1, 16, 0, 0)
    g = torch.Generator().manual_seed(2)
    Q, P = torch.randn(tiny.n_items, 4, generator=g), torch.randn(6, 4, generator=g)
    got = client_losses(Q, P, plan)
    for m in range(6):
        s = plan.sample_client == m
        x = (P[m] * Q[torch.from_numpy(plan.sample_item[s].astype(np.int64))]).sum(1)
        want = torch.nn.functional.binary_cross_entropy_with_logits(x, torch.from_numpy(plan.sample_label[s]))
        assert got[m] == pytest.approx(float(want), rel=1e-5)


def test_qffl_on_the_engine_sends_one_float_more_and_weighs_lossy_clients_up(tiny):
    fedavg, q0 = Simulation(RunConfig(**FAST), tiny), Simulation(RunConfig(qffl_q=0.0, **FAST), tiny)
    q2 = Simulation(RunConfig(qffl_q=2.0, **FAST), tiny)
    a, b = fedavg.step(), q2.step()
    q0.step()
    assert torch.equal(fedavg.Q, q0.Q)
    assert 0 < b["bytes_up_client"] - a["bytes_up_client"] <= 64  # the loss: 4 bytes and the part's header
    assert "loss_before" in set(q2.ledger.frame()["part"])
    assert not torch.equal(fedavg.Q, q2.Q) and torch.isfinite(q2.Q).all()


# --- bad input -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad,words", [
    (dict(scaffold=True, method="colr"), "scaffold=True is invalid: runs with method='fedmf' only"),
    (dict(scaffold=True, aggregation="item_mean"), "aggregation='item_mean' is invalid: must be 'weighted'"),
    (dict(scaffold=True, prox_mu=0.01), "prox_mu=0.01 is invalid: must be 0 with scaffold=True"),
    (dict(scaffold=True, up_bits=8), "up_bits=8 is invalid: must be 0 with scaffold=True"),
    (dict(scaffold=True, encryption="ckks"), "encryption='ckks' is invalid: must be 'none' with scaffold=True"),
    (dict(scaffold=True, qffl_q=1.0), "qffl_q=1.0 is invalid: must be 0 with scaffold=True"),
    (dict(qffl_q=1.0, aggregation="item_mean"), "aggregation='item_mean' is invalid: must be 'weighted' with qffl_q"),
    (dict(qffl_q=1.0, method="svd"), "qffl_q=1.0 is invalid: runs with method='fedmf' only"),
])
def test_unsupported_combinations_are_refused_before_training_naming_the_field(tiny, bad, words):
    cfg = RunConfig(**{**FAST, **bad})
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Simulation(cfg, tiny)


def test_negative_q_and_the_dense_layout_are_refused(tiny):
    with pytest.raises(ConfigError, match="qffl_q=-1.0 is invalid: must be >= 0"):
        RunConfig(qffl_q=-1.0)
    with pytest.raises(ConfigError, match="scaffold=True needs the engine's trainer"):
        Simulation(RunConfig(scaffold=True, **FAST), tiny, layout="dense")


def test_new_settings_at_their_defaults_keep_the_stored_cache_keys():
    assert RunConfig().key() == RunConfig(scaffold=False, qffl_q=0.0).key()
    assert RunConfig(scaffold=True).key() != RunConfig().key()


def test_per_client_loss_columns_are_each_users_bce_at_the_global_model(tiny):
    """client_loss_*: every user's mean BCE over its training positives and evaluation negatives."""
    sim = Simulation(RunConfig(**FAST), tiny)
    sim.step()
    got = sim.client_loss_stats()
    per = []
    for u in range(tiny.n_users):
        train = tiny.train_items[tiny.train_indptr[u]:tiny.train_indptr[u + 1]]
        items = np.concatenate([train, tiny.test_negatives[u]])
        y = torch.zeros(len(items))
        y[: tiny.train_indptr[u + 1] - tiny.train_indptr[u]] = 1
        x = (sim.Q[torch.from_numpy(items.astype(np.int64))] * sim.P[u]).sum(1)
        per.append(float(torch.nn.functional.binary_cross_entropy_with_logits(x, y)))
    per = np.array(per)
    assert got["client_loss_mean"] == pytest.approx(per.mean(), rel=1e-5)
    assert got["client_loss_std"] == pytest.approx(per.std(), rel=1e-4)
    assert got["client_loss_worst10"] == pytest.approx(np.sort(per)[-3:].mean(), rel=1e-5)  # 30 users: 3 worst
    row = run(RunConfig(**FAST), data=tiny, use_cache=False, progress=False).table.dropna(subset=["hr"])
    assert row["client_loss_std"].notna().all() and (row["client_loss_mean"] > 0).all()


def test_a_slow_checkpoint_is_not_repeated_before_ten_times_its_cost_went_to_training(tiny, tmp_path, monkeypatch):
    """SCAFFOLD's checkpoint holds every client's variate (a gigabyte on MovieLens-1M): a fake clock shows the
    periodic checkpoint waiting for CHECKPOINT_OVERHEAD times its own writing time; a stop still writes one."""
    import types

    from labcore.runner import rounds

    clock = {"t": 0.0}

    def tick():
        clock["t"] += 1.0
        return clock["t"]

    saved = []

    def slow_save(sim, folder):
        clock["t"] += 1000.0  # writing took 1000 ticks: the next periodic one waits for 10,000 ticks of training
        saved.append(sim.round)

    real = rounds.time  # only the wall clock is faked: the run's CPU clock stays the real one
    monkeypatch.setattr(rounds, "time", types.SimpleNamespace(perf_counter=tick, process_time=real.process_time,
                                                               thread_time=real.thread_time))
    monkeypatch.setattr(rounds, "save_checkpoint", slow_save)
    sim = Simulation(RunConfig(scaffold=True, checkpoint_every=2, **FAST), tiny)
    stops = iter([False] * 9 + [True])
    rounds.train_rounds(sim, tmp_path, should_stop=lambda: next(stops))
    assert saved == [2, 9]  # round 2's, then none until the stop at round 9 (without the wait: 2, 4, 6, 8, 9)
