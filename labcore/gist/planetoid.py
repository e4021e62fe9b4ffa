"""Planetoid citation graphs (Cora, CiteSeer, PubMed) from the `ind.<name>.*` files, with Kipf's semantics.

Files (Yang et al. 2016; the copies in tkipf/gcn are byte-identical): `x`, `tx`, `allx` (scipy CSR
features of the labelled training nodes, the test nodes, all non-test nodes), `y`, `ty`, `ally` (one-hot
labels), `graph` (dict node -> neighbour list) and `test.index` (one test node id per line). They are
Python 2 pickles, read with `encoding="latin1"`.

Kipf's `load_data` (gcn/utils.py), reproduced here:
* the test rows `tx` belong to the node ids listed in `test.index` (not in order): features and labels
  are stacked as `allx; tx` and then the test block is permuted into place;
* CiteSeer has 15 ids in the test range that are not in `test.index` (isolated nodes without features):
  the test block is zero-padded to the full range, so those nodes have zero features and no label;
* train = the first `len(y)` nodes, validation = the next 500, test = the sorted `test.index` ids;
* the adjacency is the undirected simple graph of `graph` (duplicates collapse, file self-loops kept).

Search order: the `root` argument, `$LABCORE_DATA/planetoid`, `./data/planetoid`, the lab's data folder;
then a download of the official files with pooch (sha256-checked), or an error naming the missing file.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..data.locations import candidate_dirs, data_home

GRAPHS = ("cora", "citeseer", "pubmed")
PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
FOLDER = "planetoid"
BASE_URL = "https://github.com/kimiyoung/planetoid/raw/master/data/"
N_VAL = 500

# sha256 of the official files (checked on the shared copies, see the data README)
SHA256 = {
    "ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    "ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
    "ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
    "ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
    "ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    "ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
    "ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    "ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
    "ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
    "ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
    "ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
    "ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
    "ind.citeseer.test.index": "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
    "ind.pubmed.x": "fbe9cb5c47200d1b7769a26e579be3b7130b556831f9d850e77c4c74f2599b33",
    "ind.pubmed.y": "e6c807633307a07ed659249006536a147c7999c797f11a2560752990181b41b3",
    "ind.pubmed.tx": "4eb5f5d0f30f26497eb0ac6ac9719d09c67e284f1ed0385c93f3ef27a671da3d",
    "ind.pubmed.ty": "ee2e0d4819d9fbcc403689c3bf2e49face401b605932f093bc58ab6461130fdd",
    "ind.pubmed.ally": "0c37bbe3b5014ec365e9d393cf4791925e5ed94fb194305d74f064a8d7b50f0e",
    "ind.pubmed.graph": "5b89f0036ca22909471f1e6558eb42fa06e0c730a577bde5b058b40638f81dc9",
    "ind.pubmed.test.index": "b101d421688bbaecbd82e8a18f1e282378d6830f3a37666f28ebc47f844341b5",
    # ind.pubmed.allx: not pinned (no verified copy was available); a download of it is refused.
}


class PlanetoidError(FileNotFoundError, ValueError):
    """A Planetoid file is missing or malformed; the message says which file and where to put it."""


@dataclass(frozen=True, eq=False)
class Planetoid:
    """One graph: sparse binary adjacency (no added self-loops), raw features, labels and the split."""

    name: str
    adj: sp.csr_matrix  # (N, N) symmetric, 0/1
    features: sp.csr_matrix  # (N, F) as in the files (bag of words; PubMed TF-IDF)
    labels: np.ndarray  # (N,) int64 class ids; -1 for nodes without a label (CiteSeer's isolated ones)
    train: np.ndarray  # node ids
    val: np.ndarray
    test: np.ndarray
    folder: str = ""

    @property
    def n_nodes(self) -> int:
        return self.adj.shape[0]

    @property
    def n_features(self) -> int:
        return self.features.shape[1]

    @property
    def n_classes(self) -> int:
        return int(self.labels.max()) + 1

    @property
    def n_edges(self) -> int:
        """Undirected edges without self-loops."""
        a = self.adj.tocoo()
        return int(((a.row < a.col) & (a.data != 0)).sum())

    def summary(self) -> dict:
        return {"graph": self.name, "nodes": self.n_nodes, "features": self.n_features, "classes": self.n_classes,
                "edges": self.n_edges, "train": len(self.train), "val": len(self.val), "test": len(self.test)}


def file_name(graph: str, part: str) -> str:
    return f"ind.{graph}.{part}"


def check_graph(graph: str) -> None:
    if graph not in GRAPHS:
        raise PlanetoidError(f"graph={graph!r} is invalid: allowed values are {', '.join(GRAPHS)}")


def find_folder(graph: str, root=None, download: bool = True) -> Path:
    """The first folder holding all files of `graph`; else download them; else a precise error."""
    check_graph(graph)
    needed = [file_name(graph, p) for p in PARTS] + [file_name(graph, "test.index")]
    searched = candidate_dirs(FOLDER, root)
    for folder, _ in searched:
        if all((folder / f).is_file() for f in needed):
            return folder
    # the folder that has most of them tells the user what exactly is missing
    best = max(searched, key=lambda fw: sum((fw[0] / f).is_file() for f in needed))
    missing = [f for f in needed if not (best[0] / f).is_file()]
    if download:
        try:
            return _download(graph, needed)
        except Exception as e:  # no network, or a file we cannot verify: fall through to the precise error
            why = f" (download failed: {type(e).__name__}: {e})"
    else:
        why = ""
    where = "; ".join(f"{p} ({w})" for p, w in searched)
    hint = ""
    if graph == "pubmed" and "ind.pubmed.allx" in missing:
        hint = (" PubMed needs ind.pubmed.allx (features of the 18,717 non-test nodes, about 30 MB), which is not"
                " in the local copy; get it from " + BASE_URL + "ind.pubmed.allx and put it beside the other"
                " ind.pubmed.* files. Cora and CiteSeer work without it.")
    raise PlanetoidError(f"Planetoid graph {graph!r}: missing {', '.join(missing)} in {best[0]}{why}. "
                         f"Searched: {where}. Put the ind.{graph}.* files in one of these folders or set "
                         f"$LABCORE_DATA to a folder holding {FOLDER}/.{hint}")


def _download(graph: str, needed: list[str]) -> Path:
    import pooch

    target = data_home() / FOLDER
    for f in needed:
        if (target / f).is_file():
            continue
        if f not in SHA256:
            raise PlanetoidError(f"{f} has no pinned sha256 in labcore.gist.planetoid.SHA256; not downloading it")
        pooch.retrieve(BASE_URL + f, known_hash=f"sha256:{SHA256[f]}", fname=f, path=target, progressbar=True)
    return target


def _numpy_reconstruct():
    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _reconstruct
    return _reconstruct


# The only classes the Planetoid files name (module, name as pickled by Python 2 / SciPy of 2016, and as today's
# pickles name them), each mapped to the object it means. Nothing else is ever imported while reading a file.
_ALLOWED = {
    ("numpy", "ndarray"): lambda: np.ndarray,
    ("numpy", "dtype"): lambda: np.dtype,
    ("_codecs", "encode"): lambda: __import__("codecs").encode,  # Python 3's protocol-2 pickle of an array's bytes
    ("numpy.core.multiarray", "_reconstruct"): _numpy_reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _numpy_reconstruct,
    # SciPy's old module paths (deprecated, gone in SciPy 2.0) and the current ones: the class from scipy.sparse
    ("scipy.sparse.csr", "csr_matrix"): lambda: sp.csr_matrix,
    ("scipy.sparse._csr", "csr_matrix"): lambda: sp.csr_matrix,
    ("collections", "defaultdict"): lambda: __import__("collections").defaultdict,
    ("__builtin__", "list"): lambda: list,
    ("builtins", "list"): lambda: list,
}


class PlanetoidUnpickler(pickle.Unpickler):
    """Reads a Planetoid pickle, refusing any class outside `_ALLOWED` (a pickle names the functions it calls:
    a file planted in a shared data folder could otherwise run any code)."""

    def __init__(self, file, path: Path | str):
        super().__init__(file, encoding="latin1")
        self.path = path

    def find_class(self, module, name):
        make = _ALLOWED.get((module, name))
        if make is None:
            raise PlanetoidError(f"{self.path}: refusing to load {module}.{name}: a Planetoid file holds only numpy "
                                 "arrays, scipy CSR matrices, lists and dicts (the file is not a Planetoid "
                                 "file, or was tampered with)")
        return make()


def read_pickle(path: Path | str):
    """One Planetoid `ind.*` file through `PlanetoidUnpickler`; any failure names the file."""
    with open(path, "rb") as fh:
        try:
            return PlanetoidUnpickler(fh, path).load()
        except PlanetoidError:
            raise
        except Exception as e:
            raise PlanetoidError(f"{path} is not a Planetoid pickle ({type(e).__name__}: {e})") from e


def _dense_labels(y) -> np.ndarray:
    return np.asarray(y.todense() if sp.issparse(y) else y)


def load(graph: str = "cora", root=None, download: bool = True) -> Planetoid:
    """Kipf's `load_data(graph)`: features, labels, adjacency and the standard split."""
    folder = find_folder(graph, root, download)
    obj = {p: read_pickle(folder / file_name(graph, p)) for p in PARTS}
    x, y, tx, ty, allx, ally, g = (obj[p] for p in PARTS)
    test_file = folder / file_name(graph, "test.index")
    test_idx_reorder = np.array([int(line) for line in test_file.read_text().split()], dtype=np.int64)
    test_idx_range = np.sort(test_idx_reorder)
    tx, ty = sp.csr_matrix(tx), _dense_labels(ty)
    if len(test_idx_reorder) != tx.shape[0] or len(test_idx_reorder) != ty.shape[0]:
        raise PlanetoidError(f"{test_file}: {len(test_idx_reorder)} test ids but tx has {tx.shape[0]} rows and "
                             f"ty {ty.shape[0]}")
    lo, hi = int(test_idx_range.min()), int(test_idx_range.max())
    if hi - lo + 1 > len(test_idx_range):
        # CiteSeer: ids in the test range without a row in tx are isolated nodes; zero-pad them (Kipf)
        tx_ext = sp.lil_matrix((hi - lo + 1, tx.shape[1]), dtype=tx.dtype)
        tx_ext[test_idx_range - lo, :] = tx
        tx = tx_ext.tocsr()
        ty_ext = np.zeros((hi - lo + 1, ty.shape[1]), dtype=ty.dtype)
        ty_ext[test_idx_range - lo, :] = ty
        ty = ty_ext
    features = sp.vstack((sp.csr_matrix(allx), tx)).tolil()
    features[test_idx_reorder, :] = features[test_idx_range, :]
    onehot = np.vstack((_dense_labels(ally), ty))
    onehot[test_idx_reorder, :] = onehot[test_idx_range, :]
    labels = np.where(onehot.sum(1) > 0, onehot.argmax(1), -1).astype(np.int64)
    n = features.shape[0]
    adj = adjacency(g, n)
    n_train = _dense_labels(y).shape[0]
    return Planetoid(graph, adj, features.tocsr().astype(np.float32), labels,
                     np.arange(n_train), np.arange(n_train, min(n_train + N_VAL, n)), test_idx_range, str(folder))


def adjacency(graph: dict, n: int) -> sp.csr_matrix:
    """The undirected simple graph of a dict of neighbour lists, as a 0/1 CSR matrix (networkx semantics)."""
    rows, cols = [], []
    for u, nbrs in graph.items():
        for v in nbrs:
            rows.append(int(u))
            cols.append(int(v))
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    size = max(n, int(rows.max(initial=-1)) + 1, int(cols.max(initial=-1)) + 1)
    a = sp.coo_matrix((np.ones(len(rows) * 2, np.float32), (np.r_[rows, cols], np.r_[cols, rows])),
                      shape=(size, size)).tocsr()
    a.data[:] = 1.0  # duplicates (u->v and v->u both listed) collapse to one edge
    return a[:n, :n].tocsr() if size > n else a
