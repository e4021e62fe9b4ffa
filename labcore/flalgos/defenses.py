"""Robust aggregation of the clients' model updates (rows of a (C, P) tensor); all ignore sample weights.

  median    coordinate-wise median (Yin et al. 2018)
  trimmed   coordinate-wise trimmed mean, cutting a share at each end (Yin et al. 2018)
  krum      the update with the least sum of squared distances to its C - f - 2 nearest (Blanchard et al. 2017)
  clip      each update scaled to norm <= clip_norm, then the (weighted) mean, plus optional Gaussian noise of
            std dp_noise * clip_norm / C (Sun et al. 2019, "Can you really backdoor federated learning?")
"""
from __future__ import annotations

import math

import torch


def median(x: torch.Tensor) -> torch.Tensor:
    s = x.sort(0).values
    n = s.shape[0]
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def trimmed_mean(x: torch.Tensor, trim: float) -> torch.Tensor:
    k = int(math.floor(trim * x.shape[0]))
    s = x.sort(0).values
    return s[k : x.shape[0] - k].mean(0)


def krum(x: torch.Tensor, f: int) -> tuple[torch.Tensor, int]:
    n = x.shape[0]
    d = torch.cdist(x[None].double(), x[None].double())[0] ** 2
    m = max(1, n - f - 2)
    scores = d.sort(1).values[:, 1 : m + 1].sum(1)  # column 0 is the distance to itself
    best = int(scores.argmin())
    return x[best], best


def clip_rows(x: torch.Tensor, clip_norm: float) -> torch.Tensor:
    norms = torch.linalg.vector_norm(x, dim=1, keepdim=True)
    return x * torch.clamp(clip_norm / norms.clamp(min=1e-12), max=1.0)


def robust(name: str, x: torch.Tensor, cfg) -> torch.Tensor:
    if name == "median":
        return median(x)
    if name == "trimmed":
        return trimmed_mean(x, cfg.trim_frac)
    if name == "krum":
        if not x.shape[0] > 2 * cfg.krum_f + 2:  # a round that lost clients to dropouts
            raise ValueError(f"krum_f={cfg.krum_f} is invalid for a round with {x.shape[0]} uploads: Krum needs "
                             f"more than 2 f + 2")
        return krum(x, cfg.krum_f)[0]
    raise ValueError(f"defense={name!r} is not a robust aggregator")
