"""HR@K and NDCG@K with the test item ranked among its sampled negatives (NCF protocol)."""
from __future__ import annotations

import numpy as np
import torch


BLOCK_USERS = 64  # users scored at a time: their candidates' rows stay in the cache


def candidate_scores(pu: torch.Tensor, Q: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
    """(U, K) scores pu[i] . Q[items[i, j]]: the numbers of `(pu[:, None, :] * Q[items]).sum(-1)`, bit for bit, a
    block of users at a time in one reused buffer (the whole (U, K, d) gather is 50 MB for 2,000 users and 100
    candidates, and ten times slower)."""
    dtype = torch.promote_types(pu.dtype, Q.dtype)
    pu, Q = pu.to(dtype), Q.to(dtype)  # exact: the product is taken in the wider type either way
    U, K = items.shape
    out = torch.empty(U, K, dtype=dtype)
    buf = torch.empty(min(U, BLOCK_USERS) * K, Q.shape[1], dtype=dtype)
    for lo in range(0, U, BLOCK_USERS):
        n = min(BLOCK_USERS, U - lo)
        rows = torch.index_select(Q, 0, items[lo:lo + n].reshape(-1), out=buf[: n * K]).view(n, K, -1)
        torch.sum(rows.mul_(pu[lo:lo + n, None, :]), -1, out=out[lo:lo + n])
    return out


def hit_ratio_ndcg(P: torch.Tensor, Q: torch.Tensor, test_items: np.ndarray, negatives: np.ndarray,
                   k: int = 10) -> tuple[float, float]:
    """Mean HR@k and NDCG@k over users that have a test item.

    rank = number of negatives scored strictly above the test item (ties count
    in the test item's favour, as in NCF's evaluation). Q: the item table (N, d),
    every user's own (n_users, N, d) (personal models), or a function of (users (U, 1), items (U, K)) giving
    those users' rows of those items (U, K, d) (personal models not held as whole tables).
    """
    users = np.nonzero(test_items >= 0)[0]
    if users.size == 0:
        return float("nan"), float("nan")
    u = torch.from_numpy(users)
    pos = torch.from_numpy(test_items[users])
    neg = torch.from_numpy(negatives[users])
    valid_neg = neg >= 0
    pu = P[u]
    if callable(Q):
        s_pos = (pu * Q(u[:, None], pos[:, None])[:, 0]).sum(-1)
        s_neg = (pu[:, None, :] * Q(u[:, None], neg.clamp(min=0))).sum(-1)
    elif Q.dim() == 3:
        s_pos = (pu * Q[u, pos]).sum(-1)
        s_neg = (pu[:, None, :] * Q[u[:, None], neg.clamp(min=0)]).sum(-1)
    else:
        s_pos = (pu * Q[pos]).sum(-1)
        s_neg = candidate_scores(pu, Q, neg.clamp(min=0))
    rank = ((s_neg > s_pos[:, None]) & valid_neg).sum(1)
    hit = rank < k
    ndcg = torch.where(hit, 1.0 / torch.log2(rank.to(torch.float64) + 2.0), torch.zeros((), dtype=torch.float64))
    return float(hit.double().mean()), float(ndcg.mean())
