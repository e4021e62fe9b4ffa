"""Sequences for FELLRec: ML-100K (titles from `u.item`, order from `u.data` timestamps), ML-1M (titles from
`movies.dat`, order from `ratings.dat` timestamps), the Amazon video-games sequences (`Video.txt`, ids only) and a
small synthetic set for smoke runs and tests.

Every user's interactions are sorted by time and split chronologically 8:1:1 into train / validation /
test (the paper's protocol). A share of the users (`foundation_share`) is held out for the central
"foundation" pre-training; the others become the federated clients' users. Items are written as text:
the BPE tokens of their title (a vocabulary learned here with `tokenizers`), or one id token.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..data.locations import DATA_ENV, candidate_dirs, data_home
from ..data.movielens import read_ml1m_movies, read_ml1m_ratings
from ..data.registry import FILE_DATASETS
from .config import FellrecConfig

# where the files come from when they are not on disk (pooch checks the sha256)
ML100K = ("https://files.grouplens.org/datasets/movielens/ml-100k.zip",
          "50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229")
VIDEO = ("https://raw.githubusercontent.com/kang205/SASRec/e3738967fddab206d6eeb4fda433e7a7034dd8b1/data/Video.txt",
         "b7376fe24430743f411dc7f567285657b2adb3f74361cc7ba0aee94f3024b651")
MIN_INTERACTIONS = 5  # a user needs >= 5 items so that 8:1:1 leaves one for validation and one for test


@dataclass
class SeqData:
    """Users' chronological item sequences, the 8:1:1 cut points and the items as token lists."""

    name: str
    n_items: int
    titles: list[str]
    item_tokens: np.ndarray  # (n_items, max_tokens) int64 token ids, padded with `pad`
    pad: int  # the padding token id (= vocabulary size; its embedding row is never used)
    vocab: int  # number of real tokens
    seqs: list[np.ndarray]  # per user, item ids in time order
    n_train: np.ndarray  # per user: seqs[u][:n_train] is train, then n_val validation, the rest test
    n_val: np.ndarray
    foundation_users: np.ndarray  # users of the central pre-training (disjoint from the clients' users)
    client_users: np.ndarray
    notes: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def n_users(self) -> int:
        return len(self.seqs)

    def train(self, u: int) -> np.ndarray:
        return self.seqs[u][: self.n_train[u]]

    def valid(self, u: int) -> np.ndarray:
        return self.seqs[u][self.n_train[u]: self.n_train[u] + self.n_val[u]]

    def test(self, u: int) -> np.ndarray:
        return self.seqs[u][self.n_train[u] + self.n_val[u]:]


def chrono_split(n: int) -> tuple[int, int]:
    """(n_train, n_val) of an n-item sequence cut 8:1:1 in time order; validation and test get >= 1 item."""
    n_test = max(1, int(round(0.1 * n)))
    n_val = max(1, int(round(0.1 * n)))
    return n - n_val - n_test, n_val


# --- reading the files ----------------------------------------------------------------------------------
def find_files(name: str, files: tuple[str, ...], download: bool = True) -> Path:
    """The first candidate folder ($LABCORE_DATA/<name>, ./data/<name>, ...) holding every file in `files`."""
    for folder, _ in candidate_dirs(name):
        if all((folder / f).is_file() for f in files):
            return folder
    if download:
        _download(name)
        for folder, _ in candidate_dirs(name):
            if all((folder / f).is_file() for f in files):
                return folder
    searched = ", ".join(str(f) for f, _ in candidate_dirs(name))
    raise FileNotFoundError(f"{name}: {' and '.join(files)} not found in {searched}. Fix: set {DATA_ENV} to a "
                            f"folder holding {name}/ (the lab's shared copy), or put the files in "
                            f"{data_home() / name}/")


def _download(name: str) -> None:
    import pooch

    try:
        if name == "ml-100k":
            pooch.retrieve(ML100K[0], known_hash=f"sha256:{ML100K[1]}", fname="ml-100k.zip",
                           path=data_home() / "downloads", processor=pooch.Unzip(extract_dir=str(data_home())))
        elif name == "ml-1m":
            dl = FILE_DATASETS["ml-1m"].download
            pooch.retrieve(dl.url, known_hash=f"sha256:{dl.sha256}", fname=dl.archive, path=data_home() / "downloads",
                           processor=pooch.Unzip(extract_dir=str(data_home())))
        elif name == "amazon-games":
            pooch.retrieve(VIDEO[0], known_hash=f"sha256:{VIDEO[1]}", fname="Video.txt",
                           path=data_home() / "amazon-games")
    except Exception:  # offline: find_files reports what to put where
        pass


def read_ml100k(folder: Path) -> tuple[list[str], list[np.ndarray]]:
    """Titles from `u.item` (latin-1, `id|title|...`) and each user's items in time order from `u.data`."""
    import pandas as pd

    items = pd.read_csv(folder / "u.item", sep="|", header=None, encoding="latin-1", usecols=[0, 1])
    titles = [""] * int(items[0].max())
    for i, t in zip(items[0], items[1]):
        titles[int(i) - 1] = str(t)
    r = pd.read_csv(folder / "u.data", sep="\t", header=None, names=["u", "i", "r", "t"])
    r = r.sort_values(["u", "t", "i"], kind="stable")  # ties in time: by item id, so the order is fixed
    seqs = [g["i"].to_numpy(np.int64) - 1 for _, g in r.groupby("u", sort=True)]
    return titles, seqs


def read_ml1m(folder: Path) -> tuple[list[str], list[np.ndarray]]:
    """Titles from `movies.dat` (item = MovieID - 1; ids no line names keep an empty title) and each user's items in
    time order from `ratings.dat`."""
    movies = read_ml1m_movies(folder / "movies.dat")
    r = read_ml1m_ratings(folder / "ratings.dat")
    titles = [""] * max(max(movies), int(r.items.max()))
    for mid, (title, _genres) in movies.items():
        titles[mid - 1] = title
    order = np.lexsort((r.items, r.timestamps, r.users))  # by user, then time; ties in time by item id
    users, items = r.users[order], r.items[order] - 1
    cut = np.flatnonzero(np.diff(users)) + 1
    return titles, [s.astype(np.int64) for s in np.split(items, cut)]


def read_video(folder: Path) -> tuple[list[str], list[np.ndarray]]:
    """`Video.txt`: `user item` per line, 1-based, each user's rows already in time order; no titles."""
    a = np.loadtxt(folder / "Video.txt", dtype=np.int64)
    users, items = a[:, 0], a[:, 1] - 1
    cut = np.flatnonzero(np.diff(users)) + 1
    seqs = np.split(items, cut)
    n_items = int(items.max()) + 1
    return [f"item{i}" for i in range(n_items)], seqs


def synthetic(n_users: int = 80, n_items: int = 60, n_topics: int = 4, seed: int = 0) -> tuple[list[str], list]:
    """Users who mostly follow one topic; items titled with their topic's words (so titles carry signal)."""
    rng = np.random.default_rng(seed)
    words = [["star", "space", "galaxy", "alien"], ["love", "heart", "wedding", "kiss"],
             ["kill", "blood", "night", "dead"], ["toy", "kids", "magic", "dog"]]
    topic = np.arange(n_items) % n_topics
    titles = [f"{words[t][rng.integers(4)]} {words[t][rng.integers(4)]} {i} ({1990 + i % 9})"
              for i, t in enumerate(topic)]
    seqs = []
    for u in range(n_users):
        fav = u % n_topics
        length = int(rng.integers(10, 30))
        p = np.where(topic == fav, 6.0, 1.0) * rng.gamma(1.0, size=n_items)
        order = rng.choice(n_items, size=length, replace=False, p=p / p.sum())
        seqs.append(order.astype(np.int64))
    return titles, seqs


# --- text -> tokens ----------------------------------------------------------------------------------------
def bpe_tokens(titles: list[str], vocab_size: int) -> tuple[list[list[int]], int]:
    """A byte-level BPE learned on the titles (Hugging Face tokenizers); each title as token ids."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["[UNK]"], show_progress=False)
    tok.train_from_iterator(titles, trainer=trainer)
    return [e.ids for e in tok.encode_batch(titles)], tok.get_vocab_size()


def item_token_table(titles: list[str], item_text: str, vocab_size: int) -> tuple[np.ndarray, int, int]:
    """(n_items, max_len) token ids padded with `pad`; returns (table, pad, vocab)."""
    n = len(titles)
    if item_text == "id":
        rows, vocab = [[i] for i in range(n)], n
    else:
        rows, vocab = bpe_tokens(titles, vocab_size)
        rows = [r or [0] for r in rows]
        if item_text == "title+id":
            rows, vocab = [r + [vocab + i] for i, r in enumerate(rows)], vocab + n
    width = max(len(r) for r in rows)
    table = np.full((n, width), vocab, dtype=np.int64)
    for i, r in enumerate(rows):
        table[i, : len(r)] = r
    return table, vocab, vocab


# --- the dataset of a config --------------------------------------------------------------------------------
def load(cfg: FellrecConfig) -> SeqData:
    if cfg.dataset == "ml-100k":
        titles, seqs = read_ml100k(find_files("ml-100k", ("u.data", "u.item")))
        source = "ml-100k u.data (order by timestamp) + u.item titles"
    elif cfg.dataset == "ml-1m":
        titles, seqs = read_ml1m(find_files("ml-1m", ("ratings.dat", "movies.dat")))
        source = "ml-1m ratings.dat (order by timestamp) + movies.dat titles"
    elif cfg.dataset == "amazon-games":
        titles, seqs = read_video(find_files("amazon-games", ("Video.txt",)))
        source = "amazon-games Video.txt (SASRec's time-ordered sequences; ids only, no titles)"
    else:
        titles, seqs = synthetic(seed=cfg.data_seed)
        source = "synthetic: 80 users, 60 items in 4 topics, titles made of topic words (smoke data)"
    item_text = "id" if cfg.dataset == "amazon-games" else cfg.item_text
    seqs = [s for s in seqs if len(s) >= MIN_INTERACTIONS]
    if cfg.max_users:
        seqs = seqs[: cfg.max_users]
    table, pad, vocab = item_token_table(titles, item_text, cfg.vocab_size)
    cuts = np.array([chrono_split(len(s)) for s in seqs], dtype=np.int64)
    rng = np.random.default_rng([cfg.data_seed, 7])
    perm = rng.permutation(len(seqs))
    n_found = max(1, int(round(cfg.foundation_share * len(seqs))))
    notes = (f"{source}; {len(seqs)} users with >= {MIN_INTERACTIONS} items, {len(titles)} items; each user's "
             f"sequence cut 8:1:1 in time order; {n_found} users ({cfg.foundation_share:.0%}) pre-train the "
             f"foundation model centrally, the other {len(seqs) - n_found} are the clients' users; items are "
             f"read as {item_text} ({vocab} tokens).")
    return SeqData(cfg.dataset, len(titles), titles, table, pad, vocab, seqs, cuts[:, 0], cuts[:, 1],
                   np.sort(perm[:n_found]), np.sort(perm[n_found:]), notes,
                   {"item_text": item_text})


# --- training windows and evaluation inputs ------------------------------------------------------------------
PAD_ITEM = -1


def windows(data: SeqData, users: np.ndarray, history: int, part: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """Next-item training windows: inputs x (n, history) and targets y (n, history), -1 = padding.

    A user's train sequence (or train + validation + test for `part="all"`, the foundation users) is cut
    into chunks of history + 1 items; position j of x predicts position j + 1.
    """
    xs, ys = [], []
    for u in users:
        s = data.train(u) if part == "train" else data.seqs[u]
        for end in range(len(s), 1, -history):
            chunk = s[max(0, end - history - 1): end]
            x = np.full(history, PAD_ITEM, np.int64)
            y = np.full(history, PAD_ITEM, np.int64)
            x[: len(chunk) - 1] = chunk[:-1]
            y[: len(chunk) - 1] = chunk[1:]
            xs.append(x)
            ys.append(y)
    if not xs:
        return np.zeros((0, history), np.int64), np.zeros((0, history), np.int64)
    return np.stack(xs), np.stack(ys)


def eval_inputs(data: SeqData, users: np.ndarray, history: int, part: str = "test"):
    """For each user: the last `history` items before `part` (left-aligned), its position, the items seen
    (excluded from the ranking) and the held-out targets."""
    xs, last, seen, targets = [], [], [], []
    for u in users:
        s = data.seqs[u]
        start = data.n_train[u] + (data.n_val[u] if part == "test" else 0)
        hist = s[:start][-history:]
        x = np.full(history, PAD_ITEM, np.int64)
        x[: len(hist)] = hist
        xs.append(x)
        last.append(len(hist) - 1)
        seen.append(s[:start])
        targets.append(data.test(u) if part == "test" else data.valid(u))
    return np.stack(xs), np.array(last, np.int64), seen, targets
