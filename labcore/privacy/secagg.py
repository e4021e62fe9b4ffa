"""Exact secure aggregation with pairwise masks (Bonawitz et al., 2017, simplified).

Arithmetic. Floats are encoded in fixed point: x -> round(x * 2**f) mod 2**k
(f fractional bits, k-bit ring; defaults f=24, k=64). Sums in the ring are
exact; decoding maps the ring back to signed integers and divides by 2**f.
Encoding refuses values whose sum over the parties could leave the signed
range: n_parties * max|x| * 2**f must stay below 2**(k-1).

Masks. Every pair of clients (i, j) agrees on a seed s_ij by Diffie-Hellman
(RFC 3526 2048-bit MODP group, 256-bit private exponents, seed = SHA-256 of
the shared secret and the round id). Client i adds PRG(s_ij) for every j > i
and subtracts it for every j < i, so the masks cancel in the sum of all masked
vectors, and each masked vector on its own is uniform in the ring.

Dropout. If client d completed key agreement but its masked vector never
arrives, the survivors' vectors carry dangling masks +-PRG(s_id). The server
asks every survivor i to reveal s_id; it regenerates the masks and removes
them. The result is the exact sum over the survivors. The server refuses
(SecureAggregationError) when
  * fewer than `threshold` clients survived: unmasking a sum of very few
    inputs reveals them (with one survivor the "sum" is its own update), the
    reason Bonawitz et al. require t survivors; or
  * a survivor that shares a mask with a dropped client does not answer the
    reveal request: that mask cannot be removed and the sum would be noise.
It never returns a sum with an unremoved mask.

Simplification (said plainly): Bonawitz et al. also add a self-mask b_i,
Shamir-shared among the clients, so that a server which falsely declares a
slow client dropped and then receives its masked vector cannot unmask it.
That double masking is not implemented here: this models an honest-but-curious
server that follows the dropout protocol.
"""
from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from labcore.net.message import Part, bytes_part

# RFC 3526 group 14 (2048-bit MODP), generator 2.
DH_PRIME = int(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
    "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F"
    "83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B"
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF6955817183995497CEA956AE515D2261898FA0510"
    "15728E5A8AACAA68FFFFFFFFFFFFFFFF",
    16,
)
DH_GENERATOR = 2
DH_PUBLIC_BYTES = 256
SEED_BYTES = 16  # 128-bit PRG key (Philox key)


class SecureAggregationError(RuntimeError):
    """Secure aggregation cannot produce a correct sum (and will not produce a wrong one)."""


@dataclass(frozen=True)
class FixedPoint:
    """Fixed-point codec into the ring Z_(2**modulus_bits); values stored as uint64."""

    frac_bits: int = 24
    modulus_bits: int = 64

    def __post_init__(self):
        if not 8 <= self.modulus_bits <= 64:
            raise ValueError(f"modulus_bits={self.modulus_bits}: must be in 8..64")
        if not 0 <= self.frac_bits < self.modulus_bits - 1:
            raise ValueError(f"frac_bits={self.frac_bits}: must be in 0..{self.modulus_bits - 2}")

    @property
    def mask(self) -> np.uint64:
        return np.uint64((1 << self.modulus_bits) - 1) if self.modulus_bits < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)

    @property
    def max_abs(self) -> float:
        """Largest |value| a single party may encode when n_parties=1."""
        return 2.0 ** (self.modulus_bits - 1 - self.frac_bits)

    def reduce(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.uint64)
        return v if self.modulus_bits == 64 else (v & self.mask)

    def encode(self, x: np.ndarray, n_parties: int = 1) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise SecureAggregationError("fixed-point encode: NaN or inf in the input")
        limit = self.max_abs / max(1, n_parties)
        peak = float(np.max(np.abs(x))) if x.size else 0.0
        if peak >= limit:
            raise SecureAggregationError(
                f"fixed-point overflow: |value| up to {peak:.6g} but with {self.frac_bits} fractional bits in a "
                f"{self.modulus_bits}-bit ring and {n_parties} parties the sum must stay below {limit:.6g} per value; "
                "use fewer fractional bits or a larger ring"
            )
        q = np.rint(x * 2.0**self.frac_bits).astype(np.int64)
        return self.reduce(q.view(np.uint64))

    def decode(self, v: np.ndarray) -> np.ndarray:
        v = self.reduce(v)
        if self.modulus_bits == 64:
            s = v.view(np.int64).astype(np.float64)
        else:
            half = np.uint64(1 << (self.modulus_bits - 1))
            s = v.astype(np.float64) - np.where(v >= half, float(1 << self.modulus_bits), 0.0)
        return s / 2.0**self.frac_bits

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.reduce(np.asarray(a, np.uint64) + np.asarray(b, np.uint64))

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.reduce(np.asarray(a, np.uint64) - np.asarray(b, np.uint64))

    def random(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Uniform ring elements."""
        return self.reduce(rng.bit_generator.random_raw(n).astype(np.uint64))

    def wire_bytes(self, v: np.ndarray) -> bytes:
        """What a ring vector costs on the wire: uint64 words (k <= 64 bits each)."""
        return np.ascontiguousarray(v, dtype=np.uint64).tobytes()


def prg_mask(seed: bytes, n: int, codec: FixedPoint) -> np.ndarray:
    """Expand a 128-bit seed into n uniform ring elements (Philox counter-based PRG)."""
    key = int.from_bytes(seed[:SEED_BYTES], "little")
    rng = np.random.Generator(np.random.Philox(key=key))
    return codec.random(rng, n)


@dataclass
class SecAggClient:
    """One client's key-agreement state for one round."""

    index: int
    round_id: int
    _secret: int = field(repr=False)
    public_key: int = 0
    seeds: dict[int, bytes] = field(default_factory=dict, repr=False)

    @staticmethod
    def create(index: int, round_id: int = 0, rng: "secrets.SystemRandom | None" = None) -> "SecAggClient":
        r = rng or secrets.SystemRandom()
        a = r.getrandbits(256) | (1 << 255)
        return SecAggClient(index, round_id, a, pow(DH_GENERATOR, a, DH_PRIME))

    def public_bytes(self) -> bytes:
        return self.public_key.to_bytes(DH_PUBLIC_BYTES, "big")

    def agree(self, other_index: int, other_public: bytes) -> None:
        y = int.from_bytes(other_public, "big")
        if not 1 < y < DH_PRIME - 1:
            raise SecureAggregationError(f"client {self.index}: invalid public key from client {other_index}")
        shared = pow(y, self._secret, DH_PRIME).to_bytes(DH_PUBLIC_BYTES, "big")
        lo, hi = sorted((self.index, other_index))
        h = hashlib.sha256(b"labcore-secagg" + self.round_id.to_bytes(8, "little") + lo.to_bytes(4, "little")
                           + hi.to_bytes(4, "little") + shared).digest()
        self.seeds[other_index] = h[:SEED_BYTES]

    def mask(self, x: np.ndarray, codec: FixedPoint, n_parties: int) -> np.ndarray:
        """Encoded x plus sum_{j>i} PRG(s_ij) minus sum_{j<i} PRG(s_ij), mod 2**k."""
        y = codec.encode(x, n_parties)
        n = y.size
        for j, s in self.seeds.items():
            m = prg_mask(s, n, codec)
            y = codec.add(y, m) if j > self.index else codec.sub(y, m)
        return y

    def reveal_seed(self, dropped: int) -> bytes:
        """Dropout recovery: reveal the seed shared with a client that dropped."""
        return self.seeds[dropped]


def key_agreement(n_clients: int, round_id: int = 0, seed: int | None = None) -> tuple[list[SecAggClient], int]:
    """All clients publish DH public keys (via the server) and derive pairwise seeds.

    `seed` makes the private keys reproducible (tests); None uses the OS RNG.
    Returns the clients and the measured bytes each client uploads (its public key).
    """
    import random

    rng = random.Random(seed) if seed is not None else secrets.SystemRandom()
    clients = [SecAggClient.create(i, round_id, rng) for i in range(n_clients)]
    pubs = [c.public_bytes() for c in clients]
    for c in clients:
        for j, pb in enumerate(pubs):
            if j != c.index:
                c.agree(j, pb)
    return clients, len(pubs[0])


@dataclass
class SecAggReport:
    n_clients: int
    n_survivors: int
    dropped: list[int]
    threshold: int
    n_values: int
    masked_bytes_per_client: int  # measured wire bytes of one masked vector
    masked_bits_per_client: int  # n * k: what an ideal packing needs
    plaintext_bytes_per_client: int  # n float32
    public_key_bytes_per_client: int  # key agreement upload (the server relays all keys: x M down)
    revealed_seed_bytes: int  # total recovery traffic (survivors -> server)
    key_agreement_s: float  # all clients, sequentially
    mask_s_per_client: float
    server_s: float
    recovered: bool
    masked: dict[int, np.ndarray] = field(default_factory=dict, repr=False)  # what the server received

    @property
    def ratio(self) -> float:
        return self.masked_bytes_per_client / max(1, self.plaintext_bytes_per_client)


def masked_part(masked: np.ndarray, codec: FixedPoint, name: str = "secagg.masked") -> Part:
    """Message part for a masked vector (measured bytes; theoretical bits n*k)."""
    return bytes_part(name, "ciphertext", codec.wire_bytes(masked), bits=int(masked.size) * codec.modulus_bits)


def unmask_sum(
    masked: dict[int, np.ndarray],
    n_clients: int,
    codec: FixedPoint,
    threshold: int,
    reveal: Callable[[int, int], bytes | None],
) -> tuple[np.ndarray, int]:
    """Server side: sum the received masked vectors and remove dangling masks of dropped clients.

    `reveal(survivor, dropped)` returns the seed the survivor shared with the
    dropped client, or None if the survivor does not answer. Returns the ring
    sum over the survivors and the number of seed bytes revealed.
    """
    survivors = sorted(masked)
    dropped = [d for d in range(n_clients) if d not in masked]
    if len(survivors) < threshold:
        raise SecureAggregationError(
            f"only {len(survivors)} of {n_clients} clients survived (dropped: {dropped}), below the threshold "
            f"t={threshold}: the server will not unmask a sum of so few inputs"
        )
    total = None
    for i in survivors:
        total = masked[i].copy() if total is None else codec.add(total, masked[i])
    revealed = 0
    for d in dropped:
        for i in survivors:
            s = reveal(i, d)
            if s is None:
                raise SecureAggregationError(
                    f"recovery impossible: survivor {i} did not reveal the seed it shares with dropped client {d}; "
                    f"the mask of pair ({min(i, d)}, {max(i, d)}) cannot be removed"
                )
            revealed += len(s)
            m = prg_mask(s, total.size, codec)
            # survivor i added m if d > i, subtracted it if d < i: undo that
            total = codec.sub(total, m) if d > i else codec.add(total, m)
    return total, revealed


def secure_aggregate(
    updates: np.ndarray,
    weights: Sequence[float] | np.ndarray | None = None,
    dropped: Iterable[int] = (),
    unresponsive: Iterable[int] = (),
    threshold: int | None = None,
    codec: FixedPoint = FixedPoint(),
    round_id: int = 0,
    seed: int | None = None,
) -> tuple[np.ndarray, SecAggReport]:
    """One round of masked aggregation of the rows of `updates` (M, n).

    Clients pre-multiply by their weight (if given) before masking: the server
    only ever learns sum_{i survived} w_i x_i. `dropped` clients completed key
    agreement but never sent their masked vector; `unresponsive` survivors sent
    theirs but do not answer the seed-reveal request. threshold defaults to a
    strict majority (M // 2 + 1). Returns the decoded sum over survivors (the
    caller divides by the survivors' total weight for a mean).
    """
    X = np.asarray(updates, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"updates must be (M, n), got shape {X.shape}")
    M, n = X.shape
    w = np.ones(M) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if w.size != M:
        raise ValueError(f"{M} updates but {w.size} weights")
    dropped = sorted(set(int(d) for d in dropped))
    unresponsive = set(int(u) for u in unresponsive)
    for d in dropped:
        if not 0 <= d < M:
            raise ValueError(f"dropped client {d} is not in 0..{M - 1}")
    t = (M // 2 + 1) if threshold is None else int(threshold)
    if not 1 <= t <= M:
        raise ValueError(f"threshold={t} must be in 1..{M}")

    t0 = time.perf_counter()
    clients, pk_bytes = key_agreement(M, round_id, seed)
    t_ka = time.perf_counter() - t0

    masked, mask_t, wire = {}, [], 0
    for i in range(M):
        if i in dropped:
            continue
        t0 = time.perf_counter()
        masked[i] = clients[i].mask(w[i] * X[i], codec, M)
        mask_t.append(time.perf_counter() - t0)
        wire = len(codec.wire_bytes(masked[i]))

    def reveal(i: int, d: int) -> bytes | None:
        return None if i in unresponsive else clients[i].reveal_seed(d)

    t0 = time.perf_counter()
    total, revealed = unmask_sum(masked, M, codec, t, reveal)
    t_srv = time.perf_counter() - t0
    report = SecAggReport(
        n_clients=M,
        n_survivors=len(masked),
        dropped=dropped,
        threshold=t,
        n_values=n,
        masked_bytes_per_client=wire,
        masked_bits_per_client=n * codec.modulus_bits,
        plaintext_bytes_per_client=4 * n,
        public_key_bytes_per_client=pk_bytes,
        revealed_seed_bytes=revealed,
        key_agreement_s=t_ka,
        mask_s_per_client=float(np.mean(mask_t)) if mask_t else 0.0,
        server_s=t_srv,
        recovered=bool(dropped),
        masked=masked,
    )
    return codec.decode(total), report
