"""FELLRec's dynamic balance strategy (eqs. 1-4) and the baselines' aggregation, as pure tensor functions.

    s_{c,c'} = cos(vec R_c, vec R_c')                                  eq. (3)
    w_c      = tanh(alpha / [softmax(L)_c] ** (t / beta))              eq. (4), t = 1, 2, ... (the epoch)
    d_{c,c'} = w_c s_{c,c'} for c' != c,  d_{c,c} = s_{c,c} = 1
    R_c      = sum_c' d_{c,c'} R_c' / sum_c' d_{c,c'}                  eqs. (1)-(2) with the weights d

softmax(L)_c < 1, so the denominator shrinks as t grows and w_c rises to 1 (the client learns more and
more from the others); a low-loss client has a small softmax share and heats up first.

Three defects of the public FELLRec code are absent here (tests check each): the exponent is (t)/beta,
not `epoch + 1/beta`; w_c is applied for every beta, including the default beta = 1; and (in offload.py)
the split model really runs split.
"""
from __future__ import annotations

import torch


def flatten(states: list[dict[str, torch.Tensor]]) -> torch.Tensor:
    """(C, P): each client's LoRA parameters flattened in a fixed (sorted name) order: vec(R_c)."""
    names = sorted(states[0])
    return torch.stack([torch.cat([s[n].reshape(-1) for n in names]) for s in states])


def cosine_similarity_matrix(flat: torch.Tensor) -> torch.Tensor:
    """eq. (3) for every pair: (C, C)."""
    unit = flat / flat.norm(dim=1, keepdim=True).clamp(min=1e-12)
    return unit @ unit.T


def warmup(losses, t: int, alpha: float, beta: float) -> torch.Tensor:
    """eq. (4): w_c = tanh(alpha / p_c ** (t / beta)) with p = softmax(losses); t >= 1 is the epoch.

    Computed in the log domain: alpha / p**(t/beta) = alpha * exp(-(t/beta) log p)."""
    if not alpha > 0:
        raise ValueError(f"alpha={alpha!r} is invalid: must be > 0")
    if not beta > 0:
        raise ValueError(f"beta={beta!r} is invalid: must be > 0")
    log_p = torch.log_softmax(torch.as_tensor(losses, dtype=torch.float64), dim=0)
    exponent = t / beta  # the public code wrote `epoch+1/beta` = epoch + (1/beta)
    return torch.tanh(alpha * torch.exp((-exponent * log_p).clamp(max=700.0)))


def dynamic_weights(sim: torch.Tensor, w: torch.Tensor | None) -> torch.Tensor:
    """d_{c,c'} = w_c s_{c,c'} off the diagonal, s_{c,c} on it; negative similarities count as 0."""
    d = sim.clamp(min=0.0).clone()
    if w is not None:
        off = ~torch.eye(d.shape[0], dtype=torch.bool)
        d[off] = (w.to(d.dtype)[:, None] * d)[off]
    return d


def personalized(states: list[dict[str, torch.Tensor]], d: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    """eq. (2) with weights d (C, C): client c gets sum_c' d[c, c'] R_c' / sum_c' d[c, c']."""
    d = d / d.sum(dim=1, keepdim=True)
    out = []
    for c in range(len(states)):
        out.append({n: sum(float(d[c, j]) * states[j][n] for j in range(len(states))) for n in states[0]})
    return out


def fellrec_aggregate(states, losses, t: int, alpha: float, beta: float, dyn_agg: bool = True,
                      dyn_speed: bool = True, sizes=None):
    """Algorithm 1, lines 14-17. Returns (personalized states, w, d).

    dyn_agg=False (ablation): data-size weights |D_c'| instead of the similarities;
    dyn_speed=False (ablation): w_c = 1."""
    C = len(states)
    if dyn_agg:
        s = cosine_similarity_matrix(flatten(states)).double()
    else:
        sz = torch.as_tensor(sizes if sizes is not None else [1.0] * C, dtype=torch.float64)
        s = (sz / sz.max())[None, :].repeat(C, 1)
        s.fill_diagonal_(1.0)
    w = warmup(losses, t, alpha, beta) if dyn_speed else torch.ones(C, dtype=torch.float64)
    d = dynamic_weights(s, w)
    return personalized(states, d), w, d


def fedavg(states: list[dict[str, torch.Tensor]], sizes) -> dict[str, torch.Tensor]:
    """FedAvg: the data-size weighted mean sum_c |D_c| / |D| R_c."""
    sz = torch.as_tensor(sizes, dtype=torch.float64)
    wts = sz / sz.sum()
    return {n: sum(float(wts[c]) * states[c][n] for c in range(len(states))) for n in states[0]}
