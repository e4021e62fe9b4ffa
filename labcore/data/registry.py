"""`load_dataset(name)`: find a dataset's files, split them, cache the result.

Files are looked for in the `root` argument, then `$LABCORE_DATA/<dataset>/`,
then `./data/<dataset>/` (and the checkout's data/ folder); MovieLens is
downloaded from GroupLens as a last resort. The first folder holding a usable
layout wins; inside it the layout with timestamps is preferred.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .base import InteractionData
from .cache import cache_file, load_cached, save_cached
from .errors import DatasetNotFoundError
from .lightgcn import load_lightgcn
from .locations import DATA_ENV, candidate_dirs, data_home
from .movielens import read_ml100k_ratings, read_ml1m_ratings
from .split import leave_latest_out
from .synthetic import SIZES, make_synthetic

DATASET_NAMES = ("synthetic", "ml-1m", "ml-100k", "pinterest")


@dataclass(frozen=True)
class Download:
    url: str
    sha256: str
    archive: str  # file name of the archive; it unpacks into <dataset>/


@dataclass(frozen=True)
class Layout:
    """One way a dataset can sit in a folder."""

    key: str
    files: tuple[str, ...]
    label: str  # for messages, e.g. "ratings.dat (raw MovieLens ratings)"
    build: Callable[[Path, int], InteractionData]


@dataclass(frozen=True)
class FileDataset:
    name: str
    layouts: tuple[Layout, ...]  # most preferred first
    download: Download | None
    advice: str  # what to put where when nothing is found; {folder} is filled in


def _ml1m_raw(folder: Path, seed: int) -> InteractionData:
    ratings = read_ml1m_ratings(folder / "ratings.dat")
    return leave_latest_out(
        ratings.users, ratings.items, ratings.timestamps, name="ml-1m", seed=seed, min_interactions=20,
        notes=(
            "ml-1m from ratings.dat: every rating is a positive, users with >= 20 ratings kept; "
            "test item = each user's latest rating (timestamp ties: larger MovieID); "
            f"99 negatives (seed {seed}) drawn from movies the user never rated."
        ),
        meta={"source_format": "movielens-ratings"},
    )


def _ml1m_lists(folder: Path, seed: int) -> InteractionData:
    return load_lightgcn(
        folder, seed=seed, name="ml-1m",
        notes=(
            "ml-1m from LightGCN lists (train.txt + test.txt merged; ids are UserID-1 / MovieID-1, "
            "items re-indexed densely to the 3,706 rated movies). The lists carry no timestamps, so the "
            f"test item is one seeded random interaction per user (seed {seed}), NOT the latest one; "
            "99 seeded negatives from movies the user never rated."
        ),
    )


def _ml100k_raw(folder: Path, seed: int) -> InteractionData:
    ratings = read_ml100k_ratings(folder / "u.data")
    return leave_latest_out(
        ratings.users, ratings.items, ratings.timestamps, name="ml-100k", seed=seed, min_interactions=20,
        notes=(
            "ml-100k from u.data: every rating is a positive, users with >= 20 ratings kept; "
            "test item = each user's latest rating (timestamp ties: larger item id); "
            f"99 negatives (seed {seed}) drawn from movies the user never rated."
        ),
        meta={"source_format": "movielens-ratings"},
    )


def _pinterest_lists(folder: Path, seed: int) -> InteractionData:
    return load_lightgcn(
        folder, seed=seed, name="pinterest",
        notes=(
            "pinterest: a 37.5K-user subset (37,501 users x 9,836 pins) in LightGCN lists, NOT NCF's "
            "Pinterest-20 (55,187 users); repeated (user, pin) pairs dropped; no timestamps, so the test "
            f"item is one seeded random interaction per user (seed {seed}); 99 seeded negatives."
        ),
    )


_ML1M_URL = "https://files.grouplens.org/datasets/movielens/ml-1m.zip"
_ML100K_URL = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"

FILE_DATASETS: dict[str, FileDataset] = {
    "ml-1m": FileDataset(
        "ml-1m",
        (
            Layout("ratings", ("ratings.dat",), "ratings.dat (raw MovieLens ratings, with timestamps)", _ml1m_raw),
            Layout("lightgcn", ("train.txt", "test.txt"), "train.txt + test.txt (LightGCN lists)", _ml1m_lists),
        ),
        Download(_ML1M_URL, "a6898adb50b9ca05aa231689da44c217cb524e7ebd39d264c56e2832f2c54e20", "ml-1m.zip"),
        f"put ratings.dat (from ml-1m.zip, {_ML1M_URL}) into {{folder}}/ or set {DATA_ENV} to a folder "
        "that holds ml-1m/ratings.dat",
    ),
    "ml-100k": FileDataset(
        "ml-100k",
        (Layout("ratings", ("u.data",), "u.data (raw MovieLens ratings, with timestamps)", _ml100k_raw),),
        Download(_ML100K_URL, "50d2a982c66986937beb9ffb3aa76efe955bf3d5c6b761f4e3a7cd717c6a3229", "ml-100k.zip"),
        f"put u.data (from ml-100k.zip, {_ML100K_URL}) into {{folder}}/ or set {DATA_ENV} to a folder "
        "that holds ml-100k/u.data",
    ),
    "pinterest": FileDataset(
        "pinterest",
        (Layout("lightgcn", ("train.txt", "test.txt"), "train.txt + test.txt (LightGCN lists)", _pinterest_lists),),
        None,
        "put train.txt and test.txt (LightGCN lists 'user item item ...', see data/README.md) into "
        f"{{folder}}/ or set {DATA_ENV} to a folder that holds pinterest/train.txt and pinterest/test.txt",
    ),
}


def load_dataset(
    name: str,
    *,
    seed: int = 0,
    root: str | Path | None = None,
    size: str = "small",
    skew: float = 1.0,
    download: bool = True,
    cache: bool = True,
) -> InteractionData:
    """Load and split a dataset by name: synthetic, ml-1m, ml-100k or pinterest.

    `size` and `skew` (the spread of the users' data sizes, `make_synthetic`'s
    `tail`) apply to synthetic only (sizes tiny, small, medium, ml1m). `root` is a
    dataset folder or a folder holding `<name>/`. Splits of file datasets are
    cached as .npz (see `labcore.data.cache`); `cache=False` rebuilds them.
    """
    key = name.strip().lower()
    if key == "synthetic":
        return make_synthetic(size, seed=seed, tail=skew)
    if skew != 1.0:
        raise ValueError(f"skew={skew!r} is invalid: it applies to synthetic data only; {name} has its own, "
                         "fixed per-user data sizes")
    if key not in FILE_DATASETS:
        raise ValueError(
            f"unknown dataset {name!r}; valid names: {', '.join(DATASET_NAMES)} "
            f"(synthetic sizes: {', '.join(SIZES)}); for your own files use load_ncf(prefix) or load_lightgcn(folder)"
        )
    spec = FILE_DATASETS[key]
    found = find_dataset(spec, root)
    if found is None and download and spec.download is not None:
        failure = _try_download(spec)
        found = find_dataset(spec, root)
        if found is None:
            raise DatasetNotFoundError(_not_found_message(spec, root, failure))
    if found is None:
        raise DatasetNotFoundError(_not_found_message(spec, root, None))

    folder, layout = found
    if not cache:
        return layout.build(folder, seed)
    stored = cache_file(spec.name, seed, [folder / f for f in layout.files], layout=layout.key)
    data = load_cached(stored)
    if data is None:
        data = layout.build(folder, seed)
        save_cached(stored, data)
    return data


def find_dataset(spec: FileDataset, root: str | Path | None = None) -> tuple[Path, Layout] | None:
    """The first candidate folder with a complete layout, and that layout."""
    for folder, _ in candidate_dirs(spec.name, root):
        for layout in spec.layouts:
            if all((folder / f).is_file() for f in layout.files):
                return folder, layout
    return None


def _try_download(spec: FileDataset) -> str:
    """Fetch and unpack the archive into the lab data folder; '' on success, else why it failed."""
    assert spec.download is not None
    import pooch  # only needed on this path

    target = data_home()
    try:
        pooch.retrieve(
            spec.download.url,
            known_hash=f"sha256:{spec.download.sha256}",
            fname=spec.download.archive,
            path=target / "downloads",
            processor=pooch.Unzip(members=[spec.name], extract_dir=str(target)),
            progressbar=True,
            downloader=pooch.HTTPDownloader(progressbar=True, timeout=60),
        )
    except Exception as error:  # offline, proxy, hash mismatch...: reported with the fix below
        return f"{type(error).__name__}: {error}"
    return ""


def _not_found_message(spec: FileDataset, root: str | Path | None, download_failure: str | None) -> str:
    wanted = " or ".join(layout.label for layout in spec.layouts)
    searched = "\n".join(f"  - {folder}  ({why})" for folder, why in candidate_dirs(spec.name, root))
    lines = [f"{spec.name}: no data files found. Looked for {wanted} in:", searched]
    if not os.environ.get(DATA_ENV):
        lines.append(f"  (${DATA_ENV} is not set)")
    if spec.download is not None:
        if download_failure is None:
            lines.append("Download was not attempted (download=False).")
        elif download_failure:
            lines.append(f"Download of {spec.download.url} failed: {download_failure}")
        else:
            lines.append(f"{spec.download.archive} was downloaded but did not contain the expected files.")
    lines.append("Fix: " + spec.advice.format(folder=data_home().resolve() / spec.name) + ".")
    return "\n".join(lines)
