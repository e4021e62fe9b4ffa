"""The row layout of the engine: the batched trainer gives the dense layout's numbers bit for bit, the fused
trainer (the engine's) the batched one's to float rounding; sizes from shapes, the memory guard."""
import itertools

import numpy as np
import pytest
import torch

from labcore.config import ConfigError, RunConfig
from labcore.fed import sampling as S
from labcore.fed.aggregate import _dense_layout, rows_item_mean, rows_sum, rows_weighted_sum, weighted_sum
from labcore.fed.engine import MEMORY_ENV, Simulation, estimate_memory, run
from labcore.fed.batched import train_cohort_batched, train_cohort_dense
from labcore.fed.local_train import RowUpdate, _filled_slots, client_first, train_cohort
from labcore.fed.mods import item_mask_wire
from labcore.methods.base import RowBlock, Wire
from labcore.net.ledger import Ledger, wire_part
from labcore.net.message import _DTYPES, PART_KINDS, Part, bytes_part, serialize_part

FAST = dict(clients_per_round=8, local_epochs=2, batch_size=16, dim=8, rank=2, eval_every=5, rounds=6, rank_every=2)


def _sparse(M, N, k, density, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(M, N, generator=g) < density
    X = torch.randn(M, N, k, generator=g) * t[..., None]
    return X, t


@pytest.mark.parametrize("M,N,k,layout", [(1, 9, 3, "item"), (5, 50, 1, "item"), (17, 50, 3, "factor"),
                                          (60, 300, 64, "item"), (60, 300, 4, "factor"), (60, 301, 2, "factor"),
                                          (375, 40, 16, "item"), (4500, 6, 3, "item"), (300, 7, 8, "factor")])
def test_row_sum_adds_each_items_rows_in_client_order(M, N, k, layout):
    X, t = _sparse(M, N, k, 0.3, M + N + k)
    rows = RowUpdate.from_dense(X, t)
    in_order = torch.zeros(N, k)
    for m in range(M):  # float32, clients one after the other
        in_order += X[m]
    assert torch.equal(rows_sum(rows, layout), in_order)
    exact = X.double().sum(0)
    assert torch.allclose(rows_sum(rows, layout).double(), exact, rtol=1e-5, atol=1e-5)
    assert torch.allclose(_dense_layout(X, layout).sum(0).double(), exact, rtol=1e-5, atol=1e-5)
    counts = t.sum(0).clamp(min=1).to(X.dtype)
    assert torch.equal(rows_item_mean(rows, layout), in_order / counts[:, None])
    w = torch.rand(M, generator=torch.Generator().manual_seed(1))
    assert torch.allclose(rows_weighted_sum(rows, w), weighted_sum(X, w), atol=1e-6)


def test_row_update_round_trips_and_sets_the_item_bitmap(tiny):
    X, t = _sparse(6, 21, 3, 0.4, 0)
    rows = RowUpdate.from_dense(X, t)
    assert torch.equal(rows.dense(), X) and torch.equal(rows.touched(), t)
    assert torch.equal(rows.dense(slice(2, 4)), X[2:4])
    assert torch.equal(item_mask_wire(rows).data, item_mask_wire(t).data)
    for layout in ("item", "factor"):
        block = RowBlock(rows, layout)
        dense = (X.transpose(1, 2) if layout == "factor" else X).reshape(6, -1)
        assert block.shape == tuple(dense.shape) and torch.equal(block.dense(), dense)
        w = Wire("A", "factors", None, rows=block)
        assert np.array_equal(w.row(3), dense[3].numpy())


def test_rows_from_offsets_make_the_client_column_only_when_asked():
    """The trainer's rows come as per-client offsets; the client column, made on first use, is the one the
    offsets say, and a copy with new values does not make it."""
    rows = RowUpdate.from_offsets(4, 9, np.array([0, 2, 2, 5, 6]), torch.tensor([1, 7, 0, 3, 8, 2]), torch.ones(6, 2))
    again = rows.with_values(torch.zeros(6, 2))
    assert "client" not in rows.__dict__ and "client" not in again.__dict__
    assert rows.client.tolist() == [0, 0, 2, 2, 2, 3] and again.client.tolist() == [0, 0, 2, 2, 2, 3]
    assert np.array_equal(again.indptr, [0, 2, 2, 5, 6])
    explicit = RowUpdate(4, 9, rows.client, rows.item, rows.values)
    assert torch.equal(explicit.dense(), rows.dense()) and np.array_equal(explicit.indptr, rows.indptr)


def test_positive_lookups_by_blocks_equal_one_lookup(tiny, monkeypatch):
    """The sorted-key sampler (large catalogues) looks samples up a block at a time: the same answers."""
    monkeypatch.setattr(S.NegativeSampler, "DENSE_LIMIT", 0)
    sampler = S.NegativeSampler(tiny)
    assert sampler._dense is None
    rng = np.random.default_rng(2)
    users, items = rng.integers(0, tiny.n_users, 1000), rng.integers(0, tiny.n_items, 1000)
    whole = sampler.is_positive(users, items)
    assert whole.any() and not whole.all()
    monkeypatch.setattr(S.NegativeSampler, "BLOCK", 7)
    assert np.array_equal(sampler.is_positive(users, items), whole)
    tr_u, tr_i = tiny.train_pairs()
    assert sampler.is_positive(tr_u, tr_i).all()


def test_grouped_negatives_are_the_repeated_users_negatives(tiny, monkeypatch):
    """`sample_grouped` (the plan's: users by blocks, the bitmap's redraws compiled) draws what `sample` draws for
    the repeated users, with the bitmap and with the sorted keys: the same draws in the same order, so the same
    negatives, none of them a training positive."""
    users, starts = np.arange(tiny.n_users), np.arange(tiny.n_users + 1) * 40
    repeated = np.repeat(users, 40)
    dense = S.NegativeSampler(tiny)
    assert dense._dense is not None
    grouped = dense.sample_grouped(users, starts, np.random.default_rng(4))
    assert np.array_equal(grouped, dense.sample(repeated, np.random.default_rng(4)))
    assert dense.is_positive(repeated, np.random.default_rng(4).integers(0, tiny.n_items, repeated.size)).sum() > 100
    monkeypatch.setattr(S.NegativeSampler, "DENSE_LIMIT", 0)
    keyed = S.NegativeSampler(tiny)
    assert keyed._dense is None
    assert np.array_equal(grouped, keyed.sample(repeated, np.random.default_rng(4)))
    assert np.array_equal(grouped, keyed.sample_grouped(users, starts, np.random.default_rng(4)))
    assert not keyed.is_positive(repeated, grouped).any()


@pytest.mark.parametrize("n", [2, 3706, 9916, 2**31 - 1])
def test_int32_draws_are_the_int64_draws(n):
    """The plan draws its negatives as int32: numpy's bounded integers below 2^32 take the same stream whatever the
    dtype, so the values (and every later draw of the generator) are int64's."""
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    for size in (1000, 3, 257):
        assert np.array_equal(a.integers(0, n, size=size, dtype=np.int32), b.integers(0, n, size=size))


def test_client_offsets_find_a_descent_anywhere():
    """The trainer's one pass gives np.searchsorted's client offsets (clients with no sample included) on
    grouped samples, and None as soon as any neighbour pair descends or a client is out of range."""
    from labcore.fed.local_train import client_first

    sc = np.repeat(np.array([0, 2, 3, 5], dtype=np.int32), [3, 2, 4, 1])
    assert client_first(sc, 7).tolist() == np.searchsorted(sc, np.arange(8)).tolist() == [0, 3, 3, 5, 9, 9, 10, 10]
    for at in range(1, len(sc)):  # a descent between any two neighbours
        bad = sc.copy()
        bad[at] = bad[at - 1] - 1
        assert client_first(bad, 7) is None
    assert client_first(sc, 5) is None  # client 5 of a 5-client cohort


@pytest.mark.parametrize("lowrank", [False, True])
def test_row_trainer_equals_the_dense_trainer_bit_for_bit(tiny, lowrank):
    from labcore.fed.local_train import LowRank

    clients = S.sample_clients(tiny.n_users, 8, S.round_rng(0, 0, S.STREAM_CLIENTS))
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), clients, 4, 2, 16, 0, 0)
    g = torch.Generator().manual_seed(0)
    Q, P = torch.randn(tiny.n_items, 6, generator=g) * 0.3, torch.randn(8, 6, generator=g) * 0.3
    lr_ = None
    if lowrank:
        mask = torch.ones(8, 3)
        mask[1, 2] = 0
        lr_ = LowRank(torch.randn(6, 3, generator=g) / 3**0.5, mask, torch.full((8,), (3 / 6) ** 0.5))
    a, b = train_cohort_batched(Q, P, plan, 0.1, 1e-2, lr_), train_cohort_dense(Q, P, plan, 0.1, 1e-2, lr_)
    assert torch.equal(a.dense_update(), b.update) and torch.equal(a.p, b.p) and a.loss_sum == b.loss_sum
    assert torch.equal(a.touched_dense(), b.touched)
    # the engine's fused trainer: the same rows, the same numbers up to the summation order of the products
    f = train_cohort(Q, P, plan, 0.1, 1e-2, lr_)
    assert torch.equal(f.rows.client, a.rows.client) and torch.equal(f.rows.item, a.rows.item)
    assert torch.allclose(f.rows.values, a.rows.values, rtol=1e-5, atol=1e-7)
    assert torch.allclose(f.p, a.p, rtol=1e-5, atol=1e-7) and f.loss_sum == pytest.approx(a.loss_sum, rel=1e-6)
    assert f.n_samples == a.n_samples
    # the plan's own client offsets and filled-slot count are the ones found from its arrays
    assert np.array_equal(plan.first, client_first(plan.sample_client, plan.n_clients))
    assert plan.n_filled == _filled_slots(plan.slots) == f.n_samples
    # the trainer's rows bring the item mask's bitmap: the one set from the rows themselves
    assert f.rows.item_bits is not None
    bare = RowUpdate.from_offsets(f.rows.n_clients, f.rows.n_items, f.rows.indptr, f.rows.item, f.rows.values)
    assert bare.item_bits is None and torch.equal(item_mask_wire(f.rows).data, item_mask_wire(bare).data)
    assert torch.equal(item_mask_wire(f.rows).data, item_mask_wire(a.touched_dense()).data)


@pytest.mark.parametrize("lowrank", [False, True])
def test_fused_trainer_gives_the_same_bits_on_one_or_two_threads(tiny, lowrank, monkeypatch):
    """Clients are split between threads, never a client's sums: the thread count changes no bit."""
    from labcore.fed.local_train import LowRank

    m = tiny.n_users  # every user: many more clients than one thread's chunk
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(m), 4, 2, 16, 0, 0)
    g = torch.Generator().manual_seed(0)
    Q, P = torch.randn(tiny.n_items, 6, generator=g) * 0.3, torch.randn(m, 6, generator=g) * 0.3
    lr_ = LowRank(torch.randn(6, 3, generator=g) / 3**0.5, torch.ones(m, 3), torch.ones(m)) if lowrank else None
    monkeypatch.setenv("LABCORE_THREADS", "1")
    one = train_cohort(Q, P, plan, 0.1, 1e-2, lr_)
    monkeypatch.setenv("LABCORE_THREADS", "2")
    two = train_cohort(Q, P, plan, 0.1, 1e-2, lr_)
    assert torch.equal(one.rows.values, two.rows.values) and torch.equal(one.p, two.p)
    assert one.loss_sum == two.loss_sum


def test_negative_redraws_follow_the_boolean_mask_order(tiny):
    """Only the positives drawn are redrawn, in increasing sample order, pass after pass: the same items as
    redrawing through a boolean mask over all samples (the sampler's first form)."""
    sampler = S.NegativeSampler(tiny)
    users = np.repeat(np.arange(tiny.n_users), 40)
    rng = np.random.default_rng(5)
    items = rng.integers(0, tiny.n_items, size=users.shape[0])
    bad = sampler.is_positive(users, items)
    assert bad.any()  # the case has redraws to make
    while bad.any():
        items[bad] = rng.integers(0, tiny.n_items, size=int(bad.sum()))
        bad[bad] = sampler.is_positive(users[bad], items[bad])
    assert np.array_equal(sampler.sample(users, np.random.default_rng(5)), items)


@pytest.mark.parametrize("method,extra", [("fedmf", {}), ("colr", {}), ("scolr", {}), ("svd", {}),
                                          ("topk", {"topk_ratio": 0.25}), ("colr", {"aggregation": "weighted"}),
                                          ("fedmf", {"up_bits": 3, "quant_bucket": 16}),
                                          ("colr", {"up_bits": 4, "quant_bucket": 16}),
                                          ("scolr", {"up_bits": 4, "aggregation": "weighted"}),
                                          ("fedmf", {"up_bits": 3, "quant_bucket": 16, "up_link_budget": 1}),
                                          ("colr", {"up_bits": 4, "up_link_budget": 2})])
def test_row_layout_gives_the_dense_layouts_numbers(tiny, method, extra):
    """The engine (fused trainer, row layout) against the dense layout with the batched trainer: the same
    table to float rounding (training and the client sum add in another order), the same ledger, round
    after round."""
    cfg = RunConfig(method=method, **{**FAST, **extra})
    a, b = Simulation(cfg, tiny), Simulation(cfg, tiny, layout="dense")
    for _ in range(cfg.rounds):
        a.step(), b.step()
    assert torch.allclose(a.Q, b.Q, rtol=1e-4, atol=1e-6) and torch.allclose(a.P, b.P, rtol=1e-4, atol=1e-6)
    ta, tb = a.result(True).table.drop(columns=["sec_local"]), b.result(True).table.drop(columns=["sec_local"])
    assert list(ta.columns) == list(tb.columns)
    for c in ta.columns:
        x, y = ta[c].to_numpy(dtype=float), tb[c].to_numpy(dtype=float)
        assert np.allclose(x, y, rtol=1e-5, atol=1e-7, equal_nan=True), c
    assert a.ledger.frame().equals(b.ledger.frame())


@pytest.mark.parametrize("method", ["fedmf", "colr", "scolr", "svd"])
def test_fused_engine_follows_the_batched_engine_round_after_round(tiny, method):
    """The engine's trainer against the former batched one over whole runs: losses, HR and the tables agree
    to float rounding, and the measured bytes are the same."""
    cfg = RunConfig(method=method, **FAST)
    a, b = Simulation(cfg, tiny), Simulation(cfg, tiny, trainer=train_cohort_batched)
    for _ in range(cfg.rounds):
        a.step(), b.step()
    assert torch.allclose(a.Q, b.Q, rtol=1e-4, atol=1e-6) and torch.allclose(a.P, b.P, rtol=1e-4, atol=1e-6)
    ta, tb = a.result(True).table, b.result(True).table
    for c in ("loss", "hr", "ndcg"):
        assert np.allclose(ta[c].to_numpy(dtype=float), tb[c].to_numpy(dtype=float), rtol=1e-5, equal_nan=True), c
    assert a.ledger.frame().equals(b.ledger.frame())


def _row(kind: str, dtype: str, shape, rng):
    if dtype == "bytes":
        return bytes(rng.integers(0, 256, size=int(np.prod(shape))).astype(np.uint8))
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape).astype(dtype)


@pytest.mark.parametrize("kind,dtype", list(itertools.product(PART_KINDS, _DTYPES)))
def test_serialized_length_depends_only_on_name_kind_dtype_and_shape(kind, dtype):
    """What lets the ledger serialize one message per distinct shape: any two payloads of the same shape
    and dtype serialize to the same length (seeds: always 8 bytes)."""
    rng = np.random.default_rng(0)
    for shape in [(0,), (1,), (7,), (3, 5), (2, 3, 4)]:
        if kind == "seed":
            sizes = {len(serialize_part(Part("s", "seed", int(v), 64))) for v in (0, -1, 2**62, 12345)}
        elif dtype == "bytes":
            sizes = {len(serialize_part(bytes_part("p", kind, _row(kind, dtype, shape, rng)))) for _ in range(4)}
        else:
            arrays = [np.zeros(shape, dtype)] + [_row(kind, dtype, shape, rng) for _ in range(3)]
            sizes = {len(serialize_part(wire_part("p", kind, a, None))) for a in arrays}
        assert len(sizes) == 1, (kind, dtype, shape)


@pytest.mark.parametrize("lengths", [None, np.array([5, 3, 5, 1, 3])])
def test_ledger_by_length_equals_serializing_every_message(lengths):
    rng = np.random.default_rng(1)
    wires = [Wire("A", "factors", torch.from_numpy(rng.standard_normal((5, 6)).astype(np.float32)), lengths),
             Wire("S", "indices", torch.from_numpy(rng.integers(0, 6, (5, 6)).astype(np.uint8)), lengths),
             Wire("m", "meta", torch.from_numpy(rng.integers(0, 255, (5, 2)).astype(np.uint8)), None, 1),
             Wire("B_seed", "seed", torch.tensor([[7]] * 5))]
    fast, every = Ledger(), Ledger(every_message=True)
    assert np.array_equal(fast.record(0, "up", wires), every.record(0, "up", wires))
    assert fast.frame().equals(every.frame())


def test_a_config_too_large_for_memory_is_refused_before_training(tiny, monkeypatch):
    cfg = RunConfig(method="svd", clients_per_round=30, dim=8, rank=2)
    est = estimate_memory(cfg, tiny)
    assert sum(est.values()) > 0 and any("SVD" in k for k in est)
    monkeypatch.setenv(MEMORY_ENV, str(sum(est.values()) / 2**30 / 2))
    with pytest.raises(ConfigError, match=r"clients_per_round=30 is invalid with dim=8.*GiB of memory"):
        Simulation(cfg, tiny)
    with pytest.raises(ConfigError, match="clients_per_round=30"):
        run(cfg, data=tiny, use_cache=False, progress=False)
    monkeypatch.setenv(MEMORY_ENV, "64")
    Simulation(cfg, tiny)  # fits


def test_full_participation_estimate_of_the_row_layout_is_far_below_the_dense_one(tiny):
    cfg = RunConfig(method="fedmf", clients_per_round=30, dim=64)
    rows, dense = sum(estimate_memory(cfg, tiny).values()), sum(estimate_memory(cfg, tiny, "dense").values())
    assert rows < dense


def test_a_quantized_row_uplinks_estimate_is_its_packed_codes_not_float64_tables(tiny):
    """FedMF / CoLR quantized by their held rows: the estimate holds each client's packed codes (the message)
    and row-sized buffers, not float64 copies of whole tables; over a noisy link, also the float32 tables received
    (a zero can arrive nonzero) and their decode."""
    cfg = RunConfig(method="fedmf", clients_per_round=30, dim=64, up_bits=4)
    M, N, d = 30, tiny.n_items, 64
    codes = estimate_memory(cfg, tiny)["packed codes of the quantized uplink"]
    noisy = estimate_memory(cfg.replace(up_link_budget=1), tiny)
    assert M * N * d * 5 // 8 < codes < 2 * M * N * d * 8  # the 5-bit codes; half the whole-table quantizer's copies
    assert noisy["packed codes of the quantized uplink"] == codes
    assert noisy["whole tables received over the noisy uplink"] == 2 * M * N * d * 4 + 2 * M * N * d * 8
    assert "whole tables received over the noisy uplink" not in estimate_memory(cfg, tiny)
    assert not any(k.startswith("quantizer of the uplink") for k in {**noisy, **estimate_memory(cfg, tiny)})


def test_a_noisy_uplink_too_large_for_memory_is_refused_with_the_link_named(tiny, monkeypatch):
    """A noisy link delivers whole tables: when those are what does not fit, the refusal says the link is why."""
    cfg = RunConfig(method="fedmf", clients_per_round=30, dim=64, up_bits=4, up_link_budget=1)
    est = estimate_memory(cfg, tiny)
    assert max(est, key=est.get) == "whole tables received over the noisy uplink"
    monkeypatch.setenv(MEMORY_ENV, str(sum(est.values()) / 2**30 / 2))
    with pytest.raises(ConfigError, match=r"clients_per_round=30 is invalid with dim=64.*largest: whole tables received "
                                          r"over the noisy uplink.*or use a method that sends rows .* or a noisy link"):
        Simulation(cfg, tiny)
    monkeypatch.setenv(MEMORY_ENV, str(sum(est.values()) / 2**30 * 2))
    Simulation(cfg, tiny)  # fits


def test_topk_is_decoded_onto_the_touched_rows_even_where_a_noisy_link_moves_padding_off_them(tiny, monkeypatch):
    """The server writes each client's k values at its touched rows (no clients x items table), quantized or
    not (QSGD keeps a zero at zero); over a link whose noise moves zeros of a short client's padding off its
    rows, those values land on received-only rows that count in the sums, not as touched."""
    from labcore.fed.local_train import RowUpdate
    from labcore.methods.base import RoundSetup
    from labcore.methods.compress import topk_count
    from labcore.methods.topk import TopKCompression

    kinds = []
    decode_uplink = TopKCompression.decode_uplink
    monkeypatch.setattr(TopKCompression, "decode_uplink",
                        lambda self, *a: kinds.append(type(out := decode_uplink(self, *a))) or out)
    cfg = RunConfig(method="topk", topk_ratio=0.25, **FAST)
    noisy = cfg.replace(up_bits=3, up_link_budget=1)  # 7 levels over a link that carries 2 exactly
    for c in (cfg, cfg.replace(up_bits=3), noisy):
        run(c, data=tiny, use_cache=False, progress=False)
    assert set(kinds) == {RowUpdate} and len(kinds) == 3 * cfg.rounds
    M, N, d, key = cfg.clients_per_round, tiny.n_items, cfg.dim, "Top-K message and its decode"
    message = M * topk_count(N * d, cfg.topk_ratio) * 16
    rows_decode = estimate_memory(cfg, tiny)[key] - message
    assert estimate_memory(cfg.replace(up_bits=3), tiny)[key] - message == rows_decode
    assert 0 < rows_decode < estimate_memory(noisy, tiny)[key] - message < M * N * d * 4 + 2 * rows_decode
    # the uplink quantizer works on the k values a client sends, not on its table
    quantizer = estimate_memory(cfg.replace(up_bits=3), tiny)["quantizer of the uplink (float64 copies of the payload)"]
    assert quantizer == 4 * message // 16 * 8

    # client 1 touched 2 of 6 items: 16 values, so a message of k = 24 ends with 8 zeros on item 0 (untouched)
    touched = torch.zeros(2, 6, dtype=torch.bool)
    touched[0, :4], touched[1, 2:4] = True, True
    rows = RowUpdate.from_dense(torch.randn(2, 6, d, generator=torch.Generator().manual_seed(0)), touched)
    method = TopKCompression(cfg.replace(topk_ratio=0.5), 6)
    wires = {w.name: w for w in method.encode_rows(rows)}
    by_rows = decode_uplink(method, wires, RoundSetup(), rows)
    assert isinstance(by_rows, RowUpdate) and torch.equal(by_rows.dense(), method.decode(wires))
    values = wires["values"].data.clone()
    values[1, -1] = 1e-3  # as if the link had moved that zero
    wires["values"] = wires["values"].with_data(values)
    moved = decode_uplink(method, wires, RoundSetup(), rows)
    assert isinstance(moved, RowUpdate) and torch.equal(moved.dense(), method.decode(wires))
    assert moved.dense()[1, 0, d - 1] == 1e-3 and moved.received.tolist() == [False] * 4 + [True, False, False]
    assert torch.equal(moved.touched(), touched)


@pytest.mark.parametrize("aggregation", ["weighted", "item_mean"])
def test_topk_over_a_noisy_link_by_rows_gives_the_dense_decodes_run(tiny, monkeypatch, aggregation):
    """A run whose link moves padding zeros off the clients' rows: the same losses, item table and ranking as
    when the server decodes each client's dense table (the item mean counts touched rows only)."""
    from labcore.methods.topk import TopKCompression

    cfg = RunConfig(method="topk", topk_ratio=0.5, up_bits=3, up_link_budget=1, quant_bucket=12,
                    aggregation=aggregation, **FAST)
    received = []
    decode_onto = TopKCompression.decode_onto

    def counting(self, *a):
        out = decode_onto(self, *a)
        per_client = np.bincount(out.client.numpy()[out.received]) if out.received is not None else [0]
        received.append(max(per_client))
        return out

    monkeypatch.setattr(TopKCompression, "decode_onto", counting)
    by_rows = Simulation(cfg, tiny)
    rows = [by_rows.step() for _ in range(cfg.rounds)]
    # the link did move zeros off the rows: those of the quantizer's bucket that holds a client's last values
    # (the memory estimate's bound): quant_bucket = 12 values, rows of 8, over 3 rows at most
    assert 0 < max(received) <= -(-12 // cfg.dim) + 1
    monkeypatch.setattr(TopKCompression, "decode_onto", lambda self, *a: None)  # the dense decode
    dense = Simulation(cfg, tiny)
    rows_dense = [dense.step() for _ in range(cfg.rounds)]
    assert torch.allclose(by_rows.Q, dense.Q, rtol=1e-5, atol=1e-6)
    for a, b in zip(rows, rows_dense):
        for k in ("loss", "hr", "ndcg", "bytes_up"):
            if k in a:
                assert a[k] == pytest.approx(b[k], rel=1e-6, abs=1e-7), k


def test_the_engine_turns_off_numpys_huge_pages_unless_told_otherwise(monkeypatch):
    from numpy._core import multiarray

    from labcore.fed.engine import no_huge_pages

    before = multiarray._set_madvise_hugepage(True)
    try:
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")  # the user's choice stands
        no_huge_pages()
        assert multiarray._get_madvise_hugepage()
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE")
        no_huge_pages()
        assert not multiarray._get_madvise_hugepage()
    finally:
        multiarray._set_madvise_hugepage(before)


def test_rotating_schedule_trains_every_user_once_per_pass_and_is_stateless(tiny):
    n, m = tiny.n_users, 7
    seen = np.concatenate([S.rotating_clients(n, m, 3, t) for t in range(n // m)])
    assert len(np.unique(seen)) == len(seen) == (n // m) * m  # no user twice within a pass
    assert np.array_equal(S.round_clients("rotating", n, m, 3, 5), S.rotating_clients(n, m, 3, 5))
    cfg = RunConfig(method="colr", client_schedule="rotating", **{**FAST, "clients_per_round": 10})
    a = run(cfg, data=tiny, use_cache=False, progress=False)
    b = run(cfg.replace(client_schedule="uniform"), data=tiny, use_cache=False, progress=False)
    again = run(cfg, data=tiny, use_cache=False, progress=False)
    assert a.table["loss"].tolist() == again.table["loss"].tolist()  # same seed, same numbers
    assert a.table["loss"].tolist() != b.table["loss"].tolist()


@pytest.mark.parametrize("lowrank", [False, True])
def test_a_step_taken_in_blocks_of_clients_gives_the_same_numbers(tiny, lowrank, monkeypatch):
    """Full participation takes each step's clients in blocks: the same numbers to float rounding (torch's
    batched products may block another batch count differently), the same bits for one block."""
    from labcore.fed import batched
    from labcore.fed.local_train import LowRank

    clients = S.sample_clients(tiny.n_users, 12, S.round_rng(0, 0, S.STREAM_CLIENTS))
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), clients, 4, 2, 16, 0, 0)
    g = torch.Generator().manual_seed(0)
    Q, P = torch.randn(tiny.n_items, 6, generator=g) * 0.3, torch.randn(12, 6, generator=g) * 0.3
    lr_ = LowRank(torch.randn(6, 3, generator=g) / 3**0.5, torch.ones(12, 3), torch.ones(12)) if lowrank else None
    whole = train_cohort_batched(Q, P, plan, 0.1, 1e-2, lr_)
    monkeypatch.setattr(batched, "_STEP_FLOATS", 16 * 6 * 5)  # blocks of 5 clients
    blocks = train_cohort_batched(Q, P, plan, 0.1, 1e-2, lr_)
    assert torch.equal(whole.rows.values != 0, blocks.rows.values != 0)
    assert torch.allclose(whole.rows.values, blocks.rows.values, rtol=1e-6, atol=1e-7)
    assert torch.allclose(whole.p, blocks.p, rtol=1e-6, atol=1e-7)
    assert blocks.loss_sum == pytest.approx(whole.loss_sum, rel=1e-6)
    monkeypatch.setattr(batched, "_STEP_FLOATS", 16 * 6 * 12)  # one block: the same bits
    one = train_cohort_batched(Q, P, plan, 0.1, 1e-2, lr_)
    assert torch.equal(whole.rows.values, one.rows.values) and torch.equal(whole.p, one.p)
