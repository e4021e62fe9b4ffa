"""Readers for the raw MovieLens rating files (ml-1m `ratings.dat`, ml-100k `u.data`)."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from .tabular import RowFormat, read_int_rows

ML1M_RATINGS = RowFormat("UserID::MovieID::Rating::Timestamp", "::", 4)
ML100K_RATINGS = RowFormat("user<TAB>item<TAB>rating<TAB>timestamp", "\t", 4)


class Ratings(NamedTuple):
    """Explicit ratings as parallel int64 arrays, ids as in the file."""

    users: np.ndarray
    items: np.ndarray
    ratings: np.ndarray
    timestamps: np.ndarray


def read_ml1m_ratings(path: str | Path) -> Ratings:
    """`ratings.dat` of ml-1m: `UserID::MovieID::Rating::Timestamp`."""
    return ratings_from_table(read_int_rows(path, ML1M_RATINGS))


def read_ml100k_ratings(path: str | Path) -> Ratings:
    """`u.data` of ml-100k: tab-separated `user item rating timestamp`."""
    return ratings_from_table(read_int_rows(path, ML100K_RATINGS))


def ratings_from_table(table: np.ndarray) -> Ratings:
    return Ratings(*(np.ascontiguousarray(table[:, k]) for k in range(4)))
