"""Paillier encryption of Top-K messages (1024-bit keys here for speed; the default is 2048)."""
import numpy as np
import pytest

from labcore.net.message import Message
from labcore.privacy.paillier import (
    DEFAULT_KEY_LENGTH,
    EncryptedTopK,
    PaillierAggregator,
    aggregate_topk,
    ciphertext_width,
    decrypt_sparse,
    encrypt_topk,
    keypair,
    per_value_costs,
)

KEY = 1024


def _topk(M=3, k=12, n_total=300, seed=0):
    rng = np.random.default_rng(seed)
    V = rng.normal(0.0, 1e-2, (M, k))
    I = np.stack([rng.choice(n_total // 3, k, replace=False) for _ in range(M)])  # overlapping indices
    return V, I


def _dense(V, I, w, n_total):
    ref = np.zeros(n_total)
    for i in range(len(V)):
        np.add.at(ref, I[i], w[i] * V[i])
    return ref


def test_default_key_length_is_2048():
    assert DEFAULT_KEY_LENGTH == 2048


def test_weighted_sum_exact_to_float_tolerance():
    V, I = _topk()
    w = np.array([0.2, 0.3, 0.5])
    out, rep = PaillierAggregator(KEY).aggregate(V, I, w, 300)
    np.testing.assert_allclose(out, _dense(V, I, w, 300), rtol=0, atol=1e-9)
    assert rep.scheme == "paillier" and not rep.extrapolated
    assert rep.ciphertexts_per_client == 12
    assert rep.ciphertext_bytes_per_client == 12 * 256  # n**2 of a 1024-bit key: 2048 bits
    assert rep.clear_bytes_per_client == 12 * 4 and rep.plaintext_bytes_per_client == 12 * 8
    assert rep.ratio == pytest.approx((256 + 4) / 8)
    assert rep.encrypt_s_per_client > 0 and rep.decrypt_s > 0 and rep.server_aggregate_s > 0


def test_unweighted_sum_and_wire_roundtrip():
    pk, sk = keypair(KEY)
    V, I = _topk(M=2, k=6, seed=1)
    msgs = []
    for v, i in zip(V, I):
        m = encrypt_topk(pk, v, i)
        blob = m.to_bytes()
        assert len(blob) == 6 * ciphertext_width(pk)
        parts = Message.of("up", m.message_parts()).parts
        assert [p.kind for p in parts] == ["ciphertext", "indices", "meta"]
        msgs.append(EncryptedTopK.from_bytes(pk, blob, m.indices, m.exponent))
    agg = aggregate_topk(msgs)  # server: public key only
    out = decrypt_sparse(sk, agg, 300)
    np.testing.assert_allclose(out, _dense(V, I, [1, 1], 300), atol=1e-11)
    assert len(agg) == len(np.unique(I))


def test_extrapolation_is_labelled_and_sum_still_right():
    V, I = _topk(M=3, k=20, seed=2)
    w = np.array([1.0, 1.0, 1.0]) / 3
    out, rep = PaillierAggregator(KEY, max_real_values=4).aggregate(V, I, w, 300)
    np.testing.assert_allclose(out, _dense(V, I, w, 300), atol=1e-9)
    assert rep.extrapolated and "4 of 20 values" in rep.notes
    assert rep.ciphertext_bytes_per_client == 20 * 256


def test_per_value_costs():
    c = per_value_costs(KEY, 4)
    assert c["ciphertext_bytes"] == 256
    assert c["encrypt_s"] > c["server_s"] > 0 and c["decrypt_s"] > 0
    assert c["max_abs_error"] < 1e-10


def test_bad_inputs():
    pk, _ = keypair(KEY)
    with pytest.raises(ValueError, match="values but"):
        encrypt_topk(pk, np.zeros(3), np.zeros(2, int))
    with pytest.raises(ValueError, match="indices must lie"):
        PaillierAggregator(KEY).aggregate(np.zeros((1, 2)), np.array([[0, 999]]), None, 10)


def test_phe_uses_gmpy2():
    """gmpy2 is a dependency: without it phe falls back to Python integers, about 8x slower per encryption."""
    import phe.util

    assert phe.util.HAVE_GMP
