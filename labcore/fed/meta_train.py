"""pFedMe and Per-FedAvg on the recommendation engine (FedMF): personalization that changes what a client sends.

Ditto and APFL (`personal.py`) train a personal model beside FedAvg's update. These two train the global update
itself their own way, so they replace the engine's local trainer:

pFedMe (Dinh et al. 2020, "Personalized federated learning with Moreau envelopes", Alg. 1). Each client keeps a
local copy w of the model and a personal one theta, both starting at the round's global model. On each batch,
theta takes K = `pfedme_steps` steps on the client's loss plus lambda/2 ||theta - w||^2 (every row and the user
vector), then w moves toward it, w <- w - lr lambda (w - theta). The client sends w - Q; the server averages (beta
= 1). theta is the user's personal model (stored; ranked with at evaluation, as Ditto's). Both steps use the
engine's lr (the paper has a personal step size for theta).

Per-FedAvg, first-order (Fallah et al. 2020, "Personalized FL with theoretical guarantees: a model-agnostic
meta-learning approach", Alg. 1 with the FO gradient): each local step takes two batches D, D' (the client's batches
in pairs; an odd last batch serves as both): temp = w - alpha grad f(w; D), then w <- w - lr grad f(temp; D'). The
client sends w - Q. A user's personal model is one step of its own training data from the current global model,
(Q, p_u) - alpha grad f: made for every user at each evaluation, on the first batch of a fresh one-epoch schedule of
its training data (some public versions fine-tune on the test batch; this one does not).

The losses, gradients and scalings are the engine's (`methods.base.train_client`): mean BCE, lr times the batch
size, an item row's gradient averaged over its samples in the batch, L2 weight decay on the rows and user vector
used. Vectorized across the cohort over the round's touched rows: one step is a few tensor operations on the
(M, B) batch and the (R, d) rows, no Python loop over clients. The pulls act on the rows the client has touched in
the round: elsewhere theta and w both still equal the global table.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .local_train import touched_rows
from .updates import LocalResult, RowUpdate
from .sampling import RoundPlan


@dataclass
class _Round:
    """The round's touched rows: keys client * N + item (sorted), each sample's row, and the rows' global values."""
    keys: torch.Tensor
    row_of_sample: torch.Tensor
    row_client: torch.Tensor
    row_item: torch.Tensor
    Qr: torch.Tensor

    @staticmethod
    def of(plan: RoundPlan, Q: torch.Tensor) -> "_Round":
        keys, inv = touched_rows(plan, Q.shape[0])
        item = keys % Q.shape[0]
        return _Round(keys, inv, keys // Q.shape[0], item, Q[item])

    def rows(self, n_clients: int, n_items: int, values: torch.Tensor) -> RowUpdate:
        return RowUpdate(n_clients, n_items, self.row_client, self.row_item, values)


class _Batch:
    """One local step's samples of the clients that take it (`who`, cohort positions): their (m, B) rows of the
    round and labels, and the batch's distinct rows. Clients past their last step are left out: late steps are
    taken by the few heaviest users."""

    def __init__(self, plan: RoundPlan, rnd: _Round, idx: np.ndarray, dtype):
        idx = torch.from_numpy(idx)
        self.who = torch.nonzero((idx >= 0).any(1)).squeeze(1)
        idx = idx[self.who]
        self.valid = idx >= 0
        safe = idx.clamp(min=0)
        self.bs = self.valid.sum(1)
        self.r = rnd.row_of_sample[safe]
        self.y = torch.from_numpy(plan.sample_label).to(dtype)[safe]
        self.uniq, self.inv = torch.unique(self.r[self.valid], return_inverse=True)  # the batch's distinct rows
        self.count = torch.bincount(self.inv, minlength=len(self.uniq)).to(dtype)
        on = torch.zeros(plan.n_clients, dtype=torch.bool)
        on[self.who] = True
        self.rows_on = torch.nonzero(on[rnd.row_client]).squeeze(1)  # every round row of these clients

    def grads(self, D: torch.Tensor, Qr: torch.Tensor, p: torch.Tensor, wd: float):
        """The engine's gradients at rows Qr + D and the clients' user vectors p (m, d): (loss sum, grad of p,
        the batch's distinct rows, their gradients)."""
        e = Qr[self.r] + D[self.r]
        x = (p[:, None, :] * e).sum(-1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(x, self.y, reduction="none")
        g = (torch.sigmoid(x) - self.y) * self.valid
        grad_p = (g[..., None] * e).sum(1) / self.bs.to(D.dtype)[:, None] + 2 * wd * p
        uniq = self.uniq
        sums = torch.zeros(len(uniq), D.shape[1], dtype=D.dtype).index_add_(
            0, self.inv, (g[..., None] * p[:, None, :])[self.valid])
        grad_rows = sums / self.count[:, None] + 2 * wd * (Qr[uniq] + D[uniq])
        return float((loss * self.valid).sum()), grad_p, uniq, grad_rows


def train_pfedme(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float, lam: float,
                 inner_steps: int) -> tuple[LocalResult, torch.Tensor, torch.Tensor, _Round]:
    """The cohort's pFedMe round: (w's result to send, theta's rows (R, d) minus the global ones, theta's user
    vectors (M, d), the round's rows)."""
    rnd = _Round.of(plan, Q)
    Dw, Dt = torch.zeros_like(rnd.Qr), torch.zeros_like(rnd.Qr)
    pw, pt = p0.clone(), p0.clone()
    loss_sum, n_samples = 0.0, 0
    for t in range(plan.n_active.shape[0]):
        b = _Batch(plan, rnd, plan.step(t), Q.dtype)
        who = b.who
        pull = torch.zeros(len(Dt), 1, dtype=Dt.dtype)
        pull[b.rows_on] = lr * lam  # on every row of theirs in the round (others: theta = w there)
        for k in range(inner_steps):
            loss, grad_p, uniq, grad_rows = b.grads(Dt, rnd.Qr, pt[who], weight_decay)
            if k == 0:  # the loss of the step's first personal iterate
                loss_sum, n_samples = loss_sum + loss, n_samples + int(b.bs.sum())
            Dt -= pull * (Dt - Dw)  # the proximal pull
            Dt.index_add_(0, uniq, -lr * grad_rows)
            pt[who] -= lr * (grad_p + lam * (pt[who] - pw[who]))
        Dw -= pull * (Dw - Dt)
        pw[who] -= lr * lam * (pw[who] - pt[who])
    M, N = plan.n_clients, Q.shape[0]
    return LocalResult(pw, None, None, loss_sum, n_samples, rnd.rows(M, N, Dw)), Dt, pt, rnd


def train_perfedavg(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                    alpha: float) -> LocalResult:
    """The cohort's Per-FedAvg (first-order) round: the update w - Q to send."""
    rnd = _Round.of(plan, Q)
    Dw, pw = torch.zeros_like(rnd.Qr), p0.clone()
    loss_sum, n_samples = 0.0, 0
    for t in range(0, plan.n_active.shape[0], 2):
        now = plan.step(t)
        first = _Batch(plan, rnd, now, Q.dtype)
        paired = (plan.n_steps > t + 1)[:, None]  # an odd last batch is both D and D'
        second = _Batch(plan, rnd, np.where(paired, plan.step(t + 1), now), Q.dtype)
        who = first.who  # the same clients take both halves
        loss, grad_p, uniq, grad_rows = first.grads(Dw, rnd.Qr, pw[who], weight_decay)
        loss_sum, n_samples = loss_sum + loss, n_samples + int(first.bs.sum())
        D_tmp = Dw.index_add(0, uniq, -alpha * grad_rows)
        p_tmp = pw[who] - alpha * grad_p
        _, grad_p, uniq, grad_rows = second.grads(D_tmp, rnd.Qr, p_tmp, weight_decay)  # FO: the gradient at temp
        Dw.index_add_(0, uniq, -lr * grad_rows)  # ... applied to w
        pw[who] -= lr * grad_p
    return LocalResult(pw, None, None, loss_sum, n_samples, rnd.rows(plan.n_clients, Q.shape[0], Dw))


def perfedavg_personal(Q: torch.Tensor, P: torch.Tensor, plan: RoundPlan, alpha: float, weight_decay: float
                       ) -> tuple[torch.Tensor, RowUpdate]:
    """Every planned user's personal model: one step of size alpha from (Q, P[plan.clients]) on its first batch of
    `plan`. Returns the user vectors (M, d) and the item-row changes (the rows that batch touched)."""
    rnd = _Round.of(plan, Q)
    b = _Batch(plan, rnd, plan.step(0), Q.dtype)
    p_new = P[torch.from_numpy(plan.clients.astype(np.int64))]  # a fancy-indexed copy
    _, grad_p, uniq, grad_rows = b.grads(torch.zeros_like(rnd.Qr), rnd.Qr, p_new[b.who], weight_decay)
    p_new[b.who] -= alpha * grad_p
    return p_new, RowUpdate(plan.n_clients, Q.shape[0], rnd.row_client[uniq], rnd.row_item[uniq], -alpha * grad_rows)


EVAL_ROUNDS = 10**9  # Per-FedAvg's evaluation schedules draw from rounds EVAL_ROUNDS + t, apart from training's


def perfedavg_quality(Q: torch.Tensor, P: torch.Tensor, data, sampler, cfg, round_idx: int,
                      chunk: int = 1024) -> tuple[float, float]:
    """HR@k and NDCG@k of every user's Per-FedAvg personal model (`perfedavg_personal` on a fresh one-epoch
    schedule of its training data), in chunks of users."""
    from ..metrics import hit_ratio_ndcg
    from .sampling import plan_round

    users = np.flatnonzero(data.test_items >= 0)
    N = Q.shape[0]
    p_all = P.clone()
    keys, values = [], []
    for lo in range(0, len(users), chunk):
        part = users[lo: lo + chunk]
        plan = plan_round(data, sampler, part, cfg.num_negatives, 1, cfg.batch_size, cfg.seed, EVAL_ROUNDS + round_idx)
        p_new, moved = perfedavg_personal(Q, P, plan, cfg.perfedavg_alpha, cfg.weight_decay)
        p_all[torch.from_numpy(part)] = p_new
        keys.append(torch.from_numpy(part)[moved.client] * N + moved.item)
        values.append(moved.values)
    keys, values = torch.cat(keys), torch.cat(values)  # sorted: users ascending, rows by (user, item)

    def rows(u: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        out = Q[items].clone()
        if len(keys):
            k = u * N + items
            at = torch.searchsorted(keys, k).clamp(max=len(keys) - 1)
            hit = keys[at] == k  # a ranked item the one-step batch drew as a negative: its moved row
            out[hit] += values[at[hit]]
        return out

    return hit_ratio_ndcg(p_all, rows, data.test_items, data.test_negatives, cfg.top_k)
