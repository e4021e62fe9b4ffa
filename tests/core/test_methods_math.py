"""Tiny exact cases for each method's math."""
import math

import numpy as np
import pytest
import torch
from sklearn.decomposition import PCA

from labcore.fed.aggregate import aggregate, client_sum, fedavg_weights, item_mean, weighted_sum
from labcore.methods.colr import draw_B
from labcore.fed.local_train import RowUpdate
from labcore.methods.compress import (svd_reconstruct, svd_truncate, svd_truncate_rows, topk_compress,
                                     topk_compress_rows, topk_count, topk_decompress)
from labcore.methods import quantize as quantize_module
from labcore.methods.quantize import dequantize, pack_codes, quantize, quantize_blocks, unpack_codes
from oracles.quantize_reference import dequantize_torch, pack_codes_planes, quantize_torch
from labcore.methods.topk_kernels import _kth_largest_key, topk_onto_rows
from labcore.metrics.effective_rank import components_for, effective_rank_stats, explained_variance_ratios
from labcore.metrics.ranking import BLOCK_USERS, candidate_scores, hit_ratio_ndcg


def test_fedavg_weights_are_sample_shares():
    w = fedavg_weights(torch.tensor([1, 3]))
    assert torch.allclose(w, torch.tensor([0.25, 0.75]))
    X = torch.tensor([[[4.0]], [[8.0]]])
    assert weighted_sum(X, w).item() == pytest.approx(7.0)


def test_item_mean_divides_by_clients_that_touched_the_item():
    X = torch.tensor([[[2.0], [1.0]], [[4.0], [0.0]]])  # 2 clients, 2 items
    touched = torch.tensor([[True, True], [True, False]])
    assert item_mean(X, touched).flatten().tolist() == [3.0, 1.0]
    with pytest.raises(ValueError, match="item_mean, weighted"):
        aggregate(X, "median", torch.ones(2), touched)


def test_the_client_sum_of_a_factor_major_decode_adds_in_memory_order():
    """A (M, N, k) view of (M, k, N) storage (CoLR's received tables) is summed over clients as its storage is: the
    same bits as the storage's sum, torch's sum of the view to float rounding; any other layout is torch's sum."""
    X = torch.randn(300, 4, 37, generator=torch.Generator().manual_seed(0))
    view = X.transpose(1, 2)  # (300, 37, 4)
    got = client_sum(view)
    assert got.shape == (37, 4) and got.is_contiguous() and torch.equal(got, X.sum(0).t())
    assert not torch.equal(got, view.sum(0))  # torch's sum of the view adds in another order
    torch.testing.assert_close(got, view.sum(0), rtol=1e-6, atol=1e-5)
    contiguous = view.contiguous()
    assert torch.equal(client_sum(contiguous), contiguous.sum(0))
    assert torch.equal(client_sum(view[:, :5]), view[:, :5].sum(0))  # a slice: not the factor-major layout
    touched = torch.ones(300, 37, dtype=torch.bool)
    assert torch.equal(item_mean(view, touched), X.sum(0).t() / 300)


def test_the_weighted_sum_of_a_factor_major_decode_weights_its_storage():
    """weighted_sum of a (M, N, k) view of (M, k, N) storage: the storage's tensordot, transposed (the same bits),
    the view's own tensordot (which copies it whole first) to float rounding; other layouts are torch's tensordot."""
    g = torch.Generator().manual_seed(1)
    X = torch.randn(300, 4, 37, generator=g)
    w = torch.rand(300, generator=g)
    view = X.transpose(1, 2)
    got = weighted_sum(view, w)
    assert got.shape == (37, 4) and got.is_contiguous()
    assert torch.equal(got, torch.tensordot(w, X, dims=1).t())
    torch.testing.assert_close(got, torch.tensordot(w, view.contiguous(), dims=1), rtol=1e-6, atol=1e-5)
    contiguous = view.contiguous()
    assert torch.equal(weighted_sum(contiguous, w), torch.tensordot(w, contiguous, dims=1))
    assert torch.equal(weighted_sum(view[:, :5], w), torch.tensordot(w, view[:, :5], dims=1))
    assert torch.equal(aggregate(view, "weighted", w, None), got)


def test_colr_aggregate_equals_fedavg_of_BA():
    g = torch.Generator().manual_seed(0)
    B = draw_B("normal", 6, 2, g)
    A = torch.randn(3, 5, 2, generator=g)  # 3 clients, 5 items, rank 2
    w = torch.tensor([0.2, 0.3, 0.5])
    via_A = weighted_sum(A, w) @ B.T  # what CoLR sends down: the aggregate of A, then B A
    via_full = weighted_sum(A @ B.T, w)  # FedAvg of each client's full update B A_u
    assert torch.allclose(via_A, via_full, atol=1e-6)


@pytest.mark.parametrize("kind", ["normal", "orthonormal", "sphere"])
def test_B_distributions(kind):
    d, r = 16, 4
    B = draw_B(kind, d, r, torch.Generator().manual_seed(1))
    assert B.shape == (d, r)
    if kind == "orthonormal":
        assert torch.allclose(B.T @ B, torch.eye(r) * d / r, atol=1e-5)
    if kind == "sphere":
        assert torch.allclose(B.norm(dim=0), torch.ones(r), atol=1e-6)
    if kind == "normal":  # E[B B^T] = I (Lemma A.2): check on an average of many draws
        g = torch.Generator().manual_seed(2)
        draws = [draw_B(kind, d, r, g) for _ in range(3000)]
        acc = sum(b @ b.T for b in draws) / len(draws)
        assert torch.allclose(acc, torch.eye(d), atol=0.08)


def test_topk_keeps_the_k_largest_magnitudes():
    X = torch.tensor([[[0.1, -5.0], [3.0, 0.2]], [[1.0, 2.0], [-3.0, 0.0]]])
    vals, idx = topk_compress(X, 2)
    assert sorted(vals[0].abs().tolist()) == [3.0, 5.0]
    assert sorted(idx[0].tolist()) == [1, 2] and idx.dtype == torch.int32
    dense = topk_decompress(vals, idx, X.shape)
    assert dense[0].tolist() == [[0.0, -5.0], [3.0, 0.0]]
    assert dense[1].tolist() == [[0.0, 2.0], [-3.0, 0.0]]
    assert topk_count(100, 0.05) == 5 and topk_count(10, 1e-9) == 1


def test_svd_truncation_error_equals_tail_singular_values():
    X = torch.randn(1, 40, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    s = np.linalg.svd(X[0].numpy(), compute_uv=False)
    for r in (1, 3, 8):
        U, S, V = svd_truncate(X, r)
        err = torch.linalg.norm(X - svd_reconstruct(U, S, V)).item() ** 2
        assert err == pytest.approx(float((s[r:] ** 2).sum()), abs=1e-8)
        assert np.allclose(S[0].numpy(), s[:r])


def _touched_rows(M=5, N=30, d=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(M, N, generator=g) < 0.3
    t[0] = False  # a client that touched nothing
    t[1, :2] = True
    return RowUpdate.from_dense(torch.randn(M, N, d, generator=g) * t[..., None], t)


def test_svd_from_the_touched_rows_equals_the_dense_svd():
    rows = _touched_rows()
    X = rows.dense()
    for r in (1, 3):
        U, S, V = svd_truncate(X, r)
        Ur, Sr, Vr = svd_truncate_rows(rows.values, rows.indptr, r)
        assert torch.allclose(Sr, S, atol=1e-5)
        assert torch.allclose(svd_reconstruct(rows.with_values(Ur).dense(), Sr, Vr), svd_reconstruct(U, S, V),
                              atol=1e-5)
    assert Sr[0].abs().max() == 0 and Ur[: rows.indptr[1]].numel() == 0


@pytest.mark.parametrize("k", [1, 7, 40, 119])  # 119: more than any client's touched values (zeros then)
def test_topk_from_the_touched_rows_sends_what_the_dense_topk_sends(k):
    rows = _touched_rows()
    X = rows.dense()
    dense = topk_decompress(*topk_compress(X, k), X.shape)
    vals, idx = topk_compress_rows(rows.values, rows.item, rows.indptr, rows.n_items, k)
    assert vals.shape == (5, k) and idx.dtype == torch.int32
    assert all(len(set(i.tolist())) == k for i in idx)  # distinct positions: a zero never overwrites a value
    assert torch.equal(topk_decompress(vals, idx, X.shape), dense)


def test_topk_ties_go_to_the_lowest_index_in_the_table_and_in_its_rows():
    vals, idx = topk_compress(torch.tensor([[[1.0, 3.0], [-3.0, 3.0]]]), 2)
    assert idx.tolist() == [[1, 2]] and vals.tolist() == [[3.0, -3.0]]
    rows = _touched_rows(N=80)
    rows = rows.with_values(rows.values.round(decimals=1))  # many equal magnitudes, +v and -v among them
    X = rows.dense()
    for k in (3, 10, 40):
        dense = topk_compress(X, k)
        by_rows = topk_compress_rows(rows.values, rows.item, rows.indptr, rows.n_items, k)
        # clients with k non-zero values send the same message (else zeros fill it, placed anywhere)
        full = X.reshape(5, -1).abs().topk(k, dim=1).values[:, -1] > 0
        assert full.sum() >= 2
        assert torch.equal(dense[1][full], by_rows[1][full]) and torch.equal(dense[0][full], by_rows[0][full])
        assert torch.equal(topk_decompress(*dense, X.shape), topk_decompress(*by_rows, X.shape))


def test_radix_select_finds_the_kth_largest_magnitude_like_a_sort():
    rng = np.random.default_rng(3)
    hist = np.empty(2048, dtype=np.int64)
    for x in (rng.standard_normal(500).astype(np.float32), np.round(rng.standard_normal(300), 1).astype(np.float32),
              np.array([0.0, -0.0, 1.0, -1.0, np.inf, 3e-45, -3e-45, 2.0], dtype=np.float32)):
        key = x.view(np.uint32) & np.uint32(0x7FFFFFFF)
        for k in (1, 2, len(x) // 2, len(x) - 1, len(x)):
            thr = _kth_largest_key(key, k, hist, np.empty_like(key))
            assert np.uint32(thr).view(np.float32) == np.sort(np.abs(x))[::-1][k - 1]


@pytest.mark.parametrize("k", [1, 7, 40, 119])
def test_topk_decoded_onto_the_touched_rows_is_the_dense_decode(k):
    rows = _touched_rows()
    vals, idx = topk_compress_rows(rows.values, rows.item, rows.indptr, rows.n_items, k)
    d = rows.width
    shape = (rows.n_clients, rows.n_items, d)
    out, off = topk_onto_rows(vals.numpy(), idx.numpy(), rows.item.numpy(), rows.indptr, d)
    assert all(len(a) == 0 for a in off)
    assert torch.equal(rows.with_values(torch.from_numpy(out)).dense(), topk_decompress(vals, idx, shape))
    moved = vals.clone()
    moved[1, -1] = 0.5  # client 1 has fewer than 119 values: its last position is padding, off its rows
    moved[3, max(0, k - 2):] = -0.25
    out, off = topk_onto_rows(moved.numpy(), idx.numpy(), rows.item.numpy(), rows.indptr, d)
    by_rows = rows.with_values(torch.from_numpy(out)).with_received(*off)
    assert torch.equal(by_rows.dense(), topk_decompress(moved, idx, shape))
    if k == 119:  # the moved values sit on rows the clients did not touch: received, not touched
        assert sorted(off[0].tolist()) == [1, 3, 3] and by_rows.received.sum() >= 2
        assert torch.equal(by_rows.touched(), rows.touched())
        assert torch.equal(by_rows.touched_only().dense(), rows.with_values(torch.from_numpy(out)).dense())
    else:
        assert by_rows.received is None


def test_quantizer_is_unbiased_and_packs_to_the_stated_width():
    x = torch.tensor([[0.3, -0.1, 0.05, 0.0, -0.7, 0.2]])
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([dequantize(*quantize(x, 2, 4, g), 2, 4, tuple(x.shape)) for _ in range(20000)])
    assert torch.allclose(draws.mean(0), x, atol=5e-3)
    levels, signs, norms = quantize(x, 3, 4, g)
    assert norms.shape == (1, 2) and int(levels.max()) <= 7
    packed = pack_codes(levels.numpy(), signs.numpy(), 3)
    assert packed.shape == (1, math.ceil(6 * 4 / 8))
    lv, sg = unpack_codes(packed, 6, 3)
    assert (lv == levels.numpy()).all() and (sg == signs.numpy()).all()
    with pytest.raises(ValueError, match="1..32"):
        quantize(x, 0, 4, g)


@pytest.mark.parametrize("bits,bucket,shape", [(1, 4, (3, 50)), (2, 7, (2, 4, 5)), (3, 512, (4, 300)),
                                               (8, 16, (5, 1000)), (16, 3, (2, 31)), (32, 64, (3, 200))])
@pytest.mark.parametrize("block", [2**20, 60, 1])  # clients in one block, a few at a time, one at a time
def test_compiled_quantizer_gives_the_torch_quantizers_levels_values_and_bytes(bits, bucket, shape, block,
                                                                                monkeypatch):
    monkeypatch.setattr(quantize_module, "BLOCK_VALUES", block)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(bits)) * 10.0 ** torch.randint(
        -8, 3, shape, generator=torch.Generator().manual_seed(1))
    x.view(-1)[::5] = 0.0  # zeros (a Top-K message's padding), a bucket of them, and a negative zero
    x.view(-1)[:bucket] = 0.0
    x.view(-1)[-1] = -0.0
    got = quantize(x, bits, bucket, torch.Generator().manual_seed(7))
    want = quantize_torch(x, bits, bucket, torch.Generator().manual_seed(7))
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert torch.equal(dequantize(*got, bits, bucket, shape), dequantize_torch(*want, bits, bucket, shape))
    levels, signs = got[0].numpy(), got[1].numpy()
    packed = pack_codes(levels, signs, bits)
    assert np.array_equal(packed, pack_codes_planes(levels, signs, bits))
    lv, sg = unpack_codes(packed, levels.shape[1], bits)
    assert np.array_equal(lv, levels) and np.array_equal(sg, signs)


@pytest.mark.parametrize("layout", ["item", "factor"])
@pytest.mark.parametrize("block", [2**20, 40, 1])  # clients in one block, a few at a time, one at a time
def test_a_payload_held_by_rows_quantizes_as_its_whole_table(layout, block, monkeypatch):
    """The uplink's quantizer writes a rows-held payload (FedMF's Delta Q item-major, CoLR's A factor-major) a
    block of clients at a time: the levels, signs and norms of the same draws on the whole (M, n) table."""
    from labcore.methods.base import RowBlock, Wire

    monkeypatch.setattr(quantize_module, "BLOCK_VALUES", block)
    M, N, k = 7, 11, 3
    touched = torch.rand(M, N, generator=torch.Generator().manual_seed(2)) < 0.3
    touched[4] = False  # a client with no rows
    X = torch.randn(M, N, k, generator=torch.Generator().manual_seed(3)) * touched[..., None]
    wire = Wire("u", "values", None, rows=RowBlock(RowUpdate.from_dense(X, touched), layout))
    whole = wire.dense()
    assert tuple(whole.shape) == wire.shape == (M, N * k)
    assert torch.equal(whole.view(M, k, N).transpose(1, 2) if layout == "factor" else whole.view(M, N, k), X)
    got = quantize_blocks(wire.fill, wire.shape, 4, 5, torch.Generator().manual_seed(9))
    want = quantize(whole, 4, 5, torch.Generator().manual_seed(9))
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert got[0][4].eq(0).all() and got[0].ne(0).any()


@pytest.mark.parametrize("method", ["fedmf", "colr", "scolr"])
def test_a_quantized_uplink_read_back_onto_the_touched_rows_is_its_dense_decode(method):
    """The server reads a quantized FedMF / CoLR / SCoLR uplink that arrives as whole payloads back onto the rows
    the clients touched: the same floats as its dense decode there, zero elsewhere; over a noisy link (zeros can
    move) it decodes densely."""
    from labcore.config import RunConfig
    from labcore.fed.local_train import LocalResult
    from labcore.fed.mods import quantize_wires
    from labcore.methods import make_method

    M, N = 6, 9
    cfg = RunConfig(method=method, dim=5, rank=3, scolr_min_rank=1)
    m = make_method(cfg, N)
    setup = m.setup_round(0, M, torch.Generator().manual_seed(1))
    k = cfg.dim if method == "fedmf" else cfg.rank
    touched = torch.rand(M, N, generator=torch.Generator().manual_seed(2)) < 0.4
    touched[3] = False  # a client with no rows
    X = torch.randn(M, N, k, generator=torch.Generator().manual_seed(3)) * touched[..., None]
    rows = RowUpdate.from_dense(X, touched)
    up = m.uplink(LocalResult(torch.zeros(M, cfg.dim), None, None, 0.0, 0, rows), setup)
    # as the Flower server (or the dense layout) receives them: each client's whole payload, not its rows
    up = [w.with_data(w.dense()) if w.rows is not None else w for w in up]
    for budget, by_rows in ((0, True), (1, False)):  # 15 levels over a link that carries 2 exactly: zeros move
        _, recv = quantize_wires(up, 4, 7, torch.Generator().manual_seed(4), budget)
        wires = {w.name: w for w in recv}
        dense = m.decode_uplink(wires, setup)
        got = m.decode_uplink(wires, setup, rows.with_values(torch.zeros(rows.values.shape[0], 0)))
        assert isinstance(got, RowUpdate) == by_rows
        if by_rows:
            assert torch.equal(got.dense(), dense * touched[..., None])
            assert dense[~touched].eq(0).all() and got.values.ne(0).any()
        else:
            assert torch.equal(got, dense) and dense[~touched].ne(0).any()
    with pytest.raises(ValueError, match=r"of shape \(1, 45\) cannot hold 6 clients' tables of 9 x 5 values"):
        recv[0].with_data(torch.zeros(1, 45)).onto_rows(rows, 5, "item")


# (N, k, bits, bucket): rows across buckets, packed rows sharing their first and last bytes (k (bits + 1) not a
# multiple of 8); rows long enough for the vectorized loops of the item-major pass; 32 bits (33-bit codes); columns
# long enough for the vectorized loop of the factor-major pass (runs of a bucket within a column)
QUANTIZED_ROW_SHAPES = [(11, 3, 3, 7), (9, 37, 6, 48), (7, 24, 32, 40), (90, 3, 7, 40)]


@pytest.mark.parametrize("shape", QUANTIZED_ROW_SHAPES, ids=lambda s: "N{}-k{}-{}bit-bucket{}".format(*s))
@pytest.mark.parametrize("layout", ["item", "factor"])
def test_quantizing_by_rows_is_the_dense_quantizer_with_a_draw_per_held_value(layout, shape, monkeypatch):
    """`quantize_rows` gives the packed bytes, norms and received values of the dense QSGD passes over each
    client's whole payload, given the same draws at the held values' positions (any draws elsewhere: a zero gets
    level 0); blocks of draws (a memory bound) change nothing."""
    from labcore.methods.base import RowBlock, fill_rows
    from labcore.methods.quantize import draws_for, quantize_rows
    from labcore.methods.quantize_kernels import qsgd_levels, qsgd_rows_norms

    M, (N, k, bits, bucket) = 5, shape
    touched = torch.rand(M, N, generator=torch.Generator().manual_seed(1)) < 0.5
    touched[2] = False  # a client with no rows
    X = torch.randn(M, N, k, generator=torch.Generator().manual_seed(2)) * touched[..., None]
    X[0, int(touched[0].nonzero()[0]), 1] = 0.0  # a held zero
    X[1, int(touched[1].nonzero()[0]), 0] = -1e-9  # a negative value at level 0: its sign bit is still sent
    rows = RowUpdate.from_dense(X, touched)
    item, factor = rows.item.numpy(), layout == "factor"
    packed, norms32, values = quantize_rows(rows.values, rows.indptr, item, N, factor, bits, bucket,
                                            torch.Generator().manual_seed(3))

    draws = torch.from_numpy(draws_for(torch.Generator().manual_seed(3)).random(tuple(rows.values.shape)))
    n, nb = N * k, -(-N * k // bucket)
    u = torch.rand(M, nb * bucket, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    fill_rows(u.numpy(), rows.indptr, item, draws.numpy(), N, factor)  # held values' draws; others arbitrary
    u[:, n:] = 0.5
    payload = torch.zeros(M, nb * bucket, dtype=torch.float64)
    payload[:, :n] = RowBlock(rows, layout).dense().double()
    norms = np.zeros((M, nb))
    qsgd_rows_norms(rows.values.numpy(), rows.indptr, item, N, factor, bucket, np.arange(n) // bucket, norms)
    np.testing.assert_allclose(norms, payload.view(M, nb, bucket).norm(dim=-1).numpy(), rtol=1e-15)
    assert np.array_equal(norms32, norms.astype(np.float32))
    levels, signs = np.empty((M, n), np.int64), np.empty((M, n), np.bool_)
    qsgd_levels(payload.view(M, nb, bucket).numpy(), norms, u.view(M, nb, bucket).numpy(), float(2**bits - 1),
                levels, signs)
    assert np.array_equal(packed, pack_codes(levels, signs, bits))
    assert signs.sum() > (X < 0).sum() / 2 and levels.max() > 0  # the case exercises signs and levels
    received = dequantize(torch.from_numpy(levels), torch.from_numpy(signs), norms32, bits, bucket, (M, n))
    assert torch.equal(RowBlock(rows.with_values(values), layout).dense(), received)

    each = quantize_rows(rows.values, rows.indptr, item, N, factor, bits, bucket, torch.Generator().manual_seed(3),
                         runs=False)  # every value coded and packed on its own: the benchmark's baseline
    assert np.array_equal(each[0], packed) and torch.equal(each[2], values)
    monkeypatch.setattr(quantize_module, "BLOCK_VALUES", 2 * k)  # blocks of one client, buffers grown
    again = quantize_rows(rows.values, rows.indptr, item, N, factor, bits, bucket, torch.Generator().manual_seed(3))
    assert np.array_equal(again[0], packed) and torch.equal(again[2], values)


def test_unpacking_codes_too_short_for_their_count_is_refused():
    packed = pack_codes(np.array([[3, 1, 0]]), np.array([[True, False, True]]), 3)  # 12 bits: 2 bytes
    assert unpack_codes(packed, 3, 3)[0].tolist() == [[3, 1, 0]]
    with pytest.raises(ValueError, match=r"too short: n=5 values of 4 bits need 3 bytes"):
        unpack_codes(packed, 5, 3)


def test_32_bit_quantization_is_nearly_lossless():
    x = torch.randn(2, 50, generator=torch.Generator().manual_seed(4))
    y = dequantize(*quantize(x, 32, 16, torch.Generator().manual_seed(0)), 32, 16, tuple(x.shape))
    assert torch.allclose(x, y, atol=1e-6)


def test_effective_rank_matches_sklearn_pca():
    g = torch.Generator().manual_seed(5)
    low = torch.randn(30, 2, generator=g) @ torch.randn(2, 6, generator=g) + 0.01 * torch.randn(30, 6, generator=g)
    ratios = explained_variance_ratios(low[None])[0].numpy()
    sk = PCA().fit(low.numpy().astype(np.float64)).explained_variance_ratio_
    assert np.allclose(ratios, sk, atol=1e-6)
    assert components_for(torch.tensor([[0.6, 0.3, 0.1]]), 0.9).item() == 2
    stats = effective_rank_stats(torch.stack([low, low]))
    assert stats["n90_mean"] == 2 and stats["n90_std"] == 0
    # factor form (CoLR: ΔQ = A B^T) gives the same ratios as the dense product
    A, B = torch.randn(2, 30, 3, generator=g), torch.randn(6, 3, generator=g)
    assert torch.allclose(explained_variance_ratios(A, B), explained_variance_ratios(A @ B.T), atol=1e-6)


def test_hit_ratio_and_ndcg_on_a_hand_ranked_case():
    P = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    Q = torch.tensor([[5.0, 0], [4.0, 0], [3.0, 0], [2.0, 0]])
    test = np.array([2, 0])  # user 0: two negatives score higher -> rank 2; user 1: rank 0
    negs = np.array([[0, 1, 3], [1, 2, 3]])
    hr, ndcg = hit_ratio_ndcg(P, Q, test, negs, k=2)
    assert hr == 0.5
    assert ndcg == pytest.approx((0 + 1.0) / 2)
    hr3, ndcg3 = hit_ratio_ndcg(P, Q, test, negs, k=3)
    assert hr3 == 1.0 and ndcg3 == pytest.approx((1 / math.log2(4) + 1) / 2)


@pytest.mark.parametrize("dtypes", [(torch.float32, torch.float32), (torch.float64, torch.float64),
                                    (torch.float64, torch.float32)])
@pytest.mark.parametrize("U,K,d", [(1, 1, 1), (3, 5, 7), (BLOCK_USERS + 1, 99, 64), (2 * BLOCK_USERS + 17, 100, 33),
                                   (150, 20, 128)])
def test_candidate_scores_block_by_block_are_the_whole_gathers_bits(U, K, d, dtypes):
    g = torch.Generator().manual_seed(U + K + d)
    pu = torch.randn(U, d, generator=g, dtype=dtypes[0])
    Q = torch.randn(50, d, generator=g, dtype=dtypes[1])
    items = torch.randint(0, 50, (U, K), generator=g)
    assert torch.equal(candidate_scores(pu, Q, items), (pu[:, None, :] * Q[items]).sum(-1))


def test_topk_values_off_the_rows_beyond_the_first_buffer_are_all_kept():
    """More off-row values than the decode's first buffer holds (1,024 here): it walks again with room for all."""
    d, n_items, k = 4, 600, 1500
    item, indptr = np.array([2], dtype=np.int64), np.array([0, 1], dtype=np.int64)  # one client, one touched row
    positions = np.arange(k, dtype=np.int32)  # items 0..374: 4 values on the touched row, 1,496 off it
    values = np.linspace(-1.0, 1.0, k, dtype=np.float32)
    values[values == 0] = 0.5
    out, off = topk_onto_rows(values[None], positions[None], item, indptr, d)
    assert len(off[0]) == k - d and out[0].tolist() == values[8:12].tolist()
    rows = RowUpdate(1, n_items, torch.tensor([0]), torch.from_numpy(item), torch.from_numpy(out))
    by_rows = rows.with_received(*off)
    assert torch.equal(by_rows.dense(), topk_decompress(torch.from_numpy(values[None]),
                                                        torch.from_numpy(positions[None]), (1, n_items, d)))
    assert int(by_rows.received.sum()) == k // d - 1 and torch.equal(by_rows.touched(), rows.touched())
