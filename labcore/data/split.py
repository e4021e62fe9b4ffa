"""Evaluation protocols: from interaction lists to an `InteractionData` split.

Both protocols treat every interaction as an implicit positive, hold out one
item per user and rank it against sampled negatives (NCF-style HR@K/NDCG@K).

* `leave_latest_out`: the held-out item is the user's latest one (timestamps).
* `random_holdout`: the held-out item is a seeded random one (no timestamps).

Randomness comes from independent streams of one integer seed, so the same
seed gives identical arrays and a different seed a different split.
"""
from __future__ import annotations

import numpy as np

from .base import InteractionData

N_NEGATIVES = 99
HOLDOUT_STREAM = 1  # np.random.default_rng([seed, stream]) keeps the streams independent
NEGATIVE_STREAM = 2


def leave_latest_out(
    users: np.ndarray,
    items: np.ndarray,
    timestamps: np.ndarray,
    *,
    name: str,
    seed: int = 0,
    min_interactions: int = 20,
    n_negatives: int = N_NEGATIVES,
    notes: str = "",
    meta: dict | None = None,
) -> InteractionData:
    """Implicit feedback, users with >= `min_interactions` kept, latest item held out.

    Repeated (user, item) pairs count once, at their latest timestamp. Timestamp
    ties are broken by the larger item id, so the split never depends on file order.
    Users and items are re-indexed densely in the order of their original ids
    (`meta["user_ids"]`, `meta["item_ids"]` map back).
    """
    users, items, timestamps = (np.asarray(a, dtype=np.int64) for a in (users, items, timestamps))
    users, items, timestamps, n_repeats = _dedupe_keep_latest(users, items, timestamps)
    users, items, timestamps = _keep_active_users(users, items, timestamps, min_interactions)
    if users.size == 0:
        raise ValueError(f"{name}: no user has at least {min_interactions} interactions")
    user_ids, users = np.unique(users, return_inverse=True)
    item_ids, items = np.unique(items, return_inverse=True)

    # Sorted by (user, timestamp, item): each user's last row is the held-out one.
    order = np.lexsort((items, timestamps, users))
    ordered_users = users[order]
    last_of_user = np.r_[ordered_users[1:] != ordered_users[:-1], True]
    is_test = np.zeros(users.shape[0], dtype=bool)
    is_test[order[last_of_user]] = True
    is_test &= _user_counts(users, len(user_ids))[users] >= 2  # a lone interaction stays in train

    info = {
        "protocol": "leave-latest-out",
        "seed": int(seed),
        "min_interactions": int(min_interactions),
        "repeated_pairs_dropped": int(n_repeats),
        "user_ids": user_ids,
        "item_ids": item_ids,
    }
    return assemble_split(
        name, users, items, is_test, len(user_ids), len(item_ids),
        seed=seed, n_negatives=n_negatives, notes=notes, meta={**info, **(meta or {})},
    )


def random_holdout(
    users: np.ndarray,
    items: np.ndarray,
    *,
    name: str,
    seed: int = 0,
    n_negatives: int | None = N_NEGATIVES,
    all_users: np.ndarray | None = None,
    all_items: np.ndarray | None = None,
    notes: str = "",
    meta: dict | None = None,
) -> InteractionData:
    """Duplicates dropped, one seeded random interaction per user held out.

    Users with fewer than 2 interactions keep everything in train and get test
    item -1. `all_users` / `all_items` list ids to keep even without interactions.
    `n_negatives=None` takes as many as every test user can offer, capped at 99
    (for catalogues too small for 99). Ids are re-indexed densely as in
    `leave_latest_out`.
    """
    users = np.asarray(users, dtype=np.int64)
    items = np.asarray(items, dtype=np.int64)
    n_listed = users.shape[0]
    if n_listed == 0:
        raise ValueError(f"{name}: no interactions to split")
    users, items = unique_pairs(users, items)
    user_ids = _known_ids(users, all_users)
    item_ids = _known_ids(items, all_items)
    users = np.searchsorted(user_ids, users)
    items = np.searchsorted(item_ids, items)
    n_users, n_items = len(user_ids), len(item_ids)

    # Pairs are sorted by (user, item) here; pick one position inside each user's run.
    counts = _user_counts(users, n_users)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    rng = np.random.default_rng([seed, HOLDOUT_STREAM])
    offsets = np.floor(rng.random(n_users) * counts).astype(np.int64)
    is_test = np.zeros(users.shape[0], dtype=bool)
    with_test = counts >= 2
    is_test[starts[with_test] + offsets[with_test]] = True

    info = {
        "protocol": "random-holdout",
        "seed": int(seed),
        "duplicate_pairs_dropped": int(n_listed - users.shape[0]),
        "user_ids": user_ids,
        "item_ids": item_ids,
    }
    return assemble_split(
        name, users, items, is_test, n_users, n_items,
        seed=seed, n_negatives=n_negatives, notes=notes, meta={**info, **(meta or {})},
    )


def assemble_split(
    name: str,
    users: np.ndarray,
    items: np.ndarray,
    is_test: np.ndarray,
    n_users: int,
    n_items: int,
    *,
    seed: int,
    n_negatives: int | None = N_NEGATIVES,
    notes: str = "",
    meta: dict | None = None,
) -> InteractionData:
    """CSR train rows, test items and seeded negatives from dense (user, item, is_test) rows.

    At most one test row per user; pairs must be unique.
    """
    order = np.lexsort((items, users))
    users, items, is_test = users[order], items[order], is_test[order]
    positive_indptr = csr_indptr(users, n_users)

    train = ~is_test
    train_indptr = csr_indptr(users[train], n_users)
    train_items = np.ascontiguousarray(items[train], dtype=np.int64)
    test_items = np.full(n_users, -1, dtype=np.int64)
    test_items[users[is_test]] = items[is_test]

    test_users = np.flatnonzero(test_items >= 0)
    room = most_negatives_possible(positive_indptr, test_users, n_items)
    if n_negatives is None:
        n_negatives = min(N_NEGATIVES, room)
    elif n_negatives > room:
        raise ValueError(
            f"{name}: cannot draw {n_negatives} negatives per user: some test user has only "
            f"{room} items it never interacted with (pass n_negatives=None to cap it)"
        )
    rng = np.random.default_rng([seed, NEGATIVE_STREAM])
    test_negatives = np.full((n_users, n_negatives), -1, dtype=np.int64)
    test_negatives[test_users] = sample_negatives(positive_indptr, items, test_users, n_items, n_negatives, rng)

    meta = dict(meta or {})
    meta.setdefault("n_negatives", int(n_negatives))
    return InteractionData(
        name=name,
        n_users=int(n_users),
        n_items=int(n_items),
        train_indptr=train_indptr,
        train_items=train_items,
        test_items=test_items,
        test_negatives=test_negatives,
        notes=notes,
        meta=meta,
    )


def most_negatives_possible(positive_indptr: np.ndarray, rows: np.ndarray, n_items: int) -> int:
    """The largest negative count every user in `rows` can supply."""
    if len(rows) == 0:
        return N_NEGATIVES
    counts = np.diff(positive_indptr)[rows]
    return int(n_items - counts.max())


def sample_negatives(
    positive_indptr: np.ndarray,
    positive_items: np.ndarray,
    rows: np.ndarray,
    n_items: int,
    n_negatives: int,
    rng: np.random.Generator,
    chunk: int = 4096,
) -> np.ndarray:
    """`n_negatives` distinct items per user in `rows`, uniform over items the user never touched.

    `positive_*` is a CSR over all of a user's items (train and test), sorted
    within rows. Vectorized rejection sampling: draw a batch of candidates per
    user, keep the first distinct non-positive ones; the few users whose batch
    falls short (very active users, tiny catalogues) are drawn exactly.
    Returns an (len(rows), n_negatives) int64 array, each row sorted.
    """
    rows = np.asarray(rows, dtype=np.int64)
    out = np.empty((len(rows), n_negatives), dtype=np.int64)
    if len(rows) == 0 or n_negatives == 0:
        return out
    counts = np.diff(positive_indptr)
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    positive_keys = owner * n_items + positive_items  # sorted: CSR rows are in user order

    # A small batch suffices for almost every user; the rest retry with a large one.
    pending = np.arange(len(rows))
    for n_draws in (n_negatives + n_negatives // 4 + 8, 4 * n_negatives + 16):
        short = []
        for start in range(0, len(pending), chunk):
            at = pending[start : start + chunk]
            filled = _draw_distinct_negatives(rows[at], positive_keys, n_items, n_negatives, n_draws, rng)
            done = filled[:, 0] >= 0
            out[at[done]] = filled[done]
            short.append(at[~done])
        pending = np.concatenate(short)
        if len(pending) == 0:
            break

    all_items = np.arange(n_items, dtype=np.int64)
    for k in pending:
        u = rows[k]
        allowed = np.setdiff1d(all_items, positive_items[positive_indptr[u] : positive_indptr[u + 1]], assume_unique=True)
        out[k] = rng.choice(allowed, size=n_negatives, replace=False)
    out.sort(axis=1)
    return out


def _draw_distinct_negatives(users, positive_keys, n_items, n_negatives, n_draws, rng) -> np.ndarray:
    """First `n_negatives` distinct non-positive draws per user; rows of -1 where the batch fell short."""
    cand = rng.integers(0, n_items, size=(len(users), n_draws), dtype=np.int64)
    keep = ~contains_sorted(positive_keys, users[:, None] * n_items + cand)
    keep &= ~_repeats_in_row(cand)
    # Stable argsort of ~keep lists the kept columns first, in draw order.
    first_kept = np.argsort(~keep, axis=1, kind="stable")[:, :n_negatives]
    picked = np.take_along_axis(cand, first_kept, axis=1)
    picked[keep.sum(axis=1) < n_negatives] = -1
    return picked


def contains_sorted(sorted_keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    if sorted_keys.size == 0:
        return np.zeros(queries.shape, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, queries), sorted_keys.size - 1)
    return sorted_keys[pos] == queries


def _repeats_in_row(values: np.ndarray) -> np.ndarray:
    """True where a value already occurred earlier in the same row."""
    order = np.argsort(values, axis=1, kind="stable")  # equal values keep draw order
    ranked = np.take_along_axis(values, order, axis=1)
    repeat_ranked = np.zeros(values.shape, dtype=bool)
    repeat_ranked[:, 1:] = ranked[:, 1:] == ranked[:, :-1]
    repeat = np.empty_like(repeat_ranked)
    np.put_along_axis(repeat, order, repeat_ranked, axis=1)
    return repeat


def _dedupe_keep_latest(users, items, timestamps):
    order = np.lexsort((timestamps, items, users))
    users, items, timestamps = users[order], items[order], timestamps[order]
    last_of_pair = np.r_[(users[1:] != users[:-1]) | (items[1:] != items[:-1]), True]
    n_repeats = int((~last_of_pair).sum())
    return users[last_of_pair], items[last_of_pair], timestamps[last_of_pair], n_repeats


def _keep_active_users(users, items, timestamps, min_interactions):
    _, inverse, counts = np.unique(users, return_inverse=True, return_counts=True)
    keep = counts[inverse] >= min_interactions
    return users[keep], items[keep], timestamps[keep]


def unique_pairs(users, items):
    """Distinct (user, item) pairs sorted by user, then item."""
    order = np.lexsort((items, users))
    users, items = users[order], items[order]
    first = np.r_[True, (users[1:] != users[:-1]) | (items[1:] != items[:-1])]
    return users[first], items[first]


def _known_ids(seen: np.ndarray, listed: np.ndarray | None) -> np.ndarray:
    if listed is None:
        return np.unique(seen)
    return np.unique(np.concatenate([seen, np.asarray(listed, dtype=np.int64)]))


def _user_counts(users: np.ndarray, n_users: int) -> np.ndarray:
    return np.bincount(users, minlength=n_users).astype(np.int64)


def csr_indptr(sorted_users: np.ndarray, n_users: int) -> np.ndarray:
    return np.r_[0, np.cumsum(_user_counts(sorted_users, n_users))].astype(np.int64)
