"""Pairwise-mask secure aggregation (with dropout recovery) and the STTFedRec circular chain."""
import numpy as np
import pytest

from labcore.privacy.chain import ChainBrokenError, chain_aggregate
from labcore.privacy.secagg import (
    FixedPoint,
    SecureAggregationError,
    key_agreement,
    masked_part,
    secure_aggregate,
    unmask_sum,
)


def _updates(M=6, n=2000, seed=0):
    return np.random.default_rng(seed).normal(0.0, 1e-2, (M, n))


def _exact_sum(X, codec, rows=None):
    """The ring sum of the encodings, decoded: what an exact protocol must return."""
    rows = range(len(X)) if rows is None else rows
    acc = np.zeros(X.shape[1], np.uint64)
    for i in rows:
        acc = codec.add(acc, codec.encode(X[i], len(X)))
    return codec.decode(acc)


def test_fixed_point_roundtrip_and_overflow():
    c = FixedPoint(frac_bits=24, modulus_bits=64)
    x = np.array([-1.5, 0.0, 1e-3, 123.456])
    np.testing.assert_allclose(c.decode(c.encode(x)), x, atol=2**-25)
    c32 = FixedPoint(frac_bits=16, modulus_bits=32)
    np.testing.assert_allclose(c32.decode(c32.encode(x)), x, atol=2**-17)
    with pytest.raises(SecureAggregationError, match="fixed-point overflow.*16 fractional bits.*32-bit ring"):
        c32.encode(np.array([40000.0]))
    with pytest.raises(SecureAggregationError, match="overflow"):
        c32.encode(np.array([10000.0]), n_parties=4)  # fine alone, not summed over 4 parties


def test_exact_sum_no_dropout():
    X = _updates()
    codec = FixedPoint()
    s, rep = secure_aggregate(X, codec=codec, seed=1)
    assert np.array_equal(s, _exact_sum(X, codec))  # bit-exact in the ring
    np.testing.assert_allclose(s, X.sum(0), atol=len(X) * 2**-24)
    assert rep.masked_bytes_per_client == 8 * X.shape[1] and rep.masked_bits_per_client == 64 * X.shape[1]
    assert rep.public_key_bytes_per_client == 256 and rep.revealed_seed_bytes == 0 and not rep.recovered


def test_masked_vectors_look_uniform_and_are_measured():
    X = _updates(M=4, n=5000)
    codec = FixedPoint()
    clients, _ = key_agreement(4, seed=2)
    m = clients[0].mask(X[0], codec, 4)
    u = m.astype(np.float64) / 2.0**64
    assert abs(u.mean() - 0.5) < 0.02 and abs(np.mean(u < 0.25) - 0.25) < 0.02
    part = masked_part(m, codec)
    assert part.kind == "ciphertext" and len(part.payload) == 8 * 5000 and part.bits == 64 * 5000


def test_weighted_sum():
    X = _updates(M=4)
    w = np.array([0.1, 0.2, 0.3, 0.4])
    s, _ = secure_aggregate(X, weights=w, seed=3)
    np.testing.assert_allclose(s, w @ X, atol=4 * 2**-24)


def test_dropout_recovered_exactly():
    X = _updates(M=6)
    codec = FixedPoint()
    s, rep = secure_aggregate(X, dropped=[2, 4], codec=codec, seed=4)
    survivors = [0, 1, 3, 5]
    assert np.array_equal(s, _exact_sum(X, codec, survivors))
    assert rep.recovered and rep.n_survivors == 4 and rep.dropped == [2, 4]
    assert rep.revealed_seed_bytes == 16 * 4 * 2  # each survivor reveals one seed per dropped client


def test_dropout_below_threshold_raises():
    X = _updates(M=6)
    with pytest.raises(SecureAggregationError, match=r"only 2 of 6 clients survived.*threshold t=4"):
        secure_aggregate(X, dropped=[0, 1, 2, 3], seed=5)
    with pytest.raises(SecureAggregationError, match="threshold t=5"):
        secure_aggregate(X, dropped=[0, 1], threshold=5, seed=5)


def test_unanswered_seed_reveal_raises():
    X = _updates(M=5)
    with pytest.raises(SecureAggregationError, match=r"survivor 3 did not reveal.*dropped client 1.*pair \(1, 3\)"):
        secure_aggregate(X, dropped=[1], unresponsive=[3], seed=6)
    s, _ = secure_aggregate(X, unresponsive=[3], seed=6)  # nothing to recover: no reveal needed
    np.testing.assert_allclose(s, X.sum(0), atol=5 * 2**-24)


def test_server_never_returns_masked_garbage():
    """Without recovery the dangling masks would make the sum uniform noise."""
    X = _updates(M=4, n=1000)
    codec = FixedPoint()
    clients, _ = key_agreement(4, seed=7)
    masked = {i: clients[i].mask(X[i], codec, 4) for i in (0, 1, 2)}
    naive = codec.decode(sum_ring(masked.values(), codec))
    assert np.max(np.abs(naive)) > 1e6  # uniform in the ring
    total, _ = unmask_sum(masked, 4, codec, 3, lambda i, d: clients[i].reveal_seed(d))
    assert np.array_equal(codec.decode(total), _exact_sum(X[:4], codec, [0, 1, 2]))


def sum_ring(vs, codec):
    acc = None
    for v in vs:
        acc = v.copy() if acc is None else codec.add(acc, v)
    return acc


@pytest.mark.parametrize("mode", ["shares", "relay"])
def test_chain_exact_sum(mode):
    X = _updates(M=7, n=3000)
    codec = FixedPoint()
    s, rep = chain_aggregate(X, mode=mode, codec=codec, seed=8)
    assert np.array_equal(s, _exact_sum(X, codec))
    assert rep.n_links == 7 and rep.link_bytes == [8 * 3000] * 7 and rep.included == list(range(7))
    assert rep.sequential_hops == (2 if mode == "shares" else 7 + 1)


def test_chain_hops_grow_with_k_only_in_relay_mode():
    hops = {m: [chain_aggregate(_updates(M=K, n=10), mode=m, seed=0)[1].sequential_hops for K in (3, 6, 12)]
            for m in ("shares", "relay")}
    assert hops["shares"] == [2, 2, 2] and hops["relay"] == [4, 7, 13]


def test_chain_server_view():
    X = _updates(M=4, n=5000)
    _, rep = chain_aggregate(X, mode="shares", seed=9)
    assert len(rep.uploads) == 4  # K mixed values g_k* = [g_k]_1 + [g_(k-1)]_2, each uniform in the ring
    for up in rep.uploads:
        u = up.astype(np.float64) / 2.0**64
        assert abs(u.mean() - 0.5) < 0.02
    _, rep = chain_aggregate(X, mode="relay", seed=9)
    assert len(rep.uploads) == 1  # relay: only the sum reaches the server


@pytest.mark.parametrize("mode", ["shares", "relay"])
def test_chain_dropped_link(mode):
    X = _updates(M=5, n=100)
    with pytest.raises(ChainBrokenError, match=r"link c1 -> c2 broke: client 2 dropped") as e:
        chain_aggregate(X, mode=mode, dropouts={2: "before"})
    assert e.value.link == (1, 2)
    with pytest.raises(ChainBrokenError, match=r"c3 -> c4 broke.*cannot be recovered"):
        chain_aggregate(X, mode=mode, dropouts={4: "after"}, on_dropout="reroute")
    codec = FixedPoint()
    s, rep = chain_aggregate(X, mode=mode, dropouts={0: "before", 2: "before"}, on_dropout="reroute", codec=codec)
    assert rep.included == [1, 3, 4] and (1, 3) in rep.rerouted
    assert np.array_equal(s, codec.decode(sum_ring([codec.encode(X[i], 5) for i in (1, 3, 4)], codec)))
