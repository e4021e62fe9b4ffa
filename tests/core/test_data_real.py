"""Loaders on the real datasets of $LABCORE_DATA (skipped when it is unset).

The folder holds ml-1m/ (LightGCN lists + NCF test files), ml-100k/u.data and
pinterest/ lists; see data/README.md. Splits are cached in a temporary folder,
so every run exercises parsing as well as the cache.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from labcore.data import DatasetNotFoundError, load_dataset, load_ncf, read_ml100k_ratings, read_ncf_negatives
from labcore.data import locations

DATA = os.environ.get(locations.DATA_ENV)
pytestmark = pytest.mark.skipif(not DATA, reason=f"${locations.DATA_ENV} is not set: no real datasets to check")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    folder = tmp_path_factory.mktemp("split-cache")
    previous = os.environ.get(locations.CACHE_ENV)
    os.environ[locations.CACHE_ENV] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop(locations.CACHE_ENV, None)
    else:
        os.environ[locations.CACHE_ENV] = previous


def require(*relative: str) -> Path:
    paths = [Path(DATA) / r for r in relative]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        pytest.skip(f"missing in ${locations.DATA_ENV}: {', '.join(missing)}")
    return paths[0].parent


def total_interactions(data) -> int:
    return data.n_train + int((data.test_items >= 0).sum())


def negatives_are_clean(data) -> bool:
    users, items = data.train_pairs()
    has_test = np.flatnonzero(data.test_items >= 0)
    positives = np.sort(np.concatenate([users * data.n_items + items,
                                        has_test * data.n_items + data.test_items[has_test]]))
    queries = has_test[:, None] * data.n_items + data.test_negatives[has_test]
    return not np.isin(queries, positives).any() and data.test_negatives[has_test].min() >= 0


@pytest.fixture(scope="module")
def ml1m(cache):
    require("ml-1m/train.txt", "ml-1m/test.txt")
    return load_dataset("ml-1m", seed=0), None


def test_ml1m_counts(ml1m):
    data, first_load = ml1m
    assert (data.n_users, data.n_items) == (6040, 3706)
    assert total_interactions(data) == 1_000_209
    assert (data.test_items >= 0).all() and data.test_negatives.shape == (6040, 99)
    assert data.meta["item_ids"].max() == 3951  # MovieID-1, re-indexed densely
    assert "not the latest" in data.notes.lower()
    assert negatives_are_clean(data)


def test_ml1m_second_load_comes_from_the_cache(ml1m):
    data, _ = ml1m
    again = load_dataset("ml-1m", seed=0)  # from the parsed-split cache (speed: benchmarks/data_load.py)
    assert np.array_equal(again.test_negatives, data.test_negatives)
    assert np.array_equal(again.train_items, data.train_items)


def test_ml1m_seed_changes_the_split(ml1m, cache):
    data, _ = ml1m
    other = load_dataset("ml-1m", seed=1)
    assert total_interactions(other) == 1_000_209
    assert not np.array_equal(other.test_items, data.test_items)


def test_pinterest_counts(cache):
    require("pinterest/train.txt", "pinterest/test.txt")
    data = load_dataset("pinterest", seed=0)
    assert (data.n_users, data.n_items) == (37_501, 9_836)
    assert total_interactions(data) == 1_000_154
    assert data.meta["duplicate_pairs_dropped"] == 1_025_709 - 1_000_154
    assert "not ncf's pinterest-20" in data.notes.lower()
    assert negatives_are_clean(data)


def test_ml100k_holds_out_each_users_latest_rating(cache):
    folder = require("ml-100k/u.data")
    data = load_dataset("ml-100k", seed=0)
    assert (data.n_users, data.n_items) == (943, 1682)
    assert total_interactions(data) == 100_000
    assert negatives_are_clean(data)

    raw = read_ml100k_ratings(folder / "u.data")
    user_ids, item_ids = data.meta["user_ids"], data.meta["item_ids"]
    latest = np.zeros(user_ids.max() + 1, dtype=np.int64)
    np.maximum.at(latest, raw.users, raw.timestamps)
    stamp = {(u, i): t for u, i, t in zip(raw.users.tolist(), raw.items.tolist(), raw.timestamps.tolist())}
    held = [stamp[(int(user_ids[u]), int(item_ids[i]))] for u, i in enumerate(data.test_items)]
    assert held == latest[user_ids].tolist()


def test_ncf_files_of_the_shared_copy(cache):
    folder = require("ml-1m/ml-1m.test.negative", "ml-1m/ml-1m.test.rating")
    listed = read_ncf_negatives(folder / "ml-1m.test.negative")
    assert listed.negatives.shape == (6040, 99) and listed.users.tolist() == list(range(6040))
    # The train file is not in the shared copy: the error must name it.
    with pytest.raises(DatasetNotFoundError, match=r"ml-1m\.train\.rating"):
        load_ncf(folder / "ml-1m")
