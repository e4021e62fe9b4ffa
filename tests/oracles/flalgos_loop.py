"""The same local training, one client at a time: the benchmark's baseline and a test oracle.

`local_train_loop(strategy, ctx)` runs FedAvg / FedProx / SCAFFOLD's local steps client by client with the
per-client (unbatched) gradient of the same loss, reading the same minibatches as the batched path.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from labcore.flalgos.strategies import FedProx, RoundContext, Scaffold


def client_grad(problem, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Gradient of one client's mean cross-entropy, by autograd on 2-D tensors."""
    th = theta.detach().requires_grad_(True)
    loss = F.cross_entropy(problem.logits(th, x), y)
    (g,) = torch.autograd.grad(loss, th)
    return g


def local_train_loop(strategy, ctx: RoundContext) -> torch.Tensor:
    p, cfg, w = strategy.problem, strategy.cfg, strategy.w
    out = []
    for c in range(len(ctx.cohort)):
        theta = w.clone()
        for t in range(int(ctx.steps[c])):
            x, y = p.batch(ctx.batches, t)
            g = client_grad(p, theta, x[c], y[c])
            if isinstance(strategy, FedProx):
                g = g + cfg.mu * (theta - w)
            elif isinstance(strategy, Scaffold):
                g = g - strategy.c_i[ctx.cohort[c]] + strategy.c
            theta = theta - cfg.lr * g
        out.append(theta)
    return torch.stack(out)
