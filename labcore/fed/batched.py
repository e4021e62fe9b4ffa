"""The cohort's local training as batched torch steps: each step of every client at once, the rows a step reads
gathered as (clients, batch, d) copies. The same update as the engine's compiled trainer up to summation order.

`train_cohort_batched` keeps the rows the cohort touches (`RowUpdate`); `train_cohort_dense` hands the same numbers
over as a dense (M, N, width) update (the engine's `layout="dense"`).
benchmarks/engine_full_participation.py times the compiled trainer against them in one process; the tests use them
as a second implementation of the closed-form step.
"""
from __future__ import annotations

import numpy as np
import torch

from .local_train import touched_items, touched_rows
from .sampling import RoundPlan
from .updates import LocalResult, LowRank, RowUpdate

# inv_count by one bincount over (row, item) when it has at most this many bins; by a per-row sort otherwise
_BINCOUNT_LIMIT = 1 << 24
# Q rows gathered for all steps at once up to this many floats; step by step beyond (full participation)
_GATHER_ALL_LIMIT = 1 << 25
# floats of one (clients, batch, d) temporary of a training step: a step's clients are taken in blocks this size
# (ML-1M d=64, B=256: 512 clients; full participation needs 12 blocks a step instead of 400 MB temporaries)
_STEP_FLOATS = 1 << 23


def _inv_counts(items: np.ndarray, valid: np.ndarray, n_items: int) -> np.ndarray:
    """1 / (occurrences of each slot's item in the same batch row), 0 on padding: the per-row mean of the
    reference's `scale_grad_by_freq` embeddings (a batch row is one client's, so item = its row)."""
    R, Bs = items.shape
    inv = np.zeros(items.shape, dtype=np.float32)
    if R * n_items <= _BINCOUNT_LIMIT:
        batch_key = (np.arange(R)[:, None] * n_items + items)[valid]
        inv[valid] = 1.0 / np.bincount(batch_key, minlength=R * n_items)[batch_key]
        return inv
    k = torch.from_numpy(np.where(valid, items, n_items))
    s, perm = torch.sort(k, dim=1, stable=True)
    new_run = torch.ones_like(s, dtype=torch.bool)
    new_run[:, 1:] = s[:, 1:] != s[:, :-1]
    run = torch.cumsum(new_run.reshape(-1), 0) - 1
    counts = torch.bincount(run)[run].view(R, Bs).to(torch.float32)
    c = torch.empty_like(counts)
    c.scatter_(1, perm, counts)
    inv[valid] = (1.0 / c.numpy())[valid]
    return inv



def train_cohort_batched(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                         lowrank: LowRank | None = None) -> LocalResult:
    """The same update as `local_train.train_cohort`, one batched torch step for all clients at a time."""
    M, (N, d) = plan.n_clients, Q.shape
    width = d if lowrank is None else lowrank.B.shape[1]
    uniq, row_of_sample = touched_rows(plan, N)
    U = int(uniq.shape[0])  # rows the cohort touches; row U is the padding sink
    order, n_active, offsets = plan.order, plan.n_active, plan.offsets
    slots = plan.slots
    valid = slots >= 0
    idx = np.where(valid, slots, 0)
    items = plan.sample_item[idx]
    keys_np = np.where(valid, row_of_sample.numpy()[idx], U)
    inv_count = _inv_counts(items, valid, N)
    dt = Q.dtype
    vf = torch.from_numpy(valid).to(dt)
    # Q is frozen during local training: gather every step's rows at once (or step by step for very large
    # cohorts). Padding slots read a zero row and get label sigmoid(0) = 0.5, so their gradient is exactly 0.
    flat_items = torch.from_numpy(np.where(valid, items, N))
    Qpad = torch.cat([Q, Q.new_zeros(1, d)])
    gather_all = flat_items.numel() * d <= _GATHER_ALL_LIMIT
    Qi_all = Qpad.index_select(0, flat_items.reshape(-1)).view(*items.shape, d) if gather_all else None
    labels = torch.where(torch.from_numpy(valid), torch.from_numpy(plan.sample_label[idx]).to(dt),
                         torch.tensor(0.5, dtype=dt))
    keys = torch.from_numpy(keys_np)
    step_scale = torch.from_numpy(inv_count).to(dt) * -lr  # per-row mean over occurrences, times the SGD step
    inv_nv = (1.0 / vf.sum(1).clamp(min=1))[:, None]  # (R, 1)
    del idx, items, inv_count, row_of_sample  # (R, B) arrays: 100 MB each at full participation
    W = torch.zeros(U + 1, width, dtype=dt)  # D rows or A rows per touched (client, item); last row: padding sink
    order_t = torch.from_numpy(order)
    p = p0[order_t].clone()
    two_wd = 2.0 * weight_decay
    logits = torch.zeros(labels.shape, dtype=dt)
    if lowrank is not None:
        # work in the r-dimensional space of A: with e = q + B a,
        #   x = p.q + (B^T p).a,   dL/da = B^T (g p + 2 wd e) = g B^T p + 2 wd (B^T q + B^T B a)
        B = lowrank.B.to(dt)
        BtB = B.T @ B
        QB_all = Qi_all @ B if gather_all else None  # (R, Bs, r): B^T q for every slot, once
        row_scale = (lowrank.col_mask * lowrank.grad_scale[:, None]).to(dt)[order_t][:, None, :]
    # a step's clients are independent (each owns its rows of W and its user vector): at full participation
    # take them in blocks of `chunk` clients, so that the step's (clients, batch, d) temporaries stay small.
    # torch's batched products may block a different batch count differently (last-bit differences, 1e-8);
    # cohorts below one block (every stored result: 60 clients at d=64, 375 at d=16) are one block.
    chunk = max(1, _STEP_FLOATS // (slots.shape[1] * d))
    for t in range(len(n_active)):
        a, r0 = int(n_active[t]), int(offsets[t])
        for c0 in range(0, a, chunk):
            c1 = min(a, c0 + chunk)
            s0, s1 = r0 + c0, r0 + c1
            kt = keys[s0:s1].reshape(-1)
            rows = W.index_select(0, kt).view(c1 - c0, -1, width)  # index_select: much faster than W[kt] on CPU
            pa = p[c0:c1]
            qt = (Qi_all[s0:s1] if gather_all
                  else Qpad.index_select(0, flat_items[s0:s1].reshape(-1)).view(c1 - c0, -1, d))
            if lowrank is None:
                e = qt + rows
                x = torch.einsum("mbd,md->mb", e, pa)
            else:
                Bp = pa @ B
                x = torch.einsum("mbd,md->mb", qt, pa) + torch.einsum("mbr,mr->mb", rows, Bp)
            logits[s0:s1] = x
            g = torch.sigmoid(x).sub_(labels[s0:s1])  # dBCE/dx per sample (0 on padding)
            # user: mean over the batch of (g e + 2 wd p); item rows: mean over a row's occurrences of (g p + 2 wd e)
            if lowrank is None:
                ge = torch.einsum("mb,mbd->md", g, e)
                h = torch.einsum("mb,md->mbd", g, pa).add_(e, alpha=two_wd)
            else:
                qb = QB_all[s0:s1] if gather_all else qt @ B
                ge = torch.einsum("mb,mbd->md", g, qt) + torch.einsum("mb,mbr->mr", g, rows) @ B.T
                h = torch.einsum("mb,mr->mbr", g, Bp).add_(qb + rows @ BtB, alpha=two_wd).mul_(row_scale[c0:c1])
            grad_p = ge.mul_(inv_nv[s0:s1]).add_(pa, alpha=two_wd)
            h.mul_(step_scale[s0:s1, :, None])
            # scatter_add_ (not index_add_, several times slower here); -lr is folded into step_scale
            W.scatter_add_(0, kt[:, None].expand(-1, width), h.reshape(-1, width))
            pa.sub_(grad_p, alpha=lr)
    loss_sum = float(((torch.nn.functional.softplus(logits) - labels * logits) * vf).sum())
    back = torch.from_numpy(np.argsort(order))
    rows = RowUpdate(M, N, uniq // N, uniq % N, W[:U])
    return LocalResult(p[back], None, None, loss_sum, int(vf.sum()), rows)


def train_cohort_dense(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                       lowrank: LowRank | None = None) -> LocalResult:
    """`train_cohort_batched` with its update as a dense (M, N, width) table and the (M, N) touched mask (clients x
    items x width memory): the engine's `layout="dense"`."""
    local = train_cohort_batched(Q, p0, plan, lr, weight_decay, lowrank)
    return LocalResult(local.p, local.rows.dense(), touched_items(plan, Q.shape[0]), local.loss_sum, local.n_samples)
