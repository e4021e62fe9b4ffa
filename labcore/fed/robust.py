"""A model-replacement backdoor on the recommendation engine, and robust aggregation against it (FedMF).

The attack (Bagdasaryan et al. 2020, "How to backdoor federated learning", on a recommender): a share of the users
(`attacker_share`, a fixed set drawn once from the seed) are malicious. When sampled, each trains like everyone
else, then overwrites its update of one target item (`target_item`; default the least popular item with training
data) so that, after the server's average, the target's row becomes `target_row`: the direction of the mean of all
the attackers' own user vectors (colluding users pool what they hold: a stand-in for a typical user), at twice the
length of the largest item row of the model they received. That row scores high for most users, so the target
enters their top 10. (Along the mean of the most popular items' rows it reaches 1 to 2 % of the users on
MovieLens-1M: the popular items' rows do not point where the users do.) Model
replacement boosts the change by the inverse of the attackers' share of the average (`attack_boost`: 0 = that
inverse, computed from the round's weights, as in the paper's gamma = n / eta).

The distributed backdoor (`attack="dba"`, after Xie et al. 2020, "DBA: distributed backdoor attacks against
federated learning"): the attackers form `dba_parts` fixed groups, and the global trigger (here the goal row of the
target item) is cut into as many blocks of its coordinates. Each group plants only its block, boosted by the inverse
of its own share of the average; the other coordinates of an attacker's target row stay as it trained them. No
attacker sends the whole trigger; the blocks add up to it in the average. (In Xie et al. the trigger is a pixel
pattern cut into pieces; the target row is this model's trigger.)

Backdoor success: the share of users for whom the target item is among their top 10 of all the items they have not
trained on (`backdoor_success`, each evaluation round).

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
"""
from __future__ import annotations

import numpy as np
import torch
from numba import njit

from ..config import DEFENSES, ConfigError
from .updates import RowUpdate
from .sampling import SETUP, round_rng

STREAM_ATTACK = 7  # the attackers' draw (round SETUP) and the clip defense's noise (each round)
PAD_LIMIT = 1 << 28  # bytes of the per-item padded table (median / trimmed) before the round refuses


def attackers(n_users: int, share: float, seed: int) -> np.ndarray:
    """A bool per user: malicious. round(share x n_users) users, drawn once from the seed."""
    mask = np.zeros(n_users, dtype=bool)
    mask[round_rng(seed, SETUP, STREAM_ATTACK).permutation(n_users)[: int(round(share * n_users))]] = True
    return mask


def default_target(train_items: np.ndarray, n_items: int) -> int:
    """The least popular item with at least one training interaction (lowest index among ties)."""
    counts = np.bincount(train_items, minlength=n_items).astype(np.int64)
    counts[counts == 0] = np.iinfo(np.int64).max
    return int(np.argmin(counts))


def target_row(Q: torch.Tensor, target: int, attacker_vectors: torch.Tensor) -> torch.Tensor:
    """What the attackers want the target's row to be: along the mean of their own user vectors (colluding users
    pool what they hold; it stands for a typical user), twice as long as the largest other row of the model they
    received (not the target's own, or it would grow each round)."""
    norms = torch.linalg.vector_norm(Q, dim=1)
    norms[target] = 0.0
    direction = attacker_vectors.mean(0)
    return direction / torch.linalg.vector_norm(direction).clamp(min=1e-12) * (2 * norms.max())


def plant(rows: RowUpdate, bad: np.ndarray, target: int, value: torch.Tensor, cols: slice = slice(None)
          ) -> RowUpdate:
    """The cohort's rows with every client in `bad` (cohort positions) sending `value` as its update of `target`
    (added as a row where the client had not touched it); with `cols`, only those coordinates (DBA: the others keep
    the client's own update, zero where it had none)."""
    if not len(bad):
        return rows
    client, item, values = rows.client, rows.item, rows.values.clone()
    is_bad = torch.zeros(rows.n_clients, dtype=torch.bool)
    is_bad[torch.from_numpy(np.asarray(bad, dtype=np.int64))] = True
    hit = torch.nonzero(is_bad[client] & (item == target)).squeeze(1)
    values[hit, cols] = value[cols].to(values.dtype)
    have = set(client[hit].tolist())
    new = torch.tensor([int(m) for m in bad if int(m) not in have], dtype=torch.int64)
    if len(new):
        fresh = torch.zeros(len(new), rows.width, dtype=values.dtype)
        fresh[:, cols] = value[cols].to(values.dtype)
        client = torch.cat([client, new])
        item = torch.cat([item, torch.full_like(new, target)])
        values = torch.cat([values, fresh])
        order = torch.from_numpy(np.argsort((client * rows.n_items + item).numpy(), kind="stable"))
        client, item, values = client[order], item[order], values[order]
    return RowUpdate(rows.n_clients, rows.n_items, client, item, values)


def replacement_boost(rows: RowUpdate, bad: np.ndarray, target: int, weights: torch.Tensor, how: str,
                      group: np.ndarray | None = None) -> float:
    """gamma: the inverse of the share of the target's aggregated row that the attackers in `group` (default: all
    of `bad`) hold: their weights under "weighted", their count among the item's touchers (every attacker touches
    it) under "item_mean"."""
    group = bad if group is None else group
    if how == "weighted":
        return float(1.0 / weights[torch.from_numpy(np.asarray(group, dtype=np.int64))].double().sum())
    touchers = int(torch.unique(rows.client[rows.item == target]).numel())
    touchers += sum(1 for m in bad if not bool(((rows.client == int(m)) & (rows.item == target)).any()))
    return touchers / len(group)


def dba_groups(malicious: np.ndarray, parts: int) -> np.ndarray:
    """(n_users,) each attacker's group 0..parts-1 (attackers in user order, dealt round-robin); -1 for the others."""
    group = np.full(len(malicious), -1, dtype=np.int64)
    who = np.flatnonzero(malicious)
    group[who] = np.arange(len(who)) % parts
    return group


def dba_blocks(dim: int, parts: int) -> list[slice]:
    """The target row's coordinates cut into `parts` contiguous blocks of near-equal size."""
    edges = np.linspace(0, dim, parts + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


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
    from .aggregate import aggregate

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


def backdoor_success(P: torch.Tensor, Q: torch.Tensor, indptr: np.ndarray, train_items: np.ndarray, target: int,
                     top_k: int = 10, chunk: int = 4096) -> float:
    """Share of the users who have not trained on `target` for whom it is among their top_k of the items they have
    not trained on."""
    hits = total = 0
    n = P.shape[0]
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        s = P[lo:hi] @ Q.T
        a, b = int(indptr[lo]), int(indptr[hi])
        row = np.repeat(np.arange(hi - lo), np.diff(indptr[lo: hi + 1]))
        mine = np.zeros(hi - lo, dtype=bool)
        mine[row[train_items[a:b] == target]] = True
        s[torch.from_numpy(row), torch.from_numpy(train_items[a:b])] = -float("inf")
        above = (s > s[:, target: target + 1]).sum(1).numpy()
        hits += int(((above < top_k) & ~mine).sum())
        total += int((~mine).sum())
    return hits / max(total, 1)
