"""Which users form which client: KMeans on MF user embeddings (the paper's split), or Dirichlet(c).

The MF user embeddings come from the lab's core MF engine (`labcore.fed.engine.Simulation`, FedMF) run
on the clients' users' training interactions. KMeans (scikit-learn) groups users with similar tastes into
`n_clients` clients, as the paper clusters pre-trained MF embeddings. The Dirichlet control (Table 6)
first groups users into `n_clients` taste clusters the same way and then spreads each cluster over the
clients with proportions drawn from Dirichlet(c): small c puts each cluster mostly on one client (very
different clients), large c mixes them (alike clients).
"""
from __future__ import annotations

import numpy as np

from ..config import RunConfig
from ..data.base import InteractionData
from .config import FellrecConfig, check_fits
from .data import SeqData


def interaction_data(data: SeqData, users: np.ndarray, seed: int = 0) -> InteractionData:
    """The clients' users' training items in the core's format (validation item as the test item)."""
    rng = np.random.default_rng(seed)
    rows = [np.unique(data.train(u)) for u in users]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    test = np.array([data.valid(u)[0] for u in users], dtype=np.int64)
    n_neg = min(20, data.n_items - 1)
    negs = []
    for r, t in zip(rows, test):
        pool = np.setdiff1d(np.arange(data.n_items), np.append(r, t))
        negs.append(rng.choice(pool, size=n_neg, replace=len(pool) < n_neg))
    return InteractionData(f"{data.name}-clients", len(users), data.n_items, indptr,
                           np.concatenate(rows).astype(np.int64), test, np.stack(negs).astype(np.int64),
                           notes="train items of the FELLRec clients' users")


def mf_user_embeddings(data: SeqData, users: np.ndarray, rounds: int, seed: int = 0, dim: int = 16) -> np.ndarray:
    """(len(users), dim) user vectors P learned by the core FedMF engine."""
    from ..fed.engine import Simulation

    idata = interaction_data(data, users, seed)
    cfg = RunConfig(method="fedmf", dim=dim, rank=min(4, dim), rounds=rounds, aggregation="weighted",
                    clients_per_round=min(60, len(users)), local_epochs=2, batch_size=64, lr=0.5,
                    eval_every=10**6, rank_every=0, seed=seed)
    sim = Simulation(cfg, idata)
    for _ in range(rounds):
        sim.step()
    return sim.P.numpy().copy()


def cached_user_embeddings(cfg: FellrecConfig, data: SeqData) -> np.ndarray:
    """mf_user_embeddings of the clients' users, stored on disk (every run of the same data shares them)."""
    from ..runtime import default_cache_dir
    from ..typed_config import hash_key

    fields = ("dataset", "item_text", "max_users", "foundation_share", "vocab_size", "data_seed", "mf_rounds")
    key = hash_key({f: getattr(cfg, f) for f in fields}, "mf-")
    path = default_cache_dir() / "fellrec" / "mf" / f"{key}.npy"
    if path.exists():
        return np.load(path)
    emb = mf_user_embeddings(data, data.client_users, cfg.mf_rounds, seed=cfg.data_seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npy")
    np.save(tmp, emb)
    tmp.replace(path)
    return emb


def kmeans_labels(emb: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    from sklearn.cluster import KMeans

    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True).clip(min=1e-12)
    return KMeans(n_clusters=n, n_init=10, random_state=seed).fit_predict(unit).astype(np.int64)


def dirichlet_assign(groups: np.ndarray, n_clients: int, c: float, seed: int = 0) -> np.ndarray:
    """Spread each group's users over the clients with Dirichlet(c) proportions; every client gets a user."""
    rng = np.random.default_rng([seed, 11])
    out = np.empty(len(groups), dtype=np.int64)
    for g in np.unique(groups):
        idx = rng.permutation(np.flatnonzero(groups == g))
        share = rng.dirichlet(np.full(n_clients, c))
        cuts = (np.cumsum(share)[:-1] * len(idx)).round().astype(int)
        for client, part in enumerate(np.split(idx, cuts)):
            out[part] = client
    for client in range(n_clients):  # an empty client takes one user from the largest
        if not (out == client).any():
            big = np.bincount(out, minlength=n_clients).argmax()
            out[np.flatnonzero(out == big)[0]] = client
    return out


def assign_clients(cfg: FellrecConfig, data: SeqData) -> list[np.ndarray]:
    """The users (ids into data.seqs) of each client."""
    users = data.client_users
    check_fits(cfg, len(users))
    emb = cached_user_embeddings(cfg, data)
    groups = kmeans_labels(emb, cfg.n_clients, seed=cfg.data_seed)
    labels = groups if cfg.split == "kmeans" else dirichlet_assign(groups, cfg.n_clients, cfg.dirichlet_c,
                                                                    seed=cfg.data_seed)
    return [users[labels == c] for c in range(cfg.n_clients)]
