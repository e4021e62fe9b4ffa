"""Table 2's traditional baselines and Fig. 1(a)'s MF side on FELLRec's own split: matrix factorization trained
centrally, and FedMF over the same KMeans clients FELLRec uses.

    score(u, i) = p_u . q_i              one vector per user and per item (dim d)
    loss        = - log softmax_i(p_u . Q^T)[i]  for each training item i of user u (the whole catalogue, as the
                                          language model's next-item loss)

Centralized: Adam on every client user's training items in one place. FedMF: each round every client starts from
the global item table Q, trains its users' vectors (which never leave it) and its copy of Q for `local_epochs`,
and the server averages the copies weighted by the clients' training items (FedAvg). Both rank the whole
catalogue with the user's earlier items excluded, as the language model's evaluation does (`metrics.rank_metrics`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .data import SeqData, eval_inputs
from .metrics import rank_metrics


@dataclass(frozen=True)
class MFSettings:
    dim: int = 32
    lr: float = 0.01
    batch_size: int = 256
    epochs: int = 20  # centralized
    rounds: int = 20  # FedMF, each of `local_epochs` on every client
    local_epochs: int = 1


def _pairs(data: SeqData, users: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """(row of the user in `users`, training item) for every training item of these users."""
    rows = [np.full(len(data.train(u)), r) for r, u in enumerate(users)]
    items = [data.train(u) for u in users]
    return torch.as_tensor(np.concatenate(rows)), torch.as_tensor(np.concatenate(items), dtype=torch.long)


def _epochs(P: torch.Tensor, Q: torch.Tensor, rows, items, s: MFSettings, epochs: int, gen: torch.Generator):
    P, Q = P.clone().requires_grad_(True), Q.clone().requires_grad_(True)
    opt = torch.optim.Adam([P, Q], lr=s.lr)
    for _ in range(epochs):
        for b in torch.randperm(len(rows), generator=gen).split(s.batch_size):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(P[rows[b]] @ Q.T, items[b]).backward()
            opt.step()
    return P.detach(), Q.detach()


def _init(n: int, s: MFSettings, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(n, s.dim, generator=gen) * 0.1


def central(data: SeqData, clients: list[np.ndarray], s: MFSettings, seed: int) -> pd.DataFrame:
    users = np.concatenate(clients)
    gen = torch.Generator().manual_seed(seed)
    P, Q = _init(len(users), s, gen), _init(data.n_items, s, gen)
    P, Q = _epochs(P, Q, *_pairs(data, users), s, s.epochs, gen)
    return evaluate(P, Q, data, clients)


def federated(data: SeqData, clients: list[np.ndarray], s: MFSettings, seed: int) -> pd.DataFrame:
    gen = torch.Generator().manual_seed(seed)
    Q = _init(data.n_items, s, gen)
    Ps = [_init(len(users), s, gen) for users in clients]
    pairs = [_pairs(data, users) for users in clients]
    weight = torch.tensor([len(p[0]) for p in pairs], dtype=torch.float32)
    weight = weight / weight.sum()
    for _ in range(s.rounds):
        copies = []
        for c in range(len(clients)):
            Ps[c], q = _epochs(Ps[c], Q, *pairs[c], s, s.local_epochs, gen)
            copies.append(q)
        Q = sum(w * q for w, q in zip(weight, copies))
    return evaluate(torch.cat(Ps), Q, data, clients)


def evaluate(P: torch.Tensor, Q: torch.Tensor, data: SeqData, clients: list[np.ndarray]) -> pd.DataFrame:
    """One row per client: its users' mean R@10, R@20, N@10, N@20 and its number of users (P's rows are the
    clients' users in order)."""
    users = np.concatenate(clients)
    _, _, seen, targets = eval_inputs(data, users, history=1)
    per_user = rank_metrics(P @ Q.T, seen, targets)
    client = np.concatenate([np.full(len(u), c) for c, u in enumerate(clients)])
    frame = pd.DataFrame({"client": client, **per_user})
    out = frame.groupby("client").mean().reset_index()
    out["users"] = frame.groupby("client").size().to_numpy()
    return out
