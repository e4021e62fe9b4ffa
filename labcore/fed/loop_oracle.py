"""The same local training, one client at a time, with autograd.

Written the plain way (torch embeddings with `scale_grad_by_freq=True`, batch
mean loss, lr times batch size, SGD), independent of the closed-form batched
code in `local_train.py`. Tests check the two agree; the speed benchmark uses
this loop as the baseline.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .local_train import LocalResult, LowRank, touched_items
from .sampling import RoundPlan


def train_clients_loop(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                       lowrank: LowRank | None = None) -> LocalResult:
    N, d = Q.shape
    items_all = torch.from_numpy(plan.sample_item)
    labels_all = torch.from_numpy(plan.sample_label).to(Q.dtype)
    ps, updates, loss_sum, n_samples = [], [], 0.0, 0
    for m in range(plan.n_clients):
        user = torch.nn.Parameter(p0[m : m + 1].clone())
        if lowrank is None:
            table = torch.nn.Parameter(Q.clone())
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
            for group in opt.param_groups:
                group["lr"] = lr * bs  # the reference scales lr by the batch size
            opt.zero_grad()
            (loss + reg).backward()
            opt.step()
        ps.append(user.detach()[0])
        updates.append((table.detach() - Q) if lowrank is None else A.detach())
    return LocalResult(torch.stack(ps), torch.stack(updates), touched_items(plan, N), loss_sum, n_samples)
