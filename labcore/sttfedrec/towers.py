"""The two towers (DSSM, CLSM), cosine similarity, softmax over the requested items, Eq. 1-3 and 8.

DSSM (Huang et al. 2013; section 4.2 (1)): three fully connected layers
256-128-128 with tanh, on the hashed letter-trigram counts of the input. The
first layer is an `EmbeddingBag` (sum of the weight rows of the active
trigrams times their counts), which is exactly the dense product W x for the
sparse count vector x.

CLSM (Shen et al. 2014; section 4.2 (2)): one convolution with window 3 over
the word sequence (each word is its letter-trigram vector), tanh, max-pooling
over positions to 300, then a fully connected layer to 128 with tanh. The
convolution is computed as three word projections (one per window offset)
summed at shifted positions, with zero padding at both ends ("same" padding).

Both towers are the same code for users and items; only their inputs differ.
Dropout (rate 0.2 in section 4.1) follows every hidden layer. Weights and
biases start from N(0, 0.1) (section 4.1).

Loss (Eq. 8). For one request of T items with click labels r_j:
    sim_j = cos(u, i_j),  P_j = softmax_j(gamma * sim_j),  L = -(1/T) sum_j r_j log P_j.
gamma = 1 is Eq. 8 as printed; DSSM's own Eq. 4 has a smoothing factor gamma
(cosines lie in [-1, 1], so with gamma = 1 the softmax over T items is almost
flat). It is a config field.
"""
from __future__ import annotations

import torch
from torch import nn

from .features import TowerInput

TOWERS = ("dssm", "clsm", "mvmf")


class DSSMTower(nn.Module):
    def __init__(self, n_features: int, hidden: tuple[int, ...] = (256, 128, 128), dropout: float = 0.2,
                 init_std: float = 0.1):
        super().__init__()
        self.first = nn.EmbeddingBag(n_features, hidden[0], mode="sum")
        self.first_bias = nn.Parameter(torch.zeros(hidden[0]))
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(hidden[:-1], hidden[1:]))
        self.dropout = nn.Dropout(dropout)
        self.out_dim = hidden[-1]
        _normal_init(self, init_std)

    def forward(self, x: TowerInput) -> torch.Tensor:
        w = self.first.weight
        h = torch.tanh(self.first(x.ids, x.offsets, per_sample_weights=x.weights.to(w.dtype)) + self.first_bias)
        for layer in self.layers:
            h = torch.tanh(layer(self.dropout(h)))
        return h


class CLSMTower(nn.Module):
    def __init__(self, n_features: int, conv: int = 300, out: int = 128, window: int = 3, dropout: float = 0.2,
                 init_std: float = 0.1):
        super().__init__()
        self.window, self.conv_dim = window, conv
        self.conv = nn.EmbeddingBag(n_features, window * conv, mode="sum")  # the window's word projections
        self.conv_bias = nn.Parameter(torch.zeros(conv))
        self.fc = nn.Linear(conv, out)
        self.dropout = nn.Dropout(dropout)
        self.out_dim = out
        _normal_init(self, init_std)

    def forward(self, x: TowerInput) -> torch.Tensor:
        B, L = x.seq.shape
        w, c = self.window, self.conv_dim
        z = self.conv(x.word_ids, x.word_offsets, per_sample_weights=x.word_weights.to(self.conv.weight.dtype))
        z = torch.cat([z.new_zeros(1, w * c), z])  # row 0: the padding word (zero vector)
        idx = x.seq + 1
        half = w // 2
        conv = self.conv_bias
        for k in range(w):  # window offset k reads the word at position p + k - half ("same" padding)
            s = k - half
            shifted = idx if s == 0 else torch.zeros_like(idx)
            if s > 0:
                shifted[:, : L - s] = idx[:, s:]
            elif s < 0:
                shifted[:, -s:] = idx[:, : L + s]
            conv = conv + torch.nn.functional.embedding(shifted, z[:, k * c : (k + 1) * c])
        h = torch.tanh(conv).masked_fill((x.seq < 0).unsqueeze(-1), -2.0)  # tanh > -1: padding never wins
        h = h.max(dim=1).values  # max-pooling over positions -> (B, 300)
        h = h.clamp_min(-1.0)  # an entity without words pools to -1 (all padding)
        return torch.tanh(self.fc(self.dropout(h)))


class MVMFTower(nn.Module):
    """Linear multi-view factor: an id embedding plus a linear map of the trigram bag (FedMVMF variant).

    On the user side the id embedding is the user's private vector: it never leaves the
    device (the frameworks update it locally and do not aggregate it).
    """

    def __init__(self, n_features: int, n_ids: int, dim: int = 64, init_std: float = 0.1):
        super().__init__()
        self.side = nn.EmbeddingBag(n_features, dim, mode="sum")
        self.ids = nn.Embedding(n_ids, dim)
        self.out_dim = dim
        nn.init.normal_(self.side.weight, 0.0, init_std / 10)
        nn.init.normal_(self.ids.weight, 0.0, init_std)

    def forward(self, x: TowerInput, ids: torch.Tensor) -> torch.Tensor:
        return self.ids(ids) + self.side(x.ids, x.offsets, per_sample_weights=x.weights.to(self.side.weight.dtype))


def _normal_init(module: nn.Module, std: float) -> None:
    for p in module.parameters():
        nn.init.normal_(p, 0.0, std)


def make_tower(kind: str, n_features: int, dropout: float = 0.2, init_std: float = 0.1) -> nn.Module:
    if kind == "dssm":
        return DSSMTower(n_features, dropout=dropout, init_std=init_std)
    if kind == "clsm":
        return CLSMTower(n_features, dropout=dropout, init_std=init_std)
    raise ValueError(f"tower={kind!r}: expected one of dssm, clsm")


class TwoTower(nn.Module):
    """User tower + item tower; `score` is the cosine of Eq. 8."""

    def __init__(self, kind: str, n_features: int, dropout: float = 0.2, init_std: float = 0.1):
        super().__init__()
        self.kind = kind
        self.user = make_tower(kind, n_features, dropout, init_std)
        self.item = make_tower(kind, n_features, dropout, init_std)


def cosine(u: torch.Tensor, i: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """cos(u, i) along the last dimension (u broadcasts against i)."""
    return (u * i).sum(-1) / (u.norm(dim=-1).clamp_min(eps) * i.norm(dim=-1).clamp_min(eps))


def request_loss(u: torch.Tensor, items: torch.Tensor, labels: torch.Tensor, gamma: float = 1.0,
                 score: str = "cosine") -> torch.Tensor:
    """Eq. 8 for a batch of requests: u (R, d), items (R, T, d), labels (R, T) -> loss of each request (R,).

    Softmax over the T requested items; L = -(1/T) sum_j r_j log P_j.
    """
    sim = cosine(u.unsqueeze(1), items) if score == "cosine" else (u.unsqueeze(1) * items).sum(-1)
    logp = torch.log_softmax(gamma * sim, dim=1)
    return -(labels * logp).sum(1) / labels.shape[1]
