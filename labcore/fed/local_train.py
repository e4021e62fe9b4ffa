"""Local training of a whole cohort of clients at once (the hot path).

Model: matrix factorization with logits x_ui = p_u . q_i and binary
cross-entropy on positives and sampled negatives (NCF / CoLR). The item
embedding a client trains is either

* full:      q_i = Q_i + D_i           (FedMF, SVD, Top-K: D is the local update)
* low-rank:  q_i = Q_i + B a_i         (CoLR / SCoLR: only A = [a_i] is trained)

Update rule, as in the CoLR reference code (embeddings with
`scale_grad_by_freq=True`, loss averaged over the batch, learning rate
multiplied by the batch size, L2 on the embeddings the batch uses): every
row a batch touches moves by `lr` times the *mean over its occurrences* of
its per-sample gradient. Closed-form gradients, one batched step for all
clients, rows addressed as client * n_items + item: no Python loop over
clients. `loop_oracle.py` computes the same thing client by client with
autograd, as a test oracle and the benchmark baseline.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .sampling import RoundPlan


@dataclass(frozen=True, eq=False)
class LowRank:
    """Frozen B shared by the cohort, which of its columns each client trains, and A's lr scale."""

    B: torch.Tensor  # (d, r)
    col_mask: torch.Tensor  # (M, r) 1 where client m trains column j (SCoLR's S_u), else 0
    grad_scale: torch.Tensor  # (M,) e.g. sqrt(r_u / d)


@dataclass(frozen=True, eq=False)
class LocalResult:
    p: torch.Tensor  # (M, d) user embeddings after training (stay on the device)
    update: torch.Tensor  # (M, N, d) item-table update D, or (M, N, r) low-rank A
    touched: torch.Tensor  # (M, N) bool: items in the client's local samples
    loss_sum: float
    n_samples: int


def touched_items(plan: RoundPlan, n_items: int) -> torch.Tensor:
    t = torch.zeros(plan.n_clients * n_items, dtype=torch.bool)
    t[torch.from_numpy(plan.sample_client * n_items + plan.sample_item)] = True
    return t.view(plan.n_clients, n_items)


def _active_rows(plan: RoundPlan, n_items: int):
    """Inputs of every (step, active client) pair, stacked as rows in step order.

    Clients are reordered by `order` (most local steps first) so that the
    clients active at step t are a prefix; rows offsets[t]:offsets[t+1] are step
    t. Padding slots point to a sink row M*N. For every slot, 1 / (occurrences of
    its row in the same batch): the per-row mean of the reference's
    `scale_grad_by_freq` embeddings.
    """
    M, T = plan.n_clients, plan.steps.shape[0]
    order = np.argsort(-plan.n_steps, kind="stable")
    n_active = (plan.n_steps[order][None, :] > np.arange(T)[:, None]).sum(1)
    offsets = np.concatenate([[0], np.cumsum(n_active)])
    row_t = np.repeat(np.arange(T), n_active)
    row_m = np.arange(offsets[-1]) - offsets[row_t]  # position in `order`
    steps = plan.steps[row_t, order[row_m]]  # (R, B)
    valid = steps >= 0
    idx = np.where(valid, steps, 0)
    items = plan.sample_item[idx]
    keys = np.where(valid, row_m[:, None] * n_items + items, M * n_items)
    batch_key = (np.arange(steps.shape[0])[:, None] * n_items + items)[valid]
    counts = np.bincount(batch_key, minlength=steps.shape[0] * n_items)
    inv_count = np.zeros(steps.shape, dtype=np.float32)
    inv_count[valid] = 1.0 / counts[batch_key]
    return order, n_active, offsets, items, plan.sample_label[idx], valid, keys, inv_count


def train_cohort(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                 lowrank: LowRank | None = None) -> LocalResult:
    M, (N, d) = plan.n_clients, Q.shape
    width = d if lowrank is None else lowrank.B.shape[1]
    order, n_active, offsets, items, labels, valid, keys, inv_count = _active_rows(plan, N)
    dt = Q.dtype
    vf = torch.from_numpy(valid).to(dt)
    # Q is frozen during local training: gather every step's rows at once. Padding slots read a
    # zero row and get label sigmoid(0) = 0.5, so their gradient is exactly 0 without masking.
    flat_items = torch.from_numpy(np.where(valid, items, N)).reshape(-1)
    Qi = torch.cat([Q, Q.new_zeros(1, d)]).index_select(0, flat_items).view(*items.shape, d)
    labels = torch.where(torch.from_numpy(valid), torch.from_numpy(labels).to(dt), torch.tensor(0.5, dtype=dt))
    keys = torch.from_numpy(keys)
    step_scale = torch.from_numpy(inv_count).to(dt) * -lr  # per-row mean over occurrences, times the SGD step
    inv_nv = (1.0 / vf.sum(1).clamp(min=1))[:, None]  # (R, 1)
    W = torch.zeros(M * N + 1, width, dtype=dt)  # D rows or A rows per (client, item); last row: padding sink
    p = p0[torch.from_numpy(order)].clone()
    two_wd = 2.0 * weight_decay
    logits = torch.zeros(labels.shape, dtype=dt)
    if lowrank is not None:
        # work in the r-dimensional space of A: with e = q + B a,
        #   x = p.q + (B^T p).a,   dL/da = B^T (g p + 2 wd e) = g B^T p + 2 wd (B^T q + B^T B a)
        B = lowrank.B.to(dt)
        BtB = B.T @ B
        QB = Qi @ B  # (R, Bs, r): B^T q for every slot, once
        row_scale = (lowrank.col_mask * lowrank.grad_scale[:, None]).to(dt)[torch.from_numpy(order)][:, None, :]
    for t in range(len(n_active)):
        a, r0, r1 = int(n_active[t]), int(offsets[t]), int(offsets[t + 1])
        kt = keys[r0:r1].reshape(-1)
        rows = W.index_select(0, kt).view(a, -1, width)  # index_select: much faster than W[kt] on CPU
        pa, qt = p[:a], Qi[r0:r1]
        if lowrank is None:
            e = qt + rows
            x = torch.einsum("mbd,md->mb", e, pa)
        else:
            Bp = pa @ B
            x = torch.einsum("mbd,md->mb", qt, pa) + torch.einsum("mbr,mr->mb", rows, Bp)
        logits[r0:r1] = x
        g = torch.sigmoid(x).sub_(labels[r0:r1])  # dBCE/dx per sample (0 on padding)
        # user: mean over the batch of (g e + 2 wd p); item rows: mean over a row's occurrences of (g p + 2 wd e)
        if lowrank is None:
            ge = torch.einsum("mb,mbd->md", g, e)
            h = torch.einsum("mb,md->mbd", g, pa).add_(e, alpha=two_wd)
        else:
            ge = torch.einsum("mb,mbd->md", g, qt) + torch.einsum("mb,mbr->mr", g, rows) @ B.T
            h = torch.einsum("mb,mr->mbr", g, Bp).add_(QB[r0:r1] + rows @ BtB, alpha=two_wd).mul_(row_scale[:a])
        grad_p = ge.mul_(inv_nv[r0:r1]).add_(pa, alpha=two_wd)
        h.mul_(step_scale[r0:r1, :, None])
        # scatter_add_ (not index_add_, several times slower here); -lr is folded into step_scale
        W.scatter_add_(0, kt[:, None].expand(-1, width), h.reshape(-1, width))
        pa.sub_(grad_p, alpha=lr)
    loss_sum = float(((torch.nn.functional.softplus(logits) - labels * logits) * vf).sum())
    back = torch.from_numpy(np.argsort(order))
    update = W[: M * N].view(M, N, width)[back]
    return LocalResult(p[back], update, touched_items(plan, N), loss_sum, int(vf.sum()))
