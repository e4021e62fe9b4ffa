"""User-level differential privacy for federated averaging (DP-FedAvg, McMahan et al. 2018), with Opacus's accountants.

One round of DP-FedAvg, in the space the server aggregates (FedMF's item rows, CoLR's A, SCoLR's factors,
Top-K's values, a dense model's weights):

1. clients join by Poisson sampling with rate q (each user independently), as the accountant assumes;
2. each client's update x_u is clipped to L2 norm C:   x_u * min(1, C / ||x_u||);
3. Gaussian noise N(0, sigma^2 C^2) is added to the sum of the clipped updates;
4. the noisy sum is divided by a fixed denominator, the expected cohort size q N, not by the cohort's size, so
   that adding or removing one user changes the aggregate by at most C / (q N) whoever else joined.

Where the noise is added (`MODES`):
* "central": the server adds all of it to the sum (the clients trust the server);
* "distributed": each client adds N(0, sigma^2 C^2 / M_expected) before secure-aggregation masking, so the
  unmasked sum of M_expected clients carries the full noise; with fewer uploads (dropouts, a small Poisson
  cohort) the sum carries less, and the round's epsilon is accounted with the noise actually present:
  sigma_round = sigma sqrt(M_uploaded / M_expected);
* "local": each client clips and adds N(0, sigma^2 C^2) to its own update (every client's update is private
  on its own; per-client epsilon, no amplification by sampling since the server sees who sent what).

A client noises every value of its update, the rows it did not touch too (else which rows it touched shows). The
shares of the clients whose update nothing reads alone are drawn at once on the sum: the sum of their M shares
N(0, s^2) is N(0, M s^2), the same distribution (`RoundDP.privatize_clients`'s `noised`). Without protection and
without an attack view that is every client, and the clipped rows are summed without a dense table; under secure
aggregation or CKKS, every client but the `he_real_clients` whose updates are masked or encrypted for real.

The accountant is Opacus's RDP accountant (Mironov 2017; Opacus converts RDP to (epsilon, delta) with Balle et
al. 2020, Thm. 21), its PRV accountant (Gopi et al. 2021) as a cross-check, and `get_noise_multiplier` for
the inverse (sigma for a target epsilon).
"""
from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

MODES = ("none", "central", "distributed", "local")
STREAM_DP = 11  # the round's generator stream of the noise (labcore.fed.sampling's streams are 0..4)


class PrivacyBudgetError(ValueError):
    """The requested epsilon cannot be met (too few noise or too many rounds)."""


# --- checks -------------------------------------------------------------------------------------------------
def check_params(*, noise_multiplier: float | None = None, clip: float | None = None, delta: float | None = None,
                 sampling_rate: float | None = None, target_epsilon: float | None = None,
                 prefix: str = "dp_") -> None:
    """Raise ValueError naming the field and the allowed values for each bad parameter given."""
    def bad(name, value, allowed):
        raise ValueError(f"{prefix}{name}={value!r} is invalid: {allowed}")
    if noise_multiplier is not None and not (noise_multiplier >= 0 and math.isfinite(noise_multiplier)):
        bad("noise_multiplier", noise_multiplier, "allowed values are finite and >= 0 (sigma, the noise's std in "
                                                  "units of the clip norm)")
    if clip is not None and not clip > 0:
        bad("clip", clip, "allowed values are > 0 (the L2 norm each client's update is clipped to; inf = no clip)")
    if delta is not None and not 0 < delta < 1:
        bad("delta", delta, "allowed range is (0, 1), usually below 1 / number of users")
    if sampling_rate is not None and not 0 < sampling_rate <= 1:
        bad("sampling_rate", sampling_rate, "allowed range is (0, 1]")
    if target_epsilon is not None and not target_epsilon > 0:
        bad("target_epsilon", target_epsilon, "allowed values are > 0 (0 = no budget)")


# --- the mechanism ------------------------------------------------------------------------------------------
def clip_factors(sq_norms: torch.Tensor, clip: float) -> torch.Tensor:
    """min(1, C / ||x_u||) per client from the squared norms (float64; 1 for a zero update)."""
    norms = sq_norms.to(torch.float64).sqrt()
    if math.isinf(clip):
        return torch.ones_like(norms)
    return torch.clamp(clip / norms.clamp(min=1e-300), max=1.0)


NORM_BLOCK = 4  # clients whose squared norms `sq_norms` sums at a time


def sq_norms(flat: torch.Tensor) -> torch.Tensor:
    """Each row's squared L2 norm of a (M, n) tensor in float64: the numbers of `(flat.double() ** 2).sum(1)`,
    a few rows at a time (a float64 copy of a cohort's whole table, 114 MB at ML-1M, costs more than the sums).
    Torch sums a lone row in threads, in another order: so no block has a single row unless M is 1."""
    M = flat.shape[0]
    starts = list(range(0, M, NORM_BLOCK))
    if M > 1 and M - starts[-1] == 1:  # ..., 4, 1 -> ..., 3, 2
        starts[-1] -= 1
    out = torch.empty(M, dtype=torch.float64)
    block = torch.empty((min(M, NORM_BLOCK), flat.shape[1]), dtype=torch.float64)
    for lo, hi in zip(starts, starts[1:] + [M]):
        b = block[: hi - lo]
        out[lo:hi] = b.copy_(flat[lo:hi]).square_().sum(1)  # float32 squares are exact in float64
    return out


def clip_updates(updates: torch.Tensor, clip: float, overwrite: bool = False) -> torch.Tensor:
    """Each row (client) of a (M, ...) tensor clipped to L2 norm `clip`. overwrite: the caller's own table, which
    may be scaled in place (the same numbers, without a second table)."""
    if math.isinf(clip):
        return updates
    flat = updates.reshape(updates.shape[0], -1)
    f = clip_factors(sq_norms(flat), clip)[:, None].to(flat.dtype)
    return (flat.mul_(f) if overwrite else flat * f).reshape(updates.shape)


def row_sq_norms(rows) -> torch.Tensor:
    """Each client's squared L2 norm of a RowUpdate (float64)."""
    # each row's norm in one fused pass (float32, relative error ~1e-7), squared and added up per client in float64
    return torch.zeros(rows.n_clients, dtype=torch.float64).index_add_(
        0, rows.client, torch.linalg.vector_norm(rows.values, dim=1).to(torch.float64) ** 2)


def clip_rows(rows, clip: float, out: torch.Tensor | None = None):
    """`clip_updates` of a RowUpdate (labcore.fed.updates): each client's rows scaled by its factor, written into
    `out` (a tensor of the values' shape and dtype) when given."""
    from ..fed.updates import RowUpdate
    if math.isinf(clip):
        return rows
    f = clip_factors(row_sq_norms(rows), clip)
    values = torch.mul(rows.values, f[rows.client].to(rows.values.dtype)[:, None], out=out)
    return RowUpdate(rows.n_clients, rows.n_items, rows.client, rows.item, values, rows.item_bits, rows.received)


def clipped_sum(rows, clip: float):
    """The clients' clipped rows summed with DP's equal weights 1 / M, as a `SummedRows` (whose aggregate is that
    sum): each row is scaled by its client's clip factor times 1 / M as it is added, without a clipped table. Equal
    to `aggregate(clip_rows(rows, clip), "weighted", 1 / M)` to float rounding."""
    from ..fed.aggregate import fedavg_weights, rows_weighted_sum
    from ..fed.updates import SummedRows
    w = fedavg_weights(torch.ones(rows.n_clients, dtype=torch.int64))
    scale = (clip_factors(row_sq_norms(rows), clip) * w.to(torch.float64)).to(rows.dtype)
    first = rows.values[: int(rows.indptr[1])]  # client 0's message, as a sum on arrival keeps it
    return SummedRows.from_sum(rows.n_clients, rows.indptr, rows.item, rows.item_bits, "weighted",
                               rows_weighted_sum(rows, scale), None, first, w, clip)


def gaussian(shape, std: float, gen: torch.Generator, dtype=torch.float32) -> torch.Tensor:
    """N(0, std^2) of the given shape and dtype, drawn from `gen` (zeros, no draw, when std is 0)."""
    if std == 0:
        return torch.zeros(shape, dtype=dtype)
    noise = torch.empty(shape, dtype=dtype)
    if noise.numel() >= 16:  # drawn scaled: the numbers of randn * std (torch's vectorized path), in half the time
        return noise.normal_(0.0, std, generator=gen)
    return torch.randn(shape, generator=gen, dtype=dtype).mul_(std)  # below 16 values normal_ rounds otherwise


NOISE_CHUNK = 1 << 16  # values `add_gaussian_` draws at a time (a multiple of 16)


def add_gaussian_(x: torch.Tensor, std: float, gen: torch.Generator) -> torch.Tensor:
    """x += N(0, std^2) in place, with the numbers of `x + gaussian(x.shape, std, gen, x.dtype)`, drawn a chunk
    at a time into a small buffer rather than into a second array of x's size. torch's normal_ draws its uniforms
    in order and turns them into normals 16 at a time, redrawing the last 16 when the size is not a multiple of 16;
    so chunks of multiples of 16, the last one at least 16 long, draw the same numbers as one call."""
    if std == 0:
        return x
    flat = x.view(-1)
    n = flat.numel()
    if n < 2 * NOISE_CHUNK:
        return flat.add_(gaussian(n, std, gen, x.dtype)).view_as(x)
    buf = torch.empty(NOISE_CHUNK, dtype=x.dtype)
    starts = list(range(0, n, NOISE_CHUNK))
    if n - starts[-1] < 16:  # a short tail joins the chunk before it
        starts.pop()
    for lo, hi in zip(starts, starts[1:] + [n]):
        chunk = buf[: hi - lo] if hi - lo <= NOISE_CHUNK else torch.empty(hi - lo, dtype=x.dtype)
        flat[lo:hi].add_(chunk.normal_(0.0, std, generator=gen))
    return x


def noisy_mean(updates: torch.Tensor, clip: float, noise_multiplier: float, denominator: float,
               gen: torch.Generator) -> torch.Tensor:
    """Central DP-FedAvg on a dense (M, ...) cohort: (sum_u clip(x_u) + N(0, sigma^2 C^2)) / denominator."""
    total = clip_updates(updates, clip).sum(0)
    std = 0.0 if noise_multiplier == 0 else noise_multiplier * clip
    return (total + gaussian(total.shape, std, gen, total.dtype)) / denominator


def client_noise_std(mode: str, noise_multiplier: float, clip: float, expected_cohort: float) -> float:
    """The std of the noise each client adds to its own clipped update (0 under central DP)."""
    if noise_multiplier == 0:
        return 0.0
    if mode == "distributed":
        return noise_multiplier * clip / math.sqrt(expected_cohort)
    if mode == "local":
        return noise_multiplier * clip
    return 0.0


def achieved_noise_multiplier(mode: str, noise_multiplier: float, n_uploaded: int, expected_cohort: float) -> float:
    """sigma of the noise the round's sum carries, in units of C: under distributed DP only the uploaded clients'
    shares are in it (variance n_uploaded sigma^2 C^2 / M_expected)."""
    if mode == "distributed":
        return noise_multiplier * math.sqrt(n_uploaded / expected_cohort)
    return noise_multiplier


def poisson_sample(n_users: int, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Each user joins independently with probability `rate` (sorted user ids; may be empty)."""
    check_params(sampling_rate=rate)
    return np.flatnonzero(rng.random(n_users) < rate).astype(np.int64)


# --- the accountant (Opacus) --------------------------------------------------------------------------------
def epsilon_rdp(sampling_rate: float, noise_multiplier: float, rounds: int, delta: float) -> float:
    """Opacus's RDP accountant: epsilon after `rounds` subsampled Gaussian mechanisms (inf when sigma is 0)."""
    from opacus.accountants import RDPAccountant
    check_params(noise_multiplier=noise_multiplier, delta=delta, sampling_rate=sampling_rate)
    if rounds == 0:
        return 0.0
    if noise_multiplier == 0:
        return math.inf
    acc = RDPAccountant()
    acc.history = [(noise_multiplier, sampling_rate, rounds)]
    return float(acc.get_epsilon(delta))


def epsilon_prv(sampling_rate: float, noise_multiplier: float, rounds: int, delta: float) -> float:
    """Opacus's PRV accountant (numerical composition of the privacy loss distribution): a tighter estimate."""
    from opacus.accountants import PRVAccountant
    check_params(noise_multiplier=noise_multiplier, delta=delta, sampling_rate=sampling_rate)
    if rounds == 0:
        return 0.0
    if noise_multiplier == 0:
        return math.inf
    acc = PRVAccountant()
    acc.history = [(noise_multiplier, sampling_rate, rounds)]
    return float(acc.get_epsilon(delta))


def noise_for_epsilon(target_epsilon: float, sampling_rate: float, rounds: int, delta: float) -> float:
    """sigma for which `rounds` rounds at rate q spend `target_epsilon` (Opacus's `get_noise_multiplier`, RDP)."""
    from opacus.accountants.utils import get_noise_multiplier
    check_params(target_epsilon=target_epsilon, delta=delta, sampling_rate=sampling_rate)
    try:
        return float(get_noise_multiplier(target_epsilon=target_epsilon, target_delta=delta,
                                          sample_rate=sampling_rate, steps=rounds, accountant="rdp",
                                          epsilon_tolerance=0.005))
    except ValueError as e:  # Opacus: "The privacy budget is too low."
        raise PrivacyBudgetError(f"dp_target_epsilon={target_epsilon!r} cannot be met in {rounds} rounds at "
                                 f"q={sampling_rate:g}, delta={delta:g} ({e}): raise the target, or lower rounds or "
                                 "the sampling rate") from None


@functools.lru_cache(maxsize=4096)
def _rdp_one_round(noise_multiplier: float, sampling_rate: float) -> np.ndarray:
    """Opacus's RDP curve of one subsampled Gaussian round over its default orders (RDPAccountant's)."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis.rdp import compute_rdp
    return np.asarray(compute_rdp(q=sampling_rate, noise_multiplier=noise_multiplier, steps=1,
                                  orders=RDPAccountant.DEFAULT_ALPHAS), dtype=np.float64)


def epsilon_of_rounds(sigmas, sampling_rate: float, delta: float) -> float:
    """Epsilon after rounds with these noise multipliers (RDP adds up over rounds; Opacus's conversion to
    (epsilon, delta)): the same number as an RDPAccountant stepped once per round, computed per distinct sigma."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis.rdp import get_privacy_spent
    sigmas = [float(s) for s in sigmas]
    if not sigmas:
        return 0.0
    if min(sigmas) == 0:
        return math.inf
    values, counts = np.unique(np.asarray(sigmas), return_counts=True)
    rdp = sum(c * _rdp_one_round(float(v), sampling_rate) for v, c in zip(values, counts))
    with warnings.catch_warnings():  # "optimal order is the largest alpha": the bound is still valid
        warnings.simplefilter("ignore")
        eps, _ = get_privacy_spent(orders=RDPAccountant.DEFAULT_ALPHAS, rdp=rdp, delta=delta)
    return float(eps)


# --- the engine's side --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RoundDP:
    """What the engine needs of a run's DP settings (made once per run by `from_config`)."""

    mode: str
    noise_multiplier: float
    clip: float
    delta: float
    sampling_rate: float
    expected_cohort: float
    target_epsilon: float
    rounds: int

    @staticmethod
    def from_config(cfg, n_users: int) -> "RoundDP | None":
        if cfg.dp_mode == "none":
            return None
        q = cfg.clients_per_round / n_users
        if q > 1:
            raise ValueError(f"clients_per_round={cfg.clients_per_round} is invalid with dp_mode={cfg.dp_mode!r}: "
                             f"the expected cohort must be <= the {n_users} users (q = M / N <= 1)")
        delta = cfg.dp_delta if cfg.dp_delta > 0 else 1.0 / n_users
        check_params(delta=delta)
        sigma = cfg.dp_noise_multiplier
        if cfg.dp_target_epsilon > 0 and sigma == 0:  # the noise that spends the budget in cfg.rounds rounds
            sigma = noise_for_epsilon(cfg.dp_target_epsilon, 1.0 if cfg.dp_mode == "local" else q, cfg.rounds,
                                      delta)
        dp = RoundDP(cfg.dp_mode, sigma, cfg.dp_clip, delta, q, float(cfg.clients_per_round),
                     cfg.dp_target_epsilon, cfg.rounds)
        if dp.budget_spent([]):
            raise PrivacyBudgetError(f"dp_target_epsilon={cfg.dp_target_epsilon!r} cannot be met: one round at "
                                     f"dp_noise_multiplier={sigma:g} spends {dp.epsilon([{'dp_sigma': sigma}]):.3g} "
                                     "(raise the noise or the target)")
        return dp

    def rate(self) -> float:
        """The accountant's sampling rate: under local DP the server sees who sent which update, so no
        amplification by sampling (each round counts with q = 1 for a client in it: a client in every round)."""
        return 1.0 if self.mode == "local" else self.sampling_rate

    def epsilon(self, rows: list[dict]) -> float:
        """The run's epsilon after the rounds of its table (their `dp_sigma`: the noise each round had)."""
        return epsilon_of_rounds([r["dp_sigma"] for r in rows], self.rate(), self.delta)

    def budget_spent(self, rows: list[dict]) -> bool:
        """Whether one more round at the nominal noise would take epsilon past the budget."""
        nominal = {"dp_sigma": self.noise_multiplier}
        return self.target_epsilon > 0 and self.epsilon(list(rows) + [nominal]) > self.target_epsilon

    def stop_note(self, rows: list[dict]) -> str:
        if not (self.budget_spent(rows) and len(rows) < self.rounds):
            return ""
        nxt = self.epsilon(list(rows) + [{"dp_sigma": self.noise_multiplier}])
        return (f" Stopped by the privacy budget after {len(rows)} of {self.rounds} rounds: epsilon "
                f"{self.epsilon(rows):.3f}, one more round would spend {nxt:.3f} > dp_target_epsilon="
                f"{self.target_epsilon:g} (delta={self.delta:.3g}).")

    def privatize_clients(self, decoded, gen: torch.Generator, out: torch.Tensor | None = None,
                          noised: Sequence[int] | None = None):
        """Each client's clipped update, plus its own noise share (distributed, local) for the clients in `noised`
        (None: every client). RowUpdate or (M, N, k). The other clients' shares are drawn on the sum (`server_noise`'s
        `summed_clients`): none is read alone. With `noised` empty (no protection, no attack view), a RowUpdate is
        clipped and summed by its rows (`clipped_sum`).
        out: where central DP's clipped rows go (the engine passes a buffer it reuses round to round: a fresh
        array of the cohort's rows costs more in page faults than the clipping itself)."""
        from ..fed.updates import RowUpdate
        rows = isinstance(decoded, RowUpdate)  # else a dense (M, N, k) tensor
        if noised is not None and not len(noised) and self.mode != "central":
            return clipped_sum(decoded, self.clip) if rows else clip_updates(decoded, self.clip)
        std = client_noise_std(self.mode, self.noise_multiplier, self.clip, self.expected_cohort)
        if rows:
            if not std:  # central: clipped by its rows
                return clip_rows(decoded, self.clip, out)
            # a client noises every value, touched or not (else its rows leak); the dense table is ours to overwrite
            clipped = clip_updates(decoded.dense(), self.clip, overwrite=True)
        else:
            clipped = clip_updates(decoded, self.clip)
            if not std:
                return clipped
            if clipped is decoded:  # no clip: the noise goes on a copy, not on the caller's table
                clipped = clipped.clone(memory_format=torch.contiguous_format)
        if noised is None:
            return add_gaussian_(clipped, std, gen)
        for m in noised:
            add_gaussian_(clipped[int(m)], std, gen)
        return clipped

    def server_noise(self, shape, gen: torch.Generator, dtype, summed_clients: int = 0) -> torch.Tensor:
        """The noise the server adds to the sum, in units of the sum: central DP's, or the noise shares of the
        `summed_clients` clients that `privatize_clients` left out of `noised`."""
        if self.mode == "central":
            std = self.noise_multiplier * self.clip if self.noise_multiplier else 0.0
        else:  # the sum of M independent N(0, s^2) shares is N(0, M s^2): one draw has the same distribution
            std = client_noise_std(self.mode, self.noise_multiplier, self.clip, self.expected_cohort)
            std *= math.sqrt(summed_clients)
        return gaussian(shape, std, gen, dtype)

    def sigma_round(self, n_uploaded: int) -> float:
        return achieved_noise_multiplier(self.mode, self.noise_multiplier, n_uploaded, self.expected_cohort)
