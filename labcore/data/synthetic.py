"""Synthetic low-rank implicit feedback: the default dataset, no download needed.

Each user u and item i get latent factors of a given true rank; an item also
gets a popularity bias that falls off with a random popularity rank
(Zipf-like). The number of items per user is 20 plus a log-normal tail,
capped per size; the tail's sigma (`tail`, the app's "data skew") sets how
unequal the users' (clients') data sizes are, 0 giving everyone the same
count. A user's items are drawn without replacement with
probability proportional to exp(score) (Gumbel top-k), where
score = signal * <p_u, q_i> / sqrt(rank) + popularity_i.
The split is the seeded random hold-out with sampled negatives, so a model that
recovers the low-rank structure beats both popularity and random ranking.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import InteractionData
from .split import random_holdout

MIN_INTERACTIONS = 20
_GENERATOR_STREAM = 3  # independent from the hold-out and negative streams of the same seed


@dataclass(frozen=True)
class SyntheticSize:
    n_users: int
    n_items: int
    mean_interactions: float
    max_interactions: int


SIZES: dict[str, SyntheticSize] = {
    "tiny": SyntheticSize(50, 40, 22, 24),  # unit tests; 40 items leave room for only 16 negatives
    "small": SyntheticSize(600, 400, 45, 200),  # app and notebooks
    "medium": SyntheticSize(2000, 1500, 70, 600),
    "ml1m": SyntheticSize(6040, 3706, 166, 2314),  # ML-1M shape and density, about 1M interactions
}


def make_synthetic(
    size: str = "small",
    *,
    seed: int = 0,
    rank: int = 8,
    signal: float = 2.5,
    popularity_skew: float = 0.8,
    tail: float = 1.0,
) -> InteractionData:
    """Generate and split a synthetic dataset named `synthetic-<size>`.

    Every item is kept in the catalogue, even one nobody picked. Negatives per
    test user are 99, or for catalogues too small for that (`tiny`) the largest
    count every test user can supply, so `test_negatives` stays rectangular;
    `meta["n_negatives"]` tells which.
    """
    if size not in SIZES:
        raise ValueError(f"unknown synthetic size {size!r}; valid sizes: {', '.join(SIZES)}")
    spec = SIZES[size]
    rng = np.random.default_rng([seed, _GENERATOR_STREAM])
    user_factors = rng.standard_normal((spec.n_users, rank))
    item_factors = rng.standard_normal((spec.n_items, rank))
    popularity = -popularity_skew * np.log1p(rng.permutation(spec.n_items).astype(np.float64))
    counts = _interaction_counts(rng, spec, tail)
    users, items = _draw_interactions(rng, user_factors, item_factors * (signal / np.sqrt(rank)), popularity, counts)

    too_small = spec.n_items - spec.max_interactions < 99
    notes = (
        f"synthetic-{size}: {spec.n_users} users x {spec.n_items} items, true rank {rank}, "
        f"Zipf-like popularity (skew {popularity_skew}), at least {MIN_INTERACTIONS} interactions per user; "
        f"test item = one seeded random interaction per user (seed {seed})"
        + (f"; per-user data skew (log-normal sigma) {tail:g}" if tail != 1.0 else "")
        + ("; fewer than 99 negatives per test user because the catalogue is small." if too_small else "; 99 seeded negatives.")
    )
    return random_holdout(
        users,
        items,
        name=f"synthetic-{size}",
        seed=seed,
        n_negatives=None if too_small else 99,
        all_users=np.arange(spec.n_users),
        all_items=np.arange(spec.n_items),
        notes=notes,
        meta={
            "source_format": "synthetic",
            "size": size,
            "true_rank": rank,
            "signal": signal,
            "popularity_skew": popularity_skew,
            "tail": tail,
        },
    )


def _interaction_counts(rng: np.random.Generator, spec: SyntheticSize, tail: float) -> np.ndarray:
    """20 + a log-normal tail with the requested mean, capped at `max_interactions`."""
    excess = max(spec.mean_interactions - MIN_INTERACTIONS, 1e-3)
    mu = np.log(excess) - tail**2 / 2  # log-normal mean = exp(mu + tail^2 / 2)
    extra = np.floor(rng.lognormal(mu, tail, spec.n_users)).astype(np.int64)
    return np.minimum(MIN_INTERACTIONS + extra, spec.max_interactions)


def _draw_interactions(rng, user_factors, item_factors, popularity, counts, chunk: int = 512):
    """Per user, `counts[u]` distinct items by Gumbel top-k over the scores."""
    # Users of similar activity share a block, so each block only sorts about k columns.
    by_count = np.argsort(counts, kind="stable")
    user_blocks, item_blocks = [], []
    for start in range(0, len(by_count), chunk):
        block = by_count[start : start + chunk]
        k = int(counts[block].max())
        keys = user_factors[block] @ item_factors.T + popularity + rng.gumbel(size=(len(block), len(popularity)))
        top = np.argpartition(-keys, k - 1, axis=1)[:, :k] if k < keys.shape[1] else np.argsort(-keys, axis=1)
        best_first = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1)
        top = np.take_along_axis(top, best_first, axis=1)
        chosen = np.arange(k) < counts[block][:, None]
        user_blocks.append(np.repeat(block, counts[block]))
        item_blocks.append(top[chosen])
    return np.concatenate(user_blocks), np.concatenate(item_blocks).astype(np.int64)
