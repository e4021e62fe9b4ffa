"""FedHM / HeteroFL's low-rank tables: a device at compression ratio r holds U (rows x k) and V (k x d), k = d / r,
from the truncated SVD of the server's table; on the digits MLP only the hidden layer is factorized."""
from __future__ import annotations

import math

import torch

from .model import MLPSpec


def fedhm_rank(dim: int, ratio: int) -> int:
    """Rank of a device at `ratio` for an n x dim table (ratio 1: the full table, rank dim)."""
    return dim // ratio


def lowrank_factors(W: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Truncated SVD W ~ U V, U = A_k S_k^(1/2) (rows x k), V = S_k^(1/2) B_k^T (k x cols).

    Through the cols x cols Gram matrix (cols is the embedding width, small), in float64.
    """
    Wd = W.double()
    evals, evecs = torch.linalg.eigh(Wd.T @ Wd)  # ascending
    top = torch.argsort(evals, descending=True)[:k]
    B = evecs[:, top]  # cols x k
    s = evals[top].clamp(min=0).sqrt()
    root = s.sqrt()
    U = (Wd @ B) / torch.where(root > 0, root, torch.ones_like(root))  # A_k S_k / S_k^(1/2)
    V = root[:, None] * B.T
    return U.float(), V.float()


def mlp_fedhm_ranks(shapes: dict[str, tuple[int, ...]], ratio: int) -> dict[str, int]:
    """FedHM on the MLP: the hidden layer's weight w1 (a x b) becomes U (a x k) V (k x b); the classifier
    and the biases stay full (FedHM keeps the last layer full-rank). k is the largest rank with which
    the device's total stays within n / ratio; 0 = cannot. Weights not factorized get rank min(a, b)."""
    out = {n: min(s) for n, s in shapes.items() if len(s) == 2}
    if ratio == 1:
        return out
    total = sum(math.prod(s) for s in shapes.values())
    a, b = shapes["w1"]
    fixed = total - a * b
    out["w1"] = max(0, (total // ratio - fixed) // (a + b))
    return out


def mlp_fedhm_limit(hidden: int, n_in: int = 64, n_out: int = 10) -> int:
    """The first power-of-two ratio at which the hidden layer's rank drops to 0."""
    shapes = MLPSpec(n_in, hidden, n_out).shapes()
    r = 2
    while mlp_fedhm_ranks(shapes, r)["w1"] >= 1:
        r *= 2
    return r
