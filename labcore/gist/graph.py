"""From a Planetoid graph to the tensors a GCN trains on.

* `normalized_adjacency`: Kipf's renormalisation D^-1/2 (A + I) D^-1/2 as a torch sparse matrix;
* `row_normalize`: every node's features sum to one (Kipf's and DGL's preprocessing);
* the features at a width that m divides, so every subnet gets the same number of input features: the Gaussian
  random projection of the authors' code (scikit-learn's `GaussianRandomProjection`, the default), or the bag of
  words padded with zero columns.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from . import planetoid
from .synthetic import planted


@functools.lru_cache(maxsize=8)
def _load(graph: str, data_env: str | None):
    if graph == "synthetic":
        return planted()
    return planetoid.load(graph)


def default_graph() -> str:
    """Cora when its files are found (no download attempt), else the small synthetic graph."""
    try:
        planetoid.find_folder("cora", download=False)
        return "cora"
    except planetoid.PlanetoidError:
        return "synthetic"


def load_graph(graph: str) -> planetoid.Planetoid:
    """Cached per process (and per $LABCORE_DATA)."""
    return _load(graph, os.environ.get("LABCORE_DATA"))


def normalized_adjacency(adj: sp.spmatrix) -> torch.Tensor:
    a = sp.csr_matrix(adj, dtype=np.float64) + sp.eye(adj.shape[0], format="csr")
    deg = np.asarray(a.sum(1)).ravel()
    d = sp.diags(np.where(deg > 0, deg ** -0.5, 0.0))
    a = (d @ a @ d).tocoo()
    idx = torch.from_numpy(np.vstack([a.row, a.col]).astype(np.int64))
    return torch.sparse_coo_tensor(idx, torch.from_numpy(a.data.astype(np.float32)), a.shape,
                                   check_invariants=False).coalesce()


def row_normalize(x: sp.spmatrix) -> sp.csr_matrix:
    s = np.asarray(x.sum(1)).ravel()
    return (sp.diags(np.where(s > 0, 1.0 / np.where(s > 0, s, 1), 0.0)) @ sp.csr_matrix(x)).tocsr()


def project(x: sp.spmatrix, width: int, seed: int) -> np.ndarray:
    from sklearn.random_projection import GaussianRandomProjection

    return np.asarray(GaussianRandomProjection(n_components=width, random_state=seed).fit_transform(x),
                      dtype=np.float32)


@dataclass(frozen=True, eq=False)
class GraphTensors:
    name: str
    adj: torch.Tensor  # normalised, sparse (N, N)
    x: torch.Tensor  # dense (N, F)
    y: torch.Tensor  # (N,) int64, -1 = no label
    train: torch.Tensor
    val: torch.Tensor
    test: torch.Tensor
    n_classes: int

    @property
    def n_features(self) -> int:
        return self.x.shape[1]

    @property
    def n_nodes(self) -> int:
        return self.x.shape[0]


@functools.lru_cache(maxsize=16)
def tensors(graph: str, projection_width: int | None, seed: int, data_env: str | None = None,
            pad_to: int | None = None) -> GraphTensors:
    """The graph's tensors; `projection_width=None` keeps the (row-normalised) bag of words, with zero columns
    appended up to `pad_to` (a zero column adds nothing to X·θ1 and its θ1 row only decays)."""
    g = load_graph(graph)
    x = row_normalize(g.features)
    dense = project(x, projection_width, seed) if projection_width else np.asarray(x.todense(), np.float32)
    if pad_to and pad_to > dense.shape[1]:
        dense = np.pad(dense, ((0, 0), (0, pad_to - dense.shape[1])))
    as_t = lambda a: torch.from_numpy(np.asarray(a, dtype=np.int64))  # noqa: E731
    return GraphTensors(g.name, normalized_adjacency(g.adj), torch.from_numpy(dense), as_t(g.labels),
                        as_t(g.train), as_t(g.val), as_t(g.test), g.n_classes)


def sparse_features(g: GraphTensors) -> GraphTensors:
    """The same graph with X as a sparse tensor (the baseline's bag of words: 1.3 % non-zero on Cora)."""
    x = g.x.to_sparse().coalesce()
    return GraphTensors(g.name, g.adj, x, g.y, g.train, g.val, g.test, g.n_classes)


def for_config(cfg) -> GraphTensors:
    if cfg.random_projection:
        return tensors(cfg.graph, cfg.n_features(), cfg.seed, os.environ.get("LABCORE_DATA"))
    return tensors(cfg.graph, None, 0, os.environ.get("LABCORE_DATA"), cfg.n_features())  # no seed in the features
