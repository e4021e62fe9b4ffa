"""Paillier encryption of Top-K messages, the way CoLR encrypts Top-K (section 5.2 (3)).

Top-K sends k (value, index) pairs. CKKS packs vectors and cannot add values
"in place" at client-specific positions, so the paper uses Paillier (additively
homomorphic on single numbers): each client encrypts each of its k values
separately, the indices travel in clear, and the server adds the encrypted
values that fall on the same index across clients (optionally multiplied by a
plaintext weight). Clients decrypt the aggregated sparse vector.

Encoding: values are encoded with a fixed precision (default 16**-10, about
9e-13), so every ciphertext of a message has the same exponent; that exponent
travels once per message, and additions never need an exponent alignment.
Weights are encoded with their own fixed precision (16**-8), so all weighted
terms share one exponent too.

Bytes are measured: a ciphertext is an integer below n**2 and is serialized
big-endian at the fixed width of n**2 (2 * key_length / 8 bytes: 512 bytes for
the default 2048-bit key). Indices are int32 in clear (4 bytes each).

Key length: the default is 2048 bits (~112-bit security; NIST's guidance for
RSA-type moduli). Tests use 1024 bits only for speed. Key pairs are cached per
key length for the process (2048-bit key generation takes seconds).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

try:
    from phe import EncodedNumber, EncryptedNumber, paillier
except ImportError as exc:  # pragma: no cover
    raise ImportError("labcore.privacy.paillier needs python-paillier (pip install phe)") from exc

from labcore.net.message import Part, array_part, bytes_part

from .ckks import HeRoundReport

DEFAULT_KEY_LENGTH = 2048
VALUE_PRECISION = 16.0**-10
WEIGHT_PRECISION = 16.0**-8


@lru_cache(maxsize=4)
def keypair(key_length: int = DEFAULT_KEY_LENGTH):
    """(public_key, private_key), generated once per key length per process."""
    if key_length < 512 or key_length % 8:
        raise ValueError(f"key_length={key_length}: use a multiple of 8, >= 512 (default {DEFAULT_KEY_LENGTH})")
    return paillier.generate_paillier_keypair(n_length=key_length)


def ciphertext_width(public_key) -> int:
    """Bytes of one serialized ciphertext: fixed width of n**2."""
    return (public_key.nsquare.bit_length() + 7) // 8


@dataclass
class EncryptedTopK:
    """One client's encrypted Top-K message: encrypted values, clear indices."""

    indices: np.ndarray  # int32, clear
    ciphertexts: list  # list[EncryptedNumber]
    exponent: int

    def to_bytes(self) -> bytes:
        pk = self.ciphertexts[0].public_key if self.ciphertexts else None
        if pk is None:
            return b""
        w = ciphertext_width(pk)
        return b"".join(c.ciphertext(be_secure=False).to_bytes(w, "big") for c in self.ciphertexts)

    def message_parts(self, name: str = "topk") -> list[Part]:
        """Parts for the payload ledger: the ciphertext blob, the clear indices, the shared exponent."""
        return [
            bytes_part(f"{name}.values", "ciphertext", self.to_bytes()),
            array_part(f"{name}.indices", "indices", self.indices.astype(np.int32)),
            array_part(f"{name}.exponent", "meta", np.array([self.exponent], dtype=np.int32)),
        ]

    @staticmethod
    def from_bytes(public_key, blob: bytes, indices: np.ndarray, exponent: int) -> "EncryptedTopK":
        """Server side: rebuild the EncryptedNumbers from what travelled."""
        w = ciphertext_width(public_key)
        if len(blob) != w * len(indices):
            raise ValueError(f"ciphertext blob of {len(blob)} bytes does not hold {len(indices)} ciphertexts of {w} bytes")
        cts = [
            EncryptedNumber(public_key, int.from_bytes(blob[i * w : (i + 1) * w], "big"), exponent)
            for i in range(len(indices))
        ]
        return EncryptedTopK(np.asarray(indices, dtype=np.int32), cts, exponent)


def encrypt_topk(public_key, values: np.ndarray, indices: np.ndarray) -> EncryptedTopK:
    """Client side: encrypt each of the k values; indices stay in clear (as in the paper)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    indices = np.asarray(indices).ravel()
    if values.size != indices.size:
        raise ValueError(f"{values.size} values but {indices.size} indices")
    if not np.all(np.isfinite(values)):
        raise ValueError("encrypt_topk: values contain NaN or inf")
    cts = [public_key.encrypt(float(v), precision=VALUE_PRECISION) for v in values]
    exponent = cts[0].exponent if cts else EncodedNumber.encode(public_key, 0.0, precision=VALUE_PRECISION).exponent
    return EncryptedTopK(indices.astype(np.int32), cts, exponent)


def aggregate_topk(messages: Sequence[EncryptedTopK], weights: Sequence[float] | None = None) -> dict[int, EncryptedNumber]:
    """Server side: per index, sum_i w_i * Enc(v_i) over the clients that sent that index.

    Needs only the public key (inside the EncryptedNumbers). Returns a sparse
    encrypted vector {index: EncryptedNumber}.
    """
    if weights is not None and len(weights) != len(messages):
        raise ValueError(f"{len(messages)} messages but {len(weights)} weights")
    acc: dict[int, EncryptedNumber] = {}
    for m_i, msg in enumerate(messages):
        if weights is None:
            terms = msg.ciphertexts
        else:
            w = float(weights[m_i])
            if w == 0.0:
                continue
            enc_w = EncodedNumber.encode(msg.ciphertexts[0].public_key, w, precision=WEIGHT_PRECISION) if msg.ciphertexts else None
            terms = [c * enc_w for c in msg.ciphertexts]
        for idx, c in zip(msg.indices.tolist(), terms):
            acc[idx] = acc[idx] + c if idx in acc else c
    return acc


def decrypt_sparse(private_key, agg: dict[int, EncryptedNumber], n_total: int) -> np.ndarray:
    """Client side: decrypt the sparse aggregate into a dense float64 vector of length n_total."""
    out = np.zeros(n_total, dtype=np.float64)
    for idx, c in agg.items():
        out[idx] = private_key.decrypt(c)
    return out


def sparse_bytes(agg: dict[int, EncryptedNumber]) -> int:
    """Downlink size of a sparse aggregate: one ciphertext + one int32 index per entry."""
    if not agg:
        return 0
    pk = next(iter(agg.values())).public_key
    return len(agg) * (ciphertext_width(pk) + 4)


class PaillierAggregator:
    """Weighted sum of Top-K messages under Paillier, with a measured report.

    aggregate(values (M, k), indices (M, k), weights (M,), n_total) returns the
    dense weighted sum (n_total,) and a HeRoundReport of the same shape as CKKS.

    Extrapolation, stated plainly: Paillier costs one modular exponentiation
    per value (~80 ms per encryption at 2048 bits in pure Python), so Top-K
    messages of tens of thousands of values are not encrypted for real. When
    k > max_real_values, each client encrypts only its first max_real_values
    pairs for real; the remaining pairs are summed in plaintext, and times and
    bytes are extrapolated linearly from the measured per-value costs
    (Paillier cost is exactly linear in the number of values: every value is
    one independent ciphertext). Likewise for clients beyond max_real_clients.
    The report then has extrapolated=True and says what was scaled in `notes`.
    """

    def __init__(
        self,
        key_length: int = DEFAULT_KEY_LENGTH,
        max_real_values: int | None = None,
        max_real_clients: int | None = None,
    ):
        self.key_length = key_length
        self.public_key, self.private_key = keypair(key_length)
        self.max_real_values = max_real_values
        self.max_real_clients = max_real_clients

    def aggregate(
        self,
        values: np.ndarray,
        indices: np.ndarray,
        weights: Sequence[float] | np.ndarray | None,
        n_total: int,
    ) -> tuple[np.ndarray, HeRoundReport]:
        V = np.asarray(values, dtype=np.float64)
        I = np.asarray(indices)
        if V.ndim != 2 or V.shape != I.shape:
            raise ValueError(f"values and indices must both be (M, k); got {V.shape} and {I.shape}")
        M, k = V.shape
        w = np.ones(M) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
        if w.size != M:
            raise ValueError(f"{M} clients but {w.size} weights")
        if I.size and (I.min() < 0 or I.max() >= n_total):
            raise ValueError(f"indices must lie in [0, {n_total})")
        k_real = k if self.max_real_values is None else min(k, self.max_real_values)
        m_real = M if self.max_real_clients is None else min(M, self.max_real_clients)
        msgs, enc_t, blob_bytes = [], [], []
        for i in range(m_real):
            t0 = time.perf_counter()
            msg = encrypt_topk(self.public_key, V[i, :k_real], I[i, :k_real])
            enc_t.append(time.perf_counter() - t0)
            blob = msg.to_bytes()  # what travels; the server rebuilds from it
            blob_bytes.append(len(blob))
            msgs.append(EncryptedTopK.from_bytes(self.public_key, blob, msg.indices, msg.exponent))
        t0 = time.perf_counter()
        agg = aggregate_topk(msgs, w[:m_real] if weights is not None else None)
        t_server = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = decrypt_sparse(self.private_key, agg, n_total)
        t_dec = time.perf_counter() - t0
        n_union = len(agg)
        down = sparse_bytes(agg)

        # plaintext remainder (not encrypted): values beyond k_real, clients beyond m_real
        rest = np.zeros(n_total)
        for i in range(M):
            lo = k_real if i < m_real else 0
            if lo < k:
                np.add.at(rest, I[i, lo:], w[i] * V[i, lo:])
        out = out + rest

        extrap = (k_real < k) or (m_real < M)
        per_value_bytes = blob_bytes[0] / max(1, k_real)
        enc_per_client = float(np.mean(enc_t)) * (k / max(1, k_real))
        notes = f"{m_real} of {M} clients and {k_real} of {k} values per client encrypted for real"
        if extrap:
            true_union = len(np.unique(I))
            per_term_server = t_server / max(1, m_real * k_real)
            per_value_dec = t_dec / max(1, n_union)
            t_server = per_term_server * M * k
            t_dec = per_value_dec * true_union
            down = true_union * (ciphertext_width(self.public_key) + 4)
            notes += (
                "; the rest was summed in plaintext. Scaled linearly from measured per-value costs: "
                f"encrypt {np.mean(enc_t) / max(1, k_real) * 1e3:.2f} ms/value, "
                f"server {per_term_server * 1e3:.4f} ms/(client, value), decrypt {per_value_dec * 1e3:.2f} ms/value"
            )
        report = HeRoundReport(
            scheme="paillier",
            n_clients=M,
            n_real_clients=m_real,
            n_values=k,
            ciphertexts_per_client=k,
            ciphertext_bytes_per_client=int(round(per_value_bytes * k)),
            clear_bytes_per_client=4 * k,
            plaintext_bytes_per_client=8 * k,
            encrypt_s_per_client=enc_per_client,
            server_aggregate_s=float(t_server),
            decrypt_s=float(t_dec),
            aggregate_ciphertext_bytes=int(down),
            extrapolated=extrap,
            encrypt_s_measured=[float(t) for t in enc_t],
            notes=notes,
        )
        return out, report


@lru_cache(maxsize=8)
def per_value_costs(key_length: int = DEFAULT_KEY_LENGTH, sample: int = 16, seed: int = 0) -> dict:
    """Measured per-value Paillier costs on `sample` values ~1e-2 (cached per arguments).

    Returns bytes per ciphertext (measured len of the serialized integer at
    fixed width), encrypt / weighted-add (server) / decrypt seconds per value: CPU seconds of this process
    (one thread of big-integer arithmetic, so on an idle machine the same as wall time; on a shared one the
    wall clock would count the other processes too).
    """
    pk, sk = keypair(key_length)
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 1e-2, size=sample)
    t0 = time.process_time()
    cts = [pk.encrypt(float(v), precision=VALUE_PRECISION) for v in x]
    t_enc = (time.process_time() - t0) / sample
    nbytes = [len(c.ciphertext(be_secure=False).to_bytes(ciphertext_width(pk), "big")) for c in cts]
    enc_w = EncodedNumber.encode(pk, 0.5, precision=WEIGHT_PRECISION)
    t0 = time.process_time()
    sums = [c * enc_w + c * enc_w for c in cts]
    t_srv = (time.process_time() - t0) / (2 * sample)  # per (client, value): one weighting + one add
    t0 = time.process_time()
    dec = np.array([sk.decrypt(s) for s in sums])
    t_dec = (time.process_time() - t0) / sample
    return {
        "key_length": key_length,
        "sample": sample,
        "ciphertext_bytes": int(np.mean(nbytes)),
        "encrypt_s": t_enc,
        "server_s": t_srv,
        "decrypt_s": t_dec,
        "max_abs_error": float(np.max(np.abs(dec - x))),
    }
