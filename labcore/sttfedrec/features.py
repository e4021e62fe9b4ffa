"""Side information as hashed letter-trigrams (DSSM word hashing), and the click data STTFedRec trains on.

Items. A movie's text is its title (with the year) and its genres. Every word
``w`` is written ``#w#`` and cut into letter trigrams (``#to``, ``toy``,
``oy#``); each trigram is hashed (CRC-32) into one of ``n_features`` buckets.
DSSM reads an item as the bag of its trigram counts; CLSM reads it as the
sequence of its words, each word being its own trigram bag.

Users. ``users.dat`` gives gender, age group, occupation and zip code. These
are categorical codes, not text, so each becomes one whole-token feature
(``gender=f``, ``age=25``, ``occupation=12``, ``zip3=481``: first three zip
digits) hashed into the same buckets; letter trigrams of "25" or "481" would
only add collisions. The titles of the user's earlier clicks are extra user
features (section 4.1 does this for Adressa). The local ML-1M copy has no
timestamps, so "earlier" cannot be known: for each user a seeded random set of
``history`` of its training clicks forms the profile. Those clicks are user
*features* only and are removed from the user's training targets, so the
user tower never sees the title of the item it is asked to rank (no leak).

Clicks. Every rated movie is a click (the LightGCN lists keep every rating).
Evaluation (section 4.1 and 4.2): each user's test clicks are ranked together
with ten sampled unrated movies per test click; AUC, Precision@10, NDCG@10.

`load_ml1m()` reads ``$LABCORE_DATA/ml-1m`` (train.txt, test.txt, users.dat,
movies.dat); `synthetic_catalog()` makes a small movie-like catalogue with the
same structure for tests, smoke runs and machines without the data.
"""
from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from ..data.errors import DatasetNotFoundError
from ..data.lightgcn import read_lightgcn_lists
from ..data.locations import candidate_dirs
from ..data.movielens import read_ml1m_movies

WORD_RE = re.compile(r"[a-z0-9]+")
TEST_NEGATIVES = 10  # sampled unrated movies per test click (section 4.1: ten per click)
ML1M_FILES = ("train.txt", "test.txt", "users.dat", "movies.dat")


# --- hashing -----------------------------------------------------------------------------------
def words(text: str) -> list[str]:
    """Lower-case alphanumeric words of a text."""
    return WORD_RE.findall(text.lower())


def letter_trigrams(word: str) -> list[str]:
    """DSSM word hashing: '#word#' cut into overlapping letter trigrams."""
    w = f"#{word}#"
    return [w[i : i + 3] for i in range(len(w) - 2)]


def bucket(token: str, n_features: int) -> int:
    """Stable hash of a token into 0..n_features-1 (CRC-32, the same on every machine and run)."""
    return zlib.crc32(token.encode("utf-8")) % n_features


# --- the catalogue -------------------------------------------------------------------------------
def _csr(rows: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    flat = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    return indptr, flat


def _rows(indptr: np.ndarray, flat: np.ndarray) -> list[np.ndarray]:
    return [flat[indptr[u] : indptr[u + 1]] for u in range(len(indptr) - 1)]


@dataclass(frozen=True, eq=False)
class Catalog:
    """Users, items, their text and the click split (CSR arrays, items sorted within a user)."""

    name: str
    item_raw: tuple[str, ...]  # one raw record per item ("Title::Genres"): what a naive FL device downloads
    item_words: tuple[tuple[str, ...], ...]  # text words of each item (title, year, genres)
    user_tokens: tuple[tuple[str, ...], ...]  # categorical side-information tokens of each user
    train_indptr: np.ndarray  # training clicks (targets)
    train_items: np.ndarray
    history_indptr: np.ndarray  # profile clicks (user features only, not targets)
    history_items: np.ndarray
    test_indptr: np.ndarray
    test_items: np.ndarray
    notes: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def n_users(self) -> int:
        return len(self.user_tokens)

    @property
    def n_items(self) -> int:
        return len(self.item_words)

    def train_counts(self) -> np.ndarray:
        return np.diff(self.train_indptr)

    def user_train(self, u: int) -> np.ndarray:
        return self.train_items[self.train_indptr[u] : self.train_indptr[u + 1]]

    def user_history(self, u: int) -> np.ndarray:
        return self.history_items[self.history_indptr[u] : self.history_indptr[u + 1]]

    def user_test(self, u: int) -> np.ndarray:
        return self.test_items[self.test_indptr[u] : self.test_indptr[u + 1]]

    @cached_property
    def known(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of every item a user clicked on the device (training targets and profile): not negatives."""
        rows = [np.union1d(self.user_train(u), self.user_history(u)) for u in range(self.n_users)]
        return _csr(rows)

    @cached_property
    def item_popularity(self) -> np.ndarray:
        """Training clicks per item (profile clicks included)."""
        return np.bincount(np.concatenate([self.train_items, self.history_items]), minlength=self.n_items)

    def raw_item_bytes(self, items: np.ndarray | None = None) -> bytes:
        """The raw item records (utf-8, one line each) a naive FL device downloads."""
        idx = range(self.n_items) if items is None else np.asarray(items).tolist()
        return "".join(self.item_raw[i] + "\n" for i in idx).encode("utf-8")

    def interaction_data(self):
        """This split as a core `InteractionData` (for the MF engine and its negative sampler).

        Training interactions are the training targets plus the profile clicks (MF has no
        features, so it learns from both); the engine's own HR test uses the first test click.
        """
        from ..data.base import InteractionData

        indptr, items = self.known
        first = np.array([t[0] if len(t) else -1 for t in _rows(self.test_indptr, self.test_items)], np.int64)
        negs = np.full((self.n_users, 1), -1, np.int64)
        rng = np.random.default_rng(0)
        for u in np.flatnonzero(first >= 0):
            seen = set(items[indptr[u] : indptr[u + 1]].tolist()) | set(self.user_test(u).tolist())
            while True:
                j = int(rng.integers(self.n_items))
                if j not in seen:
                    negs[u, 0] = j
                    break
        return InteractionData(self.name, self.n_users, self.n_items, indptr, items, first, negs, self.notes)


def _split_history(train_rows: list[np.ndarray], history: int, seed: int) -> tuple[list, list]:
    """Per user: `history` seeded random training clicks become the profile; the rest stay targets.

    At least 2 targets are kept per user, so a user with few clicks gets a shorter profile.
    """
    rng = np.random.default_rng([seed, 7])
    hist, targets = [], []
    for row in train_rows:
        h = min(history, max(0, len(row) - 2))
        pick = rng.choice(len(row), size=h, replace=False) if h else np.zeros(0, np.int64)
        mask = np.zeros(len(row), bool)
        mask[pick] = True
        hist.append(np.sort(row[mask]))
        targets.append(np.sort(row[~mask]))
    return hist, targets


def find_ml1m(root: str | Path | None = None) -> Path:
    for folder, _why in candidate_dirs("ml-1m", root):
        if all((folder / f).is_file() for f in ML1M_FILES):
            return folder
    looked = ", ".join(str(p) for p, _ in candidate_dirs("ml-1m", root))
    raise DatasetNotFoundError(
        f"STTFedRec needs ml-1m with side information: {', '.join(ML1M_FILES)} in one folder "
        f"(set LABCORE_DATA to the folder that holds ml-1m/); looked in: {looked}")


def load_ml1m(root: str | Path | None = None, history: int = 5, seed: int = 0) -> Catalog:
    """ML-1M from the LightGCN lists plus users.dat and movies.dat (user = UserID-1, item = MovieID-1).

    Items are re-indexed densely over the movies that appear in train.txt or test.txt.
    """
    folder = find_ml1m(root)
    train, test = read_lightgcn_lists(folder / "train.txt"), read_lightgcn_lists(folder / "test.txt")
    movies = {mid - 1: tg for mid, tg in read_ml1m_movies(folder / "movies.dat").items()}
    users: dict[int, tuple[str, ...]] = {}
    for line in (folder / "users.dat").read_bytes().decode("latin-1").splitlines():
        if line.strip():
            uid, gender, age, occ, zipc = line.split("::")
            users[int(uid) - 1] = (f"gender={gender.lower()}", f"age={age}", f"occupation={occ}",
                                   f"zip3={zipc.strip()[:3]}")
    n_users = int(max(train.listed_users.max(), test.listed_users.max())) + 1
    used = np.unique(np.concatenate([train.items, test.items]))
    missing = [int(i) for i in used if int(i) not in movies]
    if missing:
        raise DatasetNotFoundError(f"{folder}/movies.dat has no line for MovieID {missing[0] + 1} "
                                   f"({len(missing)} ids missing)")
    remap = np.full(int(used.max()) + 1, -1, np.int64)
    remap[used] = np.arange(len(used))
    item_raw = tuple(f"{movies[int(i)][0]}::{movies[int(i)][1]}" for i in used)
    item_words = tuple(tuple(words(movies[int(i)][0] + " " + movies[int(i)][1].replace("|", " "))) for i in used)
    user_tokens = tuple(users.get(u, ()) for u in range(n_users))

    def rows_of(lists) -> list[np.ndarray]:
        order = np.argsort(lists.users, kind="stable")
        u, it = lists.users[order], remap[lists.items[order]]
        bounds = np.searchsorted(u, np.arange(n_users + 1))
        return [np.unique(it[bounds[k] : bounds[k + 1]]) for k in range(n_users)]

    train_rows, test_rows = rows_of(train), rows_of(test)
    test_rows = [np.setdiff1d(t, r) for t, r in zip(test_rows, train_rows)]
    hist, targets = _split_history(train_rows, history, seed)
    n_hist = sum(len(h) for h in hist)
    notes = (f"ml-1m (LightGCN lists + users.dat + movies.dat): {n_users} users, {len(used)} movies, every rating "
             f"a click; {n_hist} training clicks ({history} per user, seeded) form the users' title profiles and are "
             f"not training targets (no timestamps: 'earlier clicks' = a random set of the user's other training "
             f"clicks); test = test.txt clicks, each with {TEST_NEGATIVES} sampled unrated movies.")
    return Catalog("ml-1m", item_raw, item_words, user_tokens, *_csr(targets), *_csr(hist), *_csr(test_rows),
                   notes=notes, meta={"folder": str(folder), "history": history, "seed": seed})


def synthetic_catalog(n_users: int = 300, n_items: int = 400, history: int = 5, seed: int = 0,
                      clicks_per_user: tuple[int, int] = (15, 40), test_share: float = 0.2) -> Catalog:
    """A small movie-like catalogue whose clicks depend on the text, for tests and smoke runs.

    Each item has a genre (one of 8) and a title of 2 to 4 words; every genre has its own
    word pool. Each user prefers two genres (its side tokens correlate with them) and
    clicks items of its genres with high probability, so a text model can learn it.
    """
    rng = np.random.default_rng([seed, 11])
    genres = ["action", "comedy", "drama", "horror", "romance", "scifi", "western", "musical"]
    syll = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "ze", "pi", "so", "da", "fu"]
    pools = [[genres[g][:3] + "".join(rng.choice(syll, 2)) for _ in range(25)] for g in range(len(genres))]
    item_genre = rng.integers(len(genres), size=n_items)
    item_raw, item_words = [], []
    for i in range(n_items):
        g = int(item_genre[i])
        title = " ".join(rng.choice(pools[g], size=int(rng.integers(2, 5)))) + f" ({1950 + int(rng.integers(60))})"
        item_raw.append(f"{title.title()}::{genres[g].title()}")
        item_words.append(tuple(words(title + " " + genres[g])))
    user_tokens, train_rows, test_rows = [], [], []
    for u in range(n_users):
        likes = rng.choice(len(genres), size=2, replace=False)
        p = np.where(np.isin(item_genre, likes), 12.0, 1.0)
        k = int(rng.integers(*clicks_per_user))
        clicked = rng.choice(n_items, size=min(k, n_items), replace=False, p=p / p.sum())
        n_test = max(1, int(round(test_share * len(clicked))))
        test_rows.append(np.sort(clicked[:n_test]))
        train_rows.append(np.sort(clicked[n_test:]))
        user_tokens.append((f"gender={'fm'[int(likes[0]) % 2]}", f"age={18 + 7 * int(likes[1])}",
                            f"occupation={int(rng.integers(20))}", f"zip3={int(rng.integers(100, 999))}"))
    hist, targets = _split_history(train_rows, history, seed)
    notes = f"synthetic movie-like catalogue ({n_users} users x {n_items} items, seed {seed}); numbers mean nothing."
    return Catalog("synthetic", tuple(item_raw), tuple(item_words), tuple(user_tokens), *_csr(targets), *_csr(hist),
                   *_csr(test_rows), notes=notes, meta={"history": history, "seed": seed})


# --- hashed inputs ------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class TowerInput:
    """One batch of entities for a tower, in both forms.

    bag: each entity as one trigram-count vector (EmbeddingBag ids / weights / offsets): DSSM.
    seq: each entity as a padded word sequence (B, L) of indices into the batch's own word list
    (-1 = padding); the words are trigram bags (word_ids / word_weights / word_offsets): CLSM.
    """

    ids: torch.Tensor
    weights: torch.Tensor
    offsets: torch.Tensor
    seq: torch.Tensor
    word_ids: torch.Tensor
    word_weights: torch.Tensor
    word_offsets: torch.Tensor

    @property
    def size(self) -> int:
        return int(self.offsets.shape[0])

    def to(self, dtype: torch.dtype) -> "TowerInput":
        return TowerInput(self.ids, self.weights.to(dtype), self.offsets, self.seq, self.word_ids,
                          self.word_weights.to(dtype), self.word_offsets)


class Side:
    """All entities of one side (users or items) as word sequences over a shared word list."""

    def __init__(self, seqs: list[list[int]], word_bags: list[dict[int, int]]):
        self.n = len(seqs)
        self.lengths = np.array([len(s) for s in seqs], np.int64)
        L = max(1, int(self.lengths.max()) if self.n else 1)
        self.seq = np.full((self.n, L), -1, np.int64)
        for e, s in enumerate(seqs):
            self.seq[e, : len(s)] = s
        self.word_indptr = np.zeros(len(word_bags) + 1, np.int64)
        self.word_indptr[1:] = np.cumsum([len(b) for b in word_bags])
        self.word_feat = np.array([f for b in word_bags for f in b], np.int64)
        self.word_count = np.array([c for b in word_bags for c in b.values()], np.float32)
        # the bag of an entity: counts of every feature over its words
        bag_rows = []
        for s in seqs:
            acc: dict[int, float] = {}
            for w in s:
                for f, c in word_bags[w].items():
                    acc[f] = acc.get(f, 0.0) + c
            bag_rows.append(acc)
        self.bag_indptr = np.zeros(self.n + 1, np.int64)
        self.bag_indptr[1:] = np.cumsum([len(b) for b in bag_rows])
        self.bag_feat = np.array([f for b in bag_rows for f in b], np.int64)
        self.bag_count = np.array([c for b in bag_rows for c in b.values()], np.float32)

    def batch(self, ids: np.ndarray) -> TowerInput:
        ids = np.asarray(ids, np.int64)
        lo, hi = self.bag_indptr[ids], self.bag_indptr[ids + 1]
        take = _ranges(lo, hi)
        offsets = np.zeros(len(ids), np.int64)
        offsets[1:] = np.cumsum(hi - lo)[:-1]
        seq = self.seq[ids]
        L = max(1, int(self.lengths[ids].max()) if len(ids) else 1)
        seq = seq[:, :L]
        used, local = np.unique(seq[seq >= 0], return_inverse=True)
        seq_local = np.full(seq.shape, -1, np.int64)
        seq_local[seq >= 0] = local
        wlo, whi = self.word_indptr[used], self.word_indptr[used + 1]
        wtake = _ranges(wlo, whi)
        woff = np.zeros(len(used), np.int64)
        woff[1:] = np.cumsum(whi - wlo)[:-1]
        t = torch.from_numpy
        return TowerInput(t(self.bag_feat[take]), t(self.bag_count[take]), t(offsets), t(seq_local),
                          t(self.word_feat[wtake]), t(self.word_count[wtake]), t(woff))


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenation of arange(lo[k], hi[k]) for every k (vectorized)."""
    n = hi - lo
    if n.sum() == 0:
        return np.zeros(0, np.int64)
    starts = np.repeat(lo - np.concatenate([[0], np.cumsum(n)[:-1]]), n)
    return starts + np.arange(int(n.sum()))


class FeatureSpace:
    """Hashed inputs of both towers for one catalogue.

    Words are shared between users and items (a history title and a candidate title hash
    the same way). A categorical user token is a single feature: hash('tok:' + token).
    """

    def __init__(self, catalog: Catalog, n_features: int = 4096):
        self.n_features = int(n_features)
        self.catalog = catalog
        vocab: dict[str, int] = {}
        bags: list[dict[int, int]] = []

        def word_id(w: str, categorical: bool = False) -> int:
            key = ("tok:" if categorical else "") + w
            if key not in vocab:
                vocab[key] = len(bags)
                bag: dict[int, int] = {}
                for tri in ([key] if categorical else letter_trigrams(w)):
                    f = bucket(tri, self.n_features)
                    bag[f] = bag.get(f, 0) + 1
                bags.append(bag)
            return vocab[key]

        item_seqs = [[word_id(w) for w in ws] for ws in catalog.item_words]
        user_seqs = []
        for u in range(catalog.n_users):
            s = [word_id(t, categorical=True) for t in catalog.user_tokens[u]]
            for i in catalog.user_history(u):
                s += item_seqs[int(i)]
            user_seqs.append(s)
        self.vocab = vocab
        self.items = Side(item_seqs, bags)
        self.users = Side(user_seqs, bags)
        trigrams = {t for k in vocab if not k.startswith("tok:") for t in letter_trigrams(k)}
        self.n_trigrams = len(trigrams)

    def describe(self) -> dict:
        return {"n_features": self.n_features, "distinct_trigrams": self.n_trigrams, "words": len(self.vocab),
                "item_words_max": int(self.items.lengths.max()), "user_words_max": int(self.users.lengths.max())}


# --- evaluation candidates ----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class EvalSet:
    """Flat (user, item, label) triples: each test click and TEST_NEGATIVES unrated items per test click."""

    users: np.ndarray
    items: np.ndarray
    labels: np.ndarray

    def subset(self, users: np.ndarray) -> "EvalSet":
        keep = np.isin(self.users, users)
        return EvalSet(self.users[keep], self.items[keep], self.labels[keep])

    @property
    def test_users(self) -> np.ndarray:
        return np.unique(self.users)


def eval_set(catalog: Catalog, n_negatives: int = TEST_NEGATIVES, seed: int = 0) -> EvalSet:
    """Each user's test clicks plus `n_negatives` per test click drawn without replacement from the
    movies the user never rated (fewer when the user has rated almost everything)."""
    rng = np.random.default_rng([seed, 23])
    mask = np.ones(catalog.n_items, bool)
    us, its, ls = [], [], []
    for u in range(catalog.n_users):
        t = catalog.user_test(u)
        if not len(t):
            continue
        rated = np.concatenate([catalog.user_train(u), catalog.user_history(u), t])
        mask[rated] = False
        free = np.flatnonzero(mask)
        mask[rated] = True
        n = min(len(t) * n_negatives, len(free))
        neg = free[rng.permutation(len(free))[:n]] if 4 * n > len(free) else rng.choice(free, size=n, replace=False)
        us.append(np.full(len(t) + len(neg), u, np.int64))
        its.append(np.concatenate([t, neg]).astype(np.int64))
        ls.append(np.concatenate([np.ones(len(t), np.int8), np.zeros(len(neg), np.int8)]))
    return EvalSet(np.concatenate(us), np.concatenate(its), np.concatenate(ls))
