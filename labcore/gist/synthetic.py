"""A small planted-partition citation graph in the shape of a Planetoid graph (smoke runs, no download).

Nodes belong to `classes` communities; an edge joins two nodes of the same class with probability
`p_in` and of different classes with `p_out`; every node has a bag of words drawn mostly from its class's
vocabulary. Split like Planetoid: 20 training nodes per class, 500 validation, 1000 test (scaled down).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .planetoid import Planetoid


def planted(n_nodes: int = 600, n_features: int = 200, classes: int = 4, p_in: float = 0.02, p_out: float = 0.002,
            words: int = 12, seed: int = 0) -> Planetoid:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n_nodes)
    same = labels[:, None] == labels[None, :]
    upper = np.triu(rng.random((n_nodes, n_nodes)) < np.where(same, p_in, p_out), 1)
    adj = sp.csr_matrix((upper | upper.T).astype(np.float32))
    vocab = np.array_split(rng.permutation(n_features), classes)
    rows, cols = [], []
    for v in range(n_nodes):
        own = rng.choice(vocab[labels[v]], size=words // 2)
        any_ = rng.integers(0, n_features, size=words - words // 2)
        idx = np.unique(np.r_[own, any_])
        rows += [v] * len(idx)
        cols += list(idx)
    feats = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n_nodes, n_features))
    train = np.concatenate([np.flatnonzero(labels == c)[:20] for c in range(classes)])
    rest = rng.permutation(np.setdiff1d(np.arange(n_nodes), train))
    n_val = min(150, len(rest) // 3)
    return Planetoid("synthetic", adj, feats, labels.astype(np.int64), np.sort(train), np.sort(rest[:n_val]),
                     np.sort(rest[n_val:]), "")
