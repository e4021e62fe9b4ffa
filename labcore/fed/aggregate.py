"""Pure server-side aggregation math (tested on tiny hand-computed arrays)."""
from __future__ import annotations

import torch


def fedavg_weights(n_samples: torch.Tensor) -> torch.Tensor:
    """w_u = N_u / N over the round's cohort (CoLR Eq. 2)."""
    n = n_samples.to(torch.float64)
    return (n / n.sum()).to(torch.float32)


def weighted_sum(updates: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum_u w_u X_u for X of shape (M, ...)."""
    return torch.tensordot(weights.to(updates.dtype), updates, dims=1)


def item_mean(updates: torch.Tensor, touched: torch.Tensor) -> torch.Tensor:
    """Per item row: the sum over clients divided by how many clients touched that item.

    The CoLR reference aggregates this way: an item seen by one client of the
    cohort gets that client's full update instead of 1/M of it.
    updates: (M, N, k), touched: (M, N) bool.
    """
    counts = touched.sum(0).clamp(min=1).to(updates.dtype)
    return updates.sum(0) / counts[:, None]


def aggregate(updates: torch.Tensor, how: str, weights: torch.Tensor, touched: torch.Tensor) -> torch.Tensor:
    if how == "weighted":
        return weighted_sum(updates, weights)
    if how == "item_mean":
        return item_mean(updates, touched)
    raise ValueError(f"aggregation={how!r}: allowed values are item_mean, weighted")
