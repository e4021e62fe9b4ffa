"""Real ratings matrices (MovieLens) for completion problems (`problem.ratings_problem` makes one: a share of the
known ratings is seen, the rest is held out and the error is measured there, the report's Fig. 4).

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
