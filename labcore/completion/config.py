"""`CompletionConfig`: one run of one algorithm on one matrix-completion problem, frozen and validated.

A synthetic problem is M* = U diag(s) V^T (m x n, rank r, singular values spread evenly in log scale from
1 to 1/kappa), a uniform `share` of its entries seen, plus Gaussian noise of relative size `noise`.
A real problem (dataset "ml-100k" or "ml-1m") is the ratings matrix (at most m users x n items): `share`
of the known ratings are seen, the others are held out to measure the error.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, fields

from ..typed_config import ConfigError, TypedConfig, build, check_choices, check_ranges, check_types, fail, hash_key

ALGORITHMS = ("asd", "scaled_asd", "lmafit", "niht", "cgiht", "fgd", "scaled_gd", "lrgeomcg", "irls",
              "soft_impute")
LABELS = {"asd": "ASD", "scaled_asd": "ScaledASD", "lmafit": "LMaFit", "niht": "NIHT", "cgiht": "CGIHT",
          "fgd": "FGD (UU^T)", "scaled_gd": "ScaledGD", "lrgeomcg": "LRGeomCG (Riemannian)",
          "irls": "MatrixIRLS", "soft_impute": "soft-impute (nuclear norm)"}
FAMILIES = {"asd": "alternating", "scaled_asd": "alternating", "lmafit": "alternating", "niht": "hard thresholding",
            "cgiht": "hard thresholding", "fgd": "factored gradient", "scaled_gd": "factored gradient",
            "lrgeomcg": "Riemannian", "irls": "IRLS", "soft_impute": "nuclear norm"}
DATASETS = ("synthetic", "ml-100k", "ml-1m")
CODE_VERSION = 4  # part of every run's cache key: bump it when an algorithm's numbers change
INITS = ("spectral", "random")


@dataclass(frozen=True)
class CompletionConfig(TypedConfig):
    # the problem
    dataset: str = "synthetic"
    m: int = 500  # rows (real data: at most this many users, by id)
    n: int = 500  # columns (real data: at most this many items, by id)
    rank: int = 2  # rank of M* (synthetic) and the rank every algorithm fits
    share: float = 0.4  # synthetic: share of all entries seen; real data: share of the known ratings seen
    kappa: float = 2.0  # condition number sigma_1 / sigma_r of M*
    noise: float = 0.0  # Gaussian noise on the seen entries, relative: ||noise|| = noise * ||P(M*)||
    psd: bool = False  # symmetric positive semidefinite M* = U diag(s) U^T with symmetric sampling (FGD needs it)
    problem_seed: int = 0
    # the run
    algorithm: str = "asd"
    budget_s: float = 5.0  # CPU seconds (one thread) the harness gives the algorithm, initialisation included
    max_iters: int = 0  # > 0: stop after this many steps (deterministic runs); 0: only the budget stops it
    stop_below: float = 0.0  # > 0: stop once a logged error is below this (tests, exercises); 0: never
    log_points: int = 40  # iterates logged at this many fixed times, evenly spread in log time over the budget
    init: str = "spectral"  # spectral: exact top-r SVD of the seen entries / share; random: Gaussian factors
    seed: int = 0  # the algorithm's own randomness (random init, sketches)

    def __post_init__(self):
        _validate(self)

    def key(self) -> str:
        """The cache key: every field, plus CODE_VERSION (bumped when an algorithm's update changes)."""
        return hash_key({**self.to_dict(), "code": CODE_VERSION}, "mc-")

    def problem_dict(self) -> dict:
        return {k: getattr(self, k) for k in PROBLEM_FIELDS}

    def problem_key(self) -> str:
        return hash_key(self.problem_dict(), "mcp-")

    # --- the information-theoretic limit ------------------------------------------------------------------
    def degrees_of_freedom(self) -> int:
        """r(m + n - r): the dimension of the manifold of rank-r m x n matrices (r(r+1)/2 + r(n-r) if PSD)."""
        r = self.rank
        return r * (2 * self.n - r + 1) // 2 if self.psd else r * (self.m + self.n - r)

    def expected_seen(self) -> float:
        """Entries seen (in expectation) for a synthetic problem; a PSD problem sees each pair once."""
        if self.psd:
            return self.share * self.n * (self.n + 1) / 2
        return self.share * self.m * self.n

    def below_information_limit(self) -> bool:
        """Fewer seen entries than degrees of freedom: no algorithm can identify M* (Riegler et al. 2016)."""
        return self.dataset == "synthetic" and self.expected_seen() < self.degrees_of_freedom()

    def describe(self) -> str:
        if self.dataset != "synthetic":
            return f"{LABELS[self.algorithm]} on {self.dataset}, rank {self.rank}, {self.share:.0%} of ratings seen"
        shape = f"n {self.n}" if self.m == self.n else f"{self.m} x {self.n}"
        tail = f", noise {self.noise:g}" if self.noise else ""
        return (f"{LABELS[self.algorithm]} on {shape}, rank {self.rank}, {self.share:.0%} seen, "
                f"kappa {self.kappa:g}{tail}")


PROBLEM_FIELDS = ("dataset", "m", "n", "rank", "share", "kappa", "noise", "psd", "problem_seed")
FIELD_NAMES = tuple(f.name for f in fields(CompletionConfig))
_TYPES = typing.get_type_hints(CompletionConfig)
_RANGES = {"m": (2, 200_000), "n": (2, 200_000), "rank": (1, 10_000), "kappa": (1.0, 1e12), "noise": (0.0, 10.0),
           "problem_seed": (0, 2**63 - 1), "seed": (0, 2**63 - 1), "max_iters": (0, 10**9),
           "log_points": (2, 10_000), "budget_s": (0.01, 86_400.0), "stop_below": (0.0, 1.0)}


def _validate(cfg: CompletionConfig) -> None:
    check_types(cfg, _TYPES)
    check_choices(cfg, {"algorithm": ALGORITHMS, "dataset": DATASETS, "init": INITS})
    check_ranges(cfg, _RANGES)
    if not 0.0 < cfg.share <= 1.0:
        fail("share", cfg.share, "the share of entries seen must be in (0, 1]")
    if cfg.rank >= min(cfg.m, cfg.n):
        fail("rank", cfg.rank, f"must be < min(m, n) = {min(cfg.m, cfg.n)}")
    if cfg.psd and cfg.m != cfg.n:
        fail("psd", cfg.psd, f"a PSD problem is square: m={cfg.m} and n={cfg.n} differ")
    if cfg.psd and cfg.dataset != "synthetic":
        fail("psd", cfg.psd, "only synthetic problems can be PSD")
    if cfg.algorithm == "fgd" and not cfg.psd:
        fail("algorithm", cfg.algorithm, "FGD fits M = U U^T and needs a square PSD problem (psd=true); "
                                         "ScaledGD ('scaled_gd') is its two-factor form for any matrix")


def from_dict(d: dict) -> CompletionConfig:
    """A config from a dict of (possibly string) values; unknown names list the valid ones."""
    return build(CompletionConfig, d)


__all__ = ["CompletionConfig", "ConfigError", "ALGORITHMS", "LABELS", "FAMILIES", "DATASETS", "from_dict"]
