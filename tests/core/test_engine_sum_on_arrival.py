"""Plain FedMF's server sums each client's rows as the client ends (`SummedRows`): the aggregate, the clients' vectors,
the losses and the ledger are those of the update table summed afterwards, to the bit; only the table is not made."""
import numpy as np
import pytest
import torch

from labcore.config import RunConfig
from labcore.fed import sampling as S
from labcore.fed.aggregate import aggregate, fedavg_weights
from labcore.fed.engine import Simulation
from labcore.fed.local_train import SummedRows, train_cohort
from labcore.fed.mods import item_mask_wire
from labcore.methods.base import FedMF
from labcore.net.ledger import Ledger


def _cohort(tiny, d=6, seed=0):
    m = tiny.n_users
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(m), 4, 2, 16, 0, 0)
    g = torch.Generator().manual_seed(seed)
    return plan, torch.randn(tiny.n_items, d, generator=g) * 0.3, torch.randn(m, d, generator=g) * 0.3


@pytest.mark.parametrize("how", ["item_mean", "weighted"])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_the_sum_on_arrival_is_the_tables_aggregate_to_the_bit(tiny, how, threads, monkeypatch):
    monkeypatch.setenv("LABCORE_THREADS", threads)
    plan, Q, P = _cohort(tiny)
    weights = fedavg_weights(torch.from_numpy(plan.n_pos))
    table = train_cohort(Q, P, plan, 0.1, 1e-2)
    summed = train_cohort(Q, P, plan, 0.1, 1e-2, sum_on_arrival=(how, weights))
    assert isinstance(summed.rows, SummedRows) and summed.rows.values is None
    assert torch.equal(aggregate(summed.rows, how, weights, None), aggregate(table.rows, how, weights, None))
    assert torch.equal(summed.p, table.p) and summed.loss_sum == table.loss_sum
    assert summed.n_samples == table.n_samples
    # what else the round reads: the item mask, and client 0's message for the ledger
    assert torch.equal(item_mask_wire(summed.rows).data, item_mask_wire(table.rows).data)
    assert torch.equal(summed.rows.dense(slice(0, 1)), table.rows.dense(slice(0, 1)))
    method = FedMF(RunConfig(dim=6), tiny.n_items)
    wires = [method.uplink(r, None)[0] for r in (summed, table)]
    assert wires[0].shape == wires[1].shape and wires[0].dtype == wires[1].dtype == torch.float32
    assert np.array_equal(wires[0].row(0), wires[1].row(0))
    assert np.array_equal(Ledger().record(0, "up", wires[:1]), Ledger().record(0, "up", wires[1:]))


@pytest.mark.parametrize("threads", ["1", "2"])
def test_central_dp_clips_each_client_on_arrival_as_clip_rows_does(tiny, threads, monkeypatch):
    """The kernel's clip (its norm's squares summed in another order than `dp.clip_rows`'s) against the readable
    clip of the update table: equal to float rounding; a clip no client reaches leaves the plain sum's bits."""
    from labcore.privacy.dp import clip_rows

    monkeypatch.setenv("LABCORE_THREADS", threads)
    plan, Q, P = _cohort(tiny)
    ones = fedavg_weights(torch.ones(plan.n_clients, dtype=torch.int64))
    table = train_cohort(Q, P, plan, 0.1, 1e-2)
    norms = torch.stack([table.rows.dense(slice(m, m + 1)).norm() for m in range(plan.n_clients)])
    clip = float(norms.median())  # half the clients are clipped
    summed = train_cohort(Q, P, plan, 0.1, 1e-2, sum_on_arrival=("weighted", ones, clip))
    readable = aggregate(clip_rows(table.rows, clip), "weighted", ones, None)
    assert summed.rows.clip == clip
    assert torch.allclose(summed.rows.aggregate("weighted", ones), readable, rtol=1e-5, atol=1e-8)
    assert not torch.allclose(readable, aggregate(table.rows, "weighted", ones, None), rtol=1e-3)
    assert torch.equal(summed.rows.dense(slice(0, 1)), table.rows.dense(slice(0, 1)))  # the message, unclipped
    loose = train_cohort(Q, P, plan, 0.1, 1e-2, sum_on_arrival=("weighted", ones, float(norms.max()) * 2))
    assert torch.equal(loose.rows.aggregate("weighted", ones), aggregate(table.rows, "weighted", ones, None))
    with pytest.raises(ValueError, match="summed 'weighted' only"):
        train_cohort(Q, P, plan, 0.1, 1e-2, sum_on_arrival=("item_mean", ones, clip))


def test_summed_rows_refuse_what_needs_every_clients_update(tiny):
    plan, Q, P = _cohort(tiny)
    weights = fedavg_weights(torch.from_numpy(plan.n_pos))
    rows = train_cohort(Q, P, plan, 0.1, 1e-2, sum_on_arrival=("weighted", weights)).rows
    with pytest.raises(ValueError, match="client 0's update alone"):
        rows.dense(slice(1, 2))
    with pytest.raises(ValueError, match="client 0's update alone"):
        rows.dense()
    with pytest.raises(ValueError, match="no per-client rows"):
        rows.with_values(torch.zeros(3, 6))
    with pytest.raises(ValueError, match="summed on arrival for 'weighted'"):
        aggregate(rows, "item_mean", weights, None)
    with pytest.raises(ValueError, match="other client weights"):
        aggregate(rows, "weighted", weights * 2, None)
    with pytest.raises(ValueError, match="full item table"):
        from labcore.fed.local_train import LowRank

        lowrank = LowRank(torch.randn(6, 2), torch.ones(plan.n_clients, 2), torch.ones(plan.n_clients))
        train_cohort(Q, P, plan, 0.1, 1e-2, lowrank, sum_on_arrival=("weighted", weights))
    with pytest.raises(ValueError, match="without SCAFFOLD or FedProx"):
        train_cohort(Q, P, plan, 0.1, 1e-2, prox_mu=0.5, sum_on_arrival=("weighted", weights))
    with pytest.raises(ValueError, match="float32 item table"):
        train_cohort(Q.double(), P.double(), plan, 0.1, 1e-2, sum_on_arrival=("weighted", weights))
    with pytest.raises(ValueError, match="aggregation='median'"):
        train_cohort(Q, P, plan, 0.1, 1e-2, sum_on_arrival=("median", weights))


FAST = dict(local_epochs=2, batch_size=16, eval_every=2, rounds=4, rank_every=0, dim=8)


@pytest.mark.parametrize("extra", [{}, {"aggregation": "weighted"}, {"dropout": 0.2},
                                   {"stragglers": 0.5, "straggler_policy": "keep"}, {"server_optimizer": "fedadam",
                                                                                      "server_lr": 0.01},
                                   {"rank_every": 2}, {"clients_per_round": 7}])
def test_a_plain_fedmf_run_sums_on_arrival_with_the_numbers_of_one_that_does_not(tiny, extra, monkeypatch):
    cfg = RunConfig(method="fedmf", **{"clients_per_round": tiny.n_users, **FAST, **extra})
    summed, table = Simulation(cfg, tiny), Simulation(cfg, tiny)
    monkeypatch.setattr(table, "_sums_on_arrival", lambda t: False)
    rows_a = [summed.step() for _ in range(4)]
    rows_b = [table.step() for _ in range(4)]
    assert sum(summed._sums_on_arrival(t) for t in range(4)) == (2 if cfg.rank_every else 4)
    assert torch.equal(summed.Q, table.Q) and torch.equal(summed.P, table.P)
    for a, b in zip(rows_a, rows_b):
        for k in ("loss", "hr", "ndcg", "bytes_up", "bytes_down", "cum_bytes", "eff_rank_update"):
            assert a.get(k) == b.get(k), k
    assert summed.ledger.frame().equals(table.ledger.frame())


@pytest.mark.parametrize("extra", [{"method": "colr"}, {"method": "svd"}, {"method": "topk", "topk_ratio": 0.25},
                                   {"prox_mu": 0.1},
                                   {"up_bits": 8}, {"defense": "median"}, {"qffl_q": 1.0, "aggregation": "weighted"},
                                   {"scaffold": True, "aggregation": "weighted"},
                                   {"personalization": "ditto"}, {"encryption": "secagg"},
                                   {"attack": "replacement", "attacker_share": 0.2}])
def test_only_a_round_where_nothing_else_reads_the_rows_sums_on_arrival(tiny, extra):
    base = dict(method="fedmf", clients_per_round=8, **FAST)
    assert Simulation(RunConfig(**base), tiny)._sums_on_arrival(0)
    assert not Simulation(RunConfig(**{**base, **extra}), tiny)._sums_on_arrival(0)
    dp = dict(client_schedule="poisson", aggregation="weighted", dp_noise_multiplier=1.0)
    for mode in ("central", "distributed", "local"):
        assert Simulation(RunConfig(**{**base, **dp, "dp_mode": mode}), tiny)._sums_on_arrival(0)
    assert not Simulation(RunConfig(**{**base, **dp, "dp_mode": "distributed", "encryption": "secagg"}),
                          tiny)._sums_on_arrival(0)
    sim = Simulation(RunConfig(**base), tiny)
    sim.keep_view = True  # what the server saw is kept for the attack labs: every client's update
    assert not sim._sums_on_arrival(0)
    ranked = Simulation(RunConfig(**{**base, "rank_every": 3}), tiny)  # the rank statistics read every update
    assert [ranked._sums_on_arrival(t) for t in range(4)] == [False, True, True, False]


def test_the_memory_estimate_leaves_out_the_table_only_where_every_round_sums_on_arrival(tiny):
    from labcore.fed.engine import estimate_memory

    key = "touched rows (update, row index) and the client sum's run tables"
    plain = RunConfig(method="fedmf", clients_per_round=tiny.n_users, **FAST)
    table = estimate_memory(plain.replace(rank_every=5), tiny)[key] - estimate_memory(plain, tiny)[key]
    rows = sum(min(int(n) * (1 + plain.num_negatives), tiny.n_items) for n in tiny.train_counts())
    assert table == rows * plain.dim * 4  # the rank rounds make the table
    assert estimate_memory(plain.replace(up_bits=8), tiny)[key] == estimate_memory(plain, tiny)[key] + table
