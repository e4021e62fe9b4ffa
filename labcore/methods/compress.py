"""Compression operators on update matrices: truncated SVD and Top-K (pure functions)."""
from __future__ import annotations

import math

import numpy as np
import torch

from .topk_kernels import topk_rows


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


def svd_truncate_rows(X: torch.Tensor, indptr, r: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`svd_truncate` of M tables given by their nonzero rows: client m's rows are X[indptr[m]:indptr[m + 1]].

    A zero row adds nothing to the Gram matrix and gets a zero row of U, so U comes back by the same rows
    (R, r), with S (M, r) and V (M, d, r). Work grows with the rows, not with M x N.
    """
    M, d = len(indptr) - 1, X.shape[1]
    spans = [(int(indptr[m]), int(indptr[m + 1])) for m in range(M)]
    gram = torch.zeros(M, d, d, dtype=torch.float64)
    for m, (a, b) in enumerate(spans):  # ragged: one small product per client, in float64 a client at a time
        Xm = X[a:b].to(torch.float64)  # (a float64 copy of all rows was 2.1 GB at ML-1M's full participation)
        torch.mm(Xm.T, Xm, out=gram[m])
    evals, evecs = torch.linalg.eigh(gram)
    V = evecs[..., :, -r:].flip(-1)
    S = evals[..., -r:].flip(-1).clamp(min=0).sqrt()
    U = torch.empty(X.shape[0], r, dtype=X.dtype)
    for m, (a, b) in enumerate(spans):
        Um = X[a:b].to(torch.float64) @ V[m]
        U[a:b] = Um / torch.where(S[m] > 0, S[m], torch.ones_like(S[m]))
    return U, S.to(X.dtype), V.to(X.dtype)


def svd_reconstruct(U: torch.Tensor, S: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    return (U * S[..., None, :]) @ V.transpose(-1, -2)


def topk_count(n_values: int, ratio: float) -> int:
    return max(1, min(n_values, math.ceil(ratio * n_values)))


def topk_positions(mag: torch.Tensor, k: int) -> torch.Tensor:
    """(M, k) positions of the k largest entries of each row of `mag`, in increasing order.

    Ties at the k-th value go to the lowest positions. `torch.topk` leaves them to its implementation,
    which picks differently for the same values in a shorter array, so the table and its touched rows
    would not send the same message (ML-1M TopK@4 met its first tie, +v against -v, at round 53).
    """
    thr = mag.kthvalue(mag.shape[1] - k + 1, dim=1, keepdim=True).values  # the k-th largest
    above, at = mag > thr, mag == thr
    need = k - above.sum(1, keepdim=True)
    keep = above | (at & (at.cumsum(1, dtype=torch.int32) <= need))
    return keep.nonzero()[:, 1].view(-1, k)


def topk_compress(X: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest-magnitude entries of each X[m] (flattened; ties to the lowest index): values and int32
    flat indices, in increasing index order."""
    flat = X.reshape(X.shape[0], -1)
    idx = topk_positions(flat.abs(), k)
    return flat.gather(1, idx), idx.to(torch.int32)


def topk_compress_rows(X: torch.Tensor, item: torch.Tensor, indptr, n_items: int,
                       k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`topk_compress` of M (N, d) tables given by their touched rows (client m: X[indptr[m]:indptr[m + 1]] at
    items item[...]; every other row is zero), in one compiled pass (`topk_kernels`).

    The same message: the k largest magnitudes among the touched values with the same ties (items are in
    increasing order, so a row's positions are the table's in the same order), or all of them and k - n
    zeros at untouched positions when a client has n < k values (a zero adds nothing when decoded).
    """
    values, indices = topk_rows(np.ascontiguousarray(X.numpy()), np.ascontiguousarray(item.numpy()),
                                np.asarray(indptr, dtype=np.int64), n_items, k)
    return torch.from_numpy(values), torch.from_numpy(indices)


def topk_decompress(values: torch.Tensor, indices: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    n = math.prod(shape[1:])
    out = torch.zeros(values.shape[0], n, dtype=values.dtype)
    out.scatter_(1, indices.long(), values)
    return out.view(shape)
