"""Hashed random subspaces: FAIR's projection matrices, never realized.

A device of capacity alpha stores psi in R^m (m <= alpha n) instead of the
server's theta in R^n. The two are linked by a sparse projection S (n x m)
with one non-zero per row (count-min / count-sketch form):

    S[a, b] = g(a)  iff  h(a) mod m = b           (Eq. 7, with the optional sign g)

Hashing unit. The paper's experiments use ROAST / ROBE mappings, which hash
blocks of consecutive coordinates instead of single ones, so that realizing an
embedding row reads one contiguous slice of psi instead of d scattered values.
We do the same: coordinates a = u Z + k (block u, offset k < Z) go to column
(h(u) mod m/Z) Z + k, i.e. S = S_blocks (x) I_Z, a Kronecker product of Eq. 7 on
blocks with the identity. Every row of S still has one non-zero, the columns
are still orthogonal, Eq. 4 and 5 are unchanged, and Theorem 4.2 carries over
(S_i = S_j C implies S_i (x) I = (S_j (x) I)(C (x) I)). Z = 1 is the
element-wise HashedNet form; Z = d (the default for embedding tables) hashes
whole rows.

* `UniversalHash`: h(u) = ((c1 u + c0) mod p) with p = 2^31 - 1 (Carter & Wegman, as the ROBE / ROAST
  code), and a sign hash: g(a) is bit k mod 31 of a second such function applied to
  (u, k div 31), so a row of up to 31 values needs one evaluation. Four integers
  in all: that is what a device derives from the seed it is sent.
* `Subspace`: one S for one (n, m); `reduce` is Eq. 4 (S^T theta divided by the
  bucket counts, the least-squares projection of Eq. 3), `recover` is Eq. 5
  (S psi), `rows` realizes the rows a batch needs from psi (Eq. 6).
* A draw is universal only on average: some draws of c1 put consecutive keys on a coarse lattice modulo a
  power of two (seed 0's item hash, c1 = 543,659,800, put ML-100K's 1,682 items on 174 of 512 rows, and on
  the same 174 of 256). `well_spread_hash` redraws such a draw: it counts the rows the n keys fill at every
  size of the family against random placement, a check the device runs too on the seed it is sent.
* `SubspaceFamily`: every capacity of a run derived from ONE hash, so the
  subspaces are consistent and collapsible (Definition 4.1, Theorem 4.2): if
  m_i divides m_j, then h mod m_i = (h mod m_j) mod m_i, so every column of S_i
  is a sum of columns of S_j. Powers of two (the paper's sizes) always divide
  each other; `sizes="chain"` uses m_i = u * (R / r_i) for a common unit u,
  which divides just as well and keeps the ratio exact.
* Full capacity (ratio 1) is the server basis itself: S = I, so reduction and
  recovery are the identity and FAIR with every device at 1x is FedAvg.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import torch

PRIME = 2**31 - 1  # Mersenne prime > any key (n < 2^31)
SIZES = ("pow2", "chain")
HASH_FUNCTION = "carter-wegman, degenerate draws redrawn"  # in a run's cache key: a new rule changes hashed runs
MIN_FILL = 0.9  # a draw must fill at least this share of the rows random placement would, at every size
MAX_DRAWS = 64


def column_hash(keys, c1, c0):
    """h(u) = (c1 u + c0) mod p, in [0, p) for keys in [0, 2^31); c1, c0 may be tensors that broadcast."""
    return (keys * c1 + c0) % PRIME


def sign_hash(keys, s1, s0):
    """31 sign bits per key: (s1 u + s0) mod p."""
    return (keys * s1 + s0) % PRIME


def random_fill(keys: int, rows: int) -> float:
    """Rows that `keys` keys placed uniformly at random fill, in expectation."""
    return rows * (1 - (1 - 1 / rows) ** keys)


@dataclass(frozen=True)
class UniversalHash:
    """h(a) = (c1 a + c0) mod p; sign g(a) = 1 - 2 * (((s1 a + s0) mod p) & 1)."""

    c1: int
    c0: int
    s1: int
    s0: int

    @staticmethod
    def from_seed(seed: int, draw: int = 0) -> "UniversalHash":
        """The seed's first draw (draw 0), or its next ones when a family redraws (`well_spread_hash`)."""
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x4A17] + ([draw] if draw else [])))
        c1, s1 = (int(x) for x in rng.integers(1, PRIME, size=2))
        c0, s0 = (int(x) for x in rng.integers(0, PRIME, size=2))
        return UniversalHash(c1, c0, s1, s0)

    def raw(self, keys: torch.Tensor) -> torch.Tensor:
        """h(a) in [0, p) for int64 keys a in [0, 2^31) (c1 a < 2^62: no overflow)."""
        return column_hash(keys, self.c1, self.c0)

    def sign_word(self, keys: torch.Tensor) -> torch.Tensor:
        """31 sign bits per key."""
        return sign_hash(keys, self.s1, self.s0)

    def sign(self, coords: torch.Tensor, block: int = 1) -> torch.Tensor:
        """g(a) = +-1 for coordinates a = u * block + k."""
        u, k = coords // block, coords % block
        words = (block + 30) // 31
        bit = (self.sign_word(u * words + k // 31) >> (k % 31)) & 1
        return (1 - 2 * bit).to(torch.float32)


def subspace_dim(n: int, ratio: int, sizes: str = "pow2", max_ratio: int | None = None, block: int = 1) -> int:
    """m for a device at `ratio`x compression of an n-vector (ratio 1 = the full n).

    With blocks of `block` values the rule applies to the n / block blocks and m is block times that.

    pow2: the greatest power of two <= n / ratio (the paper, section 4.3).
    chain: u * (max_ratio / ratio) with u = floor(n / max_ratio): exactly n / ratio up to
    rounding, and every size of the run divides the larger ones.
    """
    if ratio < 1 or ratio & (ratio - 1):
        raise ValueError(f"ratio={ratio!r} is invalid: a power of two >= 1")
    if ratio == 1:
        return n
    if block > 1:
        if n % block:
            raise ValueError(f"block={block} does not divide n={n}")
        return block * subspace_dim(n // block, ratio, sizes, max_ratio)
    if sizes == "pow2":
        m = 1 << (int(n // ratio).bit_length() - 1) if n >= ratio else 1
    elif sizes == "chain":
        top = max(max_ratio or ratio, ratio)
        if n < top:
            raise ValueError(f"sizes='chain' needs n >= the largest ratio ({n} < {top})")
        m = (n // top) * (top // ratio)
    else:
        raise ValueError(f"sizes={sizes!r} is invalid: allowed values are {', '.join(SIZES)}")
    return max(1, min(m, n))


@dataclass(eq=False)
class Subspace:
    """One hashed subspace of R^n of dimension m (S: n x m, one non-zero per row)."""

    n: int
    m: int
    hash: UniversalHash | None  # None: the server basis (S = I, m = n)
    signed: bool = True
    block: int = 1  # Z: coordinates hashed together (S = S_blocks (x) I_Z)
    _slots: torch.Tensor | None = field(default=None, repr=False)
    _signs: torch.Tensor | None = field(default=None, repr=False)
    _counts: torch.Tensor | None = field(default=None, repr=False)

    @property
    def full(self) -> bool:
        return self.hash is None

    @property
    def ratio(self) -> float:
        return self.n / self.m

    @property
    def m_blocks(self) -> int:
        return self.m // self.block

    # --- the map a -> (column, sign), computed from the hash on the fly ---------
    def block_cols(self, units: torch.Tensor) -> torch.Tensor:
        """Eq. 7 on blocks: column block of block u is h(u) mod (m / Z)."""
        return units if self.full else self.hash.raw(units) % self.m_blocks

    def slots_of(self, keys: torch.Tensor) -> torch.Tensor:
        if self.full:
            return keys
        return self.block_cols(keys // self.block) * self.block + keys % self.block

    def signs_of(self, keys: torch.Tensor) -> torch.Tensor:
        if self.full or not self.signed:
            return torch.ones(keys.shape, dtype=torch.float32)
        return self.hash.sign(keys, self.block)

    # --- whole-vector maps (server side; cached: the hash is fixed for the run) ---
    def slots(self) -> torch.Tensor:
        if self._slots is None:
            self._slots = self.slots_of(torch.arange(self.n, dtype=torch.int64))
        return self._slots

    def signs(self) -> torch.Tensor | None:
        """None when every sign is +1 (no multiply needed)."""
        if self.full or not self.signed:
            return None
        if self._signs is None:
            self._signs = self.signs_of(torch.arange(self.n, dtype=torch.int64))
        return self._signs

    def counts(self) -> torch.Tensor:
        """S^T 1: how many coordinates share each column (0 for an empty one)."""
        if self._counts is None:
            self._counts = torch.bincount(self.slots(), minlength=self.m).to(torch.float32)
        return self._counts

    def reduce(self, theta: torch.Tensor) -> torch.Tensor:
        """Eq. 4: psi = S^T theta / S^T 1 (argmin ||S psi - theta||); empty columns get 0."""
        if self.full:
            return theta.clone()
        s = self.signs()
        vals = theta if s is None else theta * s
        psi = torch.zeros(self.m, dtype=theta.dtype).index_add_(0, self.slots(), vals)
        return psi / self.counts().clamp(min=1)

    def recover(self, psi: torch.Tensor) -> torch.Tensor:
        """Eq. 5: theta = S psi (the same vector in the server basis)."""
        if self.full:
            return psi.clone()
        out = psi.index_select(0, self.slots())
        s = self.signs()
        return out if s is None else out * s

    def rows(self, psi: torch.Tensor, items: torch.Tensor, d: int) -> torch.Tensor:
        """Eq. 6: the embedding rows of `items` (table n = rows x d, row-major) realized from psi."""
        keys = items[..., None] * d + torch.arange(d)
        return psi[self.slots_of(keys)] * self.signs_of(keys)

    def matrix(self) -> torch.Tensor:
        """Dense S (n x m), for tests and the lab's small examples only."""
        S = torch.zeros(self.n, self.m, dtype=torch.float64)
        sg = self.signs()
        S[torch.arange(self.n), self.slots()] = 1.0 if sg is None else sg.double()
        return S


def fills_rows(h: UniversalHash, n_keys: int, sizes: tuple[int, ...]) -> bool:
    """Keys 0..n_keys-1 fill at least MIN_FILL of the rows random placement would, at every size."""
    raw = h.raw(torch.arange(n_keys, dtype=torch.int64))
    return all(int(torch.bincount(raw % m, minlength=m).count_nonzero()) >= MIN_FILL * random_fill(n_keys, m)
               for m in sizes if m > 1)


@functools.lru_cache(maxsize=4096)  # per-device hashes (the inconsistent ablation) are derived again every round
def well_spread_hash(seed: int, n_keys: int, sizes: tuple[int, ...]) -> UniversalHash:
    """The seed's first draw that `fills_rows` at these sizes: its first draw for most seeds (at ML-100K's 1,682
    items, 85 % of the seeds)."""
    for draw in range(MAX_DRAWS):
        h = UniversalHash.from_seed(seed, draw)
        if fills_rows(h, n_keys, sizes):
            return h
    raise RuntimeError(f"no hash of seed {seed} spreads {n_keys} keys over sizes {sizes} in {MAX_DRAWS} draws")


class SubspaceFamily:
    """The consistent and collapsible subspaces of one n-vector, all from one hash."""

    def __init__(self, n: int, seed: int, signed: bool = True, sizes: str = "pow2", max_ratio: int = 1,
                 block: int = 1):
        if n >= 2**31:
            raise ValueError(f"n={n} is too large for the 31-bit hash")
        if n % block:
            raise ValueError(f"block={block} does not divide n={n}")
        self.n, self.seed, self.signed, self.sizes, self.max_ratio = n, int(seed), signed, sizes, max_ratio
        self.block = block
        self._members: dict[int, Subspace] = {}
        self.hash = well_spread_hash(self.seed, n // block, tuple(self.dim(r) // block for r in self._ratios()))

    def _ratios(self) -> list[int]:
        """Every compression ratio a member can have: powers of two until one block (chain: up to max_ratio)."""
        out, r = [], 2
        while r <= (self.max_ratio if self.sizes == "chain" else self.n // self.block):
            out.append(r)
            r *= 2
        return out

    def dim(self, ratio: int) -> int:
        return subspace_dim(self.n, ratio, self.sizes, self.max_ratio, self.block)

    def subspace(self, ratio: int) -> Subspace:
        if ratio not in self._members:
            h = None if ratio == 1 else self.hash
            self._members[ratio] = Subspace(self.n, self.dim(ratio), h, self.signed, self.block)
        return self._members[ratio]


def collapse_matrix(m_small: int, m_big: int) -> torch.Tensor:
    """C (m_big x m_small) with C[j, j mod m_small] = 1: S_small = S_big C when m_small | m_big."""
    C = torch.zeros(m_big, m_small, dtype=torch.float64)
    j = torch.arange(m_big)
    C[j, j % m_small] = 1.0
    return C


def is_collapsible(small: Subspace, big: Subspace) -> bool:
    """column-space(S_small) within column-space(S_big), checked exactly on the dense matrices."""
    Ss, Sb = small.matrix(), big.matrix()
    if big.full:
        return True  # R^n contains everything
    if big.m % small.m == 0 and torch.equal(Ss, Sb @ collapse_matrix(small.m, big.m)):
        return True  # every column of S_small is a sum of columns of S_big (exact integer arithmetic)
    # otherwise fall back to ranks: rank([S_big | S_small]) == rank(S_big)
    return int(torch.linalg.matrix_rank(torch.cat([Sb, Ss], 1))) == int(torch.linalg.matrix_rank(Sb))
