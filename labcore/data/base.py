"""The one in-memory shape every recommendation loader returns.

Implicit feedback, leave-one-out evaluation: each user has a set of training
items (CSR rows), one held-out test item and 99 sampled negatives it is ranked
against (HR@K / NDCG@K as in NCF and the CoLR paper).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class InteractionData:
    name: str
    n_users: int
    n_items: int
    train_indptr: np.ndarray  # int64, shape (n_users + 1,)
    train_items: np.ndarray  # int64, items of user u are train_items[indptr[u]:indptr[u+1]], sorted
    test_items: np.ndarray  # int64, shape (n_users,), -1 where a user has no test item
    test_negatives: np.ndarray  # int64, shape (n_users, n_neg); rows of -1 where no test item
    notes: str = ""  # how the split was made (shown on figure cards and in the app)
    meta: dict = field(default_factory=dict)

    @property
    def n_train(self) -> int:
        return int(self.train_items.shape[0])

    def user_items(self, u: int) -> np.ndarray:
        return self.train_items[self.train_indptr[u] : self.train_indptr[u + 1]]

    def train_counts(self) -> np.ndarray:
        return np.diff(self.train_indptr)

    def train_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(users, items) of every training interaction."""
        users = np.repeat(np.arange(self.n_users, dtype=np.int64), self.train_counts())
        return users, self.train_items

    def summary(self) -> dict:
        return {
            "dataset": self.name,
            "users": self.n_users,
            "items": self.n_items,
            "train interactions": self.n_train,
            "test users": int((self.test_items >= 0).sum()),
            "negatives per test": int(self.test_negatives.shape[1]),
        }
