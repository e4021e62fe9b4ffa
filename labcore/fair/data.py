"""The FAIR lesson's datasets, in the paper's protocol.

* Implicit feedback (`RankingData`): each user has a list of training items and
  a list of test items; NDCG@20 ranks all items not in the user's training set.
  - ``goodreads-100``: the paper's own data (LightGCN lists train.txt / test.txt
    from the authors' repository); its train/test split is used as is.
  - ``ml-1m-100``: ML-1M's 100 most active users (train + test interactions),
    from the LightGCN lists of ml-1m, with those files' own split. It stands in
    for AmazonProduct-100, whose training file is not available.
  - ``synthetic``: a small generated set for tests and smoke runs.
* Explicit feedback (`RatingData`): ``ml-100k-100``, ML-100K's 100 most active
  users, a seeded 80/20 hold-out of each user's ratings (Goodreads ratings are
  not available).
* A general model (`DigitsData`): scikit-learn's bundled 8x8 digits, 80/20
  stratified split, training samples spread over devices by a Dirichlet
  distribution per class (non-IID, as LEAF / Caldas et al.).

Users are numbered 0..U-1 in the order of their ids in the source files, so the
capacity schemes' "first half of users by id" is well defined.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..data.base import InteractionData
from ..data.errors import DatasetNotFoundError
from ..data.lightgcn import read_lightgcn_lists
from ..data.locations import candidate_dirs
from ..data.movielens import read_ml100k_ratings

RANKING_DATASETS = ("goodreads-100", "ml-1m-100", "synthetic")
RATING_DATASETS = ("ml-100k-100", "synthetic-ratings")
MLP_DATASETS = ("digits",)
DATASETS = RANKING_DATASETS + RATING_DATASETS + MLP_DATASETS


def _csr(users: np.ndarray, items: np.ndarray, n_users: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((items, users))
    users, items = users[order], items[order]
    keep = np.ones(users.size, bool)
    keep[1:] = (users[1:] != users[:-1]) | (items[1:] != items[:-1])  # drop duplicate pairs
    users, items = users[keep], items[keep]
    indptr = np.zeros(n_users + 1, np.int64)
    np.add.at(indptr, users + 1, 1)
    return np.cumsum(indptr), items.astype(np.int64)


@dataclass(frozen=True, eq=False)
class RankingData:
    name: str
    n_users: int
    n_items: int
    train_indptr: np.ndarray
    train_items: np.ndarray
    test_indptr: np.ndarray
    test_items: np.ndarray
    notes: str = ""
    meta: dict = field(default_factory=dict)

    def train_counts(self) -> np.ndarray:
        return np.diff(self.train_indptr)

    def user_train(self, u: int) -> np.ndarray:
        return self.train_items[self.train_indptr[u]: self.train_indptr[u + 1]]

    def user_test(self, u: int) -> np.ndarray:
        return self.test_items[self.test_indptr[u]: self.test_indptr[u + 1]]

    def interactions(self) -> InteractionData:
        """The training part as the core's InteractionData (for its negative sampler)."""
        none = np.full(self.n_users, -1, np.int64)
        return InteractionData(self.name, self.n_users, self.n_items, self.train_indptr, self.train_items, none,
                               np.full((self.n_users, 1), -1, np.int64), self.notes)

    def summary(self) -> dict:
        return {"dataset": self.name, "users": self.n_users, "items": self.n_items,
                "train interactions": int(self.train_items.size), "test interactions": int(self.test_items.size)}


@dataclass(frozen=True, eq=False)
class RatingData:
    name: str
    n_users: int
    n_items: int
    train: tuple[np.ndarray, np.ndarray, np.ndarray]  # users, items, ratings (float32), sorted by user
    test: tuple[np.ndarray, np.ndarray, np.ndarray]
    notes: str = ""

    def train_counts(self) -> np.ndarray:
        return np.bincount(self.train[0], minlength=self.n_users)

    def summary(self) -> dict:
        return {"dataset": self.name, "users": self.n_users, "items": self.n_items,
                "train ratings": int(self.train[0].size), "test ratings": int(self.test[0].size)}


@dataclass(frozen=True, eq=False)
class DigitsData:
    name: str
    n_users: int  # devices
    x_train: np.ndarray  # float32 (N, 64), scaled to [0, 1]
    y_train: np.ndarray  # int64
    owner: np.ndarray  # int64 (N,): the device holding each training sample, sorted
    x_test: np.ndarray
    y_test: np.ndarray
    notes: str = ""

    def train_counts(self) -> np.ndarray:
        return np.bincount(self.owner, minlength=self.n_users)

    def summary(self) -> dict:
        c = self.train_counts()
        return {"dataset": self.name, "devices": self.n_users, "train samples": int(self.y_train.size),
                "test samples": int(self.y_test.size), "samples per device": f"{c.min()}..{c.max()}"}


# --- finding files ---------------------------------------------------------------
def _find(name: str, files: tuple[str, ...], root: str | Path | None) -> Path:
    for folder, _ in candidate_dirs(name, root):
        if all((folder / f).is_file() for f in files):
            return folder
    looked = "\n".join(f"  - {folder}  ({why})" for folder, why in candidate_dirs(name, root))
    raise DatasetNotFoundError(f"{name}: no {' + '.join(files)} found. Looked in:\n{looked}\n"
                               f"Fix: put {' and '.join(files)} into one of these folders or set LABCORE_DATA "
                               f"to a folder that holds {name}/")


def load_goodreads100(root: str | Path | None = None) -> RankingData:
    folder = _find("goodreads-100", ("train.txt", "test.txt"), root)
    tr, te = read_lightgcn_lists(folder / "train.txt"), read_lightgcn_lists(folder / "test.txt")
    n_users = int(max(tr.listed_users.max(), te.listed_users.max())) + 1
    n_items = int(max(tr.items.max(), te.items.max())) + 1
    ti, tt = _csr(tr.users, tr.items, n_users), _csr(te.users, te.items, n_users)
    notes = (f"goodreads-100: the FAIR authors' lists (train.txt / test.txt) with their own split; {n_users} users, "
             f"items ranked = all {n_items:,} ids (0..max id), NDCG@20 over items not in the user's train list.")
    return RankingData("goodreads-100", n_users, n_items, *ti, *tt, notes)


def load_ml1m100(root: str | Path | None = None, top: int = 100) -> RankingData:
    folder = _find("ml-1m", ("train.txt", "test.txt"), root)
    tr, te = read_lightgcn_lists(folder / "train.txt"), read_lightgcn_lists(folder / "test.txt")
    n_all = int(max(tr.users.max(), te.users.max())) + 1
    activity = np.bincount(tr.users, minlength=n_all) + np.bincount(te.users, minlength=n_all)
    chosen = np.sort(np.argsort(-activity, kind="stable")[:top])  # the `top` most active, in id order
    new_id = np.full(n_all, -1, np.int64)
    new_id[chosen] = np.arange(chosen.size)
    items_all = np.unique(np.concatenate([tr.items, te.items]))  # dense ids over every rated movie of ml-1m
    item_id = np.full(int(items_all.max()) + 1, -1, np.int64)
    item_id[items_all] = np.arange(items_all.size)

    def pick(lists):
        keep = new_id[lists.users] >= 0
        return new_id[lists.users[keep]], item_id[lists.items[keep]]

    ti, tt = _csr(*pick(tr), chosen.size), _csr(*pick(te), chosen.size)
    notes = (f"ml-1m-100: the {top} most active users of ml-1m (LightGCN lists train.txt + test.txt, their own "
             f"split), {items_all.size:,} items (every movie rated in ml-1m); stands in for AmazonProduct-100.")
    return RankingData("ml-1m-100", int(chosen.size), int(items_all.size), *ti, *tt, notes)


def make_synthetic_ranking(n_users: int = 12, n_items: int = 300, seed: int = 0) -> RankingData:
    """Zipf-like popularity plus a low-rank taste; 70/30 split per user. For tests and smoke runs."""
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, n_items + 1) ** 0.8
    u_f, i_f = rng.normal(size=(n_users, 4)), rng.normal(size=(n_items, 4))
    users, items_tr, users_te, items_te = [], [], [], []
    for u in range(n_users):
        p = pop * np.exp(0.7 * i_f @ u_f[u])
        p /= p.sum()
        k = int(rng.integers(n_items // 10, n_items // 4))
        its = rng.choice(n_items, size=k, replace=False, p=p)
        cut = int(0.7 * k)
        users += [u] * cut
        items_tr += list(its[:cut])
        users_te += [u] * (k - cut)
        items_te += list(its[cut:])
    ti = _csr(np.array(users), np.array(items_tr), n_users)
    tt = _csr(np.array(users_te), np.array(items_te), n_users)
    return RankingData("synthetic", n_users, n_items, *ti, *tt, f"synthetic ranking data (seed {seed})")


def load_ml100k100(root: str | Path | None = None, seed: int = 0, top: int = 100,
                   test_share: float = 0.2) -> RatingData:
    folder = _find("ml-100k", ("u.data",), root)
    r = read_ml100k_ratings(folder / "u.data")
    users = r.users - 1
    counts = np.bincount(users)
    chosen = np.sort(np.argsort(-counts, kind="stable")[:top])
    new_id = np.full(counts.size, -1, np.int64)
    new_id[chosen] = np.arange(chosen.size)
    keep = new_id[users] >= 0
    u, i, y = new_id[users[keep]], r.items[keep] - 1, r.ratings[keep].astype(np.float32)
    n_items = int(r.items.max())
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xB1]))
    test = np.zeros(u.size, bool)
    for v in range(chosen.size):  # per-user hold-out
        rows = np.nonzero(u == v)[0]
        test[rng.choice(rows, size=int(round(test_share * rows.size)), replace=False)] = True
    order = lambda m: np.argsort(u[m], kind="stable")  # noqa: E731
    tr, te = ~test, test
    train = tuple(a[tr][order(tr)] for a in (u, i, y))
    tst = tuple(a[te][order(te)] for a in (u, i, y))
    notes = (f"ml-100k-100: the {top} users of ML-100K with the most ratings; a seeded (seed {seed}) "
             f"{int(test_share * 100)}% hold-out of each user's ratings is the test set; {n_items} items; "
             "test MSE on the 1-5 stars.")
    return RatingData("ml-100k-100", int(chosen.size), n_items, train, tst, notes)


def make_synthetic_ratings(n_users: int = 12, n_items: int = 80, seed: int = 0) -> RatingData:
    rng = np.random.default_rng(seed)
    uf, itf = rng.normal(size=(n_users, 3)), rng.normal(size=(n_items, 3))
    rows = []
    for u in range(n_users):
        its = rng.choice(n_items, size=int(rng.integers(15, 40)), replace=False)
        y = np.clip(np.round(3 + itf[its] @ uf[u] * 0.6 + rng.normal(0, 0.5, its.size)), 1, 5)
        rows += [(u, i, v) for i, v in zip(its, y)]
    a = np.array(rows)
    test = rng.random(a.shape[0]) < 0.2
    pack = lambda m: (a[m, 0].astype(np.int64), a[m, 1].astype(np.int64), a[m, 2].astype(np.float32))  # noqa: E731
    return RatingData("synthetic-ratings", n_users, n_items, pack(~test), pack(test), f"synthetic ratings ({seed})")


def load_digits_devices(n_devices: int = 30, alpha: float = 0.5, seed: int = 0,
                        test_share: float = 0.2) -> DigitsData:
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_share, random_state=seed, stratify=y)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xD161]))
    owner = np.empty(ytr.size, np.int64)
    for c in range(10):  # each class spread over the devices with Dirichlet(alpha) shares
        rows = rng.permutation(np.nonzero(ytr == c)[0])
        share = rng.dirichlet(np.full(n_devices, alpha))
        cuts = (np.cumsum(share)[:-1] * rows.size).astype(int)
        for dev, part in enumerate(np.split(rows, cuts)):
            owner[part] = dev
    empty = np.setdiff1d(np.arange(n_devices), owner)
    for dev in empty:  # every device holds at least one sample
        donor = np.argmax(np.bincount(owner, minlength=n_devices))
        owner[np.nonzero(owner == donor)[0][0]] = dev
    order = np.argsort(owner, kind="stable")
    notes = (f"scikit-learn digits (8x8, 1,797 images): stratified {int(100 * (1 - test_share))}/"
             f"{int(100 * test_share)} split (seed {seed}); training images spread over {n_devices} devices with "
             f"Dirichlet(alpha={alpha}) class shares (non-IID).")
    return DigitsData("digits", n_devices, xtr[order], ytr[order].astype(np.int64), owner[order], xte,
                      yte.astype(np.int64), notes)


def load(name: str, *, seed: int = 0, root: str | Path | None = None, n_devices: int = 30,
         alpha: float = 0.5) -> RankingData | RatingData | DigitsData:
    if name == "goodreads-100":
        return load_goodreads100(root)
    if name == "ml-1m-100":
        return load_ml1m100(root)
    if name == "synthetic":
        return make_synthetic_ranking(seed=seed)
    if name == "ml-100k-100":
        return load_ml100k100(root, seed=seed)
    if name == "synthetic-ratings":
        return make_synthetic_ratings(seed=seed)
    if name == "digits":
        return load_digits_devices(n_devices, alpha, seed)
    raise ValueError(f"dataset={name!r} is invalid: allowed values are {', '.join(DATASETS)}")
