"""Readers for the raw MovieLens rating files (ml-1m `ratings.dat`, ml-100k `u.data`)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .errors import DatasetFormatError
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
    """`u.data` of ml-100k: tab-separated `user item rating timestamp`; as many rows as `u.info` beside it
    says, when it is there (a file cut after a line break has only whole lines)."""
    table = read_int_rows(path, ML100K_RATINGS)
    info = Path(path).with_name("u.info")
    if info.is_file():
        stated = re.search(r"^\s*(\d+)\s+ratings\s*$", info.read_text(encoding="latin-1"), re.MULTILINE)
        if stated and int(stated.group(1)) != len(table):
            raise DatasetFormatError(path, None, f"{int(stated.group(1)):,} ratings (as {info.name} beside it states)",
                                     f"{len(table):,} rows: the file looks truncated or edited; copy or download "
                                     "it again")
    return ratings_from_table(table)


def read_ml1m_movies(path: str | Path) -> dict[int, tuple[str, str]]:
    """`movies.dat` of ml-1m: `MovieID::Title::Genres`, latin-1; MovieID -> (title, genres)."""
    movies = {}
    for n, line in enumerate(Path(path).read_bytes().decode("latin-1").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("::")
        if len(parts) != 3 or not parts[0].isdigit():
            raise DatasetFormatError(path, n, "MovieID::Title::Genres", line)
        movies[int(parts[0])] = (parts[1], parts[2])
    return movies


def ratings_from_table(table: np.ndarray) -> Ratings:
    return Ratings(*(np.ascontiguousarray(table[:, k]) for k in range(4)))
