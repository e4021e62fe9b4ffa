"""CoLR / SCoLR's kernel compiled for its rank: its exp, its agreement with the general kernel, which runs
it trains (the runs whose cache key says so)."""
import numpy as np
import pytest
import torch

from labcore.config import SMALL_RANK, RunConfig
from labcore.fed import sampling as S
from labcore.fed.engine import Simulation
from labcore.fed.kernels import dispatch, fused_lowrank
from labcore.fed.kernels.fused_lowrank import exp_batch
from labcore.fed.local_train import LowRank, train_cohort


def test_exp_is_within_one_float32_ulp_and_clamped_to_normal_results():
    z = np.linspace(-87, 88, 400_001, dtype=np.float32)
    out, bits = np.empty_like(z), np.empty(z.shape, np.int32)
    exp_batch(z, out, bits)
    exact = np.exp(z.astype(np.float64))
    ulps = np.abs(out - exact) / np.spacing(exact.astype(np.float32))
    assert ulps.max() <= 1.0
    ends = np.array([-1e4, -87, 88, 1e4], np.float32)  # beyond the range: the range's ends, never 0 or inf
    out, bits = np.empty_like(ends), np.empty(4, np.int32)
    exp_batch(ends, out, bits)
    assert out[0] == out[1] and out[2] == out[3] and np.isfinite(out).all() and out[0] > np.finfo(np.float32).tiny


def _cohort(data, rank, d, batch, seed=0):
    clients = S.sample_clients(data.n_users, 12, S.round_rng(seed, 0, S.STREAM_CLIENTS))
    plan = S.plan_round(data, S.NegativeSampler(data), clients, 4, 2, batch, seed, 0)
    g = torch.Generator().manual_seed(seed)
    Q, P = torch.randn(data.n_items, d, generator=g) * 0.3, torch.randn(12, d, generator=g) * 0.3
    mask = torch.ones(12, rank)  # SCoLR-style: some clients train only some columns
    mask[1, rank - 1] = 0
    mask[4, 0] = 0
    lowrank = LowRank(torch.randn(d, rank, generator=g) / rank**0.5, mask, torch.full((12,), (rank / d) ** 0.5))
    return Q, P, plan, lowrank


@pytest.mark.parametrize("rank,d,batch", [(1, 6, 16), (3, 13, 20), (SMALL_RANK, 64, 37), (2, 64, 9)])
def test_the_small_rank_kernel_trains_as_the_general_kernel_does(tiny, rank, d, batch, monkeypatch):
    """The same steps to float rounding (other summation order, another exp), at ranks and widths that leave
    remainders to the eight-sample loops."""
    Q, P, plan, lowrank = _cohort(tiny, rank, d, batch)
    calls = []
    small = fused_lowrank.lowrank_rows_small
    monkeypatch.setattr(fused_lowrank, "lowrank_rows_small", lambda *a: calls.append(1) or small(*a))
    a = train_cohort(Q, P, plan, 0.1, 1e-2, lowrank)
    assert calls == [1]
    monkeypatch.setattr(dispatch, "SMALL_RANK", 0)  # the general kernel
    b = train_cohort(Q, P, plan, 0.1, 1e-2, lowrank)
    assert calls == [1]
    assert np.array_equal(a.rows.indptr, b.rows.indptr) and torch.equal(a.rows.item, b.rows.item)
    assert torch.allclose(a.rows.values, b.rows.values, rtol=1e-5, atol=1e-6)
    assert torch.allclose(a.p, b.p, rtol=1e-5, atol=1e-6)
    assert a.loss_sum == pytest.approx(b.loss_sum, rel=1e-6)
    assert not torch.equal(a.rows.values, b.rows.values) or rank == 1  # two kernels indeed
    assert a.dense_update()[1, :, rank - 1].abs().max() == 0  # a frozen column stays zero


@pytest.mark.parametrize("method,rank,prox_mu", [("colr", 4, 0.0), ("scolr", SMALL_RANK, 0.0), ("colr", 8, 0.0),
                                                  ("colr", 4, 0.01), ("fedmf", 4, 0.0)])
def test_the_runs_keyed_as_small_rank_are_the_ones_it_trains(tiny, method, rank, prox_mu, monkeypatch):
    calls = []
    small = fused_lowrank.lowrank_rows_small
    monkeypatch.setattr(fused_lowrank, "lowrank_rows_small", lambda *a: calls.append(1) or small(*a))
    cfg = RunConfig(method=method, rank=rank, dim=16, prox_mu=prox_mu, clients_per_round=6, rounds=2, batch_size=16)
    Simulation(cfg, tiny).step()
    assert bool(calls) == cfg.small_rank_kernel()
