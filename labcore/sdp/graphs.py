"""Graphs for the SDP lab: Cora's citation graph, the Last.fm trust network, random graphs, Z2 synchronization.

Each loader returns a symmetric 0/1 scipy CSR adjacency (no self-loops, duplicates merged). Real files are
looked for through `labcore.data.locations.candidate_dirs` ($LABCORE_DATA/<name>, then ./data/<name>); Cora's
graph can also be downloaded from the Planetoid release with pooch (checked against its sha256).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..data.locations import candidate_dirs, data_home

CORA_GRAPH = "ind.cora.graph"
CORA_URL = "https://github.com/kimiyoung/planetoid/raw/master/data/ind.cora.graph"
CORA_SHA256 = "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d"  # tkipf/gcn @ 39a4089
LASTFM_TRUST = "trustnetwork.txt"
GRAPHS = ("random", "cora", "lastfm")


class GraphNotFound(FileNotFoundError):
    pass


def _find(dataset: str, filename: str, root=None) -> Path | None:
    for folder, _ in candidate_dirs(dataset, root):
        if (folder / filename).is_file():
            return folder / filename
    return None


def adjacency_from_edges(rows, cols, n: int | None = None) -> sp.csr_matrix:
    """Undirected 0/1 adjacency from an edge list (either direction, repeats and self-loops dropped)."""
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    n = int(max(rows.max(initial=-1), cols.max(initial=-1)) + 1) if n is None else n
    A = sp.coo_matrix((np.ones(2 * rows.size), (np.r_[rows, cols], np.r_[cols, rows])), shape=(n, n)).tocsr()
    A.data[:] = 1.0  # duplicates were summed; an edge is an edge
    A.sort_indices()
    return A


def load_planetoid_graph(path: Path | str) -> sp.csr_matrix:
    """A Planetoid `ind.<name>.graph` file: a pickled dict node -> list of neighbours (Python 2 pickle), read
    through the Planetoid loader's restricted unpickler (it refuses any other class, naming the file)."""
    from ..gist.planetoid import read_pickle

    adj = read_pickle(path)
    if not isinstance(adj, dict):
        raise ValueError(f"{path}: a Planetoid graph file holds a dict of neighbour lists, not {type(adj).__name__}")
    n = max(max(adj), max((max(v) for v in adj.values() if len(v)), default=0)) + 1
    rows = np.concatenate([np.full(len(v), k, dtype=np.int64) for k, v in adj.items()])
    cols = np.concatenate([np.asarray(v, dtype=np.int64) for v in adj.values()])
    return adjacency_from_edges(rows, cols, n)


def cora(root=None, download: bool = False) -> sp.csr_matrix:
    """Cora's citation graph: 2,708 nodes, 5,278 undirected edges."""
    path = _find("planetoid", CORA_GRAPH, root)
    if path is None and download:
        import pooch

        path = Path(pooch.retrieve(CORA_URL, known_hash=f"sha256:{CORA_SHA256}", fname=CORA_GRAPH,
                                   path=data_home() / "planetoid"))
    if path is None:
        where = ", ".join(str(p) for p, _ in candidate_dirs("planetoid", root))
        raise GraphNotFound(f"{CORA_GRAPH} not found in: {where}. Set LABCORE_DATA to a folder holding "
                            f"planetoid/{CORA_GRAPH}, or call cora(download=True) to fetch it from {CORA_URL}")
    return load_planetoid_graph(path)


def load_trust_network(path: Path | str) -> sp.csr_matrix:
    """Last.fm (HetRec) `trustnetwork.txt`: `user<TAB>user` per line, 1-based ids, both directions listed."""
    pairs = np.loadtxt(path, dtype=np.int64, ndmin=2)
    if pairs.size == 0:
        raise ValueError(f"{path}: no edges")
    return adjacency_from_edges(pairs[:, 0] - 1, pairs[:, 1] - 1)


def lastfm(root=None) -> sp.csr_matrix:
    """The Last.fm social (trust) network: 1,892 users, 12,717 undirected edges."""
    path = _find("lastfm", LASTFM_TRUST, root)
    if path is None:
        where = ", ".join(str(p) for p, _ in candidate_dirs("lastfm", root))
        raise GraphNotFound(f"{LASTFM_TRUST} not found in: {where}. Set LABCORE_DATA to a folder holding "
                            f"lastfm/{LASTFM_TRUST} (HetRec 2011 Last.fm-2K, as in LightGCN-PyTorch's data)")
    return load_trust_network(path)


def random_graph(n: int, avg_degree: float = 4.0, seed: int = 0, weighted: bool = False) -> sp.csr_matrix:
    """Erdos-Renyi G(n, p) with p = avg_degree / (n - 1); weights uniform in (0, 1] if `weighted`."""
    if n < 2:
        raise ValueError(f"n={n!r} is invalid: a graph needs at least 2 nodes")
    if not 0 < avg_degree <= n - 1:
        raise ValueError(f"avg_degree={avg_degree!r} is invalid: allowed range is (0, n - 1 = {n - 1}]")
    rng = np.random.default_rng(seed)
    p = avg_degree / (n - 1)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    A = adjacency_from_edges(iu[keep], ju[keep], n)
    if weighted:
        U = sp.triu(A, 1).tocoo()
        w = 1.0 - rng.random(U.nnz)
        A = sp.coo_matrix((np.r_[w, w], (np.r_[U.row, U.col], np.r_[U.col, U.row])), shape=(n, n)).tocsr()
    return A


def synchronization(n: int, noise: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Z2 synchronization: observe Y = z z^T / n + noise * GOE / sqrt(n); the SDP is min <-Y, X>, diag X = 1.

    Returns (C = -Y with zero diagonal, the hidden signs z)."""
    rng = np.random.default_rng(seed)
    z = rng.choice([-1.0, 1.0], size=n)
    G = rng.normal(size=(n, n))
    G = (G + G.T) / np.sqrt(2)
    Y = np.outer(z, z) / n + noise * G / np.sqrt(n)
    np.fill_diagonal(Y, 0.0)
    return -Y, z


def load_graph(name: str, n: int = 100, avg_degree: float = 4.0, seed: int = 0, root=None) -> sp.csr_matrix:
    if name == "cora":
        return cora(root)
    if name == "lastfm":
        return lastfm(root)
    if name == "random":
        return random_graph(n, avg_degree, seed)
    raise ValueError(f"graph={name!r} is invalid: allowed values are {', '.join(GRAPHS)}")
