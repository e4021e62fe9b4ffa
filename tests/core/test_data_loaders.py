"""Dataset layer on small files written here: readers, protocols, synthetic data, lookup."""
from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from labcore.data import (
    DATASET_NAMES,
    DatasetFormatError,
    DatasetNotFoundError,
    InteractionData,
    leave_latest_out,
    load_dataset,
    load_lightgcn,
    load_ncf,
    make_synthetic,
    random_holdout,
    read_lightgcn_lists,
    read_ml100k_ratings,
    read_ml1m_ratings,
    read_ncf_negatives,
    read_ncf_ratings,
    read_ncf_test,
    sample_negatives,
)
from labcore.data import locations


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def check_split(data: InteractionData) -> None:
    """Invariants every loader must keep."""
    n_users, n_items = data.n_users, data.n_items
    for array in (data.train_indptr, data.train_items, data.test_items, data.test_negatives):
        assert array.dtype == np.int64
    assert data.train_indptr.shape == (n_users + 1,)
    assert data.train_indptr[0] == 0 and data.train_indptr[-1] == data.train_items.size
    assert np.all(np.diff(data.train_indptr) >= 0)
    assert data.test_items.shape == (n_users,)
    assert data.test_negatives.shape[0] == n_users
    assert data.train_items.size == 0 or (data.train_items.min() >= 0 and data.train_items.max() < n_items)
    users, items = data.train_pairs()
    keys = users * n_items + items
    assert np.all(np.diff(keys) > 0), "train items must be sorted and unique within each user"
    has_test = data.test_items >= 0
    test_keys = np.flatnonzero(has_test) * n_items + data.test_items[has_test]
    assert not np.isin(test_keys, keys).any(), "a test item is also in train"
    assert np.all(data.test_negatives[~has_test] == -1)
    negatives = data.test_negatives[has_test]
    assert negatives.size == 0 or (negatives.min() >= 0 and negatives.max() < n_items)
    negative_keys = np.flatnonzero(has_test)[:, None] * n_items + negatives
    assert not np.isin(negative_keys, np.concatenate([keys, test_keys])).any(), "a negative is a positive"
    assert all(len(np.unique(row)) == row.size for row in negatives), "negatives repeat within a row"


def same_arrays(a: InteractionData, b: InteractionData) -> bool:
    return all(
        np.array_equal(getattr(a, k), getattr(b, k))
        for k in ("train_indptr", "train_items", "test_items", "test_negatives")
    )


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No shared data, a private cache, and an empty lab data folder."""
    monkeypatch.delenv(locations.DATA_ENV, raising=False)
    monkeypatch.setenv(locations.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(locations, "_REPO_DATA", tmp_path / "lab_data")
    write(tmp_path / "lab_data" / "README.md", "lab data folder\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


# ---------------------------------------------------------------- readers


def test_ml1m_ratings_reader(tmp_path):
    path = write(tmp_path / "ratings.dat", "1::1193::5::978300760\n1::661::3::978302109\n\n2::3068::4::978299000\n")
    ratings = read_ml1m_ratings(path)
    assert ratings.users.tolist() == [1, 1, 2]
    assert ratings.items.tolist() == [1193, 661, 3068]
    assert ratings.ratings.tolist() == [5, 3, 4]
    assert ratings.timestamps.tolist() == [978300760, 978302109, 978299000]
    assert all(a.dtype == np.int64 for a in ratings)


def test_ml1m_ratings_reader_names_file_line_text_and_format(tmp_path):
    lines = [f"{u}::{u + 10}::3::97830{u:04d}" for u in range(1, 17)] + ["abc"]
    path = write(tmp_path / "ml-1m" / "ratings.dat", "\n".join(lines) + "\n")
    with pytest.raises(DatasetFormatError) as caught:
        read_ml1m_ratings(path)
    message = str(caught.value)
    assert message.startswith(
        f"{path} line 17: expected 'UserID::MovieID::Rating::Timestamp' (4 fields separated by '::'), got 'abc'"
    )
    assert caught.value.line_no == 17 and isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    "bad_line, detail",
    [
        ("1::2::3", "found 3 fields"),
        ("1::2::3::4::5", "found 5 fields"),
        ("1::x::3::4", "field 2 ('x') is not a non-negative integer"),
        ("1::2::3.5::4", "field 3 ('3.5') is not a non-negative integer"),
        ("1::2::-3::4", "field 3 ('-3') is not a non-negative integer"),
        ("1\t2\t3\t4", "found 1 field"),
    ],
)
def test_ml1m_ratings_reader_rejects_malformed_lines(tmp_path, bad_line, detail):
    path = write(tmp_path / "ratings.dat", f"1::1::5::10\n{bad_line}\n2::2::5::11\n")
    with pytest.raises(DatasetFormatError, match=r"line 2: ") as caught:
        read_ml1m_ratings(path)
    assert detail in str(caught.value) and repr(bad_line) in str(caught.value)


def test_empty_files_are_rejected(tmp_path):
    for reader, name in [(read_ml1m_ratings, "ratings.dat"), (read_ml100k_ratings, "u.data"),
                         (read_ncf_ratings, "x.train.rating"), (read_ncf_negatives, "x.test.negative"),
                         (read_lightgcn_lists, "train.txt")]:
        path = write(tmp_path / name, "\n  \n")
        with pytest.raises(DatasetFormatError, match="empty file") as caught:
            reader(path)
        assert str(path) in str(caught.value)


def test_ml100k_reader(tmp_path):
    path = write(tmp_path / "u.data", "196\t242\t3\t881250949\n186\t302\t3\t891717742\r\n")
    ratings = read_ml100k_ratings(path)
    assert ratings.users.tolist() == [196, 186] and ratings.timestamps.tolist() == [881250949, 891717742]
    bad = write(tmp_path / "bad.data", "196\t242\t3\t881250949\n186 302 3 891717742\n")
    with pytest.raises(DatasetFormatError, match=r"line 2: expected 'user<TAB>item<TAB>rating<TAB>timestamp' \(4 fields separated by tabs\)"):
        read_ml100k_ratings(bad)


def test_ncf_readers(tmp_path):
    train = write(tmp_path / "toy.train.rating", "0\t1\t5\t100\n0\t2\t3\t101\n1\t0\t4\t102\n")
    test = write(tmp_path / "toy.test.rating", "0\t3\t5\t200\n1\t4\t2\t201\n")
    negatives = write(tmp_path / "toy.test.negative", "(0,3)\t4\t5\n(1,4)\t2\t5\n")
    assert read_ncf_ratings(train).items.tolist() == [1, 2, 0]
    assert read_ncf_test(test).users.tolist() == [0, 1]
    listed = read_ncf_negatives(negatives)
    assert listed.users.tolist() == [0, 1] and listed.items.tolist() == [3, 4]
    assert listed.negatives.tolist() == [[4, 5], [2, 5]]


@pytest.mark.parametrize(
    "bad_line, detail",
    [
        ("(1;4)\t2\t5", "field 1 ('(1;4)') is not of the form '(user,item)'"),
        ("1,4\t2\t5", "is not of the form '(user,item)'"),
        ("(1,4)\t2\tfive", "field 3 ('five') is not a non-negative integer"),
        ("(1,4)\t2", "found 2 fields"),
        ("(1,4)\t2\t5\t6", "found 4 fields"),
    ],
)
def test_ncf_negative_reader_rejects_malformed_lines(tmp_path, bad_line, detail):
    path = write(tmp_path / "toy.test.negative", f"(0,3)\t4\t5\n{bad_line}\n")
    with pytest.raises(DatasetFormatError, match="line 2: expected '\\(user,item\\)<TAB>negative") as caught:
        read_ncf_negatives(path)
    assert detail in str(caught.value)


def test_ncf_test_file_allows_one_row_per_user(tmp_path):
    path = write(tmp_path / "toy.test.rating", "0\t3\t5\t200\n1\t4\t2\t201\n0\t5\t1\t202\n")
    with pytest.raises(DatasetFormatError, match=r"line 3: .*user 0 already has a test row"):
        read_ncf_test(path)


def test_load_ncf_uses_listed_negatives(tmp_path):
    write(tmp_path / "toy.train.rating", "0\t1\t5\t100\n0\t2\t3\t101\n1\t0\t4\t102\n1\t0\t4\t103\n")
    write(tmp_path / "toy.test.rating", "0\t3\t5\t200\n1\t4\t2\t201\n")
    write(tmp_path / "toy.test.negative", "(0,3)\t4\t5\n(1,4)\t2\t5\n")
    data = load_ncf(tmp_path / "toy")
    check_split(data)
    assert (data.n_users, data.n_items) == (2, 6)
    assert data.user_items(0).tolist() == [1, 2] and data.user_items(1).tolist() == [0]  # repeat dropped
    assert data.test_items.tolist() == [3, 4]
    assert data.test_negatives.tolist() == [[4, 5], [2, 5]]


def test_load_ncf_checks_negative_rows_against_test_rows(tmp_path):
    write(tmp_path / "toy.train.rating", "0\t1\t5\t100\n1\t0\t4\t102\n")
    write(tmp_path / "toy.test.rating", "0\t3\t5\t200\n1\t4\t2\t201\n")
    write(tmp_path / "toy.test.negative", "(0,3)\t4\t5\n(1,2)\t3\t5\n")
    with pytest.raises(DatasetFormatError, match=r"toy.test.negative line 2: .*no test row \(1,2\)"):
        load_ncf(tmp_path / "toy")


def test_load_ncf_draws_negatives_when_file_absent(tmp_path):
    rng = np.random.default_rng(5)
    rows = [f"{u}\t{i}\t1\t0" for u in range(6) for i in rng.choice(150, 30, replace=False)]
    write(tmp_path / "toy.train.rating", "\n".join(rows) + "\n")
    write(tmp_path / "toy.test.rating", "".join(f"{u}\t{199 - u}\t1\t0\n" for u in range(6)))
    data = load_ncf(tmp_path / "toy", seed=3)
    check_split(data)
    assert data.test_negatives.shape == (6, 99)
    assert same_arrays(data, load_ncf(tmp_path / "toy", seed=3))


def test_load_ncf_names_missing_files(tmp_path):
    write(tmp_path / "toy.test.rating", "0\t3\t5\t200\n")
    with pytest.raises(DatasetNotFoundError, match=r"toy\.train\.rating"):
        load_ncf(tmp_path / "toy")


def test_lightgcn_reader(tmp_path):
    path = write(tmp_path / "train.txt", "0 5 3 7\n1\n\n2 3 3 \n3\t4 1\n")
    lists = read_lightgcn_lists(path)
    assert lists.users.tolist() == [0, 0, 0, 2, 2, 3, 3]
    assert lists.items.tolist() == [5, 3, 7, 3, 3, 4, 1]
    assert lists.listed_users.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("bad_line, detail", [("1 2 x", "field 3 ('x')"), ("1 -2", "field 2 ('-2')"), ("u1 2", "field 1 ('u1')")])
def test_lightgcn_reader_rejects_non_integers(tmp_path, bad_line, detail):
    path = write(tmp_path / "test.txt", f"0 1 2\n{bad_line}\n")
    with pytest.raises(DatasetFormatError, match=r"test.txt line 2: expected 'user item item ...'") as caught:
        read_lightgcn_lists(path)
    assert detail in str(caught.value)


# ---------------------------------------------------------------- protocols


def ratings_table(rows):
    users, items, stamps = (np.array(col, dtype=np.int64) for col in zip(*rows))
    return users, items, stamps


def test_leave_latest_out_holds_out_the_latest_interaction():
    rows = [(7, 100 + k, 1000 + k) for k in range(25)]  # latest: item 124
    rows += [(3, 200 + k, 5000 - k) for k in range(20)]  # latest: item 200 (reverse order)
    rows += [(9, 300 + k, 10) for k in range(20)]  # all tied: larger item id wins -> 319
    rows += [(4, 400 + k, 1) for k in range(19)]  # 19 interactions: filtered out
    users, items, stamps = ratings_table(rows)
    perm = np.random.default_rng(0).permutation(len(users))  # file order must not matter
    data = leave_latest_out(users[perm], items[perm], stamps[perm], name="toy", seed=1, n_negatives=10)
    check_split(data)
    user_ids, item_ids = data.meta["user_ids"], data.meta["item_ids"]
    assert user_ids.tolist() == [3, 7, 9]  # dense, in original id order; user 4 dropped
    assert data.n_items == 65 and 400 not in item_ids
    held_out = {int(user_ids[u]): int(item_ids[i]) for u, i in enumerate(data.test_items)}
    assert held_out == {7: 124, 3: 200, 9: 319}
    assert data.train_counts().tolist() == [19, 24, 19]


def test_leave_latest_out_counts_a_repeated_pair_once_at_its_latest_time():
    rows = [(1, k, 100 + k) for k in range(20)] + [(1, 0, 999)]  # item 0 re-rated last
    data = leave_latest_out(*ratings_table(rows), name="toy", n_negatives=0)
    assert data.meta["repeated_pairs_dropped"] == 1
    assert data.meta["item_ids"][data.test_items[0]] == 0 and data.n_train == 19


def test_min_interactions_is_a_parameter():
    rows = [(u, k, k) for u in range(3) for k in range(5 + 5 * u)]  # 5, 10, 15 interactions
    assert leave_latest_out(*ratings_table(rows), name="toy", min_interactions=10, n_negatives=0).n_users == 2
    with pytest.raises(ValueError, match="no user has at least 20"):
        leave_latest_out(*ratings_table(rows), name="toy")


def toy_interactions(seed=0, n_users=40, n_items=300):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 60, n_users)
    users = np.repeat(np.arange(n_users), counts)
    items = np.concatenate([rng.choice(n_items, c, replace=False) for c in counts])
    return users, items


def test_negatives_avoid_positives_and_follow_the_seed():
    users, items = toy_interactions()
    a, b, c = (random_holdout(users, items, name="toy", seed=s) for s in (4, 4, 5))
    for data in (a, c):
        check_split(data)
    assert same_arrays(a, b)
    assert not np.array_equal(a.test_negatives, c.test_negatives)
    assert not np.array_equal(a.test_items, c.test_items)


def test_negative_sampler_covers_users_that_touched_almost_everything():
    n_items = 120
    indptr = np.array([0, 20, 20 + n_items - 99], dtype=np.int64)  # user 1 leaves exactly 99 items
    items = np.concatenate([np.arange(20), np.arange(n_items - 99)]).astype(np.int64)
    negatives = sample_negatives(indptr, items, np.array([0, 1]), n_items, 99, np.random.default_rng(0))
    assert negatives[1].tolist() == list(range(n_items - 99, n_items))
    assert not np.isin(negatives[0], np.arange(20)).any() and len(set(negatives[0])) == 99


def test_too_few_items_for_99_negatives_is_an_error_unless_capped():
    users, items = np.repeat(np.arange(3), 30), np.tile(np.arange(30), 3) + np.repeat([0, 5, 10], 30)
    with pytest.raises(ValueError, match="cannot draw 99 negatives"):
        random_holdout(users, items, name="toy")
    capped = random_holdout(users, items, name="toy", n_negatives=None)
    check_split(capped)
    assert capped.test_negatives.shape == (3, 10) and capped.meta["n_negatives"] == 10


def test_random_holdout_drops_duplicates_and_keeps_loners_in_train():
    users = np.array([0, 0, 0, 0, 2, 2, 5, 5, 5, 5, 5, 5])
    items = np.array([1, 1, 2, 3, 4, 4, 1, 2, 3, 4, 5, 6])  # (0,1) and (2,4) repeated
    data = random_holdout(users, items, name="toy", seed=0, n_negatives=None, all_users=np.array([9]))
    check_split(data)
    assert data.meta["duplicate_pairs_dropped"] == 2
    assert data.meta["user_ids"].tolist() == [0, 2, 5, 9]
    assert data.test_items[1] == -1 and data.user_items(1).tolist() == [3]  # user 2: one item, stays in train
    assert data.test_items[3] == -1 and data.user_items(3).size == 0  # user 9: listed without items
    for u, original in enumerate([0, 2, 5]):
        mine = np.unique(items[users == original])
        together = np.union1d(data.meta["item_ids"][data.user_items(u)], data.meta["item_ids"][data.test_items[u]] if data.test_items[u] >= 0 else [])
        assert together.tolist() == mine.tolist()


def test_random_holdout_picks_every_interaction_sometimes():
    users, items = np.zeros(5, dtype=np.int64), np.arange(5)
    held = {int(random_holdout(users, items, name="toy", seed=s, n_negatives=None).test_items[0]) for s in range(40)}
    assert held == {0, 1, 2, 3, 4}


# ---------------------------------------------------------------- synthetic


def test_synthetic_tiny_is_deterministic_and_well_formed():
    a, b, c = make_synthetic("tiny", seed=0), make_synthetic("tiny", seed=0), make_synthetic("tiny", seed=1)
    check_split(a)
    assert (a.n_users, a.n_items) == (50, 40) and a.name == "synthetic-tiny"
    assert same_arrays(a, b) and not same_arrays(a, c)
    n_negatives = a.test_negatives.shape[1]
    assert 1 <= n_negatives < 99 and a.meta["n_negatives"] == n_negatives
    assert (a.test_items >= 0).all()
    per_user = a.train_counts() + (a.test_items >= 0)
    assert per_user.min() >= 20


def test_synthetic_small_is_learnable():
    data = load_dataset("synthetic", size="small", seed=2)
    check_split(data)
    assert (data.n_users, data.n_items, data.test_negatives.shape[1]) == (600, 400, 99)
    assert (data.train_counts() + 1).min() >= 20
    train = np.zeros((data.n_users, data.n_items))
    train[data.train_pairs()] = 1.0
    with single_blas_thread():  # a threaded BLAS can stall for seconds on a busy 2-core machine
        u, s, vt = np.linalg.svd(train, full_matrices=False)
    low_rank = (u[:, :8] * s[:8]) @ vt[:8]  # a rank-8 reconstruction of the training matrix
    popularity = np.broadcast_to(train.sum(axis=0), train.shape)
    hr_svd, hr_pop = hit_rate_at_10(data, low_rank), hit_rate_at_10(data, popularity)
    assert hr_svd > 0.45 and hr_svd > hr_pop + 0.1  # random ranking gives about 0.10


def test_synthetic_data_skew_spreads_the_clients_data_sizes():
    from labcore.metrics import client_data_gini, client_data_summary

    even, default, skewed = (load_dataset("synthetic", size="small", skew=s) for s in (0.0, 1.0, 2.0))
    # Regression fingerprint taken before the skew knob existed: the default dataset (and every stored result
    # trained on it) is unchanged.
    fingerprint = hashlib.sha256(default.train_items.tobytes() + default.train_indptr.tobytes()).hexdigest()[:16]
    assert (default.n_train, fingerprint) == (25981, "3190cf67d64bc12f")
    assert client_data_gini(even) < 0.01 < client_data_gini(default) < client_data_gini(skewed)
    assert client_data_summary(skewed)["top10_share"] > client_data_summary(default)["top10_share"] > 0.1
    check_split(skewed)
    assert (skewed.train_counts() + 1).min() >= 20 and skewed.meta["tail"] == 2.0


def test_data_skew_of_a_real_dataset_is_rejected():
    with pytest.raises(ValueError, match="skew=2.0 is invalid: it applies to synthetic data only"):
        load_dataset("ml-100k", skew=2.0)


def test_gini_of_equal_and_concentrated_values():
    from labcore.metrics import gini

    assert gini([5, 5, 5, 5]) == 0.0 and gini([]) == 0.0
    assert gini([0, 0, 0, 1]) == pytest.approx(0.75)  # (n - 1) / n: one client holds everything


def test_synthetic_rejects_unknown_size():
    with pytest.raises(ValueError, match="valid sizes: tiny, small, medium, ml1m"):
        make_synthetic("huge")


def hit_rate_at_10(data: InteractionData, scores: np.ndarray) -> float:
    rows = np.flatnonzero(data.test_items >= 0)
    target = scores[rows, data.test_items[rows]]
    others = np.take_along_axis(scores[rows], data.test_negatives[rows], axis=1)
    return float(((others >= target[:, None]).sum(axis=1) < 10).mean())


def single_blas_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1)


# ---------------------------------------------------------------- registry


def fake_ml100k(folder: Path, n_users=25, seed=0) -> Path:
    rng = np.random.default_rng(seed)
    lines = []
    for u in range(1, n_users + 1):
        for i in rng.choice(np.arange(1, 400), 30, replace=False):
            lines.append(f"{u}\t{i}\t{rng.integers(1, 6)}\t{rng.integers(8e8, 9e8)}")
    return write(folder / "u.data", "\n".join(lines) + "\n")


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as caught:
        load_dataset("netflix")
    for name in DATASET_NAMES:
        assert name in str(caught.value)


def test_missing_files_say_what_to_put_where(isolated):
    with pytest.raises(DatasetNotFoundError) as caught:
        load_dataset("ml-1m", download=False)
    message = str(caught.value)
    folder = (isolated / "lab_data" / "ml-1m").resolve()
    assert f"put ratings.dat (from ml-1m.zip, https://files.grouplens.org/datasets/movielens/ml-1m.zip) into {folder}/" in message
    assert "or set LABCORE_DATA" in message and str((isolated / "work" / "data" / "ml-1m").resolve()) in message
    with pytest.raises(DatasetNotFoundError, match=r"put train.txt and test.txt .* into .*pinterest/"):
        load_dataset("pinterest")


def test_failed_download_is_reported_with_the_fix(isolated, monkeypatch):
    import pooch

    calls = []

    def offline(url, **kwargs):
        calls.append((url, kwargs["known_hash"]))
        raise ConnectionError("no network")

    monkeypatch.setattr(pooch, "retrieve", offline)
    with pytest.raises(DatasetNotFoundError) as caught:
        load_dataset("ml-100k")
    assert calls == [(
        "https://files.grouplens.org/datasets/movielens/ml-100k.zip",
        "sha256:50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229",
    )]
    message = str(caught.value)
    assert "Download of https://files.grouplens.org/datasets/movielens/ml-100k.zip failed: ConnectionError: no network" in message
    assert f"put u.data (from ml-100k.zip" in message and str((isolated / "lab_data" / "ml-100k").resolve()) in message


def test_lookup_order_root_then_env_then_local(isolated, monkeypatch):
    fake_ml100k(isolated / "work" / "data" / "ml-100k", n_users=21)
    assert load_dataset("ml-100k").n_users == 21
    fake_ml100k(isolated / "shared" / "ml-100k", n_users=22)
    monkeypatch.setenv(locations.DATA_ENV, str(isolated / "shared"))
    assert load_dataset("ml-100k").n_users == 22
    fake_ml100k(isolated / "mine", n_users=23)
    assert load_dataset("ml-100k", root=isolated / "mine").n_users == 23  # the dataset folder itself
    fake_ml100k(isolated / "elsewhere" / "ml-100k", n_users=24)
    assert load_dataset("ml-100k", root=isolated / "elsewhere").n_users == 24  # a folder holding ml-100k/


def test_ml1m_prefers_ratings_over_lists(isolated):
    folder = isolated / "ml-1m"
    rng = np.random.default_rng(1)
    pairs = {u: rng.choice(np.arange(1, 2000), 25, replace=False) for u in range(8)}
    write(folder / "train.txt", "".join(f"{u} {' '.join(map(str, its[:20]))}\n" for u, its in pairs.items()))
    write(folder / "test.txt", "".join(f"{u} {' '.join(map(str, its[20:]))}\n" for u, its in pairs.items()))
    from_lists = load_dataset("ml-1m", root=folder)
    check_split(from_lists)
    assert from_lists.meta["protocol"] == "random-holdout" and "not the latest" in from_lists.notes.lower()
    write(folder / "ratings.dat", "".join(f"{u + 1}::{i + 1}::4::{1000 + k}\n" for u, its in pairs.items() for k, i in enumerate(its)))
    from_ratings = load_dataset("ml-1m", root=folder)
    check_split(from_ratings)
    assert from_ratings.meta["protocol"] == "leave-latest-out"
    latest = [pairs[u][-1] + 1 for u in range(8)]  # MovieID of each user's last line
    assert from_ratings.meta["item_ids"][from_ratings.test_items].tolist() == latest


def test_split_cache_is_reused_and_invalidated(isolated):
    source = fake_ml100k(isolated / "mine")
    first = load_dataset("ml-100k", root=isolated / "mine", seed=3)
    cached = list((isolated / "cache").glob("ml-100k-seed3-*.npz"))
    assert len(cached) == 1
    again = load_dataset("ml-100k", root=isolated / "mine", seed=3)
    assert same_arrays(first, again) and again.notes == first.notes
    assert np.array_equal(again.meta["item_ids"], first.meta["item_ids"]) and again.meta["seed"] == 3
    other_seed = load_dataset("ml-100k", root=isolated / "mine", seed=4)
    assert not same_arrays(first, other_seed)
    fake_ml100k(isolated / "mine", seed=9)  # new content: the cached split must not be served
    os.utime(source, ns=(1, 1))
    changed = load_dataset("ml-100k", root=isolated / "mine", seed=3)
    assert not same_arrays(first, changed)
    assert same_arrays(changed, load_dataset("ml-100k", root=isolated / "mine", seed=3, cache=False))


def test_load_lightgcn_for_own_folder(tmp_path):
    write(tmp_path / "lists" / "train.txt", "0 1 2 3\n1 2 3 5 6\n")
    write(tmp_path / "lists" / "test.txt", "0 4\n1 3\n2\n")
    data = load_lightgcn(tmp_path / "lists", n_negatives=1)
    check_split(data)
    assert data.name == "lists" and data.n_users == 3 and data.test_items[2] == -1
    with pytest.raises(DatasetNotFoundError, match="train.txt"):
        load_lightgcn(tmp_path / "nowhere")
