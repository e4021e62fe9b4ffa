"""On-disk cache of finished splits (.npz), keyed by dataset, seed and source files.

A key covers each source file's path, size and modification time, so editing
or replacing a file invalidates its cached splits.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np

from .base import InteractionData
from .locations import cache_dir

CACHE_VERSION = 1  # bump when a protocol changes, so stale splits are not reused
_ARRAYS = ("train_indptr", "train_items", "test_items", "test_negatives")
_META_ARRAY = "meta__"


def cache_file(name: str, seed: int, sources: list[Path], **options) -> Path:
    described = {
        "version": CACHE_VERSION,
        "name": name,
        "seed": int(seed),
        "options": options,
        "sources": [_describe(p) for p in sources],
    }
    digest = hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / f"{name}-seed{seed}-{digest}.npz"


def load_cached(path: Path) -> InteractionData | None:
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            meta = json.loads(str(stored["meta_json"]))
            for key in stored.files:
                if key.startswith(_META_ARRAY):
                    meta[key[len(_META_ARRAY):]] = stored[key]
            return InteractionData(
                name=str(stored["name"]),
                n_users=int(stored["n_users"]),
                n_items=int(stored["n_items"]),
                notes=str(stored["notes"]),
                meta=meta,
                **{key: stored[key] for key in _ARRAYS},
            )
    except Exception as error:  # a damaged cache file is rebuilt, never fatal
        warnings.warn(f"ignoring unreadable cache file {path}: {error}", stacklevel=2)
        return None


def save_cached(path: Path, data: InteractionData) -> None:
    scalars = {k: _plain(v) for k, v in data.meta.items() if not isinstance(v, np.ndarray)}
    arrays = {_META_ARRAY + k: v for k, v in data.meta.items() if isinstance(v, np.ndarray)}
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            np.savez(
                handle,
                name=np.array(data.name),
                n_users=np.array(data.n_users),
                n_items=np.array(data.n_items),
                notes=np.array(data.notes),
                meta_json=np.array(json.dumps(scalars)),
                **{key: getattr(data, key) for key in _ARRAYS},
                **arrays,
            )
        os.replace(tmp, path)  # readers never see a half-written file
    except OSError as error:
        tmp.unlink(missing_ok=True)
        warnings.warn(f"could not cache {data.name} in {path.parent}: {error}", stacklevel=2)


def _describe(path: Path) -> list:
    stat = path.stat()
    return [str(path.resolve()), stat.st_size, stat.st_mtime_ns]


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value
