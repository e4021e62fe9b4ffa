"""The engine's local training, one client at a time, with autograd: the test oracle.

Written the plain way (torch embeddings with `scale_grad_by_freq=True`, batch mean loss, lr times batch size,
`torch.optim.SGD`), independent of the closed-form steps of `labcore.methods` (`train_client`) and of the compiled
kernels. Tests check they agree; benchmarks/engine_speed.py uses this loop as its baseline.

`plan_round_numpy` is `sampling.plan_round` written with whole-array numpy: the compiled one must give the same
plan, bit for bit (benchmarks/plan_round.py times the two).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from labcore.fed.local_train import touched_items
from labcore.fed.sampling import (ITEM_DTYPE, SLOT_DTYPE, STREAM_NEGATIVES, STREAM_SHUFFLE, NegativeSampler, RoundPlan,
                                  round_rng, schedule_rows)
from labcore.fed.updates import LocalResult, LowRank


def train_clients_loop(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                       lowrank: LowRank | None = None, prox_mu: float = 0.0,
                       correction: torch.Tensor | None = None, start: torch.Tensor | None = None) -> LocalResult:
    """correction: SCAFFOLD's c - c_i per client, (M, N, d): every step also moves the whole table by -lr times
    it (the update returned is then y_i - x, drift included). start: each client's own first table (M, N, d)
    instead of Q (Ditto's personal models; FedProx's pull still goes toward Q, the update is table - Q)."""
    N, d = Q.shape
    items_all = torch.from_numpy(plan.sample_item)
    labels_all = torch.from_numpy(plan.sample_label).to(Q.dtype)
    ps, updates, loss_sum, n_samples = [], [], 0.0, 0
    for m in range(plan.n_clients):
        user = torch.nn.Parameter(p0[m : m + 1].clone())
        if lowrank is None:
            table = torch.nn.Parameter((Q if start is None else start[m]).clone())
            params = [user, table]
        else:
            A = torch.nn.Parameter(torch.zeros(N, lowrank.B.shape[1], dtype=Q.dtype))
            scale = lowrank.col_mask[m] * lowrank.grad_scale[m]
            A.register_hook(lambda grad, s=scale: grad * s)  # frozen columns and sqrt(r/d) scaling
            params = [user, A]
        opt = torch.optim.SGD(params, lr=lr)
        for t in range(int(plan.n_steps[m])):
            idx = plan.steps[t, m]
            idx = torch.from_numpy(idx[idx >= 0])
            items, y = items_all[idx], labels_all[idx]
            bs = items.shape[0]
            u = F.embedding(torch.zeros_like(items), user, scale_grad_by_freq=True)
            if lowrank is None:
                e = F.embedding(items, table, scale_grad_by_freq=True)
            else:
                e = Q[items] + F.embedding(items, A, scale_grad_by_freq=True) @ lowrank.B.T
            x = (u * e).sum(-1)
            loss = F.binary_cross_entropy_with_logits(x, y)
            loss_sum += float(loss.detach()) * bs
            n_samples += bs
            reg = weight_decay * ((e**2).sum() + (u**2).sum()) / bs
            if prox_mu:  # FedProx: mu/2 ||item table - Q||^2 over the whole table (/ bs: lr is scaled by bs below)
                moved = (table - Q) if lowrank is None else A @ lowrank.B.T
                reg = reg + prox_mu / 2 * (moved**2).sum() / bs
            for group in opt.param_groups:
                group["lr"] = lr * bs  # the reference scales lr by the batch size
            opt.zero_grad()
            (loss + reg).backward()
            opt.step()
            if correction is not None:
                with torch.no_grad():
                    table -= lr * correction[m]
        ps.append(user.detach()[0])
        updates.append((table.detach() - Q) if lowrank is None else A.detach())
    return LocalResult(torch.stack(ps), torch.stack(updates), touched_items(plan, N), loss_sum, n_samples)


def _batch_loss(table: torch.Tensor, user: torch.Tensor, items: torch.Tensor, y: torch.Tensor,
                weight_decay: float) -> torch.Tensor:
    """One batch's loss with its L2 term, written as the reference code does (embeddings scaled by frequency)."""
    bs = items.shape[0]
    u = F.embedding(torch.zeros_like(items), user[None], scale_grad_by_freq=True)
    e = F.embedding(items, table, scale_grad_by_freq=True)
    loss = F.binary_cross_entropy_with_logits((u * e).sum(-1), y)
    return loss + weight_decay * ((e**2).sum() + (u**2).sum()) / bs


def _batch_loss_grads(table: torch.Tensor, user: torch.Tensor, items: torch.Tensor, y: torch.Tensor,
                      weight_decay: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients (table, user) of one batch's loss, times the batch size (the reference's lr x bs), by autograd."""
    table = table.detach().requires_grad_(True)
    user = user.detach().requires_grad_(True)
    g_table, g_user = torch.autograd.grad(_batch_loss(table, user, items, y, weight_decay), (table, user))
    return g_table * items.shape[0], g_user * items.shape[0]


def _client_batches(plan: RoundPlan, m: int):
    items_all = torch.from_numpy(plan.sample_item.astype(np.int64))
    labels_all = torch.from_numpy(plan.sample_label)
    for t in range(int(plan.n_steps[m])):
        idx = plan.steps[t, m]
        idx = torch.from_numpy(idx[idx >= 0])
        yield items_all[idx], labels_all[idx].to(torch.float32)


def pfedme_loop(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float, lam: float,
                inner_steps: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """pFedMe's round client by client (Dinh et al. 2020, Alg. 1, dense tables): (w - Q (M, N, d), w's user vectors,
    theta (M, N, d), theta's user vectors)."""
    ws, pws, thetas, pts = [], [], [], []
    for m in range(plan.n_clients):
        w, pw = Q.clone(), p0[m].clone()
        theta, pt = Q.clone(), p0[m].clone()
        for items, y in _client_batches(plan, m):
            for _ in range(inner_steps):
                g_table, g_user = _batch_loss_grads(theta, pt, items, y, weight_decay)
                theta = theta - lr * (g_table + lam * (theta - w))
                pt = pt - lr * (g_user + lam * (pt - pw))
            w = w - lr * lam * (w - theta)
            pw = pw - lr * lam * (pw - pt)
        ws.append(w - Q), pws.append(pw), thetas.append(theta), pts.append(pt)
    return torch.stack(ws), torch.stack(pws), torch.stack(thetas), torch.stack(pts)


def apfl_loop(Q: torch.Tensor, p0: torch.Tensor, V0: torch.Tensor, pv0: torch.Tensor, plan: RoundPlan, lr: float,
              weight_decay: float, alpha: float, prox_mu: float = 0.0):
    """APFL's round client by client (Deng et al. 2020, Alg. 1, dense tables): at every step the local copy w = (table,
    user vector) takes FedMF's step (FedProx's pull toward Q if prox_mu) and the personal model v takes the gradient
    of the loss at the mixture alpha v + (1 - alpha) w, by autograd through the mixture. Returns (w - Q, w's user
    vectors, v's tables, v's user vectors)."""
    ws, pws, vs, pvs = [], [], [], []
    for m in range(plan.n_clients):
        w, pw, v, pv = Q.clone(), p0[m].clone(), V0[m].clone(), pv0[m].clone()
        for items, y in _client_batches(plan, m):
            g_w, g_pw = _batch_loss_grads(w, pw, items, y, weight_decay)
            vt, pvt = v.clone().requires_grad_(True), pv.clone().requires_grad_(True)
            mixed = _batch_loss(alpha * vt + (1 - alpha) * w, alpha * pvt + (1 - alpha) * pw, items, y, weight_decay)
            g_v, g_pv = torch.autograd.grad(mixed, (vt, pvt))
            w, pw = w - lr * (g_w + prox_mu * (w - Q)), pw - lr * g_pw
            v, pv = v - lr * items.shape[0] * g_v, pv - lr * items.shape[0] * g_pv
        ws.append(w - Q), pws.append(pw), vs.append(v), pvs.append(pv)
    return torch.stack(ws), torch.stack(pws), torch.stack(vs), torch.stack(pvs)


def perfedavg_loop(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                   alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-FedAvg (first order) client by client: batches in pairs (D, D'), an odd last one as both; temp = w -
    alpha grad(w; D), w <- w - lr grad(temp; D'). Returns (w - Q (M, N, d), the user vectors)."""
    ws, pws = [], []
    for m in range(plan.n_clients):
        w, pw = Q.clone(), p0[m].clone()
        batches = list(_client_batches(plan, m))
        for j in range(0, len(batches), 2):
            first, second = batches[j], batches[min(j + 1, len(batches) - 1)]
            g_table, g_user = _batch_loss_grads(w, pw, *first, weight_decay)
            temp, p_temp = w - alpha * g_table, pw - alpha * g_user
            g_table, g_user = _batch_loss_grads(temp, p_temp, *second, weight_decay)
            w, pw = w - lr * g_table, pw - lr * g_user
        ws.append(w - Q), pws.append(pw)
    return torch.stack(ws), torch.stack(pws)


def plan_round_numpy(data, sampler: NegativeSampler, clients: np.ndarray, num_negatives: int, epochs: int,
                     batch_size: int, seed: int, round_idx: int) -> RoundPlan:
    counts = data.train_counts()[clients]
    m = clients.shape[0]
    per_client = counts * (1 + num_negatives)
    first = np.cumsum(per_client) - per_client  # each client's block: its positives, then its negatives
    total = int(per_client.sum())
    s_client = np.repeat(np.arange(m), per_client)
    local_pos = np.arange(total) - first[s_client]
    is_pos = local_pos < counts[s_client]
    pos_rows = np.nonzero(is_pos)[0]
    s_item = np.empty(total, dtype=ITEM_DTYPE)
    s_item[pos_rows] = data.train_items[data.train_indptr[clients][s_client[pos_rows]] + local_pos[pos_rows]]
    neg_rows = np.nonzero(~is_pos)[0]
    s_item[neg_rows] = sampler.sample(clients[s_client[neg_rows]], round_rng(seed, round_idx, STREAM_NEGATIVES))
    s_label = is_pos.astype(np.float32)
    n_batches = -(-per_client // batch_size)
    n_steps = (n_batches * epochs).astype(np.int64)
    order, n_active, offsets, position = schedule_rows(n_steps)
    slots = np.full((int(offsets[-1]), batch_size), -1, dtype=SLOT_DTYPE)
    rng = round_rng(seed, round_idx, STREAM_SHUFFLE)
    for e in range(epochs):
        perm = np.argsort(s_client + rng.random(total))
        step = e * n_batches[s_client] + local_pos // batch_size
        slots[offsets[step] + position[s_client], local_pos % batch_size] = perm
    return RoundPlan(clients, counts.astype(np.int64), s_client.astype(np.int32), s_item, s_label, n_steps, order,
                     n_active, offsets, slots)
