"""What the recommendation server learns from obfuscated item requests, and what the chain costs.

The server sees, for each participating device and round, the set of item ids
it requested (sorted, so positions say nothing). A share rho of them are
sampled non-clicked items. How well can it tell the real clicks apart?

Attacks (each gives every requested item a score; the server guesses the
n_click top-scored items of a request as the clicks, n_click being public
since rho and T are protocol settings):

* ``random``: no knowledge; precision 1 - rho on average (the floor).
* ``popularity``: the server ranks by item popularity (it can count requests
  over all devices; here it is given the true click counts, the worst case).
  Clicks follow popularity, uniform negatives do not, so this beats random.
* ``linkage``: the server links one device's requests over the rounds it took
  part in (it answers them, so it knows who asked) and counts how often each
  item came back. A device's clicks are drawn from its few hundred clicked
  items, its negatives from thousands of others: repeats are clicks.
  Popularity breaks ties.

What the chain costs as K grows is measured in `efficiency.chain_cost_sweep`.

The defence the protocol allows without extra cost: draw the non-clicked
items with the same popularity profile as clicks (``negatives="popular"``),
which takes the popularity attack back to chance. Linkage is not stopped by
that; only fewer participations per device (or fresh identities) limit it.

Metrics per request: precision of the guess (the share of guessed items that
are real clicks) and AUC of the score (a real click ranked above a
non-clicked item), averaged over requests.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..privacy.chain import ChainBrokenError, chain_aggregate
from ..privacy.secagg import FixedPoint
from .features import Catalog

ATTACKS = ("random", "popularity", "linkage")
NEGATIVE_MODES = ("uniform", "popular")


def draw_requests(catalog: Catalog, users: np.ndarray, n_click: int, n_neg: int, rounds: int,
                  rng: np.random.Generator, negatives: str = "uniform") -> tuple[np.ndarray, np.ndarray]:
    """Requests of `users` over `rounds` participations: items (U, rounds, T) and labels (U, rounds, T)."""
    if negatives not in NEGATIVE_MODES:
        raise ValueError(f"negatives={negatives!r}: expected one of {NEGATIVE_MODES}")
    known_indptr, known_items = catalog.known
    pop = catalog.item_popularity.astype(np.float64) + 1.0
    T = n_click + n_neg
    items = np.empty((len(users), rounds, T), np.int64)
    labels = np.zeros((len(users), rounds, T), np.int8)
    for a, u in enumerate(users):
        targets = catalog.user_train(int(u))
        known = known_items[known_indptr[u] : known_indptr[u + 1]]
        mask = np.ones(catalog.n_items, bool)
        mask[known] = False
        free = np.flatnonzero(mask)
        p = pop[free] / pop[free].sum() if negatives == "popular" else None
        for r in range(rounds):
            c = rng.choice(targets, size=n_click, replace=n_click > len(targets))
            n = rng.choice(free, size=n_neg, replace=False, p=p)
            row = np.concatenate([c, n])
            lab = np.r_[np.ones(n_click, np.int8), np.zeros(n_neg, np.int8)]
            order = rng.permutation(T)
            items[a, r], labels[a, r] = row[order], lab[order]
    return items, labels


def attack_scores(items: np.ndarray, catalog: Catalog, attack: str, rng: np.random.Generator) -> np.ndarray:
    """The server's score of every requested item (higher = more likely a click)."""
    if attack not in ATTACKS:
        raise ValueError(f"attack={attack!r}: expected one of {ATTACKS}")
    pop = catalog.item_popularity.astype(np.float64)
    tiny = rng.random(items.shape) * 1e-6  # random tie-breaking
    if attack == "random":
        return rng.random(items.shape)
    if attack == "popularity":
        return pop[items] / (pop.max() + 1) + tiny
    U, R, T = items.shape  # linkage: appearances of the item in this device's requests, popularity breaks ties
    counts = np.zeros(items.shape)
    for a in range(U):
        ids, inv, cnt = np.unique(items[a].reshape(-1), return_inverse=True, return_counts=True)
        counts[a] = cnt[inv].reshape(R, T)
    return counts + pop[items] / (pop.max() + 1) + tiny


def guess_metrics(scores: np.ndarray, labels: np.ndarray, n_click: int) -> dict:
    """Precision of the top-n_click guess and AUC of the scores, per request, averaged."""
    s = scores.reshape(-1, scores.shape[-1])
    y = labels.reshape(-1, labels.shape[-1]).astype(bool)
    top = np.argsort(-s, axis=1)[:, :n_click]
    precision = np.take_along_axis(y, top, 1).mean()
    pos = np.where(y, s, np.nan)
    neg = np.where(~y, s, np.nan)
    # AUC per request: share of (click, non-click) pairs ordered correctly
    greater = (pos[:, :, None] > neg[:, None, :])
    valid = ~np.isnan(pos)[:, :, None] & ~np.isnan(neg)[:, None, :]
    auc = (greater & valid).sum((1, 2)) / valid.sum((1, 2)).clip(1)
    return {"precision": float(precision), "auc": float(auc.mean())}


def rho_sweep(catalog: Catalog, rhos=(0.5, 0.6, 0.7, 0.8, 0.9), request_size: int = 10, users: int = 500,
              rounds: int = 10, seed: int = 0, negatives=("uniform", "popular")) -> pd.DataFrame:
    """Server's guess precision / AUC for every attack, rho and negative sampler.

    `rounds` participations per device are drawn; `random` and `popularity` judge each request on its
    own, `linkage` uses all of the device's requests.
    """
    rng = np.random.default_rng([seed, 31])
    sample = np.sort(rng.choice(np.flatnonzero(catalog.train_counts() >= 2), size=min(users, catalog.n_users),
                                replace=False))
    rows = []
    for neg_mode in negatives:
        for rho in rhos:
            n_click = max(1, int(round((1 - rho) * request_size)))
            n_neg = request_size - n_click
            items, labels = draw_requests(catalog, sample, n_click, n_neg, rounds,
                                          np.random.default_rng([seed, int(rho * 1000), NEGATIVE_MODES.index(neg_mode)]),
                                          neg_mode)
            for attack in ATTACKS:
                m = guess_metrics(attack_scores(items, catalog, attack, np.random.default_rng([seed, 5])), labels,
                                  n_click)
                rows.append({"negatives": neg_mode, "rho": rho, "effective_rho": n_neg / request_size,
                             "n_click": n_click, "attack": attack, "rounds_linked": rounds if attack == "linkage" else 1,
                             **m, "chance": n_click / request_size})
    return pd.DataFrame(rows)


def linkage_sweep(catalog: Catalog, rounds_list=(1, 2, 5, 10, 20), rho: float = 0.9, request_size: int = 10,
                  users: int = 300, seed: int = 0) -> pd.DataFrame:
    """Linkage attack precision as the server links more participations of the same device."""
    rng = np.random.default_rng([seed, 37])
    sample = np.sort(rng.choice(np.flatnonzero(catalog.train_counts() >= 2), size=min(users, catalog.n_users),
                                replace=False))
    n_click = max(1, int(round((1 - rho) * request_size)))
    n_neg = request_size - n_click
    rows = []
    for neg_mode in NEGATIVE_MODES:
        items, labels = draw_requests(catalog, sample, n_click, n_neg, max(rounds_list),
                                      np.random.default_rng([seed, 41, NEGATIVE_MODES.index(neg_mode)]), neg_mode)
        for R in rounds_list:
            m = guess_metrics(attack_scores(items[:, :R], catalog, "linkage", np.random.default_rng([seed, 5])),
                              labels[:, :R], n_click)
            rows.append({"negatives": neg_mode, "rho": rho, "rounds_linked": R, **m, "chance": n_click / request_size})
    return pd.DataFrame(rows)


# --- the chain when a client drops out ----------------------------------------------------------------
def dropout_scenarios(K: int = 8, n: int = 1000, seed: int = 0) -> pd.DataFrame:
    """What the chain does when a client drops: raise, re-route (exact sum over the live clients), or refuse.

    K >= 6 (the scenarios drop clients 2, 3 and 5)."""
    if K < 6:
        raise ValueError(f"K={K}: the dropout scenarios need at least 6 clients")
    rng = np.random.default_rng([seed, 47])
    G = rng.normal(0, 1e-2, size=(K, n))
    codec = FixedPoint()
    cases = [("no dropout", {}, "raise"), ("client 3 gone before the round", {3: "before"}, "raise"),
             ("client 3 gone before the round", {3: "before"}, "reroute"),
             ("client 3 gone after receiving its share", {3: "after"}, "reroute"),
             ("clients 2 and 5 gone before the round", {2: "before", 5: "before"}, "reroute")]
    rows = []
    for label, drops, policy in cases:
        for mode in ("shares", "relay"):
            try:
                total, rep = chain_aggregate(G, mode=mode, dropouts=drops, on_dropout=policy, codec=codec, seed=seed)
                live = [c for c in range(K) if c not in drops]
                err = float(np.abs(total - G[live].sum(0)).max())
                rows.append({"case": label, "policy": policy, "mode": mode, "outcome": "sum of the live clients",
                             "clients_in_sum": len(rep.included), "max_error": err, "rerouted_links": len(rep.rerouted),
                             "sequential_hops": rep.sequential_hops, "error": ""})
            except ChainBrokenError as e:
                rows.append({"case": label, "policy": policy, "mode": mode, "outcome": "ChainBrokenError",
                             "clients_in_sum": 0, "max_error": float("nan"), "rerouted_links": 0,
                             "sequential_hops": 0, "error": str(e)})
    return pd.DataFrame(rows)
