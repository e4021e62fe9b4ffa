"""MNIST (IDX files) and FEMNIST (LEAF json) readers, with MNIST's download path and sha256.

Files are looked for in the `root` argument, `$LABCORE_DATA/<name>/`, `./data/<name>/`; MNIST is otherwise
downloaded with pooch from TensorFlow's mirror and checked against the sha256 below. FEMNIST has no single
download: LEAF builds it from NIST SD19 with its preprocessing scripts (`./preprocess.sh -s niid --sf 0.05 -k 0
-t sample`); put the resulting `train/*.json` and `test/*.json` under `<root>/femnist/`.
"""
from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np

from ..data.locations import candidate_dirs
from .tasks import FedData, from_client_lists, split_dataset

MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
MNIST_FILES = {  # official archives and their sha256
    "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}
_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | Path) -> np.ndarray:
    """An IDX file (gzip or raw): magic 0x0000 <dtype> <ndim>, ndim big-endian u32 sizes, then the data."""
    path = Path(path)
    raw = (gzip.open if path.suffix == ".gz" else open)(path, "rb").read()
    if len(raw) < 4 or raw[0] or raw[1] or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{path} is not an IDX file (bad magic {raw[:4].hex()})")
    ndim = raw[3]
    shape = struct.unpack(f">{ndim}I", raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=_IDX_DTYPES[raw[2]], offset=4 + 4 * ndim)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape} ({int(np.prod(shape))} values), file holds {data.size}")
    return data.reshape(shape)


def _find(name: str, files: tuple[str, ...], root) -> Path | None:
    for d, _why in candidate_dirs(name, root):
        if all((d / f).exists() for f in files):
            return d
    return None


def mnist_files(root: str | Path | None = None, download: bool = True) -> Path:
    """The folder holding the four MNIST archives; downloads (pooch, sha256-checked) if none has them."""
    found = _find("mnist", tuple(MNIST_FILES), root)
    if found:
        return found
    if not download:
        raise FileNotFoundError("MNIST not found: put " + ", ".join(MNIST_FILES) + " in $LABCORE_DATA/mnist/ "
                                f"(or ./data/mnist/), from {MNIST_URL}")
    import pooch

    target = Path(root) if root else candidate_dirs("mnist")[-1][0]
    for f, sha in MNIST_FILES.items():
        pooch.retrieve(MNIST_URL + f, known_hash=f"sha256:{sha}", fname=f, path=target)
    return target


def load_mnist(n_clients: int = 100, split: str = "dirichlet", alpha: float = 0.5, seed: int = 0,
               root: str | Path | None = None, download: bool = True) -> FedData:
    """MNIST's 70 000 images (pixels / 255) pooled and split over clients like digits (80 % train each)."""
    d = mnist_files(root, download)
    x = np.concatenate([read_idx(d / "train-images-idx3-ubyte.gz"), read_idx(d / "t10k-images-idx3-ubyte.gz")])
    y = np.concatenate([read_idx(d / "train-labels-idx1-ubyte.gz"), read_idx(d / "t10k-labels-idx1-ubyte.gz")])
    x = x.reshape(len(x), -1).astype(np.float32) / 255.0
    return split_dataset(f"mnist/{split}", x, y.astype(np.int64), n_clients, split, alpha, seed, 10)


def _leaf_users(folder: Path) -> dict:
    users = {}
    files = sorted(folder.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no LEAF json files in {folder}")
    for f in files:
        blob = json.loads(f.read_text())
        for key in ("users", "user_data"):
            if key not in blob:
                raise ValueError(f"{f} is not a LEAF file: no {key!r}")
        for u in blob["users"]:
            users[u] = blob["user_data"][u]
    return users


def load_femnist(n_clients: int = 100, root: str | Path | None = None) -> FedData:
    """LEAF's FEMNIST: one client per writer (the natural split), the first n_clients writers in sorted order,
    LEAF's own train/test files; 62 classes, 28x28 pixels in [0, 1]."""
    d = _find("femnist", ("train", "test"), root)
    if d is None:
        raise FileNotFoundError("FEMNIST not found: put LEAF's train/*.json and test/*.json in $LABCORE_DATA/femnist/")
    tr, te = _leaf_users(d / "train"), _leaf_users(d / "test")
    users = sorted(set(tr) & set(te))[:n_clients]
    if len(users) < n_clients:
        raise ValueError(f"n_clients={n_clients} is invalid: the FEMNIST files hold {len(users)} writers")
    xs = [np.concatenate([np.asarray(tr[u]["x"], np.float32), np.asarray(te[u]["x"], np.float32)]) for u in users]
    ys = [np.concatenate([np.asarray(tr[u]["y"], np.int64), np.asarray(te[u]["y"], np.int64)]) for u in users]
    shares = [len(tr[u]["y"]) / (len(tr[u]["y"]) + len(te[u]["y"])) for u in users]
    data = [from_client_lists("femnist", [x], [y], 62, s) for x, y, s in zip(xs, ys, shares)]
    # stitch the per-writer splits (each kept exactly as LEAF made it)
    import torch

    def cat(attr):
        return torch.cat([getattr(f, attr) for f in data])

    def offs(attr):
        n = torch.stack([getattr(f, attr)[1] for f in data])
        return torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(n, 0)])

    return FedData("femnist", cat("x_train"), cat("y_train"), offs("train_offsets"), cat("x_test"), cat("y_test"),
                   offs("test_offsets"), 62)
