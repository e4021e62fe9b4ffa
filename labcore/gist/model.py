"""The 2-layer GCN of Kipf & Welling in plain torch, written as a function of a parameter dict.

    logits = Â · (dropout(LN(relu(Â · X · θ1 + b1))) · θ2) + b2          (Â = D^-1/2 (A + I) D^-1/2)

A subnet is the same function applied to its blocks (a column slice of X, a block of θ1, ...), so the
full model, every subnet and the distributed workers share this one forward. Dropout masks are drawn
from an explicit generator so a run is reproducible bit for bit in one process or in m processes.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

PARAMS = ("theta1", "b1", "theta2", "b2")


def seeded(*key: int) -> torch.Generator:
    """A generator for one stream of randomness, e.g. seeded(seed, STREAM, epoch, subnet)."""
    state = np.random.SeedSequence([int(k) for k in key]).generate_state(2, dtype=np.uint64)
    return torch.Generator().manual_seed(int(state[0] >> np.uint64(1)))


def glorot(fan_in: int, fan_out: int, gen: torch.Generator) -> torch.Tensor:
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return (torch.rand(fan_in, fan_out, generator=gen) * 2 - 1) * limit


def init_params(n_features: int, hidden: int, n_classes: int, seed: int) -> dict[str, torch.Tensor]:
    """Glorot-uniform weights and zero biases (Kipf's and DGL's GraphConv initialisation)."""
    gen = seeded(seed, 1)
    return {"theta1": glorot(n_features, hidden, gen), "b1": torch.zeros(hidden),
            "theta2": glorot(hidden, n_classes, gen), "b2": torch.zeros(n_classes)}


def dropout_mask(shape, p: float, gen: torch.Generator) -> torch.Tensor | None:
    if p <= 0:
        return None
    return (torch.rand(shape, generator=gen) >= p).to(torch.float32) / (1.0 - p)


def forward(p: dict[str, torch.Tensor], adj: torch.Tensor, x: torch.Tensor, layernorm: bool,
            hidden_mask: torch.Tensor | None = None, input_mask: torch.Tensor | None = None) -> torch.Tensor:
    if x.is_sparse:  # the bag of words of the baseline; dropout acts on its non-zeros (Kipf's sparse_dropout)
        if input_mask is not None:
            # x's own indices: valid by construction, so torch's invariant check is declined (it also warns)
            x = torch.sparse_coo_tensor(x.indices(), x.values() * input_mask, x.shape, check_invariants=False,
                                        is_coalesced=x.is_coalesced())
        xw = torch.sparse.mm(x, p["theta1"])
    else:
        xw = (x if input_mask is None else x * input_mask) @ p["theta1"]
    h = torch.relu(torch.sparse.mm(adj, xw) + p["b1"])
    if layernorm:
        # the authors' F.layer_norm(h, h.shape): one mean and variance over the whole hidden matrix
        h = F.layer_norm(h, h.shape)
    if hidden_mask is not None:
        h = h * hidden_mask
    return torch.sparse.mm(adj, h @ p["theta2"]) + p["b2"]


@torch.no_grad()
def evaluate(p, g, layernorm: bool) -> dict[str, float]:
    """Accuracy and loss of the full model on the three node sets (eval mode: no dropout)."""
    logits = forward(p, g.adj, g.x, layernorm)
    pred = logits.argmax(1)
    out = {}
    for name, idx in (("train", g.train), ("val", g.val), ("test", g.test)):
        out[f"{name}_acc"] = float((pred[idx] == g.y[idx]).to(torch.float32).mean())
    out["val_loss"] = float(F.cross_entropy(logits[g.val], g.y[g.val]))
    return out
