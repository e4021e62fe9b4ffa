"""Local training of a whole cohort of clients at once (the hot path).

Model: matrix factorization with logits x_ui = p_u . q_i and binary
cross-entropy on positives and sampled negatives (NCF / CoLR). The item
embedding a client trains is either

* full:      q_i = Q_i + D_i           (FedMF, SVD, Top-K: D is the local update)
* low-rank:  q_i = Q_i + B a_i         (CoLR / SCoLR: only A = [a_i] is trained)

Update rule, as in the CoLR reference code (embeddings with
`scale_grad_by_freq=True`, loss averaged over the batch, learning rate
multiplied by the batch size, L2 on the embeddings the batch uses): every
row a batch touches moves by `lr` times the *mean over its occurrences* of
its per-sample gradient. Closed-form gradients, no Python loop over clients:
`train_cohort` (the engine's) walks each client's steps in one compiled pass
(`fused_kernel`); `train_cohort_batched` takes one batched torch step for all
clients at a time (the former engine: the benchmark baseline, and bit for bit
the dense layout of `loop_oracle`).

Rows are the (client, item) pairs the cohort touches, and nothing else: a
client's update is zero on every item outside its positives and sampled
negatives, so the result is a `RowUpdate` (the touched rows, sorted by client
then item) and memory and time grow with the interactions touched, not with
clients x items. `loop_oracle.py` computes the same thing client by client with
autograd (test oracle) and keeps the former dense layout (benchmark baseline).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
from numba import njit

from .sampling import RoundPlan
from .workspace import Workspace, take

# inv_count by one bincount over (row, item) when it has at most this many bins; by a per-row sort otherwise
_BINCOUNT_LIMIT = 1 << 24
# Q rows gathered for all steps at once up to this many floats; step by step beyond (full participation)
_GATHER_ALL_LIMIT = 1 << 25
# floats of one (clients, batch, d) temporary of a training step: a step's clients are taken in blocks this size
# (ML-1M d=64, B=256: 512 clients; full participation needs 12 blocks a step instead of 400 MB temporaries)
_STEP_FLOATS = 1 << 23


@dataclass(frozen=True, eq=False)
class LowRank:
    """Frozen B shared by the cohort, which of its columns each client trains, and A's lr scale."""

    B: torch.Tensor  # (d, r)
    col_mask: torch.Tensor  # (M, r) 1 where client m trains column j (SCoLR's S_u), else 0
    grad_scale: torch.Tensor  # (M,) e.g. sqrt(r_u / d)


@dataclass(frozen=True, eq=False)
class RowUpdate:
    """Per-client updates of an (N, width) table, stored by the rows the clients touched.

    Row j is client `client[j]`'s update of item `item[j]`; rows are sorted by client, then item,
    and `indptr[m]:indptr[m + 1]` are client m's. Every other (client, item) row is exactly zero.
    """

    n_clients: int
    n_items: int
    client_: torch.Tensor | None  # (R,) int64, or None when made from row offsets (`from_offsets`)
    item: torch.Tensor  # (R,) int64
    values: torch.Tensor  # (R, width)
    # (M, ceil(N / 8)) uint8: bit i % 8 of byte i // 8 of row m says client m has a row of item i (the item mask's
    # wire format), when the maker already had it (the trainer's touched rows); else None
    item_bits: np.ndarray | None = None
    # (R,) bool: rows a client did not touch that a message put values on anyway (a noisy link moved zeros of
    # Top-K's padding). They count in sums, not as touched (`touched`, the item mean's count). None: there are none
    received: np.ndarray | None = None

    @staticmethod
    def from_offsets(n_clients: int, n_items: int, indptr: np.ndarray, item: torch.Tensor,
                     values: torch.Tensor, item_bits: np.ndarray | None = None) -> "RowUpdate":
        """Rows given by each client's offsets: `client` is made on first use. The trainer's rows come this way,
        so the client column (8 bytes a row, 37 MiB at Pinterest's full participation) is not yet in memory
        during local training, the round's memory peak."""
        rows = RowUpdate(n_clients, n_items, None, item, values, item_bits)
        rows.__dict__["indptr"] = indptr  # the cached_property's slot (a frozen dataclass still has a __dict__)
        return rows

    @cached_property
    def client(self) -> torch.Tensor:
        if self.client_ is not None:
            return self.client_
        return torch.from_numpy(np.repeat(np.arange(self.n_clients, dtype=np.int64), np.diff(self.indptr)))

    @property
    def width(self) -> int:
        return int(self.values.shape[1])

    @property
    def dtype(self) -> torch.dtype:
        return self.values.dtype

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.n_clients, self.n_items, self.width

    @cached_property
    def indptr(self) -> np.ndarray:
        return np.searchsorted(self.client.numpy(), np.arange(self.n_clients + 1)).astype(np.int64)

    def with_values(self, values: torch.Tensor) -> "RowUpdate":
        if self.client_ is None and "client" not in self.__dict__ and self.received is None:  # keep it unmade
            return RowUpdate.from_offsets(self.n_clients, self.n_items, self.indptr, self.item, values, self.item_bits)
        return RowUpdate(self.n_clients, self.n_items, self.client, self.item, values, self.item_bits, self.received)

    def with_received(self, client: np.ndarray, flat: np.ndarray, value: np.ndarray) -> "RowUpdate":
        """These rows and the received-only rows that hold `value` at (client, flat = item * width + column),
        positions off the touched rows, inserted in client-then-item order."""
        if not len(client):
            return self
        N, w = self.n_items, self.width
        keys, where = np.unique(client * N + flat // w, return_inverse=True)
        extra = np.zeros((len(keys), w), dtype=self.values.numpy().dtype)
        extra[where, flat % w] = value
        at = np.searchsorted((self.client * N + self.item).numpy(), keys)  # the rows' keys are sorted
        received = np.zeros(len(self.item), dtype=bool) if self.received is None else self.received
        return RowUpdate(self.n_clients, N, torch.from_numpy(np.insert(self.client.numpy(), at, keys // N)),
                         torch.from_numpy(np.insert(self.item.numpy(), at, keys % N)),
                         torch.from_numpy(np.insert(self.values.numpy(), at, extra, axis=0)), None,
                         np.insert(received, at, True))

    def touched_only(self) -> "RowUpdate":
        """The rows the clients touched (received-only rows dropped)."""
        if self.received is None:
            return self
        keep = torch.from_numpy(~self.received)
        return RowUpdate(self.n_clients, self.n_items, self.client[keep], self.item[keep], self.values[keep])

    def dense(self, clients: slice | None = None) -> torch.Tensor:
        """The (M, N, width) table (or clients[lo:hi] of it): for small cohorts, tests and the dense codecs."""
        lo, hi = (0, self.n_clients) if clients is None else (clients.start or 0, clients.stop)
        a, b = int(self.indptr[lo]), int(self.indptr[hi])
        out = self.values.new_zeros(hi - lo, self.n_items, self.width)
        out.view(-1, self.width)[(self.client[a:b] - lo) * self.n_items + self.item[a:b]] = self.values[a:b]
        return out

    def touched(self) -> torch.Tensor:
        """(M, N) bool: the rows the clients touched."""
        rows = self.touched_only()
        t = torch.zeros(self.n_clients * self.n_items, dtype=torch.bool)
        t[rows.client * self.n_items + rows.item] = True
        return t.view(self.n_clients, self.n_items)

    @staticmethod
    def from_dense(update: torch.Tensor, touched: torch.Tensor) -> "RowUpdate":
        """The rows of `touched` (M, N) from a dense (M, N, width) update (zero elsewhere)."""
        M, N = touched.shape
        flat = torch.nonzero(touched.reshape(-1)).squeeze(1)
        return RowUpdate(M, N, flat // N, flat % N, update.reshape(M * N, -1).index_select(0, flat))


@dataclass(frozen=True, eq=False)
class SummedRows(RowUpdate):
    """A cohort's rows that the server summed as they arrived (`fused_kernel.full_rows_summed`): each client's update
    was added to the aggregate just after the client trained, and not kept (plain FedMF at ML-1M's full
    participation: 1.07 GB of rows). The sum is `aggregate`'s of the rows to the bit. What else the round reads
    stays: which items each client touched (its rows' `item`, `item_bits`: the item mask) and client 0's message
    (`first`: the ledger serializes one message of the part's shape). `values` is None: whatever needs every
    client's update (a codec, a protocol, a defense, rank statistics) trains without summing on arrival."""

    how: str = "item_mean"  # the aggregation the sum is for: "item_mean" (total and count) or "weighted"
    total: torch.Tensor | None = None  # (N, width): sum over clients of their rows (weighted: of w_u times them)
    count: torch.Tensor | None = None  # (N,) int64: the clients that touched each item (item_mean)
    first: torch.Tensor | None = None  # client 0's rows (its items: item[:indptr[1]])
    weights: torch.Tensor | None = None  # (M,) the clients' weights the weighted sum used

    @staticmethod
    def from_sum(n_clients: int, indptr: np.ndarray, item: torch.Tensor, item_bits: np.ndarray | None, how: str,
                 total: torch.Tensor, count: torch.Tensor | None, first: torch.Tensor,
                 weights: torch.Tensor | None) -> "SummedRows":
        rows = SummedRows(n_clients, int(total.shape[0]), None, item, None, item_bits, None, how, total, count, first,
                          weights)
        rows.__dict__["indptr"] = indptr  # as `from_offsets`
        return rows

    @property
    def width(self) -> int:
        return int(self.total.shape[1])

    @property
    def dtype(self) -> torch.dtype:
        return self.total.dtype

    def aggregate(self, how: str, weights: torch.Tensor | None = None) -> torch.Tensor:
        """The server's aggregate: `aggregate.rows_item_mean` or `rows_weighted_sum` of the rows, to the bit."""
        if how != self.how:
            raise ValueError(f"aggregation={how!r}: these rows were summed on arrival for {self.how!r}")
        if how == "weighted":
            if weights is not None and not torch.equal(weights.to(self.dtype), self.weights):
                raise ValueError("weights: these rows were summed on arrival with other client weights")
            return self.total
        return self.total / self.count.clamp(min=1).to(self.total.dtype)[:, None]

    def dense(self, clients: slice | None = None) -> torch.Tensor:
        """Client 0's table (clients = slice(0, 1)), the one message kept; the others were summed on arrival."""
        lo, hi = (0, self.n_clients) if clients is None else (clients.start or 0, clients.stop)
        if (lo, hi) != (0, 1):
            raise ValueError(f"clients {lo}..{hi - 1}: a cohort summed on arrival keeps client 0's update alone")
        out = self.total.new_zeros(1, self.n_items, self.width)
        out[0, self.item[: int(self.indptr[1])]] = self.first
        return out

    def with_values(self, values: torch.Tensor) -> "RowUpdate":
        raise ValueError("a cohort summed on arrival has no per-client rows to replace")


@dataclass(frozen=True, eq=False)
class LocalResult:
    """What local training produced. The batched trainer fills `rows`; the dense layouts (loop oracle, the
    former engine kept for benchmarks) fill `update` and `touched`. Either gives the other on demand."""

    p: torch.Tensor  # (M, d) user embeddings after training (stay on the device)
    update: torch.Tensor | None  # (M, N, d) item-table update D, or (M, N, r) low-rank A; None if `rows`
    touched: torch.Tensor | None  # (M, N) bool: items in the client's local samples; None if `rows`
    loss_sum: float
    n_samples: int
    rows: RowUpdate | None = None  # the same update by touched rows

    def row_update(self) -> RowUpdate:
        return self.rows if self.rows is not None else RowUpdate.from_dense(self.update, self.touched)

    def dense_update(self) -> torch.Tensor:
        return self.update if self.update is not None else self.rows.dense()

    def touched_dense(self) -> torch.Tensor:
        return self.touched if self.touched is not None else self.rows.touched()


def touched_items(plan: RoundPlan, n_items: int) -> torch.Tensor:
    t = torch.zeros(plan.n_clients * n_items, dtype=torch.bool)
    t[torch.from_numpy(plan.sample_client.astype(np.int64) * n_items + plan.sample_item)] = True
    return t.view(plan.n_clients, n_items)


def touched_rows(plan: RoundPlan, n_items: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct (client, item) pairs of the round's samples, sorted, as keys client * N + item, and
    each sample's row among them."""
    keys = torch.from_numpy(plan.sample_client.astype(np.int64) * n_items + plan.sample_item)
    uniq, inverse = torch.unique(keys, sorted=True, return_inverse=True)
    return uniq, inverse


def _inv_counts(items: np.ndarray, valid: np.ndarray, n_items: int) -> np.ndarray:
    """1 / (occurrences of each slot's item in the same batch row), 0 on padding: the per-row mean of the
    reference's `scale_grad_by_freq` embeddings (a batch row is one client's, so item = its row)."""
    R, Bs = items.shape
    inv = np.zeros(items.shape, dtype=np.float32)
    if R * n_items <= _BINCOUNT_LIMIT:
        batch_key = (np.arange(R)[:, None] * n_items + items)[valid]
        inv[valid] = 1.0 / np.bincount(batch_key, minlength=R * n_items)[batch_key]
        return inv
    k = torch.from_numpy(np.where(valid, items, n_items))
    s, perm = torch.sort(k, dim=1, stable=True)
    new_run = torch.ones_like(s, dtype=torch.bool)
    new_run[:, 1:] = s[:, 1:] != s[:, :-1]
    run = torch.cumsum(new_run.reshape(-1), 0) - 1
    counts = torch.bincount(run)[run].view(R, Bs).to(torch.float32)
    c = torch.empty_like(counts)
    c.scatter_(1, perm, counts)
    inv[valid] = (1.0 / c.numpy())[valid]
    return inv


def _filled_slots(slots: np.ndarray, rows: int = 8192) -> int:
    """The schedule's non-padding slots, counted a block of rows at a time (a mask of the whole schedule is
    the size of a sample array: 18 MB at Pinterest's full participation, at the round's memory peak)."""
    return sum(int(np.count_nonzero(slots[i:i + rows] >= 0)) for i in range(0, slots.shape[0], rows))


@njit(cache=True)
def _client_first(sample_client, first):
    """first[m] = the index of client m's first sample (np.searchsorted's left side), in one pass that also checks
    that the samples are grouped by client (non-decreasing). Returns False, first unfinished, if they are not."""
    filled = 0
    for j in range(sample_client.shape[0]):
        c = sample_client[j]
        if c < filled - 1 or c >= first.shape[0] - 1:  # a descent, or a client outside 0..n_clients-1
            return False
        while filled <= c:
            first[filled] = j
            filled += 1
    while filled < first.shape[0]:
        first[filled] = sample_client.shape[0]
        filled += 1
    return True


def client_first(sample_client: np.ndarray, n_clients: int) -> np.ndarray | None:
    """Each client's first sample index (n_clients + 1 offsets) when the samples are grouped by client, else None."""
    first = np.empty(n_clients + 1, dtype=np.int64)
    return first if _client_first(sample_client, first) else None


def train_cohort(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                 lowrank: LowRank | None = None, workspace: Workspace | None = None,
                 prox_mu: float = 0.0, variates: tuple | None = None,
                 sum_on_arrival: tuple[str, torch.Tensor] | None = None) -> LocalResult:
    """The engine's trainer: each client walks its steps in one compiled pass (`fused_kernel`), reading and
    writing its touched rows in place. The same update as `train_cohort_batched` up to summation order.
    prox_mu > 0: FedProx's local objective, + mu/2 ||item table - Q||^2 (`fused_kernel`, the pull).
    variates: SCAFFOLD's (c, ci_lo, ci_hi, ci_item, ci_val), the clients' rows in schedule order
    (`scaffold.ControlVariates.trainer_inputs`); the rows returned are then the gradient steps G alone.
    sum_on_arrival: (aggregation, the clients' weights) for a full item table (FedMF): the server's aggregate is
    summed as each client ends, and the rows returned are `SummedRows` (no per-client rows are kept)."""
    from . import fused_kernel

    if Q.dtype != torch.float32:  # the kernel is float32 like every run; other dtypes take the torch path
        if prox_mu or variates is not None:
            raise ValueError(f"prox_mu={prox_mu} needs a float32 item table (got {Q.dtype}): FedProx is in the "
                             "compiled trainer only")
        if sum_on_arrival is not None:
            raise ValueError(f"sum_on_arrival needs a float32 item table (got {Q.dtype}): the sum is taken in the "
                             "compiled trainer")
        return train_cohort_batched(Q, p0, plan, lr, weight_decay, lowrank)
    M, (N, d) = plan.n_clients, Q.shape
    first = plan.first if plan.first is not None else client_first(plan.sample_client, M)
    item_bits = None
    if first is None:  # samples not grouped by client (no plan of ours does this)
        uniq, _ = touched_rows(plan, N)
        row_first = np.searchsorted((uniq // N).numpy(), np.arange(M + 1)).astype(np.int64)
        row_item = (uniq % N).numpy()
    else:
        row_first, row_item, item_bits = fused_kernel.touched_rows_grouped(first, plan.sample_item, N, workspace)
    if sum_on_arrival is not None:
        if lowrank is not None or variates is not None or prox_mu:
            raise ValueError("sum_on_arrival: only a full item table (FedMF) without SCAFFOLD or FedProx is summed on "
                             "arrival")
        return _train_summed(Q, p0, plan, lr, weight_decay, row_first, row_item, item_bits, *sum_on_arrival)
    order_t = torch.from_numpy(plan.order)
    p = np.ascontiguousarray(p0[order_t].numpy(), dtype=np.float32)
    Qn = np.ascontiguousarray(Q.numpy())
    label = np.ascontiguousarray(plan.sample_label, dtype=np.float32)
    sched = (plan.slots, plan.sample_item, label, row_item, plan.n_active.astype(np.int64),
             plan.offsets.astype(np.int64), lr, 2.0 * weight_decay, prox_mu)
    B = None if lowrank is None else np.ascontiguousarray(lowrank.B.to(torch.float32).numpy())
    # the update table, trained in place by the kernel; not zeroed: each client zeroes its rows just before it trains
    W = take(workspace, "W", (row_item.shape[0], d if B is None else B.shape[1]), np.float32)
    rows = RowUpdate.from_offsets(M, N, row_first, torch.from_numpy(row_item), torch.from_numpy(W), item_bits)
    row_lo, row_hi = rows.indptr[plan.order], rows.indptr[plan.order + 1]  # each client's rows, in schedule order
    if variates is not None:
        if B is not None or prox_mu:
            raise ValueError("SCAFFOLD's variates need the full item table (FedMF) and prox_mu=0")
        loss_sum = fused_kernel.full_rows_scaffold(Qn, W, row_lo, row_hi, p, *sched[:-1], *variates)
    elif B is None:
        loss_sum = fused_kernel.full_rows(Qn, W, row_lo, row_hi, p, *sched)
    else:
        row_scale = (lowrank.col_mask * lowrank.grad_scale[:, None]).to(torch.float32)[order_t]
        loss_sum = fused_kernel.lowrank_rows(Qn, B, np.ascontiguousarray(row_scale.numpy()), W, row_lo, row_hi, p,
                                             *sched)
    back = torch.from_numpy(np.argsort(plan.order))
    filled = plan.n_filled if plan.n_filled >= 0 else _filled_slots(plan.slots)
    return LocalResult(torch.from_numpy(p)[back], None, None, loss_sum, filled, rows)


def _train_summed(Q, p0, plan, lr, weight_decay, row_first, row_item, item_bits, how, weights
                  ) -> LocalResult:
    """`train_cohort` of a full item table with the server's sum taken as each client ends
    (`fused_kernel.full_rows_summed`)."""
    from . import fused_kernel

    if how not in ("item_mean", "weighted"):
        raise ValueError(f"aggregation={how!r}: allowed values are item_mean, weighted")
    M = plan.n_clients
    position = np.argsort(plan.order)  # client m's place in the schedule
    p = np.ascontiguousarray(p0[torch.from_numpy(plan.order)].numpy(), dtype=np.float32)
    w = weights.to(torch.float32) if how == "weighted" else None
    loss_sum, total, count, first_rows = fused_kernel.full_rows_summed(
        np.ascontiguousarray(Q.numpy()), row_first, position, p, plan.slots, plan.sample_item,
        np.ascontiguousarray(plan.sample_label, dtype=np.float32), row_item, plan.n_active.astype(np.int64),
        plan.offsets.astype(np.int64), lr, 2.0 * weight_decay, None if w is None else w.numpy())
    rows = SummedRows.from_sum(M, row_first, torch.from_numpy(row_item), item_bits, how, torch.from_numpy(total),
                               torch.from_numpy(count) if how == "item_mean" else None, torch.from_numpy(first_rows),
                               w)
    filled = plan.n_filled if plan.n_filled >= 0 else _filled_slots(plan.slots)
    return LocalResult(torch.from_numpy(p)[torch.from_numpy(position)], None, None, loss_sum, filled, rows)


def train_cohort_batched(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                         lowrank: LowRank | None = None) -> LocalResult:
    """The same update as `train_cohort`, one batched torch step for all clients at a time (the former engine,
    kept as the benchmark baseline and a second implementation for the tests)."""
    M, (N, d) = plan.n_clients, Q.shape
    width = d if lowrank is None else lowrank.B.shape[1]
    uniq, row_of_sample = touched_rows(plan, N)
    U = int(uniq.shape[0])  # rows the cohort touches; row U is the padding sink
    order, n_active, offsets = plan.order, plan.n_active, plan.offsets
    slots = plan.slots
    valid = slots >= 0
    idx = np.where(valid, slots, 0)
    items = plan.sample_item[idx]
    keys_np = np.where(valid, row_of_sample.numpy()[idx], U)
    inv_count = _inv_counts(items, valid, N)
    dt = Q.dtype
    vf = torch.from_numpy(valid).to(dt)
    # Q is frozen during local training: gather every step's rows at once (or step by step for very large
    # cohorts). Padding slots read a zero row and get label sigmoid(0) = 0.5, so their gradient is exactly 0.
    flat_items = torch.from_numpy(np.where(valid, items, N))
    Qpad = torch.cat([Q, Q.new_zeros(1, d)])
    gather_all = flat_items.numel() * d <= _GATHER_ALL_LIMIT
    Qi_all = Qpad.index_select(0, flat_items.reshape(-1)).view(*items.shape, d) if gather_all else None
    labels = torch.where(torch.from_numpy(valid), torch.from_numpy(plan.sample_label[idx]).to(dt),
                         torch.tensor(0.5, dtype=dt))
    keys = torch.from_numpy(keys_np)
    step_scale = torch.from_numpy(inv_count).to(dt) * -lr  # per-row mean over occurrences, times the SGD step
    inv_nv = (1.0 / vf.sum(1).clamp(min=1))[:, None]  # (R, 1)
    del idx, items, inv_count, row_of_sample  # (R, B) arrays: 100 MB each at full participation
    W = torch.zeros(U + 1, width, dtype=dt)  # D rows or A rows per touched (client, item); last row: padding sink
    order_t = torch.from_numpy(order)
    p = p0[order_t].clone()
    two_wd = 2.0 * weight_decay
    logits = torch.zeros(labels.shape, dtype=dt)
    if lowrank is not None:
        # work in the r-dimensional space of A: with e = q + B a,
        #   x = p.q + (B^T p).a,   dL/da = B^T (g p + 2 wd e) = g B^T p + 2 wd (B^T q + B^T B a)
        B = lowrank.B.to(dt)
        BtB = B.T @ B
        QB_all = Qi_all @ B if gather_all else None  # (R, Bs, r): B^T q for every slot, once
        row_scale = (lowrank.col_mask * lowrank.grad_scale[:, None]).to(dt)[order_t][:, None, :]
    # a step's clients are independent (each owns its rows of W and its user vector): at full participation
    # take them in blocks of `chunk` clients, so that the step's (clients, batch, d) temporaries stay small.
    # torch's batched products may block a different batch count differently (last-bit differences, 1e-8);
    # cohorts below one block (every stored result: 60 clients at d=64, 375 at d=16) are one block, as before.
    chunk = max(1, _STEP_FLOATS // (slots.shape[1] * d))
    for t in range(len(n_active)):
        a, r0 = int(n_active[t]), int(offsets[t])
        for c0 in range(0, a, chunk):
            c1 = min(a, c0 + chunk)
            s0, s1 = r0 + c0, r0 + c1
            kt = keys[s0:s1].reshape(-1)
            rows = W.index_select(0, kt).view(c1 - c0, -1, width)  # index_select: much faster than W[kt] on CPU
            pa = p[c0:c1]
            qt = (Qi_all[s0:s1] if gather_all
                  else Qpad.index_select(0, flat_items[s0:s1].reshape(-1)).view(c1 - c0, -1, d))
            if lowrank is None:
                e = qt + rows
                x = torch.einsum("mbd,md->mb", e, pa)
            else:
                Bp = pa @ B
                x = torch.einsum("mbd,md->mb", qt, pa) + torch.einsum("mbr,mr->mb", rows, Bp)
            logits[s0:s1] = x
            g = torch.sigmoid(x).sub_(labels[s0:s1])  # dBCE/dx per sample (0 on padding)
            # user: mean over the batch of (g e + 2 wd p); item rows: mean over a row's occurrences of (g p + 2 wd e)
            if lowrank is None:
                ge = torch.einsum("mb,mbd->md", g, e)
                h = torch.einsum("mb,md->mbd", g, pa).add_(e, alpha=two_wd)
            else:
                qb = QB_all[s0:s1] if gather_all else qt @ B
                ge = torch.einsum("mb,mbd->md", g, qt) + torch.einsum("mb,mbr->mr", g, rows) @ B.T
                h = torch.einsum("mb,mr->mbr", g, Bp).add_(qb + rows @ BtB, alpha=two_wd).mul_(row_scale[c0:c1])
            grad_p = ge.mul_(inv_nv[s0:s1]).add_(pa, alpha=two_wd)
            h.mul_(step_scale[s0:s1, :, None])
            # scatter_add_ (not index_add_, several times slower here); -lr is folded into step_scale
            W.scatter_add_(0, kt[:, None].expand(-1, width), h.reshape(-1, width))
            pa.sub_(grad_p, alpha=lr)
    loss_sum = float(((torch.nn.functional.softplus(logits) - labels * logits) * vf).sum())
    back = torch.from_numpy(np.argsort(order))
    rows = RowUpdate(M, N, uniq // N, uniq % N, W[:U])
    return LocalResult(p[back], None, None, loss_sum, int(vf.sum()), rows)
