"""LightGCN-style interaction lists: `train.txt` / `test.txt`, one line per user.

Each line is `user item item ...` with 0-based integer ids separated by
whitespace; a line may hold only the user id. The files carry no timestamps,
so splits built from them use the seeded random hold-out.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .base import InteractionData
from .errors import DatasetFormatError, DatasetNotFoundError
from .split import N_NEGATIVES, random_holdout
from .tabular import check_whole_lines

LIGHTGCN_LINE = "'user item item ...' (integer ids separated by spaces; a line may hold only the user id)"
_MAX_DIGITS = 18  # always fits int64


class InteractionLists(NamedTuple):
    users: np.ndarray  # int64, one entry per listed (user, item) pair
    items: np.ndarray  # int64
    listed_users: np.ndarray  # int64, every user id that starts a line, even without items


def read_lightgcn_lists(path: str | Path) -> InteractionLists:
    """Pairs of one LightGCN list file, in file order (duplicates kept)."""
    path = Path(path)
    raw = path.read_bytes()
    check_whole_lines(path, raw, LIGHTGCN_LINE)
    lines = raw.decode("latin-1").splitlines()
    rows: list[list[str]] = []
    for line_no, line in enumerate(lines, start=1):
        tokens = line.split()
        if not tokens:
            continue
        _check_tokens(path, line_no, line, tokens)
        rows.append(tokens)
    if not rows:
        raise DatasetFormatError(path, None, LIGHTGCN_LINE, "an empty file")

    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    flat = np.fromiter(map(int, itertools.chain.from_iterable(rows)), dtype=np.int64, count=int(lengths.sum()))
    heads = np.r_[0, np.cumsum(lengths)[:-1]]
    listed_users = flat[heads]
    is_item = np.ones(flat.shape[0], dtype=bool)
    is_item[heads] = False
    users = np.repeat(listed_users, lengths - 1)
    return InteractionLists(users, flat[is_item], listed_users)


def load_lightgcn(
    directory: str | Path,
    *,
    seed: int = 0,
    name: str | None = None,
    n_negatives: int = N_NEGATIVES,
    notes: str = "",
) -> InteractionData:
    """Merge `train.txt` and `test.txt` of `directory`, then seeded random hold-out + negatives."""
    directory = Path(directory)
    paths = [directory / "train.txt", directory / "test.txt"]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise DatasetNotFoundError(
            f"{directory}: LightGCN lists need train.txt and test.txt (lines 'user item item ...'); "
            f"missing: {', '.join(str(p) for p in missing)}"
        )
    train, test = (read_lightgcn_lists(p) for p in paths)
    name = name or directory.name
    default_notes = (
        f"{name}: LightGCN lists (train.txt + test.txt) merged, duplicate pairs dropped; "
        f"the test item is one seeded random interaction per user (seed {seed}), not the latest one "
        f"(the lists carry no timestamps); {n_negatives} seeded negatives per test user."
    )
    return random_holdout(
        np.concatenate([train.users, test.users]),
        np.concatenate([train.items, test.items]),
        name=name,
        seed=seed,
        n_negatives=n_negatives,
        all_users=np.concatenate([train.listed_users, test.listed_users]),
        notes=notes or default_notes,
        meta={"source_format": "lightgcn", "listed_pairs": int(train.users.size + test.users.size)},
    )


def _check_tokens(path: Path, line_no: int, line: str, tokens: list[str]) -> None:
    digits = "".join(tokens)
    if digits.isascii() and digits.isdigit() and max(map(len, tokens)) <= _MAX_DIGITS:
        return
    for position, token in enumerate(tokens, start=1):
        if not (token.isascii() and token.isdigit() and len(token) <= _MAX_DIGITS):
            raise DatasetFormatError(
                path, line_no, LIGHTGCN_LINE, line, f"field {position} ({token!r}) is not a non-negative integer"
            )
