"""The FAIR lesson's metrics.

NDCG@K "over all items not present in the training set" (the paper, section 6.1;
the reference code's `sklearn.metrics.ndcg_score(k=20)` with the user's training
items scored -inf): each user's test items are the relevant ones, every other
item that is not in the user's training list competes for the top K.

    DCG@K  = sum over ranks r < K of [item at r is a test item] / log2(r + 2)
    IDCG@K = sum over r < min(K, #test items) of 1 / log2(r + 2)

and the reported number is the mean of DCG / IDCG over users with a test item.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch


def ndcg_at_k(score_fn: Callable[[torch.Tensor], torch.Tensor], n_items: int, train_indptr: np.ndarray,
              train_items: np.ndarray, test_indptr: np.ndarray, test_items: np.ndarray, k: int = 20,
              chunk: int = 8) -> float:
    """Mean NDCG@k; score_fn(user ids) -> (len(users), n_items) scores (computed a few users at a time)."""
    users = np.nonzero(np.diff(test_indptr) > 0)[0]
    if users.size == 0:
        return float("nan")
    disc = 1.0 / np.log2(np.arange(k) + 2.0)
    total = 0.0
    for start in range(0, users.size, chunk):
        u = users[start:start + chunk]
        s = score_fn(torch.from_numpy(u)).clone()
        rows, cols = _pairs(u, train_indptr, train_items)
        s[rows, cols] = -torch.inf
        top = torch.topk(s, min(k, n_items), dim=1).indices.numpy()
        rel = np.zeros(top.shape, dtype=bool)
        for j, user in enumerate(u):
            test = test_items[test_indptr[user]:test_indptr[user + 1]]
            rel[j] = np.isin(top[j], test, assume_unique=True)
            n_rel = min(k, test.size)
            total += float(rel[j] @ disc[:top.shape[1]]) / float(disc[:n_rel].sum())
    return total / users.size


def _pairs(users: np.ndarray, indptr: np.ndarray, items: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    counts = indptr[users + 1] - indptr[users]
    rows = np.repeat(np.arange(users.size), counts)
    cols = np.concatenate([items[indptr[u]:indptr[u + 1]] for u in users]) if users.size else np.zeros(0, np.int64)
    return torch.from_numpy(rows), torch.from_numpy(cols)


def mse(pred: torch.Tensor, target: torch.Tensor) -> float:
    return float(((pred - target) ** 2).mean())


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return float((logits.argmax(-1) == labels).double().mean())
