"""Pure server-side aggregation math (tested on tiny hand-computed arrays).

Two layouts of the cohort's updates, the same numbers:

* dense (M, N, k) tensors: `weighted_sum`, `item_mean` (small cohorts, the dense codecs, tests);
* `RowUpdate` (the rows the clients touched): `rows_sum`, `rows_item_mean`, `rows_weighted_sum`, whose cost
  grows with the rows, not with clients x items.

`rows_sum` adds each item's rows in client order in one compiled pass; it equals `dense.sum(0)` to float
rounding (torch's dense sum associates the clients as a cascade of runs of 16).
"""
from __future__ import annotations

import numpy as np
import torch
from numba import njit

from .updates import RowUpdate, SummedRows


def fedavg_weights(n_samples: torch.Tensor) -> torch.Tensor:
    """w_u = N_u / N over the round's cohort (CoLR Eq. 2)."""
    n = n_samples.to(torch.float64)
    return (n / n.sum()).to(torch.float32)


def weighted_sum(updates: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum_u w_u X_u for X of shape (M, ...). A factor-major decode (`client_sum`) is weighted in its storage's
    order: torch's tensordot copies such a view whole first (a full-participation ML-1M CoLR@4 message: a 358 MB copy,
    0.26 s against 0.02 s); a few sums differ in their last bit."""
    w = weights.to(updates.dtype)
    if _factor_major(updates):
        return torch.tensordot(w, updates.transpose(1, 2), dims=1).t().contiguous()
    return torch.tensordot(w, updates, dims=1)


def item_mean(updates: torch.Tensor, touched: torch.Tensor) -> torch.Tensor:
    """Per item row: the sum over clients divided by how many clients touched that item.

    The CoLR reference aggregates this way: an item seen by one client of the
    cohort gets that client's full update instead of 1/M of it.
    updates: (M, N, k), touched: (M, N) bool.
    """
    counts = touched.sum(0).clamp(min=1).to(updates.dtype)
    return client_sum(updates) / counts[:, None]


def client_sum(updates: torch.Tensor) -> torch.Tensor:
    """updates.sum(0), added in the order its values lie in memory. A factor-major decode is a (M, N, k) view of
    (M, k, N) storage (CoLR's received tables); torch sums such a view 25 times slower than its storage (1.9 s
    against 0.07 at ML-1M's full participation, 6040 x 3706 x 4), in another order: last bits differ."""
    if _factor_major(updates):
        return updates.transpose(1, 2).sum(0).t().contiguous()
    return updates.sum(0)


def _factor_major(updates: torch.Tensor) -> bool:
    """Whether updates is a (M, N, k) view of contiguous (M, k, N) storage."""
    return updates.dim() == 3 and updates.stride(1) == 1 and updates.stride(2) == updates.shape[1] \
        and updates.stride(0) == updates.shape[1] * updates.shape[2]


def aggregate(updates, how: str, weights: torch.Tensor, touched: torch.Tensor | None,
              layout: str = "item") -> torch.Tensor:
    """updates: a dense (M, N, k) tensor or a RowUpdate (then `touched` is not needed and `layout` says how
    a dense decode lays it out: "item" = contiguous (M, N, k), "factor" = (M, k, N) transposed)."""
    if how not in ("weighted", "item_mean"):
        raise ValueError(f"aggregation={how!r}: allowed values are item_mean, weighted")
    if isinstance(updates, SummedRows):  # summed as the clients' rows arrived (the same bits as the two below)
        return updates.aggregate(how, weights)
    if isinstance(updates, RowUpdate):
        return rows_weighted_sum(updates, weights) if how == "weighted" else rows_item_mean(updates, layout)
    return weighted_sum(updates, weights) if how == "weighted" else item_mean(updates, touched)


# --- the row layout ----------------------------------------------------------------------------------------
def _dense_layout(X: torch.Tensor, layout: str) -> torch.Tensor:
    """(M, N, k) values in the memory layout the dense decode produces (tests)."""
    if layout == "factor":  # CoLR / SCoLR: (M, k, N) storage seen as (M, N, k)
        return X.transpose(1, 2).contiguous().transpose(1, 2)
    return X.contiguous()


@njit(cache=True)
def _add_rows(out, count, item, values):
    """out[item[j]] += values[j] in row order, and count[i] = item i's rows, in one pass."""
    for j in range(item.shape[0]):
        i = item[j]
        count[i] += 1
        for c in range(values.shape[1]):
            out[i, c] += values[j, c]


def _sum_and_count(rows: RowUpdate) -> tuple[torch.Tensor, torch.Tensor]:
    vals = np.ascontiguousarray(rows.values.numpy())
    out = np.zeros((rows.n_items, rows.width), dtype=vals.dtype)
    count = np.zeros(rows.n_items, dtype=np.int64)
    item = np.ascontiguousarray(rows.item.numpy())
    _add_rows(out, count, item, vals)
    if rows.received is not None:  # rows a client did not touch add to the sum, not to the count
        count -= np.bincount(item[rows.received], minlength=rows.n_items)
    return torch.from_numpy(out), torch.from_numpy(count)


def rows_sum(rows: RowUpdate, layout: str = "item") -> torch.Tensor:
    """(N, k): the sum over clients of the row layout, each item's rows added in client order (one pass over
    the rows, compiled). Equal to `rows.dense().sum(0)` to float rounding; torch's dense sum associates
    the clients differently (a cascade of runs of 16), so the last bits may differ. `layout` is accepted for
    the dense layout's signature; the result does not depend on it."""
    return _sum_and_count(rows)[0]


def rows_item_mean(rows: RowUpdate, layout: str = "item") -> torch.Tensor:
    """(N, k): each item's rows summed, divided by the clients that touched it (1 where none did: zero, or what
    received-only rows put there, as the dense `item_mean`); the rows are counted in the summing pass."""
    total, count = _sum_and_count(rows)
    return total / count.clamp(min=1).to(rows.values.dtype)[:, None]


@njit(cache=True)
def _add_weighted_rows(out, item, client, w, values):
    """out[item[j]] += values[j] * w[client[j]], rows in order (no fastmath: each product rounded, then added)."""
    for j in range(item.shape[0]):
        i, wc = item[j], w[client[j]]
        for c in range(values.shape[1]):
            out[i, c] += values[j, c] * wc


def rows_weighted_sum(rows: RowUpdate, weights: torch.Tensor) -> torch.Tensor:
    """sum_u w_u X_u over the rows, clients added in order (equal to the dense tensordot to float rounding), in one
    compiled pass: the same bits as sorting the rows by item and adding each item's products in client order."""
    vals = np.ascontiguousarray(rows.values.numpy())
    out = np.zeros((rows.n_items, rows.width), dtype=vals.dtype)
    _add_weighted_rows(out, np.ascontiguousarray(rows.item.numpy()), np.ascontiguousarray(rows.client.numpy()),
                       np.ascontiguousarray(weights.to(rows.values.dtype).numpy()), vals)
    return torch.from_numpy(out)
