"""Full-ranking Recall@K and NDCG@K (every item is a candidate; the user's past items are excluded)."""
from __future__ import annotations

import numpy as np
import torch


def rank_metrics(scores: torch.Tensor, seen: list[np.ndarray], targets: list[np.ndarray], ks=(10, 20)) -> dict:
    """Per-user recall and NDCG at each K: arrays of shape (n_users,), keyed 'R@10', 'N@10', ...

    Recall@K = |top-K ∩ targets| / |targets|; NDCG@K = DCG of the hits / DCG of an ideal list."""
    s = scores.detach().clone().double()
    for u, items in enumerate(seen):
        s[u, torch.as_tensor(items, dtype=torch.long)] = -torch.inf
    kmax = max(ks)
    top = torch.topk(s, kmax, dim=1).indices.numpy()
    out = {}
    discount = 1.0 / np.log2(np.arange(2, kmax + 2))
    hits = np.stack([np.isin(top[u], targets[u]) for u in range(len(targets))]).astype(float)
    n_t = np.array([len(t) for t in targets], dtype=float)
    for k in ks:
        out[f"R@{k}"] = hits[:, :k].sum(1) / n_t
        dcg = (hits[:, :k] * discount[:k]).sum(1)
        ideal = np.array([discount[: int(min(n, k))].sum() for n in n_t])
        out[f"N@{k}"] = dcg / ideal
    return out


def imbalance(per_client: np.ndarray) -> float:
    """(best - worst) / worst of the clients' metric (Table 4)."""
    best, worst = float(np.max(per_client)), float(np.min(per_client))
    return float("inf") if worst == 0 else (best - worst) / worst


def overall(per_client) -> dict:
    """User-weighted means over every client user (a frame with one row per client: users, R@10, ...), and the
    imbalance of R@10 across the clients."""
    w = per_client["users"] / per_client["users"].sum()
    out = {m: float((per_client[m] * w).sum()) for m in ("R@10", "R@20", "N@10", "N@20")}
    out["imbalance"] = imbalance(per_client["R@10"].to_numpy())
    return out
