"""Effective rank of client updates (CoLR Fig. 2).

For one client's item-table update ΔQ_u (N items x d), PCA treats items as
samples: N90 / N99 = how many principal components explain 90% / 99% of the
variance. Computed for the whole cohort at once through the d x d covariance
(the same eigenvalues scikit-learn's PCA finds; a test checks that). The
entropy effective rank (Roy and Vetterli) is exp(H(p)), p the normalised
singular values of the centred update.
"""
from __future__ import annotations

import math

import torch


def explained_variance_ratios(updates: torch.Tensor, right: torch.Tensor | None = None) -> torch.Tensor:
    """(M, N, d) -> (M, d) explained-variance ratios, descending; rows of NaN for all-zero updates.

    With `right` (d x r), `updates` are low-rank factors A (M, N, r) of ΔQ = A right^T
    and the covariance is formed as right (A_c^T A_c) right^T without the N x d product.
    """
    X = updates.to(torch.float64)
    Xc = X - X.mean(dim=1, keepdim=True)
    cov = Xc.transpose(1, 2) @ Xc
    if right is not None:
        R = right.to(torch.float64)
        cov = R @ cov @ R.T
    evals = torch.linalg.eigvalsh(cov).flip(-1).clamp(min=0)
    total = evals.sum(-1, keepdim=True)
    return torch.where(total > 0, evals / torch.where(total > 0, total, torch.ones_like(total)),
                       torch.full_like(evals, math.nan))


def components_for(ratios: torch.Tensor, share: float) -> torch.Tensor:
    """Smallest number of leading components whose ratios add up to at least `share`."""
    csum = ratios.cumsum(-1)
    return (csum < share - 1e-12).sum(-1) + 1


def entropy_rank(ratios: torch.Tensor) -> torch.Tensor:
    sv = ratios.clamp(min=0).sqrt()
    p = sv / sv.sum(-1, keepdim=True)
    h = -(p * torch.log(torch.where(p > 0, p, torch.ones_like(p)))).sum(-1)
    return h.exp()


def effective_rank_stats(updates: torch.Tensor, right: torch.Tensor | None = None) -> dict[str, float]:
    ratios = explained_variance_ratios(updates, right)
    ok = ~torch.isnan(ratios[:, 0])
    if not ok.any():
        return {k: math.nan for k in ("n90_mean", "n90_std", "n99_mean", "n99_std", "erank_mean")}
    r = ratios[ok]
    n90, n99 = components_for(r, 0.90).double(), components_for(r, 0.99).double()
    std = (lambda t: float(t.std(unbiased=False)))
    return {"n90_mean": float(n90.mean()), "n90_std": std(n90), "n99_mean": float(n99.mean()), "n99_std": std(n99),
            "erank_mean": float(entropy_rank(r).mean())}
