"""Everything random about a round, drawn up front.

The vectorized engine and the per-client loop oracle consume the same
`RoundPlan`, so they can be compared exactly. Each round has its own
generators derived from (seed, round, stream): a resumed run draws exactly
what an uninterrupted one would, with no RNG state to checkpoint.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..data.base import InteractionData
from .workspace import Workspace, take

STREAM_CLIENTS, STREAM_NEGATIVES, STREAM_SHUFFLE, STREAM_METHOD, STREAM_QUANT = range(5)
SETUP = 2**31  # the "round" index of draws made once per run (initial tables, device tiers)
SLOT_DTYPE = np.int32  # sample indices in the batch schedule (a round has far fewer than 2**31 samples)
ITEM_DTYPE = np.int32  # each sample's item (a catalogue has far fewer than 2**31 items): half of int64's memory


def round_rng(seed: int, round_idx: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, round_idx, stream]))


def sample_clients(n_users: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """M users uniformly without replacement (sorted, so order carries no information)."""
    return np.sort(rng.choice(n_users, size=m, replace=False)).astype(np.int64)


def rotating_clients(n_users: int, m: int, seed: int, round_idx: int) -> np.ndarray:
    """The CoLR authors' schedule: the users shuffled once (seeded), then M of that list a round in turn,
    wrapping around, so every user trains once every n_users / M rounds (sorted like `sample_clients`)."""
    perm = round_rng(seed, SETUP, STREAM_CLIENTS).permutation(n_users)
    start = (round_idx * m) % n_users
    return np.sort(perm[(start + np.arange(m)) % n_users]).astype(np.int64)


def round_clients(schedule: str, n_users: int, m: int, seed: int, round_idx: int) -> np.ndarray:
    """The cohort of round `round_idx`: "uniform" (fresh uniform draw, the FedAvg default), "rotating" or
    "poisson" (a cohort of random size, m expected)."""
    if schedule == "rotating":
        return rotating_clients(n_users, m, seed, round_idx)
    if schedule == "uniform":
        return sample_clients(n_users, m, round_rng(seed, round_idx, STREAM_CLIENTS))
    if schedule == "poisson":  # each user joins with q = m / n_users (differential privacy's sampling)
        from ..privacy.dp import poisson_sample
        rng = round_rng(seed, round_idx, STREAM_CLIENTS)
        while True:  # an empty draw (chance (1 - q)^n_users, about e^-m) is drawn again: a round needs a client
            clients = poisson_sample(n_users, m / n_users, rng)
            if len(clients):
                return clients
    raise ValueError(f"client_schedule={schedule!r}: allowed values are uniform, rotating, poisson")


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

    BLOCK = 1 << 20  # lookups per block: the search's temporaries are four int64 arrays of the block's size

    def is_positive(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        if self._dense is not None:
            from .kernels.sampling import dense_lookup

            return dense_lookup(self._dense, users, items, np.empty(users.shape[0], dtype=bool))
        # a block at a time: the whole-array temporaries were 120 MB at Pinterest's full participation, the
        # round's memory peak (the previous round's update table is still resident while the plan is drawn)
        out = np.empty(users.shape[0], dtype=bool)
        for a in range(0, users.shape[0], self.BLOCK):
            keys = users[a:a + self.BLOCK] * self.n_items + items[a:a + self.BLOCK]
            pos = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
            out[a:a + self.BLOCK] = self._keys[pos] == keys
        return out

    def sample(self, users: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A uniform non-positive item for each of `users` (one entry per negative)."""
        items = rng.integers(0, self.n_items, size=users.shape[0])
        redo = np.flatnonzero(self.is_positive(users, items))
        while redo.size:  # a few passes: ML-1M density is ~4.5%. Redraws go to the same samples in the same
            # order as a boolean mask over all samples would send them, but each pass costs only its own size
            items[redo] = rng.integers(0, self.n_items, size=redo.size)
            redo = redo[self.is_positive(users[redo], items[redo])]
        return items

    def sample_grouped(self, users: np.ndarray, starts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """`sample` of users[m] repeated starts[m + 1] - starts[m] times, the same draws, without making that
        repeated array (32 MB at ML-1M's full participation) when the bitmap answers: each rejection pass is then
        one compiled loop that places the redraws, checks them and keeps the ones to draw again."""
        if self._dense is None:
            return self.sample(np.repeat(users, np.diff(starts)), rng)
        from .kernels.sampling import dense_hits_grouped, redraw_dense

        # int32 draws: numpy's bounded integers below 2^32 come from the same stream whatever the dtype (the same
        # values as int64's), at half the memory
        items = rng.integers(0, self.n_items, size=int(starts[-1]), dtype=ITEM_DTYPE)
        redo, redo_user = dense_hits_grouped(self._dense, users, starts, items)
        n = redo.size
        while n:
            n = redraw_dense(self._dense, redo[:n], redo_user[:n], items,
                             rng.integers(0, self.n_items, size=n, dtype=ITEM_DTYPE))
        return items


@dataclass(frozen=True, eq=False)
class RoundPlan:
    """What the cohort trains on in one round.

    The batch schedule is stored by its active (step, client) rows only: clients ordered by their
    number of local steps (most first, `order`), so the clients still training at step t are a
    prefix; rows offsets[t]:offsets[t+1] are step t and `slots[row]` are that row's sample indices
    (-1 = padding). `steps` is the same schedule as a dense (T, M, B) array, for the per-client
    loop oracle and tests: it is clients x steps x batch, so the batched engine never builds it.
    """

    clients: np.ndarray  # (M,) user ids
    n_pos: np.ndarray  # (M,) training positives per client (N_u in Eq. 2)
    # (S,) local client index 0..M-1 of each sample (int32), or None where the samples are grouped by client (`first`):
    # then made when first read (`sample_client`); the compiled trainer reads `first` instead (19 MB at Pinterest's
    # full participation, at the round's memory peak)
    stored_client: np.ndarray | None
    sample_item: np.ndarray  # (S,) int32
    sample_label: np.ndarray  # (S,) float32 1 = positive
    n_steps: np.ndarray  # (M,) local steps of each client (E * batches per epoch)
    order: np.ndarray  # (M,) clients by decreasing n_steps (stable)
    n_active: np.ndarray  # (T,) clients still training at step t
    offsets: np.ndarray  # (T + 1,) first row of step t
    slots: np.ndarray  # (R, B) int32 sample index or -1, R = sum of n_steps
    # what the plan's maker knows (None / -1: found from the arrays above when needed)
    first: np.ndarray | None = None  # (M + 1,) client m's samples are first[m]:first[m + 1]
    n_filled: int = -1  # the schedule's slots that hold a sample

    @property
    def n_clients(self) -> int:
        return int(self.clients.shape[0])

    @cached_property
    def sample_client(self) -> np.ndarray:
        """(S,) local client index 0..M-1 of each sample (int32)."""
        if self.stored_client is not None:
            return self.stored_client
        return np.repeat(np.arange(self.n_clients, dtype=np.int32), np.diff(self.first))

    @property
    def batch_size(self) -> int:
        return int(self.slots.shape[1])

    @cached_property
    def steps(self) -> np.ndarray:
        """(T, M, B) sample index or -1: step t of client m uses these samples (dense; for the loop oracle)."""
        T, B = self.n_active.shape[0], self.slots.shape[1]
        steps = np.full((T, self.n_clients, B), -1, dtype=np.int64)
        row_t = np.repeat(np.arange(T), self.n_active)
        row_m = np.arange(self.offsets[-1]) - self.offsets[row_t]
        steps[row_t, self.order[row_m]] = self.slots
        return steps

    def step(self, t: int) -> np.ndarray:
        """(M, B) sample index or -1: `steps[t]` alone, without building the whole dense schedule."""
        out = np.full((self.n_clients, self.slots.shape[1]), -1, dtype=np.int64)
        if t < self.n_active.shape[0]:
            lo, n = int(self.offsets[t]), int(self.n_active[t])
            out[self.order[:n]] = self.slots[lo: lo + n]
        return out


def schedule_rows(n_steps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """order, n_active (T,), offsets (T + 1,) and each client's position in `order` for a step count per client."""
    T = max(int(n_steps.max(initial=0)), 1)
    order = np.argsort(-n_steps, kind="stable")
    n_active = (n_steps[order][None, :] > np.arange(T)[:, None]).sum(1) if len(n_steps) else np.zeros(T, np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_active)]).astype(np.int64)
    position = np.empty_like(order)
    position[order] = np.arange(order.shape[0])
    return order, n_active, offsets, position


def plan_round(data: InteractionData, sampler: NegativeSampler, clients: np.ndarray, num_negatives: int,
               epochs: int, batch_size: int, seed: int, round_idx: int, workspace: Workspace | None = None
               ) -> RoundPlan:
    """The round's plan. workspace: its per-sample arrays and schedule are made in that workspace's buffers,
    valid until the next plan made in it, and its shuffle keys in the buffer of the update table ("W")."""
    from .kernels import sampling as K
    from .threads import compiled_threads

    with compiled_threads():
        return _plan_round(K, data, sampler, clients, num_negatives, epochs, batch_size, seed, round_idx,
                           workspace)


def _plan_round(K, data, sampler, clients, num_negatives, epochs, batch_size, seed, round_idx,
                workspace) -> RoundPlan:
    from .threads import n_threads

    counts = data.train_counts()[clients].astype(np.int64)
    per_client = counts * (1 + num_negatives)
    first = np.concatenate([[0], np.cumsum(per_client)]).astype(np.int64)  # client m: its positives, then negatives
    total = int(first[-1])
    neg_first = np.concatenate([[0], np.cumsum(counts * num_negatives)]).astype(np.int64)
    s_item = take(workspace, "s_item", total, ITEM_DTYPE)
    s_label = take(workspace, "s_label", total, np.float32)
    K.layout_samples(first, counts, data.train_indptr[clients].astype(np.int64), data.train_items, s_item, s_label)
    neg_item = sampler.sample_grouped(clients.astype(np.int64), neg_first,
                                      round_rng(seed, round_idx, STREAM_NEGATIVES))
    K.place_negatives(first, counts, neg_first, neg_item, s_item)
    del neg_item  # freed before the schedule and the shuffle keys are made (15 MiB at Pinterest's full
    # participation, where the previous round's update table is still resident: the round's memory peak)

    n_batches = -(-per_client // batch_size)  # ceil
    n_steps = (n_batches * epochs).astype(np.int64)
    order, n_active, offsets, position = schedule_rows(n_steps)
    # int32: the round's largest array (batches are padded to B), and a sample index fits
    # every slot is written by the shuffle below, the padding of each client's last batch an epoch too (-1)
    slots = take(workspace, "slots", (int(offsets[-1]), batch_size), SLOT_DTYPE)
    rng = round_rng(seed, round_idx, STREAM_SHUFFLE)
    # one buffer for every epoch's keys; in a workspace, the update table's: the last round's table is done with
    # when the next plan is drawn, and this round's is made after the keys are (no memory of their own)
    keys = take(workspace, "W", total, np.float64)
    for e in range(epochs):  # a loop over epochs (2), not over clients
        # a per-client random permutation: sort samples by client + a random fraction (the kernel adds the client)
        rng.random(out=keys)
        if not K.shuffle_into_slots(n_threads(), keys, first, n_batches, e, offsets, position, batch_size,
                                    slots):
            s_client = np.repeat(np.arange(len(clients), dtype=np.int32), per_client)
            keys += s_client  # = s_client + u to the bit
            perm = np.argsort(keys)  # a tie (never seen in practice): the global sort decides, as it always did
            local_pos = np.arange(total) - first[s_client]
            step = e * n_batches[s_client] + local_pos // batch_size
            slots[offsets[step] + position[s_client], local_pos % batch_size] = perm
    return RoundPlan(clients, counts, None, s_item, s_label, n_steps, order, n_active, offsets, slots, first,
                     total * epochs)
