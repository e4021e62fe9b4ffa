"""Real ratings matrices (MovieLens) as completion problems: a share of the known ratings is seen, the rest
is held out and the error is measured there (the report's Fig. 4).

The files are the raw explicit ratings (`ml-100k/u.data`, `ml-1m/ratings.dat`), looked for in `$LABCORE_DATA`
and `./data` (`labcore.data.locations`); the core's `load_dataset` keeps only implicit interactions, so the
ratings are read here with the core's raw readers. A missing ml-1m `ratings.dat` is downloaded with the core's
loader where the network allows (pooch, sha256), else the error says which file to put where.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from ..data.errors import DatasetNotFoundError
from ..data.locations import candidate_dirs
from ..data.movielens import read_ml100k_ratings, read_ml1m_ratings
from .config import CompletionConfig
from .problem import Problem

FILES = {"ml-100k": ("u.data", read_ml100k_ratings), "ml-1m": ("ratings.dat", read_ml1m_ratings)}


def find_ratings(name: str, download: bool = True) -> Path:
    fname, _ = FILES[name]
    for folder, _why in candidate_dirs(name):
        if (folder / fname).is_file():
            return folder / fname
    failure = None
    if download:
        from ..data.registry import FILE_DATASETS, _try_download

        failure = _try_download(FILE_DATASETS[name])
        for folder, _why in candidate_dirs(name):
            if (folder / fname).is_file():
                return folder / fname
    searched = ", ".join(str(f) for f, _ in candidate_dirs(name))
    raise DatasetNotFoundError(f"{name}: {fname} (raw MovieLens ratings) not found in {searched}"
                               + (f"; download failed: {failure}" if failure else "")
                               + f". Fix: put {fname} into $LABCORE_DATA/{name}/")


@lru_cache(maxsize=4)
def read_ratings(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(user index, item index, rating) with 0-based compact indices in id order."""
    fname, reader = FILES[name]
    r = reader(find_ratings(name))
    users = np.unique(r.users, return_inverse=True)[1]
    items = np.unique(r.items, return_inverse=True)[1]
    return users.astype(np.int64), items.astype(np.int64), r.ratings.astype(np.float64)


def ratings_problem(cfg: CompletionConfig) -> Problem:
    """At most m users x n items (the first by id), `share` of their ratings seen, the rest held out."""
    users, items, vals = read_ratings(cfg.dataset)
    keep = (users < cfg.m) & (items < cfg.n)
    users, items, vals = users[keep], items[keep], vals[keep]
    m, n = int(users.max()) + 1, int(items.max()) + 1
    rng = np.random.default_rng([cfg.problem_seed, 29])
    seen = rng.random(len(vals)) < cfg.share
    order = np.lexsort((items[seen], users[seen]))
    return Problem(m, n, cfg.rank, users[seen][order], items[seen][order], vals[seen][order],
                   test_rows=users[~seen], test_cols=items[~seen], test_vals=vals[~seen], name=cfg.dataset)
