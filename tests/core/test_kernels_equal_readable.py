"""Each compiled kernel trains as the readable local step of its method does (`methods.base.train_client`,
`methods.colr.train_client`), within float32 rounding, on tiny cohorts; and the readable step is the autograd
oracle's (`tests/oracles/fed_loop.py`)."""
import numpy as np
import pytest
import torch
from oracles.fed_loop import train_clients_loop

from labcore.fed import sampling as S
from labcore.fed.kernels import dispatch, fused, fused_lowrank
from labcore.fed.local_train import LowRank, train_cohort, train_cohort_readable

M = 10


def _cohort(data, d, rank=None, scolr=False, seed=0):
    clients = S.sample_clients(data.n_users, M, S.round_rng(seed, 0, S.STREAM_CLIENTS))
    plan = S.plan_round(data, S.NegativeSampler(data), clients, 4, 2, 16, seed, 0)
    g = torch.Generator().manual_seed(seed)
    Q, P = torch.randn(data.n_items, d, generator=g) * 0.3, torch.randn(M, d, generator=g) * 0.3
    if rank is None:
        return Q, P, plan, None
    mask, scale = torch.ones(M, rank), torch.full((M,), (rank / d) ** 0.5)
    if scolr:  # SCoLR: clients train only some of B's columns, each at its own learning-rate scale
        ranks = torch.randint(1, rank + 1, (M,), generator=g)
        order = torch.argsort(torch.rand(M, rank, generator=g), dim=1)
        mask = torch.zeros(M, rank).scatter_(1, order, (torch.arange(rank)[None, :] < ranks[:, None]).float())
        scale = (ranks / d) ** 0.5
    return Q, P, plan, LowRank(torch.randn(d, rank, generator=g) / rank**0.5, mask, scale.float())


def _kernel_calls(monkeypatch):
    """The names of the kernels train_cohort calls."""
    calls = []
    for module, name, label in ((fused, "full_rows", "full"), (fused, "lowrank_rows", "lowrank"),
                                (fused_lowrank, "lowrank_rows_small", "lowrank_small")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _r=real, _l=label, **k: calls.append(_l) or _r(*a, **k))
    return calls


def _readable(Q, P, plan, lowrank, prox_mu):
    """The readable path in float64: the exact math the float32 kernels round."""
    low64 = None if lowrank is None else LowRank(lowrank.B.double(), lowrank.col_mask.double(),
                                                 lowrank.grad_scale.double())
    return train_cohort_readable(Q.double(), P.double(), plan, 0.1, 1e-2, low64, prox_mu)


def _assert_close(kernel, readable):
    assert np.array_equal(kernel.rows.indptr, readable.rows.indptr)
    assert torch.equal(kernel.rows.item, readable.rows.item)
    assert torch.allclose(kernel.rows.values.double(), readable.rows.values, rtol=1e-4, atol=1e-6)
    assert torch.allclose(kernel.p.double(), readable.p, rtol=1e-4, atol=1e-6)
    assert kernel.loss_sum == pytest.approx(readable.loss_sum, rel=1e-5)
    assert kernel.n_samples == readable.n_samples


CASES = [  # (name, rank, SCoLR, prox_mu, force the general kernel)
    ("fedmf", None, False, 0.0, False),
    ("fedprox", None, False, 0.05, False),
    ("colr@2", 2, False, 0.0, False),
    ("colr@2 general", 2, False, 0.0, True),
    ("colr@4", 4, False, 0.0, False),
    ("colr@4 general", 4, False, 0.0, True),
    ("colr@8", 8, False, 0.0, False),
    ("scolr@4", 4, True, 0.0, False),
    ("scolr@8", 8, True, 0.0, False),
    ("colr@4 fedprox", 4, False, 0.05, False),
]


@pytest.mark.parametrize("name,rank,scolr,prox_mu,general", CASES, ids=[c[0] for c in CASES])
def test_each_kernel_trains_as_the_readable_step(tiny, name, rank, scolr, prox_mu, general, monkeypatch):
    d = 16 if rank is None or rank <= 4 else 24
    Q, P, plan, lowrank = _cohort(tiny, d, rank, scolr)
    if general:
        monkeypatch.setattr(dispatch, "SMALL_RANK", 0)
    expected = dispatch.choose_kernel(low_rank=rank is not None, rank=rank or 0, prox_mu=prox_mu)
    calls = _kernel_calls(monkeypatch)
    kernel = train_cohort(Q, P, plan, 0.1, 1e-2, lowrank, prox_mu=prox_mu)
    assert calls == [expected]
    _assert_close(kernel, _readable(Q, P, plan, lowrank, prox_mu))
    if scolr:  # a column a client does not train stays zero in its rows
        frozen = lowrank.col_mask == 0
        dense = kernel.dense_update()
        assert all(dense[m, :, frozen[m]].abs().max() == 0 for m in range(M) if frozen[m].any())


def test_the_summed_on_arrival_kernel_sums_the_readable_rows(tiny):
    from labcore.fed.aggregate import rows_item_mean

    Q, P, plan, _ = _cohort(tiny, 16)
    summed = train_cohort(Q, P, plan, 0.1, 1e-2, sum_on_arrival=("item_mean", torch.ones(M)))
    readable = _readable(Q, P, plan, None, 0.0)
    assert torch.allclose(summed.rows.aggregate("item_mean").double(), rows_item_mean(readable.rows),
                          rtol=1e-4, atol=1e-6)
    assert summed.loss_sum == pytest.approx(readable.loss_sum, rel=1e-5)


@pytest.mark.parametrize("rank,scolr,prox_mu", [(None, False, 0.0), (None, False, 0.05), (3, False, 0.0),
                                                (4, True, 0.05)])
def test_the_readable_step_is_the_autograd_oracles(tiny, rank, scolr, prox_mu):
    """Closed-form gradients against torch's autograd with `scale_grad_by_freq` embeddings and SGD (float64)."""
    Q, P, plan, lowrank = _cohort(tiny, 8, rank, scolr)
    readable = _readable(Q, P, plan, lowrank, prox_mu)
    low64 = None if lowrank is None else LowRank(lowrank.B.double(), lowrank.col_mask.double(),
                                                 lowrank.grad_scale.double())
    oracle = train_clients_loop(Q.double(), P.double(), plan, 0.1, 1e-2, low64, prox_mu=prox_mu)
    assert torch.allclose(readable.rows.dense(), oracle.dense_update(), rtol=1e-9, atol=1e-12)
    assert torch.allclose(readable.p, oracle.p, rtol=1e-9, atol=1e-12)
    assert readable.loss_sum == pytest.approx(oracle.loss_sum, rel=1e-9)
