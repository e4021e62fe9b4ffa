"""Where dataset files are looked for, downloaded to and cached."""
from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "LABCORE_DATA"  # a folder holding <dataset>/ subfolders, e.g. a shared copy
CACHE_ENV = "LABCORE_SPLIT_CACHE"  # overrides where finished splits are cached (data/cache/ by default)

_REPO_DATA = Path(__file__).resolve().parents[2] / "data"


def data_home() -> Path:
    """The lab's writable data folder: the checkout's data/ (it holds README.md), else ./data."""
    if (_REPO_DATA / "README.md").is_file():
        return _REPO_DATA
    return Path.cwd() / "data"


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else data_home() / "cache"


def candidate_dirs(dataset: str, root: str | Path | None = None) -> list[tuple[Path, str]]:
    """Folders to search, in order, each with a short reason shown in error messages.

    `root` may be the dataset folder itself or a folder that holds `<dataset>/`.
    """
    found: list[tuple[Path, str]] = []
    if root is not None:
        root = Path(root).expanduser().resolve()
        found += [(root, "root argument"), (root / dataset, "root argument")]
    env = os.environ.get(DATA_ENV)
    if env:
        found.append((Path(env).expanduser().resolve() / dataset, f"${DATA_ENV}"))
    found.append(((Path.cwd() / "data" / dataset).resolve(), "./data"))
    found.append((data_home().resolve() / dataset, "lab data folder"))
    unique: list[tuple[Path, str]] = []
    for path, why in found:
        if all(path != seen for seen, _ in unique):
            unique.append((path, why))
    return unique
