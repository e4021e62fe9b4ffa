"""The algorithms topic's dense views (`flalgos/strategies.py`, one flat parameter vector a client) and the
engine's (the item table stored by the rows each client touched) are one math. SCAFFOLD (`fed/scaffold.py`): on a
tiny case over two rounds they send the same uplink and compute the same aggregate, server variate c and client
variates c_i. q-FFL (`fed/algorithms/qffl.py`): the same server step. FedAvg's local training, APFL and pFedMe: the
dense classes, given FedMF's gradient (`_TinyMF`), leave the models the engine's trainers leave after a round.
(FedProx and Ditto pull the whole parameter vector in the dense view, the item table alone on the engine, where the
user vector is not part of the global model: those two are tested against per-client loops, `oracles.fed_loop`.)"""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from labcore.fed.aggregate import fedavg_weights
from labcore.fed.scaffold import ControlVariates
from labcore.fed.updates import RowUpdate
from labcore.flalgos.config import FLConfig
from labcore.flalgos.simulation import Aggregation
from labcore.flalgos.strategies import RoundContext, Scaffold
from oracles.fed_loop import _batch_loss_grads

N_USERS, N_ITEMS, D, LR = 3, 4, 2, 0.1
ROUNDS = (  # (cohort, steps each client took, the items each touched, its positives)
    ([0, 2], [2, 3], [[0, 2], [1, 2]], [3.0, 1.0]),
    ([0, 1], [3, 1], [[1, 3], [0]], [2.0, 2.0]),
)


def _rows(touched, gen) -> RowUpdate:
    """Each client's gradient steps G_i on the rows it touched (the engine's trainer output)."""
    indptr = np.concatenate([[0], np.cumsum([len(t) for t in touched])]).astype(np.int64)
    item = torch.tensor([i for t in touched for i in t], dtype=torch.int64)
    return RowUpdate.from_offsets(len(touched), N_ITEMS, indptr, item, torch.randn(len(item), D, generator=gen))


def _dense(rows: RowUpdate, m: int) -> torch.Tensor:
    out = torch.zeros(N_ITEMS, D)
    a, b = int(rows.indptr[m]), int(rows.indptr[m + 1])
    out[rows.item[a:b]] = rows.values[a:b]
    return out


def _engine_variate(cv: ControlVariates, u: int) -> torch.Tensor:
    out = torch.zeros(N_ITEMS, D)
    if cv.items[u] is not None:
        out[torch.from_numpy(cv.items[u].astype(np.int64))] = torch.from_numpy(cv.values[u])
    return out.reshape(-1)


def test_scaffolds_dense_view_and_the_engines_rows_are_one_math():
    cfg = FLConfig(algorithm="scaffold", lr=LR)
    dense = Scaffold(cfg, SimpleNamespace(P=N_ITEMS * D, init=lambda gen: torch.zeros(N_ITEMS * D)), N_USERS)
    engine = ControlVariates(N_USERS, N_ITEMS, D)
    gen = torch.Generator().manual_seed(0)
    for t, (cohort, steps, touched, n_pos) in enumerate(ROUNDS):
        rows, K = _rows(touched, gen), torch.tensor(steps)
        # the dense client ends at y_i = x + G_i - K_i lr (c - c_i): its steps' gradients plus the constant drift
        c, c_i = dense.c.clone(), dense.c_i[cohort].clone()
        theta = dense.w + torch.stack([_dense(rows, m).reshape(-1) for m in range(len(cohort))]) \
            - (K[:, None] * LR) * (c - c_i)
        ctx = RoundContext(t, torch.tensor(cohort), K, batches=None, gen=None)
        parts = dense.uplink(theta, ctx)
        agg = dense.aggregate(parts, torch.tensor(n_pos), Aggregation(cfg, len(cohort), torch.arange(len(cohort)), t))
        dense.server_update(agg, ctx)

        wires, engine_agg = engine.exchange(rows, np.array(cohort), engine.cohort_rows(np.array(cohort)),
                                            np.array(steps), LR, fedavg_weights(torch.tensor(n_pos)))
        assert wires[0].rows.dense() == pytest.approx(parts["delta"], abs=1e-6)  # y_i - x
        assert wires[1].rows.dense() == pytest.approx(parts["dcontrol"], abs=1e-6)  # c_i+ - c_i
        assert engine_agg.reshape(-1) == pytest.approx(agg["delta"], abs=1e-6)
        assert engine.c.reshape(-1) == pytest.approx(dense.c, abs=1e-6)
        for u in range(N_USERS):
            assert _engine_variate(engine, u) == pytest.approx(dense.c_i[u], abs=1e-6)
    assert dense.c.abs().sum() > 0 and (dense.c_i != 0).any(dim=1).tolist() == [True, True, True]


def test_qffl_dense_step_and_the_engines_weights_are_one_math():
    """q-FedAvg (Li et al. 2020, Alg. 2): the dense view's server step from (Delta_k, h_k) equals the engine's
    weighted sum of the clients' updates under `qffl_weights`, with every client of the same data size."""
    from labcore.fed.algorithms.qffl import qffl_weights
    from labcore.flalgos.simulation import build_problem
    from labcore.flalgos.strategies import QFedAvg

    for q in (0.0, 1.0, 5.0):
        cfg = FLConfig(task="quadratic", algorithm="qffl", q=q, lr=LR)
        problem = build_problem(cfg)
        dense = QFedAvg(cfg, problem, problem.q.n_clients)
        cohort = torch.tensor([0, 3, 5])
        theta = dense.w + 0.1 * torch.randn(len(cohort), dense.P, generator=torch.Generator().manual_seed(1))
        ctx = RoundContext(0, cohort, torch.ones(len(cohort), dtype=torch.int64), batches=None, gen=None)
        w0 = dense.w.clone()
        parts = dense.uplink(theta, ctx)
        dense.server_update(dense.aggregate(parts, None, Aggregation(cfg, len(cohort), torch.arange(len(cohort)), 0)),
                            ctx)

        D = (theta - w0).double()  # the engine's client update: w_k - w
        loss = problem.client_train_loss(w0)[cohort].double().numpy() + 1e-10
        weights = qffl_weights(fedavg_weights(torch.ones(len(cohort))), loss, (D ** 2).sum(1).numpy(), q, 1 / LR)
        assert (weights.double()[:, None] * D).sum(0).float() == pytest.approx(dense.w - w0, rel=1e-5, abs=1e-7)


class _TinyMF:
    """FedMF on the tiny ratings as the dense view's problem: one flat vector (item table, then the user vector) a
    client; a step's gradient that of the engine's local step (`oracles.fed_loop`, autograd), on the plan's batch."""

    def __init__(self, plan, Q, p, weight_decay):
        self.plan, self.Q, self.p, self.wd = plan, Q, p, weight_decay
        self.items = torch.from_numpy(plan.sample_item.astype(np.int64))
        self.labels = torch.from_numpy(plan.sample_label).to(torch.float32)
        self.P = Q.numel() + p.numel()

    def init(self, gen):
        return torch.cat([self.Q.reshape(-1), self.p])

    def batch(self, t, c):
        """Client c's samples at step t of the plan (none past its last step)."""
        if t >= self.plan.steps.shape[0]:
            return torch.zeros(0, dtype=torch.int64)
        idx = self.plan.steps[t, c]
        return torch.from_numpy(idx[idx >= 0])

    def grads(self, theta, batches, t):
        out = torch.zeros_like(theta)
        for c in range(theta.shape[0]):
            idx = self.batch(t, c)
            if len(idx):
                g_table, g_user = _batch_loss_grads(theta[c, :self.Q.numel()].view_as(self.Q), theta[c, self.Q.numel():],
                                                    self.items[idx], self.labels[idx], self.wd)
                out[c] = torch.cat([g_table.reshape(-1), g_user])
        return out


def _round(tiny, M=5, epochs=2):
    from labcore.fed import sampling as S

    g = torch.Generator().manual_seed(0)
    Q, p = torch.randn(tiny.n_items, 4, generator=g) * 0.3, torch.randn(4, generator=g) * 0.3
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(M), 4, epochs, 16, 0, 0)
    ctx = RoundContext(0, torch.arange(M), torch.from_numpy(plan.n_steps.astype(np.int64)), batches=None, gen=None)
    return Q, p, plan, ctx


def test_apfls_dense_view_and_the_engines_are_one_math(tiny):
    """APFL (Deng et al. 2020, Alg. 1): the algorithms topic's dense class, given FedMF's gradient, and the engine's
    `train_apfl` leave the same local copy w and personal model v after a round, clients starting alike."""
    from labcore.fed.personal import train_apfl
    from labcore.flalgos.strategies import APFL

    Q, p, plan, ctx = _round(tiny)
    M, alpha, lr, wd = len(ctx.cohort), 0.3, 0.5, 1e-3
    dense = APFL(FLConfig(algorithm="apfl", apfl_alpha=alpha, lr=lr), _TinyMF(plan, Q, p, wd), M)
    w = dense.local_train(ctx)
    V, pv, W, pw = train_apfl(Q[None].expand(M, -1, -1).clone(), p.expand(M, -1).clone(), Q, p.expand(M, -1), plan,
                              lr, wd, alpha)
    n = Q.numel()
    assert W.reshape(M, -1) + Q.reshape(-1) == pytest.approx(w[:, :n], abs=1e-6) and pw == pytest.approx(w[:, n:], abs=1e-6)
    assert V.reshape(M, -1) == pytest.approx(dense.v[:, :n], abs=1e-6) and pv == pytest.approx(dense.v[:, n:], abs=1e-6)
    assert (dense.v[:, :n] - w[:, :n]).abs().max() > 1e-3  # the personal model went its own way


def test_fedavgs_dense_local_training_and_the_engines_compiled_one_are_one_math(tiny):
    from labcore.fed.local_train import train_cohort
    from labcore.flalgos.strategies import FedAvg

    Q, p, plan, ctx = _round(tiny)
    dense = FedAvg(FLConfig(algorithm="fedavg", lr=0.5), _TinyMF(plan, Q, p, 1e-3), len(ctx.cohort))
    theta = dense.local_train(ctx)
    engine = train_cohort(Q, p.expand(len(ctx.cohort), -1).clone(), plan, 0.5, 1e-3)
    n = Q.numel()
    assert engine.dense_update().reshape(len(ctx.cohort), -1) + Q.reshape(-1) == pytest.approx(theta[:, :n], abs=1e-6)
    assert engine.p == pytest.approx(theta[:, n:], abs=1e-6)


def test_pfedmes_dense_view_and_the_engines_rows_are_one_math(tiny):
    """pFedMe (Dinh et al. 2020, Alg. 1), inner and outer steps at one learning rate: the same local model w and
    personal model theta after a round."""
    from labcore.fed.meta_train import train_pfedme
    from labcore.flalgos.strategies import PFedMe

    Q, p, plan, ctx = _round(tiny)
    M, lam, K = len(ctx.cohort), 0.6, 3
    cfg = FLConfig(algorithm="pfedme", lr=0.5, personal_lr=0.5, lam=lam, inner_steps=K)
    dense = PFedMe(cfg, _TinyMF(plan, Q, p, 1e-3), M)
    w = dense.local_train(ctx)
    local, theta_rows, theta_p, rnd = train_pfedme(Q, p.expand(M, -1).clone(), plan, 0.5, 1e-3, lam, K)
    theta = Q[None].expand(M, -1, -1).clone()
    theta[rnd.row_client, rnd.row_item] += theta_rows
    n = Q.numel()
    assert local.rows.dense().reshape(M, -1) + Q.reshape(-1) == pytest.approx(w[:, :n], abs=1e-6)
    assert local.p == pytest.approx(w[:, n:], abs=1e-6)
    assert theta.reshape(M, -1) == pytest.approx(dense.v[:, :n], abs=1e-6)
    assert theta_p == pytest.approx(dense.v[:, n:], abs=1e-6)


class _PairedMF(_TinyMF):
    """Per-FedAvg's batches as the engine pairs them: local step t reads batch 2t (D), then 2t + 1 (D'); a client
    whose last batch is odd reads that batch as both."""

    def batch(self, j, c):
        if j % 2 and j >= self.plan.n_steps[c]:
            j -= 1
        return super().batch(j, c)


def test_perfedavgs_dense_view_and_the_engines_rows_are_one_math(tiny):
    """Per-FedAvg, first order (Fallah et al. 2020): the same local model after a round, and the same personal model
    (one step of size alpha from the global model on a user's first batch)."""
    from labcore.fed.meta_train import perfedavg_personal, train_perfedavg
    from labcore.flalgos.strategies import PerFedAvg

    Q, p, plan, _ = _round(tiny, epochs=1)
    M, lr, alpha, wd = plan.n_clients, 0.5, 0.3, 1e-3
    assert (plan.n_steps % 2).any() and not (plan.n_steps % 2).all()  # both kinds of last pair
    pairs = torch.from_numpy((plan.n_steps + 1) // 2).to(torch.int64)
    problem = _PairedMF(plan, Q, p, wd)
    dense = PerFedAvg(FLConfig(algorithm="perfedavg", lr=lr, personal_lr=alpha), problem, M)
    theta = dense.local_train(RoundContext(0, torch.arange(M), pairs, batches=None, gen=None))
    local = train_perfedavg(Q, p.expand(M, -1).clone(), plan, lr, wd, alpha)
    n = Q.numel()
    assert local.rows.dense().reshape(M, -1) + Q.reshape(-1) == pytest.approx(theta[:, :n], abs=1e-6)
    assert local.p == pytest.approx(theta[:, n:], abs=1e-6)

    w = problem.init(None).expand(M, -1)
    personal = w - alpha * problem.grads(w, None, 0)
    p_new, rows = perfedavg_personal(Q, p.expand(M, -1).clone(), plan, alpha, wd)
    assert rows.dense().reshape(M, -1) + Q.reshape(-1) == pytest.approx(personal[:, :n], abs=1e-6)
    assert p_new == pytest.approx(personal[:, n:], abs=1e-6)
