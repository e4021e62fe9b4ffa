"""How unequally the clients (users) hold the training data.

In a federated recommender every user is a client, so the spread of the users'
training-interaction counts is the spread of the clients' data sizes: the
"data skew" of client heterogeneity.
"""
from __future__ import annotations

import numpy as np


def gini(values) -> float:
    """Gini coefficient of non-negative values: 0 when all are equal, towards 1 when one holds everything."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n, total = len(x), x.sum()
    if n == 0 or total == 0:
        return 0.0
    ranks = np.arange(1, n + 1)
    return float(2 * (ranks * x).sum() / (n * total) - (n + 1) / n)


def top_share(values, fraction: float = 0.1) -> float:
    """Share of the total held by the largest `fraction` of the values (at least one of them)."""
    x = np.sort(np.asarray(values, dtype=np.float64))[::-1]
    total = x.sum()
    if total == 0:
        return 0.0
    k = max(1, int(round(fraction * len(x))))
    return float(x[:k].sum() / total)


def client_data_gini(data) -> float:
    """Gini coefficient of the clients' training-interaction counts of an InteractionData."""
    return gini(data.train_counts())


def client_data_summary(data) -> dict:
    """Clients' data sizes in one dict: Gini, the top 10% clients' share, min / median / max interactions."""
    counts = data.train_counts()
    return {"clients": int(len(counts)), "gini": gini(counts), "top10_share": top_share(counts, 0.1),
            "min": int(counts.min()), "median": float(np.median(counts)), "max": int(counts.max())}
