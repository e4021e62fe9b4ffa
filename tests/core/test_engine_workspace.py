"""The round-to-round buffers (`labcore.fed.workspace`): what is made in them equals what is made afresh, and the
engine keeps the plan's arrays only where they do not raise the round's memory peak."""
import dataclasses

import numpy as np
import pytest
import torch

from labcore.config import RunConfig
from labcore.fed import sampling as S
from labcore.fed.engine import Simulation
from labcore.fed.local_train import train_cohort
from labcore.fed.workspace import SAMPLE_ARRAYS, Workspace


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_workspace_hands_out_the_same_memory_until_a_request_outgrows_it():
    ws = Workspace()
    a = ws.array("x", 100, np.int32)
    assert a.shape == (100,) and a.dtype == np.int32
    b = ws.array("x", (10, 5), np.float64)  # 400 bytes fit the 400 + headroom of the first request
    assert b.shape == (10, 5) and b.dtype == np.float64 and _address(b) == _address(a)
    c = ws.array("x", 10_000, np.int64)  # outgrows it: a new buffer
    assert c.shape == (10_000,) and _address(c) != _address(a)
    assert ws.array("y", 3, np.float32).shape == (3,) and ws.nbytes("x") >= 80_000
    ws.release("x", "not there")
    assert ws.nbytes("x") == 0 and ws.nbytes("y") > 0


def _fields(plan: S.RoundPlan) -> dict:
    return {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}


def test_a_plan_made_in_a_workspace_is_the_fresh_plan_round_after_round(tiny):
    """Cohorts that grow and shrink, and buffers left full of junk by the last round: every entry is written."""
    sampler, ws = S.NegativeSampler(tiny), Workspace()
    for t, m in enumerate([tiny.n_users, 3, 9, tiny.n_users, 1]):
        clients = S.sample_clients(tiny.n_users, m, S.round_rng(0, t, S.STREAM_CLIENTS))
        fresh = S.plan_round(tiny, sampler, clients, 4, 2, 16, 0, t)
        made = S.plan_round(tiny, sampler, clients, 4, 2, 16, 0, t, ws)
        for name, value in _fields(fresh).items():
            got = _fields(made)[name]
            assert (np.array_equal(got, value) if isinstance(value, np.ndarray) else got == value), name
            if isinstance(value, np.ndarray):
                assert got.dtype == value.dtype, name
        assert np.shares_memory(made.slots, ws.array("slots", made.slots.shape, made.slots.dtype))
        for name in ("sample_client", "sample_item", "slots"):  # junk for the next round to overwrite
            getattr(made, name).fill(7)
        made.sample_label.fill(np.nan)


@pytest.mark.parametrize("lowrank", [False, True])
def test_the_trainers_rows_made_in_a_workspace_are_the_fresh_rows(tiny, lowrank):
    """The round's table and rows come from buffers the last round left full of values; each client's rows of
    the table are zeroed just before it trains, and every row's item is written. Garbage (NaN, -3) in the buffers
    must not reach a single row."""
    from labcore.fed.local_train import LowRank

    m = tiny.n_users
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(m), 4, 2, 16, 0, 0)
    g = torch.Generator().manual_seed(0)
    Q, P = torch.randn(tiny.n_items, 6, generator=g) * 0.3, torch.randn(m, 6, generator=g) * 0.3
    lr_ = LowRank(torch.randn(6, 3, generator=g) / 3**0.5, torch.ones(m, 3), torch.ones(m)) if lowrank else None
    fresh = train_cohort(Q, P, plan, 0.1, 1e-2, lr_)
    ws = Workspace()
    ws.array("row_item", fresh.rows.item.shape[0] + 5, np.int64).fill(-3)
    ws.array("W", fresh.rows.values.shape[0] * fresh.rows.values.shape[1] + 7, np.float32).fill(np.nan)
    made = train_cohort(Q, P, plan, 0.1, 1e-2, lr_, workspace=ws)
    assert torch.equal(made.rows.item, fresh.rows.item) and np.array_equal(made.rows.indptr, fresh.rows.indptr)
    assert torch.equal(made.rows.values, fresh.rows.values) and torch.equal(made.p, fresh.p)
    assert np.shares_memory(made.rows.item.numpy(), ws.array("row_item", 1, np.int64))


@pytest.mark.parametrize("factor", [False, True], ids=["item-major", "factor-major"])
def test_a_quantized_uplink_made_in_a_workspace_is_the_fresh_one_call_after_call(factor, monkeypatch):
    """`quantize_rows` in a workspace: cohorts that grow and shrink, and buffers the last call left full of codes and
    values, give the bytes, norms and received values of a call that makes them afresh. Above
    KEEP_QUANTIZED_BYTES the buffers are freed (kept, they would raise the next round's memory peak)."""
    from labcore.fed.local_train import RowUpdate
    from labcore.methods import quantize as Qm

    ws, N, k, bits, bucket = Workspace(), 13, 5, 4, 16
    for call, M in enumerate([6, 2, 9, 4]):
        g = torch.Generator().manual_seed(call)
        touched = torch.rand(M, N, generator=g) < 0.6
        rows = RowUpdate.from_dense(torch.randn(M, N, k, generator=g) * touched[..., None], touched)
        args = (rows.values, rows.indptr, rows.item.numpy(), N, factor, bits, bucket)
        fresh = Qm.quantize_rows(*args, torch.Generator().manual_seed(call))
        made = Qm.quantize_rows(*args, torch.Generator().manual_seed(call), ws)
        assert np.array_equal(made[0], fresh[0]) and made[0].any()
        assert torch.equal(made[1], fresh[1]) and torch.equal(made[2], fresh[2])
        assert np.shares_memory(made[0], ws.array("quantized_codes", 1, np.uint8))
    monkeypatch.setattr(Qm, "KEEP_QUANTIZED_BYTES", 100)
    made = Qm.quantize_rows(*args, torch.Generator().manual_seed(0), ws)
    assert np.array_equal(made[0], Qm.quantize_rows(*args, torch.Generator().manual_seed(0))[0])
    assert ws.nbytes(*Qm.QUANTIZED_ROW_BUFFERS) == 0


FAST = dict(local_epochs=2, batch_size=16, eval_every=2, rounds=4, rank_every=0)


@pytest.mark.parametrize("method,dim,keeps,up_bits,budget", [("colr", 64, True, 0, 0), ("fedmf", 64, True, 0, 0),
                                                            ("fedmf", 64, False, 8, 0), ("colr", 64, True, 3, 0),
                                                            ("fedmf", 64, False, 4, 2), ("colr", 64, True, 3, 1)])
def test_the_engine_keeps_the_sample_arrays_only_where_they_outweigh_the_update_table(tiny, method, dim, keeps,
                                                                                      up_bits, budget):
    """CoLR's update table (rank 4) is smaller than the plan's arrays: they are kept from round to round. A quantized
    FedMF's (d = 64) is larger: the sample arrays are freed after training (kept, they raised its memory peak); a
    plain FedMF's rows are summed on arrival (no table), so they are kept. Either way
    the numbers are those of a run that makes every array afresh (keep_view: no workspace), quantized uplinks
    included (their codes, values and draws made in the workspace), over a noisy link too (its received tables as
    well)."""
    from labcore.fed.mods import RECEIVED_TABLE
    from labcore.methods.quantize import QUANTIZED_ROW_BUFFERS

    cfg = RunConfig(method=method, dim=dim, rank=4, clients_per_round=tiny.n_users, up_bits=up_bits,
                    up_link_budget=budget, **FAST)
    reused, fresh = Simulation(cfg, tiny), Simulation(cfg, tiny)
    fresh.keep_view = True
    rows_a = [reused.step() for _ in range(3)]
    rows_b = [fresh.step() for _ in range(3)]
    assert (reused._workspace.nbytes(*SAMPLE_ARRAYS) > 0) is keeps
    assert reused._workspace.nbytes("W") > 0 and fresh._workspace.nbytes("W", "s_item", "row_item") == 0
    assert (reused._workspace.nbytes(*QUANTIZED_ROW_BUFFERS) > 0) is bool(up_bits)
    assert fresh._workspace.nbytes(*QUANTIZED_ROW_BUFFERS) == 0
    assert (reused._workspace.nbytes(RECEIVED_TABLE) > 0) is bool(budget)
    assert fresh._workspace.nbytes(RECEIVED_TABLE) == 0
    assert [r["bytes_up"] for r in rows_a] == [r["bytes_up"] for r in rows_b]
    assert torch.equal(reused.Q, fresh.Q) and torch.equal(reused.P, fresh.P)
    assert [r["loss"] for r in rows_a] == [r["loss"] for r in rows_b]
    assert [r["hr"] for r in rows_a if "hr" in r] == [r["hr"] for r in rows_b if "hr" in r]


def test_a_training_run_never_imports_pandas_or_scipy_special():
    """pandas is 93 MB resident once imported; a training process needs it only to parse a raw dataset file (not a
    cached split) or to make a result's table. Imported at module level by the engine's ledger, wall-clock model or
    results, it sat in every run's memory peak (Pinterest FedMF at full participation: 2.03 x 10^9 bytes with it,
    1.93 without). scipy.special (14 MiB) likewise: only a noisy link's level table needs it."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from labcore.config import RunConfig\n"
            "from labcore.data.synthetic import make_synthetic\n"
            "from labcore.fed.engine import Simulation\n"
            "cfg = RunConfig(dataset='synthetic', clients_per_round=5, dim=8, rounds=2)\n"
            "Simulation(cfg, make_synthetic('tiny')).step()\n"
            "print('pandas' in sys.modules, 'scipy.special' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False False", out.stderr
