"""Everything random about a round, drawn up front.

The vectorized engine and the per-client loop oracle consume the same
`RoundPlan`, so they can be compared exactly. Each round has its own
generators derived from (seed, round, stream): a resumed run draws exactly
what an uninterrupted one would, with no RNG state to checkpoint.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.base import InteractionData

STREAM_CLIENTS, STREAM_NEGATIVES, STREAM_SHUFFLE, STREAM_METHOD, STREAM_QUANT = range(5)
SETUP = 2**31  # the "round" index of draws made once per run (initial tables, device tiers)


def round_rng(seed: int, round_idx: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, round_idx, stream]))


def sample_clients(n_users: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """M users uniformly without replacement (sorted, so order carries no information)."""
    return np.sort(rng.choice(n_users, size=m, replace=False)).astype(np.int64)


class NegativeSampler:
    """Uniform negatives that avoid each user's training items (vectorized rejection)."""

    DENSE_LIMIT = 64 * 2**20  # user x item cells up to which a dense bitmap (1 byte each) is used

    def __init__(self, data: InteractionData):
        users, items = data.train_pairs()
        self.n_items = data.n_items
        self._dense = None
        if data.n_users * data.n_items <= self.DENSE_LIMIT:  # O(1) lookups; ML-1M: 22 MB
            self._dense = np.zeros((data.n_users, data.n_items), dtype=bool)
            self._dense[users, items] = True
        else:  # large catalogues: binary search in the sorted (user, item) keys
            self._keys = np.sort(users * data.n_items + items)

    def is_positive(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        if self._dense is not None:
            return self._dense[users, items]
        keys = users * self.n_items + items
        pos = np.searchsorted(self._keys, keys)
        pos = np.minimum(pos, len(self._keys) - 1)
        return self._keys[pos] == keys

    def sample(self, users: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        items = rng.integers(0, self.n_items, size=users.shape[0])
        bad = self.is_positive(users, items)
        while bad.any():  # a few passes: ML-1M density is ~4.5%
            items[bad] = rng.integers(0, self.n_items, size=int(bad.sum()))
            bad[bad] = self.is_positive(users[bad], items[bad])
        return items


@dataclass(frozen=True, eq=False)
class RoundPlan:
    clients: np.ndarray  # (M,) user ids
    n_pos: np.ndarray  # (M,) training positives per client (N_u in Eq. 2)
    sample_client: np.ndarray  # (S,) local client index 0..M-1 of each sample
    sample_item: np.ndarray  # (S,)
    sample_label: np.ndarray  # (S,) float32 1 = positive
    steps: np.ndarray  # (T, M, B) sample index or -1: step t of client m uses these samples
    n_steps: np.ndarray  # (M,) local steps of each client (E * batches per epoch)

    @property
    def n_clients(self) -> int:
        return int(self.clients.shape[0])


def plan_round(data: InteractionData, sampler: NegativeSampler, clients: np.ndarray, num_negatives: int,
               epochs: int, batch_size: int, seed: int, round_idx: int) -> RoundPlan:
    counts = data.train_counts()[clients]
    m = clients.shape[0]
    per_client = counts * (1 + num_negatives)
    first = np.cumsum(per_client) - per_client  # each client's block: its positives, then its negatives
    total = int(per_client.sum())
    s_client = np.repeat(np.arange(m), per_client)
    local_pos = np.arange(total) - first[s_client]
    is_pos = local_pos < counts[s_client]
    pos_rows = np.nonzero(is_pos)[0]
    # positives: the client's training items in order
    s_item = np.empty(total, dtype=np.int64)
    s_item[pos_rows] = data.train_items[data.train_indptr[clients][s_client[pos_rows]] + local_pos[pos_rows]]
    neg_rows = np.nonzero(~is_pos)[0]
    s_item[neg_rows] = sampler.sample(clients[s_client[neg_rows]], round_rng(seed, round_idx, STREAM_NEGATIVES))
    s_label = is_pos.astype(np.float32)

    n_batches = -(-per_client // batch_size)  # ceil
    n_steps = n_batches * epochs
    steps = np.full((max(int(n_steps.max(initial=0)), 1), m, batch_size), -1, dtype=np.int64)
    rng = round_rng(seed, round_idx, STREAM_SHUFFLE)
    for e in range(epochs):  # a loop over epochs (2), not over clients
        # a per-client random permutation: sort samples by client + a random fraction
        perm = np.argsort(s_client + rng.random(total))
        step = e * n_batches[s_client] + local_pos // batch_size
        steps[step, s_client, local_pos % batch_size] = perm
    return RoundPlan(clients, counts.astype(np.int64), s_client, s_item, s_label, steps, n_steps.astype(np.int64))
