"""Split files as distributed with NCF (He et al., 2017).

* `<prefix>.train.rating`: tab-separated `user item rating timestamp`
* `<prefix>.test.rating`: same layout, one row per user (the held-out item)
* `<prefix>.test.negative`: `(user,item)` then tab-separated negative item ids

Ids are 0-based and used as they are, so the published negatives stay valid.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from .base import InteractionData
from .errors import DatasetFormatError, DatasetNotFoundError
from .movielens import Ratings, ratings_from_table
from .split import N_NEGATIVES, NEGATIVE_STREAM, contains_sorted, csr_indptr, sample_negatives, unique_pairs
from .tabular import RowFormat, line_number_of_row, line_text, read_int_rows

NCF_RATING = RowFormat("user<TAB>item<TAB>rating<TAB>timestamp", "\t", 4)
NCF_NEGATIVE = RowFormat("(user,item)<TAB>negative<TAB>negative ...", "\t", None, pair_head=True)


class TestNegatives(NamedTuple):
    users: np.ndarray  # int64 (n_rows,)
    items: np.ndarray  # int64 (n_rows,), the test item each row refers to
    negatives: np.ndarray  # int64 (n_rows, n_negatives)


def read_ncf_ratings(path: str | Path) -> Ratings:
    """`<prefix>.train.rating` or `<prefix>.test.rating`."""
    return ratings_from_table(read_int_rows(path, NCF_RATING))


def read_ncf_test(path: str | Path) -> Ratings:
    """`<prefix>.test.rating`, checked to hold at most one row per user."""
    test = read_ncf_ratings(path)
    _, first_rows = np.unique(test.users, return_index=True)
    if len(first_rows) != len(test.users):
        repeated = np.setdiff1d(np.arange(len(test.users)), first_rows)[0]
        line_no = line_number_of_row(path, int(repeated))
        raise DatasetFormatError(
            path, line_no, NCF_RATING.describe() + ", one row per user", line_text(path, line_no),
            f"user {int(test.users[repeated])} already has a test row",
        )
    return test


def read_ncf_negatives(path: str | Path) -> TestNegatives:
    """`<prefix>.test.negative`: one `(user,item)` row with its sampled negatives."""
    table = read_int_rows(path, NCF_NEGATIVE)
    return TestNegatives(table[:, 0].copy(), table[:, 1].copy(), np.ascontiguousarray(table[:, 2:]))


def load_ncf(prefix: str | Path, *, seed: int = 0, name: str | None = None) -> InteractionData:
    """The NCF split of `prefix` as distributed; negatives are drawn (seeded) only if the file is absent."""
    prefix = str(prefix)
    train_path, test_path, negative_path = (Path(prefix + suffix) for suffix in (".train.rating", ".test.rating", ".test.negative"))
    missing = [p for p in (train_path, test_path) if not p.is_file()]
    if missing:
        raise DatasetNotFoundError(
            f"NCF split '{prefix}': missing {', '.join(str(p) for p in missing)} "
            "(expected <prefix>.train.rating and <prefix>.test.rating, optionally <prefix>.test.negative)"
        )
    train = read_ncf_ratings(train_path)
    test = read_ncf_test(test_path)
    listed = read_ncf_negatives(negative_path) if negative_path.is_file() else None

    item_max = max(train.items.max(), test.items.max(), -1 if listed is None else listed.negatives.max(initial=-1))
    n_users = int(max(train.users.max(), test.users.max())) + 1
    n_items = int(item_max) + 1
    train_users, train_items = unique_pairs(train.users, train.items)
    train_indptr = csr_indptr(train_users, n_users)
    test_items = np.full(n_users, -1, dtype=np.int64)
    test_items[test.users] = test.items

    name = name or Path(prefix).name
    positive_users, positive_items = unique_pairs(
        np.concatenate([train_users, test.users]), np.concatenate([train_items, test.items])
    )
    if listed is None:
        test_users = np.flatnonzero(test_items >= 0)
        negatives = np.full((n_users, N_NEGATIVES), -1, dtype=np.int64)
        rng = np.random.default_rng([seed, NEGATIVE_STREAM])
        negatives[test_users] = sample_negatives(
            csr_indptr(positive_users, n_users), positive_items, test_users, n_items, N_NEGATIVES, rng
        )
        origin = f"{N_NEGATIVES} negatives drawn with seed {seed} ({negative_path.name} absent)"
        overlap = 0
    else:
        _check_negative_rows(negative_path, listed, test_items)
        negatives = np.full((n_users, listed.negatives.shape[1]), -1, dtype=np.int64)
        negatives[listed.users] = listed.negatives
        hits = contains_sorted(positive_users * n_items + positive_items, listed.users[:, None] * n_items + listed.negatives)
        overlap = int(hits.any(axis=1).sum())
        origin = f"negatives as listed in {negative_path.name}"
        if overlap:
            origin += f"; {overlap} rows list one of the user's own items among them (kept as distributed)"

    return InteractionData(
        name=name,
        n_users=n_users,
        n_items=n_items,
        train_indptr=train_indptr,
        train_items=train_items,
        test_items=test_items,
        test_negatives=negatives,
        notes=f"{name}: NCF split files ({Path(prefix).name}.*), test item as distributed; {origin}.",
        meta={
            "protocol": "ncf-files",
            "seed": int(seed),
            "source_format": "ncf",
            "negative_rows_with_positives": overlap,
            "n_negatives": int(negatives.shape[1]),
        },
    )


def _check_negative_rows(path: Path, listed: TestNegatives, test_items: np.ndarray) -> None:
    in_range = listed.users < test_items.shape[0]
    agrees = np.zeros(listed.users.shape[0], dtype=bool)
    agrees[in_range] = test_items[listed.users[in_range]] == listed.items[in_range]
    if not agrees.all():
        row = int(np.flatnonzero(~agrees)[0])
        line_no = line_number_of_row(path, row)
        raise DatasetFormatError(
            path, line_no, NCF_NEGATIVE.describe() + " whose (user,item) is that user's row in the .test.rating file",
            line_text(path, line_no), f"no test row ({int(listed.users[row])},{int(listed.items[row])})",
        )
