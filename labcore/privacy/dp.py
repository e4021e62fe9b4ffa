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

The accountant is Opacus's RDP accountant (Mironov 2017; Opacus converts RDP to (epsilon, delta) with Balle et
al. 2020, Thm. 21), its PRV accountant (Gopi et al. 2021) as a cross-check, and `get_noise_multiplier` for
the inverse (sigma for a target epsilon).
"""
from __future__ import annotations

import functools
import math
import warnings
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


def clip_updates(updates: torch.Tensor, clip: float) -> torch.Tensor:
    """Each row (client) of a (M, ...) tensor clipped to L2 norm `clip`."""
    flat = updates.reshape(updates.shape[0], -1)
    f = clip_factors((flat.to(torch.float64) ** 2).sum(1), clip)
    if math.isinf(clip):
        return updates
    return (flat * f[:, None].to(flat.dtype)).reshape(updates.shape)


def clip_rows(rows, clip: float, out: torch.Tensor | None = None):
    """`clip_updates` of a RowUpdate (labcore.fed.updates): each client's rows scaled by its factor, written into
    `out` (a tensor of the values' shape and dtype) when given."""
    from ..fed.updates import RowUpdate
    if math.isinf(clip):
        return rows
    # each row's norm in one fused pass (float32, relative error ~1e-7), squared and added up per client in float64
    sq = torch.zeros(rows.n_clients, dtype=torch.float64).index_add_(
        0, rows.client, torch.linalg.vector_norm(rows.values, dim=1).to(torch.float64) ** 2)
    values = torch.mul(rows.values, clip_factors(sq, clip)[rows.client].to(rows.values.dtype)[:, None], out=out)
    return RowUpdate(rows.n_clients, rows.n_items, rows.client, rows.item, values, rows.item_bits, rows.received)


def gaussian(shape, std: float, gen: torch.Generator, dtype=torch.float32) -> torch.Tensor:
    """N(0, std^2) of the given shape and dtype, drawn from `gen` (zeros, no draw, when std is 0)."""
    if std == 0:
        return torch.zeros(shape, dtype=dtype)
    noise = torch.empty(shape, dtype=dtype)
    if noise.numel() >= 16:  # drawn scaled: the numbers of randn * std (torch's vectorized path), in half the time
        return noise.normal_(0.0, std, generator=gen)
    return torch.randn(shape, generator=gen, dtype=dtype).mul_(std)  # below 16 values normal_ rounds otherwise


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

    def privatize_clients(self, decoded, gen: torch.Generator, out: torch.Tensor | None = None):
        """Each client's clipped update, plus its own noise share (distributed, local). RowUpdate or (M, N, k).
        out: where central DP's clipped rows go (the engine passes a buffer it reuses round to round: a fresh
        array of the cohort's rows costs more in page faults than the clipping itself)."""
        std = client_noise_std(self.mode, self.noise_multiplier, self.clip, self.expected_cohort)
        if hasattr(decoded, "values"):  # a RowUpdate
            if not std:  # central: clipped by its rows
                return clip_rows(decoded, self.clip, out)
            decoded = decoded.dense()  # a client noises every value, touched or not (else its rows leak)
        out = clip_updates(decoded, self.clip)
        if std:
            out = out + gaussian(out.shape, std, gen, out.dtype)
        return out

    def server_noise(self, shape, gen: torch.Generator, dtype) -> torch.Tensor:
        """Central DP's noise on the sum (zeros otherwise), in units of the sum."""
        std = self.noise_multiplier * self.clip if self.mode == "central" and self.noise_multiplier else 0.0
        return gaussian(shape, std, gen, dtype)

    def sigma_round(self, n_uploaded: int) -> float:
        return achieved_noise_multiplier(self.mode, self.noise_multiplier, n_uploaded, self.expected_cohort)
