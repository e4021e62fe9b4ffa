"""What local training hands to the rest of a round: the clients' updates by the rows they touched (`RowUpdate`, and
`SummedRows` when the server summed them on arrival), the low-rank setup they trained in (`LowRank`) and the
trainer's whole result (`LocalResult`).

A module of data types only (numpy and torch): the methods (`labcore.methods`), the trainers (`local_train`, the
kernels) and the server (`aggregate`, `mods`, the engine) all read them, so they sit below all of those.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch


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
    """A cohort's rows that the server summed as they arrived (`kernels.fused.full_rows_summed`): each client's update
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
    clip: float = math.inf  # central DP: each client's rows were clipped to this norm before they were added

    @staticmethod
    def from_sum(n_clients: int, indptr: np.ndarray, item: torch.Tensor, item_bits: np.ndarray | None, how: str,
                 total: torch.Tensor, count: torch.Tensor | None, first: torch.Tensor,
                 weights: torch.Tensor | None, clip: float = math.inf) -> "SummedRows":
        rows = SummedRows(n_clients, int(total.shape[0]), None, item, None, item_bits, None, how, total, count, first,
                          weights, clip)
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
    """What local training produced. The engine's trainers fill `rows`; the dense layouts (the autograd oracle of the
    tests, `batched.train_cohort_dense`) fill `update` and `touched`. Either gives the other on demand."""

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
