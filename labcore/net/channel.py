"""A digital wireless link: the budget channel of the wireless-FL report (Eq. 6) and its rate regions (Eq. 7, 8).

A link carries quantization levels xi in {0, 1/k, ..., 1} of the stochastic quantizer
(`labcore.methods.quantize`). It has a budget K (levels per coordinate it can deliver error-free,
written in bits: K = 2^budget_bits):

* k <= K: the levels arrive exactly;
* k >  K: the receiver gets xi([y + w]_[0,1], k) with w ~ N(0, 1/(4 K^2)), i.e. Gaussian noise of
  the budget's resolution, clipped to [0, 1] and rounded back onto the k-level grid.

The norm and the signs always arrive exactly (the report's simplification). `budget_bits = 0` means
no limit (an error-free link). Several users share a channel through sum-rate constraints over
subsets S of users (Eq. 7: sum_{i in S} d log2 k_i <= R(S)), equivalently budgets on products of
levels (Eq. 8: prod_{i in S} k_i <= K(S)); `RateRegion` holds them in bits (log2 K(S)).

`LinkModel` is what a simulation plugs in per client: budgets and rates of both directions, the
channel applied to quantized levels and the seconds a message of b bits takes.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ..methods.quantize import BLOCK_VALUES, MAX_LEVELS_LOG2, draws_for, qsgd_omega, requantize
from .budget import exceeds
from .channel_kernels import transmit_codes

MAX_BUDGET_BITS = MAX_LEVELS_LOG2


class ChannelError(ValueError):
    """A link or rate region is invalid; the message names the field and what is allowed."""


def _check_bits(name: str, value, lo: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= MAX_BUDGET_BITS:
        raise ChannelError(f"{name}={value!r} is invalid: allowed range is {lo}..{MAX_BUDGET_BITS} "
                           f"(bits, K = 2^bits{'; 0 = no limit' if lo == 0 else ''})")
    return int(value)


def noise_std(budget_bits: int) -> float:
    """Standard deviation 1/(2K) of the channel noise w of Eq. (6); 0 for an unlimited link."""
    _check_bits("budget_bits", budget_bits)
    return 0.0 if budget_bits == 0 else 1.0 / (2.0 * 2.0**budget_bits)


def transmit_levels(levels: torch.Tensor, k: int, budget_bits: int, gen: torch.Generator) -> torch.Tensor:
    """Eq. (6) on quantization levels (int, 0..k): what the receiver decodes."""
    _check_bits("budget_bits", budget_bits)
    if not exceeds(k, budget_bits):
        return levels
    y = levels.to(torch.float64, copy=True).div_(float(k))  # a copy even of float levels: changed in place below
    w = torch.randn(y.shape, generator=gen, dtype=torch.float64).mul_(noise_std(budget_bits))
    y.add_(w)  # in place, the same values: each float64 copy of a full-participation payload is 0.7 GB
    del w
    return requantize(y.clamp_(0.0, 1.0), k, gen)


# Up to this many levels (10 bits) a packed message's received levels are drawn from their exact distribution given
# the sent level: (levels x levels) tables, 12 MiB at 1024, and one uniform draw a value instead of a normal and a
# uniform (a normal is most of a noisy round's time). Past it, Eq. 6 as written.
TABLE_LEVELS = 1024


@functools.lru_cache(maxsize=4)
def received_level_table(s: int, budget_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (6) as a table: row l is the distribution of the level received for a sent level l of 0..s. With
    r = clip(l + tau Z, 0, s) (tau = s sigma, Z standard normal; the clip's masses at 0 and s) and the requantizer's
    floor(r) + [u < frac(r)], level L arrives with probability E[max(0, 1 - |r - L|)], in closed form from the
    normal's CDF and density over [L - 1, L] and [L, L + 1]. Returns the rows' CDFs (s + 1, s + 1) float64, last
    column exactly 1, and a guide (s + 1, s + 1) int32: guide[l, g] the first L whose CDF exceeds g / (s + 1), so
    the inverse at u is found from guide[l, floor(u (s + 1))] in a step or two. Both read-only (cached)."""
    from scipy.special import ndtr  # here: scipy.special is 14 MiB resident, and only a noisy link needs it

    tau = s * noise_std(budget_bits)
    sent = np.arange(s + 1, dtype=np.float64)[:, None]
    got = np.arange(s + 1, dtype=np.float64)[None, :]

    def mass(a, b):  # P(a < X < b) and E[X; a < X < b] - l P(a < X < b) for X ~ N(l, tau^2)
        lo, hi = (a - sent) / tau, (b - sent) / tau
        p = np.where(lo > 0, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))  # the accurate tail
        return p, -tau * (np.exp(-hi**2 / 2) - np.exp(-lo**2 / 2)) / math.sqrt(2 * math.pi)

    p1, m1 = mass(np.maximum(got - 1, 0.0), got)  # r in [L - 1, L]: L with weight r - (L - 1)
    p2, m2 = mass(got, np.minimum(got + 1, float(s)))  # r in [L, L + 1]: L with weight L + 1 - r
    prob = (sent - got + 1) * p1 + m1 + (got + 1 - sent) * p2 - m2
    prob[:, 0] += ndtr(-sent[:, 0] / tau)  # clipped to 0
    prob[:, s] += ndtr((sent[:, 0] - s) / tau)  # clipped to s
    cdf = np.cumsum(np.maximum(prob, 0.0), axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = 1.0
    guide = np.stack([np.searchsorted(row, np.arange(s + 1) / (s + 1), side="right") for row in cdf]).astype(np.int32)
    cdf.flags.writeable = guide.flags.writeable = False
    return cdf, guide


def transmit_packed(packed: np.ndarray, norms: np.ndarray, n: int, bits: int, bucket: int, budget_bits: int,
                    gen: torch.Generator, literal: bool = False, out: np.ndarray | None = None) -> torch.Tensor:
    """Eq. (6) on a packed QSGD message (`quantize.pack_codes` rows of n values, `bits`-bit levels, float32 norms
    (M, n_buckets) as sent): the receiver's dequantized (M, n) float32 table. Levels beyond the budget arrive noisy,
    so a zero can arrive nonzero, but only in a bucket with a norm: the channel is drawn for there alone
    (`channel_kernels`), a block of clients at a time, numpy's draws (PCG64, seeded by one draw of `gen`). Up to
    TABLE_LEVELS levels each value's received level is drawn from its exact distribution (`received_level_table`,
    one uniform a value); past it, or with `literal`, through Eq. 6 as written (a normal and a uniform a value: a
    block's normals, then its uniforms). A link within its budget delivers the codes as sent. out: a (M, n) float32
    array to receive into, any values at entry (a buffer kept from round to round: no fresh pages to fault in)."""
    _check_bits("budget_bits", budget_bits)
    s = 2**bits - 1
    if not exceeds(s, budget_bits):
        raise ChannelError(f"budget_bits={budget_bits} carries {s} levels exactly: decode the codes as sent")
    M, nb = norms.shape
    lengths = np.minimum(bucket, n - bucket * np.arange(nb))  # the last bucket may be short
    drawn = (norms > 0).astype(np.int64) @ lengths  # per client: the values of its buckets with a norm
    clear = out is not None
    if out is None:
        out = torch.zeros((M, n), dtype=torch.float32).numpy()  # a page no bucket with a norm reaches is never touched
    elif out.shape != (M, n) or out.dtype != np.float32:
        raise ValueError(f"out has shape {out.shape} and dtype {out.dtype}: the received table is ({M}, {n}) float32")
    rng, sigma = draws_for(gen), noise_std(budget_bits)
    exact = not literal and s + 1 <= TABLE_LEVELS
    cdf, guide = received_level_table(s, budget_bits) if exact else (np.empty((0, 0)), np.empty((0, 1), np.int32))
    u = np.empty(max(min(BLOCK_VALUES, int(drawn.sum())), int(drawn.max(initial=0))))
    z = np.empty(0) if exact else np.empty_like(u)
    ends = np.concatenate([[0], np.cumsum(drawn)])
    a = 0
    while a < M:  # clients a..b-1: as many as BLOCK_VALUES draws hold, at least one
        b = max(a + 1, int(np.searchsorted(ends, ends[a] + BLOCK_VALUES, side="right")) - 1)
        total = int(ends[b] - ends[a])
        if not exact:
            rng.standard_normal(out=z[:total])
        rng.random(out=u[:total])
        transmit_codes(packed[a:b], norms[a:b], n, bits + 1, bucket, float(s), sigma, ends[a:b] - ends[a], z, u,
                       cdf, guide, out[a:b], clear)
        a = b
    return torch.from_numpy(out)


def effective_omega(d: int, k: float, budget_bits: int) -> float:
    """A variance factor valid for quantizer + channel (what Theorem 1's bound uses on such a link).

    k <= K: d/(4k^2) (Property 2). k > K: the first rounding, the channel noise (clipping to [0, 1]
    is a projection, so it never adds error) and the second rounding add up to
    d/(4k^2) + d/(4K^2) + d/(4k^2). The report uses d/(4K^2) there (Section 3.2)."""
    if math.isinf(k):
        return 0.0 if budget_bits == 0 else qsgd_omega(d, 2.0**budget_bits)
    if not exceeds(int(k), budget_bits):
        return qsgd_omega(d, k)
    return 2 * qsgd_omega(d, k) + qsgd_omega(d, 2.0**budget_bits)


# --- several users: rate regions (Eq. 7, 8) ----------------------------------------------------------------
@dataclass(frozen=True)
class RateRegion:
    """Budgets log2 K(S) in bits per coordinate for subsets S of the users 0..n-1 (Eq. 8).

    A subset not listed is unconstrained. A capacity region of a multiple-access or broadcast channel
    is a polymatroid: budgets are >= 0, a larger set of users never has a smaller budget, and budgets
    are submodular (a group's budget is at most the sum of its parts')."""

    n: int
    budgets: dict = field(default_factory=dict)  # frozenset/tuple of users -> log2 K(S) (bits per coordinate)

    def __post_init__(self):
        if isinstance(self.n, bool) or not isinstance(self.n, int) or not 1 <= self.n <= 16:
            raise ChannelError(f"n={self.n!r} is invalid: the number of users is an integer in 1..16")
        clean = {}
        for s, v in dict(self.budgets).items():
            users = frozenset([s] if isinstance(s, (int, np.integer)) else s)
            if not users or not all(isinstance(u, (int, np.integer)) and 0 <= u < self.n for u in users):
                raise ChannelError(f"budgets[{sorted(users) if users else s!r}] is invalid: a subset of users "
                                   f"0..{self.n - 1} (not empty)")
            try:
                b = float(v)
            except (TypeError, ValueError):
                b = float("nan")
            if not b >= 0 or math.isinf(b):
                raise ChannelError(f"budgets[{sorted(users)}]={v!r} is invalid: a budget log2 K(S) is a finite "
                                   "number of bits >= 0 (K(S) >= 1)")
            clean[users] = b
        object.__setattr__(self, "budgets", clean)
        for (s, a), (t, b) in itertools.permutations(clean.items(), 2):
            if s < t and a > b:
                raise ChannelError(f"budgets[{sorted(t)}]={b:g} is invalid: it is smaller than the budget "
                                   f"{a:g} of its subset {sorted(s)}, so this is not a rate region (a larger set "
                                   "of users never has less rate)")
            if s.isdisjoint(t) and (s | t) in clean and clean[s | t] > a + b + 1e-12:
                raise ChannelError(f"budgets[{sorted(s | t)}]={clean[s | t]:g} is invalid: it exceeds the sum "
                                   f"{a + b:g} of budgets[{sorted(s)}] and budgets[{sorted(t)}], so this is not "
                                   "a rate region (the sum rate is at most the sum of the parts' rates)")

    @staticmethod
    def two_users(k1_bits: float, k2_bits: float, sum_bits: float) -> "RateRegion":
        """The region of the report's Fig. 1 and Table 1: k1 <= K1, k2 <= K2, k1 k2 <= K(s) (in bits)."""
        return RateRegion(2, {(0,): k1_bits, (1,): k2_bits, (0, 1): sum_bits})

    def constraints(self) -> tuple[np.ndarray, np.ndarray]:
        """(A, b) with A t <= b for t_i = log2 k_i: one row per listed subset (0/1 indicator)."""
        rows = sorted(self.budgets.items(), key=lambda kv: (len(kv[0]), sorted(kv[0])))
        A = np.zeros((len(rows), self.n))
        for r, (s, _) in enumerate(rows):
            A[r, sorted(s)] = 1.0
        return A, np.array([b for _, b in rows], dtype=float)

    def contains(self, t_bits, tol: float = 1e-9) -> bool:
        """Whether levels k_i = 2^t_i satisfy every constraint of Eq. (8)."""
        t = np.asarray(t_bits, dtype=float)
        A, b = self.constraints()
        return bool(np.all(t >= -tol) and np.all(A @ t <= b + tol))

    def sum_rate_bits(self, d: int, t_bits) -> float:
        """Eq. (7)'s left side for all users: sum_i d log2 k_i (bits per round)."""
        return float(d * np.sum(t_bits))


# --- what a simulation plugs in ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LinkModel:
    """One client's links: budgets (bits, 0 = no limit) and rates (bits per second) of both directions."""

    budget_up_bits: int = 0
    budget_down_bits: int = 0
    rate_up_bps: float = 1e6
    rate_down_bps: float = 1e6

    def __post_init__(self):
        _check_bits("budget_up_bits", self.budget_up_bits)
        _check_bits("budget_down_bits", self.budget_down_bits)
        for name in ("rate_up_bps", "rate_down_bps"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or math.isinf(v):
                raise ChannelError(f"{name}={v!r} is invalid: a link rate is a finite number of bits per second > 0")

    def budget(self, direction: str) -> int:
        if direction not in ("up", "down"):
            raise ChannelError(f"direction={direction!r} is invalid: allowed values are up, down")
        return self.budget_up_bits if direction == "up" else self.budget_down_bits

    def transmit(self, direction: str, levels: torch.Tensor, k: int, gen: torch.Generator) -> torch.Tensor:
        return transmit_levels(levels, k, self.budget(direction), gen)

    def seconds(self, bits_up: float, bits_down: float) -> float:
        """Communication time of one round: download then upload at the link rates."""
        return bits_down / self.rate_down_bps + bits_up / self.rate_up_bps
