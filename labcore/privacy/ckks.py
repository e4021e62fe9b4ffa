"""CKKS encrypted aggregation with real TenSEAL ciphertexts.

Setting (the one CoLR uses, section 4.3 and 5.2 (3)): all clients hold the
same CKKS secret key; the server holds only a public copy of the context (no
secret key) and computes the weighted sum of the clients' encrypted updates
without ever decrypting. Clients decrypt the aggregate they download.

A flat float vector of n values is packed into ceil(n / (N/2)) CKKS vectors of
N/2 slots each (N = poly_modulus_degree). Aggregation needs one plaintext
multiplication (the weight) per ciphertext, followed by one rescale, and
additions; no rotations, so no Galois keys are generated, and the server copy
carries no relinearisation keys either (plaintext multiplication needs none).

Every byte figure here is `len()` of serialized TenSEAL objects and every time
is a `time.perf_counter()` measurement. Where a computation is too large to run
for real, `CkksAggregator` says so with `extrapolated=True` and documents what
was measured and what was scaled.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import numpy as np

try:  # TenSEAL is a hard requirement of this module, but keep import errors readable
    import tenseal as ts
except ImportError as exc:  # pragma: no cover - exercised only on broken installs
    raise ImportError("labcore.privacy.ckks needs TenSEAL (pip install tenseal)") from exc

from labcore.net.message import Part, bytes_part

# Parameter rules live in params.py (no TenSEAL import), re-exported here.
from .params import (  # noqa: E402,F401
    ALLOWED_DEGREES,
    MAX_COEFF_BITS_128,
    MAX_PRIME_BITS,
    MIN_INTEGER_BITS,
    MIN_PRIME_BITS,
    MIN_SCALE_BITS,
    SECURITY_BITS,
    CkksParams,
    check_ckks,
    default_chain,
)


@dataclass
class CkksContext:
    """A client context (with secret key) and the server's public copy."""

    params: CkksParams
    secret: "ts.Context"
    public: "ts.Context"
    public_bytes: int  # measured size of the serialized server context

    @property
    def slots(self) -> int:
        return self.params.slots


@lru_cache(maxsize=8)
def make_context(params: CkksParams = CkksParams()) -> CkksContext:
    """Key generation for `params`, cached per params (key generation is the slow part).

    The server copy is made by serializing without secret key (and without
    relinearisation or Galois keys, which aggregation does not need) and
    deserializing: it can deserialize, multiply by plaintexts and add, but
    cannot decrypt.
    """
    ctx = ts.context(
        ts.SCHEME_TYPE.CKKS,
        poly_modulus_degree=params.poly_modulus_degree,
        coeff_mod_bit_sizes=list(params.coeff_mod_bit_sizes),
    )
    ctx.global_scale = params.scale
    blob = ctx.serialize(save_secret_key=False, save_relin_keys=False, save_galois_keys=False)
    public = ts.context_from(blob)
    return CkksContext(params, ctx, public, len(blob))


def _as_context(ctx) -> CkksContext:
    if isinstance(ctx, CkksContext):
        return ctx
    if isinstance(ctx, CkksParams):
        return make_context(ctx)
    raise TypeError(f"expected a CkksContext (from make_context) or CkksParams, got {type(ctx).__name__}")


def encrypt_update(ctx: CkksContext, flat: np.ndarray) -> list[bytes]:
    """Client side: encrypt a flat float vector into ceil(n / (N/2)) serialized CKKS vectors."""
    c = _as_context(ctx)
    flat = np.asarray(flat, dtype=np.float64).ravel()
    if flat.size == 0:
        raise ValueError("encrypt_update: empty vector")
    if not np.all(np.isfinite(flat)):
        raise ValueError("encrypt_update: vector contains NaN or inf")
    limit = 2.0 ** (c.params.coeff_mod_bit_sizes[0] - c.params.global_scale_bits - 1)
    if np.max(np.abs(flat)) >= limit:
        raise ValueError(
            f"encrypt_update: |value| up to {np.max(np.abs(flat)):.3g} does not fit the CKKS integer headroom "
            f"(< {limit:g} with first prime {c.params.coeff_mod_bit_sizes[0]} bits and scale 2**{c.params.global_scale_bits})"
        )
    s = c.slots
    return [ts.ckks_vector(c.secret, flat[i : i + s]).serialize() for i in range(0, flat.size, s)]


def aggregate(
    ciphertexts_per_client: Sequence[Sequence[bytes]],
    weights: Sequence[float] | np.ndarray,
    ctx: CkksContext | CkksParams | None = None,
) -> list[bytes]:
    """Server side: sum_i w_i * ct_i per ciphertext position, without decrypting.

    Ciphertexts are deserialized against the public context (no secret key).
    Clients with weight exactly 0 are skipped (SEAL refuses to multiply by an
    all-zero plaintext: the result would be transparent). `ctx` defaults to the
    cached context of the default parameters.
    """
    c = _as_context(ctx if ctx is not None else CkksParams())
    w = np.asarray(weights, dtype=np.float64).ravel()
    if len(ciphertexts_per_client) != w.size:
        raise ValueError(f"aggregate: {len(ciphertexts_per_client)} clients but {w.size} weights")
    if len({len(cts) for cts in ciphertexts_per_client}) > 1:
        raise ValueError("aggregate: clients sent different numbers of ciphertexts")
    active = [i for i in range(w.size) if w[i] != 0.0]
    if not active:
        raise ValueError("aggregate: all weights are zero")
    n_ct = len(ciphertexts_per_client[0])
    out = []
    for j in range(n_ct):
        acc = None
        for i in active:
            term = ts.ckks_vector_from(c.public, ciphertexts_per_client[i][j]) * float(w[i])
            acc = term if acc is None else acc + term
        out.append(acc.serialize())
    return out


def decrypt_aggregate(ctx: CkksContext, cts: Sequence[bytes], n: int) -> np.ndarray:
    """Client side: decrypt the downloaded aggregate into a float64 vector of length n."""
    c = _as_context(ctx)
    parts = [np.asarray(ts.ckks_vector_from(c.secret, b).decrypt(), dtype=np.float64) for b in cts]
    out = np.concatenate(parts) if parts else np.zeros(0)
    if out.size < n:
        raise ValueError(f"decrypt_aggregate: ciphertexts hold {out.size} values, expected {n}")
    return out[:n]


def ciphertext_parts(cts: Sequence[bytes], name: str = "ckks") -> list[Part]:
    """Wrap serialized ciphertexts as message parts (one part per ciphertext) for the payload ledger."""
    return [bytes_part(f"{name}.{j}", "ciphertext", b) for j, b in enumerate(cts)]


@dataclass
class HeRoundReport:
    """What one encrypted aggregation round cost, per client and at the server.

    Shared by CKKS and Paillier. Bytes are measured `len()` of serialized
    ciphertexts; times are perf_counter measurements. If `extrapolated` is True,
    some of the clients (or values) were not encrypted for real: `notes` says
    which figures were scaled from measured per-ciphertext (per-value) costs.
    """

    scheme: str
    n_clients: int
    n_real_clients: int
    n_values: int  # values per client (n for CKKS, k for Top-K)
    ciphertexts_per_client: int
    ciphertext_bytes_per_client: int  # encrypted payload, uplink
    clear_bytes_per_client: int  # what travels in clear next to it (Top-K indices)
    plaintext_bytes_per_client: int  # same message unencrypted (float32 values [+ int32 indices])
    encrypt_s_per_client: float  # mean over real clients
    server_aggregate_s: float  # whole round, all clients
    decrypt_s: float  # one client decrypting the aggregate
    aggregate_ciphertext_bytes: int  # downlink
    extrapolated: bool
    encrypt_s_measured: list[float] = field(default_factory=list)
    notes: str = ""

    @property
    def upload_bytes_per_client(self) -> int:
        return self.ciphertext_bytes_per_client + self.clear_bytes_per_client

    @property
    def ratio(self) -> float:
        """Uplink size encrypted / plaintext (CoLR Table 3 'Comm Ratio')."""
        return self.upload_bytes_per_client / max(1, self.plaintext_bytes_per_client)

    @property
    def client_overhead_s(self) -> float:
        return self.encrypt_s_per_client + self.decrypt_s


CkksRoundReport = HeRoundReport


class CkksAggregator:
    """Weighted FedAvg of flat client updates under CKKS.

    aggregate(updates (M, n), weights (M,)) encrypts each client's row, has the
    server (public context only) compute sum_i w_i * ct_i, and decrypts.

    Extrapolation, stated plainly: when M > max_real_clients, only the first
    max_real_clients clients are encrypted and aggregated for real. The other
    clients' weighted contributions are added in plaintext to the decrypted
    partial aggregate, so the returned vector is still the full weighted sum
    (with CKKS noise from the real part only). Their costs are not measured but
    scaled: encrypt time per client = mean measured; server time = measured time
    per (client, ciphertext) x M x ciphertexts; bytes per client = measured bytes
    (every client sends the same number of same-size ciphertexts). The report
    then has extrapolated=True and says so in `notes`.
    """

    def __init__(self, params: CkksParams = CkksParams(), max_real_clients: int | None = None):
        if max_real_clients is not None and max_real_clients < 1:
            raise ValueError("max_real_clients must be >= 1 or None")
        self.params = params
        self.max_real_clients = max_real_clients
        self.ctx = make_context(params)

    def aggregate(self, updates: np.ndarray, weights: Sequence[float] | np.ndarray) -> tuple[np.ndarray, HeRoundReport]:
        X = np.asarray(updates, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"updates must be (M, n), got shape {X.shape}")
        w = np.asarray(weights, dtype=np.float64).ravel()
        M, n = X.shape
        if w.size != M:
            raise ValueError(f"{M} updates but {w.size} weights")
        m_real = M if self.max_real_clients is None else min(M, self.max_real_clients)
        cts, enc_times = [], []
        for i in range(m_real):
            t0 = time.perf_counter()
            cts.append(encrypt_update(self.ctx, X[i]))
            enc_times.append(time.perf_counter() - t0)
        n_ct = len(cts[0])
        ct_bytes = [sum(len(b) for b in c) for c in cts]
        real_w = w[:m_real]
        if np.any(real_w != 0.0):
            t0 = time.perf_counter()
            agg = aggregate(cts, real_w, self.ctx)
            t_server = time.perf_counter() - t0
            t0 = time.perf_counter()
            out = decrypt_aggregate(self.ctx, agg, n)
            t_dec = time.perf_counter() - t0
            agg_bytes = sum(len(b) for b in agg)
        else:  # nothing to multiply: SEAL cannot produce an all-zero product
            agg, t_server, t_dec, agg_bytes, out = [], 0.0, 0.0, 0, np.zeros(n)
        extrap = m_real < M
        notes = f"{m_real} of {M} clients encrypted for real"
        if extrap:
            out = out + w[m_real:] @ X[m_real:]
            n_active_real = max(1, int(np.count_nonzero(real_w)))
            per_client_ct = t_server / (n_active_real * n_ct)
            t_server = per_client_ct * int(np.count_nonzero(w)) * n_ct
            notes += (
                f"; the other {M - m_real} were summed in plaintext; server time scaled from the measured "
                f"{per_client_ct * 1e3:.3f} ms per (client, ciphertext); encrypt time and bytes per client are "
                "the measured means of the real clients"
            )
        report = HeRoundReport(
            scheme="ckks",
            n_clients=M,
            n_real_clients=m_real,
            n_values=n,
            ciphertexts_per_client=n_ct,
            ciphertext_bytes_per_client=int(round(np.mean(ct_bytes))),
            clear_bytes_per_client=0,
            plaintext_bytes_per_client=4 * n,
            encrypt_s_per_client=float(np.mean(enc_times)),
            server_aggregate_s=float(t_server),
            decrypt_s=float(t_dec),
            aggregate_ciphertext_bytes=int(agg_bytes),
            extrapolated=extrap,
            encrypt_s_measured=[float(t) for t in enc_times],
            notes=notes,
        )
        return out, report
