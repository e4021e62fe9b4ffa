"""The plain GCN baseline with Kipf & Welling's settings (no subnets, no projection, one process)."""
from __future__ import annotations

import time

import pandas as pd
import torch
import torch.nn.functional as F

from ..runtime import one_thread
from ..diverged import check_finite
from .config import KipfConfig
from .graph import sparse_features, tensors
from .model import dropout_mask, evaluate, forward, init_params, seeded

INPUT_STREAM, HIDDEN_STREAM = 4, 5


def train_gcn(cfg: KipfConfig) -> tuple[pd.DataFrame, dict[str, torch.Tensor]]:
    """Full-batch Adam on the training nodes; one row per epoch (loss, accuracies, seconds)."""
    import os

    one_thread()
    g = sparse_features(tensors(cfg.graph, None, 0, os.environ.get("LABCORE_DATA")))
    p = {n: t.requires_grad_(True) for n, t in init_params(g.n_features, cfg.hidden, g.n_classes, cfg.seed).items()}
    # Kipf's L2 term is on the first layer's weights only
    opt = torch.optim.Adam([{"params": [p["theta1"]], "weight_decay": cfg.weight_decay},
                            {"params": [p["b1"], p["theta2"], p["b2"]], "weight_decay": 0.0}], lr=cfg.lr)
    rows, t0 = [], time.perf_counter()
    for e in range(cfg.epochs):
        opt.zero_grad(set_to_none=True)
        x_mask = dropout_mask(g.x.values().shape, cfg.dropout, seeded(cfg.seed, INPUT_STREAM, e))
        h_mask = dropout_mask((g.n_nodes, cfg.hidden), cfg.dropout, seeded(cfg.seed, HIDDEN_STREAM, e))
        logits = forward(p, g.adj, g.x, False, hidden_mask=h_mask, input_mask=x_mask)
        loss = F.cross_entropy(logits[g.train], g.y[g.train])
        loss.backward()
        opt.step()
        check_finite(f"epoch {e + 1}", loss, list(p.values()), lower=f"lr (now {cfg.lr:g})")
        rows.append({"epoch": e + 1, "train_loss": loss.item(), **evaluate(p, g, False),
                     "seconds": time.perf_counter() - t0})
    return pd.DataFrame(rows), {n: t.detach() for n, t in p.items()}
