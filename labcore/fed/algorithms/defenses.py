"""Robust aggregation on the recommendation engine (FedMF), against the attacks of `attacks.py`.

Defenses (`defense`), on the server's side of the round, over each item's rows (clients that did not touch an item
send no row of it, so a coordinate-wise statistic over all M clients would be zero for most items):
  clip     every client's update scaled to norm <= clip_norm, then the usual average, plus optional Gaussian noise
           of std dp_noise x clip_norm / M on every value (Sun et al. 2019, "Can you really backdoor FL?")
  median   per item, the coordinate-wise median of the rows of the clients that touched it (Yin et al. 2018)
  trimmed  per item, the coordinate-wise mean of those rows after cutting floor(trim_frac x count) at each end
  krum     multi-Krum (Blanchard et al. 2017): each client's score is the sum of the squared distances from its whole
           update to its M - krum_f - 2 nearest; the M - krum_f clients of lowest score are averaged as usual (the
           weights renormalized over them). Plain Krum keeps one client, which would update only that user's items.
With aggregation="weighted" the per-item statistic is scaled by the touchers' total weight (so that with one
client it is that client's weighted update); with "item_mean" it is the item's row.

The dense view of the same statistics (the FL-algorithms topic's digits task) is `flalgos/defenses.py`;
tests/core/test_engine_robust.py checks that both give the same aggregate where their definitions meet.
"""
from __future__ import annotations

import numpy as np
import torch
from numba import njit

from ...config import DEFENSES, ConfigError
from ..sampling import round_rng
from ..updates import RowUpdate
from .attacks import STREAM_ATTACK

PAD_LIMIT = 1 << 28  # bytes of the per-item padded table (median / trimmed) before the round refuses


@njit(cache=True)
def _gram(starts, client, values, M):
    """(M, M) inner products of the clients' whole updates, item by item over the rows sorted by item (only
    clients that both touched an item share terms; scipy's sparse A A^T took 3.5 times as long on MovieLens-1M)."""
    G = np.zeros((M, M))
    for it in range(starts.shape[0] - 1):
        for a in range(starts[it], starts[it + 1]):
            for b in range(a, starts[it + 1]):
                s = 0.0
                for c in range(values.shape[1]):
                    s += np.float64(values[a, c]) * np.float64(values[b, c])
                G[client[a], client[b]] += s
                if b != a:
                    G[client[b], client[a]] += s
    return G


def krum_keep(rows: RowUpdate, f: int) -> np.ndarray:
    """Cohort positions of the M - f clients of lowest Krum score (the sum of squared distances from a client's
    whole update to its M - f - 2 nearest), in cohort order. Distances from the sparse updates' Gram matrix."""
    M = rows.n_clients
    if not M > 2 * f + 2:
        raise ConfigError(f"krum_f={f} is invalid: Krum needs more than 2 krum_f + 2 clients in a round, this one "
                          f"has {M} (dropout or stragglers left fewer); lower krum_f")
    order = torch.argsort(rows.item, stable=True).numpy()
    starts = np.concatenate([[0], np.cumsum(np.bincount(rows.item.numpy(), minlength=rows.n_items))])
    gram = _gram(starts, np.ascontiguousarray(rows.client.numpy()[order]),
                 np.ascontiguousarray(rows.values.numpy()[order]), M)
    sq = np.diag(gram)
    dist = np.maximum(sq[:, None] + sq[None, :] - 2 * gram, 0.0)
    near = np.sort(dist, axis=1)[:, 1: M - f - 1]  # column 0: the distance to itself
    return np.sort(np.argsort(near.sum(1), kind="stable")[: M - f])


def client_norms(rows: RowUpdate) -> torch.Tensor:
    """(M,) the norm of each client's whole update."""
    sq = (rows.values.double() ** 2).sum(1)
    return torch.bincount(rows.client, weights=sq, minlength=rows.n_clients).sqrt()


def clip(rows: RowUpdate, clip_norm: float) -> RowUpdate:
    scale = (clip_norm / client_norms(rows).clamp(min=1e-12)).clamp(max=1.0)
    return rows.with_values(rows.values * scale[rows.client].to(rows.values.dtype)[:, None])


def per_item(rows: RowUpdate, kind: str, trim: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per item: the coordinate-wise median (kind="median") or trimmed mean of its rows, and how many clients
    touched it. Items nobody touched get zeros."""
    N, k = rows.n_items, rows.width
    counts = torch.bincount(rows.item, minlength=N)
    items = torch.nonzero(counts).squeeze(1)
    c = counts[items]
    c_max = int(c.max()) if len(c) else 0
    if len(items) * c_max * k * 4 > PAD_LIMIT:
        raise MemoryError(f"defense={kind!r}: the per-item table would take {len(items) * c_max * k * 4 / 2**20:.0f} "
                          f"MiB ({len(items)} items touched by up to {c_max} clients); sample fewer clients per round "
                          "or use defense='clip'")
    order = torch.argsort(rows.item, stable=True)
    it = rows.item[order]
    slot_of_item = torch.full((N,), -1, dtype=torch.int64)
    slot_of_item[items] = torch.arange(len(items))
    starts = torch.cumsum(counts, 0) - counts
    pos = torch.arange(len(it)) - starts[it]  # the row's place among its item's rows
    pad = torch.full((len(items), c_max, k), float("inf"), dtype=torch.float32)
    pad[slot_of_item[it], pos] = rows.values[order].float()
    s = pad.sort(1).values  # the padding (inf) sorts last: each item's rows come first, in order
    out = torch.zeros(N, k, dtype=torch.float32)
    ar = torch.arange(len(items))
    if kind == "median":
        lo, hi = (c - 1) // 2, c // 2
        stat = (s[ar, lo] + s[ar, hi]) / 2
    else:
        cut = torch.floor(trim * c.double()).long()
        finite = torch.where(torch.isinf(s), torch.zeros_like(s), s).double()
        cs = torch.cat([torch.zeros(len(items), 1, k, dtype=torch.float64), finite.cumsum(1)], 1)
        total = cs[ar, c - cut] - cs[ar, cut]
        stat = (total / (c - 2 * cut).double()[:, None]).float()
    out[items] = stat
    return out, counts


def robust_aggregate(rows: RowUpdate, defense: str, how: str, weights: torch.Tensor, *, trim: float = 0.2,
                     clip_norm: float = 1.0, dp_noise: float = 0.0, krum_f: int = 1,
                     rng: np.random.Generator | None = None) -> torch.Tensor:
    """The server's (N, k) aggregate under `defense` (see the module's text)."""
    from ..aggregate import aggregate

    if defense == "clip":
        agg = aggregate(clip(rows, clip_norm), how, weights, None)
        if dp_noise:
            std = dp_noise * clip_norm / rows.n_clients
            agg = agg + torch.from_numpy(rng.standard_normal(tuple(agg.shape)) * std).to(agg.dtype)
        return agg
    if defense == "krum":
        keep = torch.zeros(rows.n_clients, dtype=torch.float64)
        keep[torch.from_numpy(krum_keep(rows, krum_f))] = 1.0
        w = weights.double() * keep
        kept = keep.bool()[rows.client]
        kept_rows = RowUpdate(rows.n_clients, rows.n_items, rows.client[kept], rows.item[kept], rows.values[kept])
        return aggregate(kept_rows, how, (w / w.sum()).to(weights.dtype), None)
    if defense not in ("median", "trimmed"):
        raise ValueError(f"defense={defense!r}: allowed values are {', '.join(DEFENSES)}")
    stat, _ = per_item(rows, defense, trim)
    if how == "item_mean":
        return stat
    touch_weight = torch.zeros(rows.n_items, dtype=torch.float64)  # rows are unique (client, item) pairs
    touch_weight.index_add_(0, rows.item, weights.double()[rows.client])
    return stat * touch_weight.float()[:, None]


class RobustAggregator:
    """The server's aggregation under `cfg.defense`, in place of the weighted average."""

    def __init__(self, cfg):
        self.cfg = cfg

    def aggregate(self, rows: RowUpdate, weights: torch.Tensor, round_idx: int) -> torch.Tensor:
        c = self.cfg
        return robust_aggregate(rows, c.defense, c.aggregation, weights, trim=c.trim_frac, clip_norm=c.clip_norm,
                                dp_noise=c.dp_noise, krum_f=c.krum_f, rng=round_rng(c.seed, round_idx, STREAM_ATTACK))


def make(cfg) -> RobustAggregator | None:
    """The run's robust aggregation (None without a defense: the algorithm's weighted average)."""
    return None if cfg.defense == "none" else RobustAggregator(cfg)
