"""The federated-recommendation task: matrix factorization with private user vectors, for every global-model
algorithm of `strategies.py`.

Client u holds its interactions and its user vector p_u, which never leaves the device; the shared parameter
(what the algorithms average, correct and send) is the item table Q, flattened. A local step samples positives
and uniform negatives, takes the BCE gradient of sigma(p_u . q_i) for Q (returned to the algorithm, which may
correct it) and moves p_u by the same step size (the user's own SGD). Evaluation is the core's protocol:
HR@10 of the held-out item among its sampled negatives (`labcore.metrics.ranking`).

Every algorithm here also runs on the core engine (`RunConfig.prox_mu`, `scaffold`, `qffl_q`, `server_optimizer`,
`stragglers`, `personalization`, `attack`, `defense`; the cards `flalgos-engine-*`). This task stays as the topic's
own small MF problem, where all of `strategies.py` runs through one code path beside the classification tasks.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .problems import Batches


@dataclass(frozen=True, eq=False)
class MFBatches(Batches):
    labels: torch.Tensor | None = None  # (K, C, S) 1 for positives, 0 for negatives
    private: torch.Tensor | None = None  # (C, d) the cohort's user vectors, advanced by every local step


class MFProblem:
    def __init__(self, data, dim: int = 16, num_negatives: int = 4, seed: int = 0):
        self.data, self.d, self.neg = data, dim, num_negatives
        self.I = data.n_items
        self.P = self.I * dim
        self.dtype = torch.float32
        g = torch.Generator().manual_seed(seed + 1)
        self.users = 0.1 * torch.randn(data.n_users, dim, generator=g)  # on the devices, never sent
        self.indptr = torch.from_numpy(data.train_indptr)
        self.items = torch.from_numpy(data.train_items)
        self.counts = torch.from_numpy(data.train_counts())
        if int(self.counts.min()) < 1:
            raise ValueError(f"task='mf' needs every user to hold a training item; {data.name} has users without")
        pu, pi = data.train_pairs()
        self._pairs = torch.from_numpy(pu), torch.from_numpy(pi)
        self._fixed_neg = torch.randint(0, self.I, (len(pi),), generator=g)  # q-FFL's F_k: a fixed negative each

    @property
    def n_clients(self) -> int:
        return self.data.n_users

    def init(self, gen: torch.Generator) -> torch.Tensor:
        return (0.1 * torch.randn(self.P, generator=gen)).to(self.dtype)

    def draw(self, cohort, steps, batch, gen, attackers=None, poison_frac=0.0, dba=False) -> MFBatches:
        C = len(cohort)
        u = torch.rand(steps, C, batch, generator=gen, dtype=torch.float64)
        pos = self.items[self.indptr[cohort][None, :, None] + (u * self.counts[cohort][None, :, None]).long()]
        neg = torch.randint(0, self.I, (steps, C, batch * self.neg), generator=gen)
        idx = torch.cat([pos, neg], 2)
        labels = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)], 2).to(self.dtype)
        return MFBatches(idx, None, cohort, labels=labels, private=self.users[cohort].clone())

    def grads(self, theta: torch.Tensor, b: MFBatches, t: int) -> torch.Tensor:
        C, S = b.idx.shape[1:]
        Q = theta.reshape(C, self.I, self.d)
        rows = torch.arange(C)[:, None].expand(C, S)
        q = Q[rows, b.idx[t]]  # (C, S, d)
        p = b.private
        g = (torch.sigmoid((q * p[:, None, :]).sum(-1)) - b.labels[t]) / S  # d(mean BCE)/d logit
        gQ = torch.zeros(C, self.I, self.d, dtype=theta.dtype)
        gQ.index_put_((rows, b.idx[t]), g[..., None] * p[:, None, :], accumulate=True)
        active = (t < b.steps).to(p.dtype)[:, None] if b.steps is not None else 1.0
        b.private.sub_(self.lr * active * (g[..., None] * q).sum(1))  # the user's own step, on the device
        return gQ.reshape(C, -1)

    lr = 0.1  # set by the simulation to cfg.lr

    def commit(self, b: MFBatches) -> None:
        """After local training the devices keep their new user vectors."""
        self.users[b.piece] = b.private

    def client_train_loss(self, theta: torch.Tensor) -> torch.Tensor:
        Q = theta.reshape(self.I, self.d)
        u, i = self._pairs
        pu = self.users[u]
        s_pos = (pu * Q[i]).sum(-1)
        s_neg = (pu * Q[self._fixed_neg]).sum(-1)
        nll = F.softplus(-s_pos) + F.softplus(s_neg)
        tot = torch.zeros(self.n_clients, dtype=nll.dtype).index_add_(0, u, nll)
        return tot / self.counts.to(nll.dtype)

    def client_test_acc(self, theta: torch.Tensor) -> torch.Tensor:
        """(N,) HR@10 per user (1 or 0; NaN for users without a test item)."""
        Q = theta.reshape(self.I, self.d)
        test, negs = self.data.test_items, self.data.test_negatives
        users = np.nonzero(test >= 0)[0]
        out = torch.full((self.n_clients,), float("nan"), dtype=torch.float64)
        pu = self.users[users]
        s_pos = (pu * Q[torch.from_numpy(test[users])]).sum(-1)
        neg = torch.from_numpy(negs[users])
        s_neg = (pu[:, None, :] * Q[neg.clamp(min=0)]).sum(-1)
        rank = ((s_neg > s_pos[:, None]) & (neg >= 0)).sum(1)
        out[users] = ((rank < 10) & torch.isfinite(s_pos)).double()  # a diverged model hits nothing
        return out

    def test_weights(self) -> torch.Tensor:
        return torch.from_numpy((self.data.test_items >= 0).astype(np.float64))

    def hit_ratio(self, theta: torch.Tensor) -> float:
        """The core's HR@10 (`labcore.metrics.ranking.hit_ratio_ndcg`) for the current user vectors."""
        from ..metrics.ranking import hit_ratio_ndcg

        return hit_ratio_ndcg(self.users, theta.reshape(self.I, self.d), self.data.test_items,
                              self.data.test_negatives, 10)[0]


def load_mf_data(name: str, seed: int = 0):
    """`synthetic-<size>` from the core's generator, otherwise `labcore.data.load_dataset(name)`."""
    from ..data import load_dataset, make_synthetic

    if name.startswith("synthetic-"):
        return make_synthetic(name.split("-", 1)[1], seed=seed)
    return load_dataset(name, seed=seed)
