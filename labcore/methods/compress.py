"""Compression operators on update matrices: truncated SVD and Top-K (pure functions)."""
from __future__ import annotations

import math

import torch


def svd_truncate(X: torch.Tensor, r: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Best rank-r factors of X (..., n, d): U (..., n, r), S (..., r), V (..., d, r), X ~ U diag(S) V^T.

    Through the d x d Gram matrix (d is small: the embedding size), in float64
    for accuracy; the batched form handles the whole cohort at once.
    """
    X64 = X.to(torch.float64)
    gram = X64.transpose(-1, -2) @ X64
    evals, evecs = torch.linalg.eigh(gram)  # ascending
    V = evecs[..., :, -r:].flip(-1)
    S = evals[..., -r:].flip(-1).clamp(min=0).sqrt()
    US = X64 @ V
    U = US / torch.where(S > 0, S, torch.ones_like(S))[..., None, :]
    return U.to(X.dtype), S.to(X.dtype), V.to(X.dtype)


def svd_reconstruct(U: torch.Tensor, S: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    return (U * S[..., None, :]) @ V.transpose(-1, -2)


def topk_count(n_values: int, ratio: float) -> int:
    return max(1, min(n_values, math.ceil(ratio * n_values)))


def topk_compress(X: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest-magnitude entries of each X[m] (flattened): values and int32 flat indices."""
    flat = X.reshape(X.shape[0], -1)
    idx = flat.abs().topk(k, dim=1, sorted=False).indices
    return flat.gather(1, idx), idx.to(torch.int32)


def topk_decompress(values: torch.Tensor, indices: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    n = math.prod(shape[1:])
    out = torch.zeros(values.shape[0], n, dtype=values.dtype)
    out.scatter_(1, indices.long(), values)
    return out.view(shape)
