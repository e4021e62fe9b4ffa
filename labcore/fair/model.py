"""The paper's models, written batched over the round's clients.

Every tensor of a client model carries a leading client axis C, so one forward
and one backward train all clients of a round at once (each client's loss is its
own batch mean, and the clients' parameters are disjoint, so summing the losses
gives every client exactly its own gradient).

* NeuMF (He et al. 2017, as in the FAIR reference code): a GMF branch
  (user * item, `gmf_dim` factors) and an MLP tower on [user; item]
  (`mlp_dim` each, `layers` Linear+ReLU layers halving the width), joined by one
  Linear to a score. Ranking uses GMF + a one-layer tower with 8 factors and BPR;
  the explicit-rating task uses the MLP tower only (NeuMF-MLP, d = 32, three
  layers) and MSE.
* `MLP`: the general-model experiment's two-layer perceptron (in-hidden-out).

The item embedding tables are the large part; they are never stored here but
realized from each device's psi (see `labcore.fair.engine`), so the functions
take the realized rows as inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class NeuMFSpec:
    gmf_dim: int  # 0: no GMF branch (NeuMF-MLP)
    mlp_dim: int  # user / item embedding size of the MLP branch
    layers: int

    @staticmethod
    def ranking(dim: int = 8, layers: int = 1) -> "NeuMFSpec":
        return NeuMFSpec(dim, dim * 2 ** (layers - 1), layers)

    @staticmethod
    def rating(dim: int = 32, layers: int = 3) -> "NeuMFSpec":
        return NeuMFSpec(0, dim, layers)

    @property
    def tables(self) -> tuple[str, ...]:
        """Embedding tables, each held for users (one row per device) and items (compressed)."""
        return ("gmf", "mlp") if self.gmf_dim else ("mlp",)

    @property
    def dim(self) -> int:
        if self.gmf_dim and self.gmf_dim != self.mlp_dim:
            raise ValueError("the engine keeps every embedding table at one width")
        return self.mlp_dim

    def tower(self) -> list[tuple[int, int]]:
        """(in, out) of each MLP layer."""
        w = 2 * self.mlp_dim
        return [(w // 2**i, w // 2 ** (i + 1)) for i in range(self.layers)]

    @property
    def predict_in(self) -> int:
        return self.gmf_dim + self.tower()[-1][1]

    def dense_shapes(self) -> dict[str, tuple[int, ...]]:
        shapes = {}
        for i, (a, b) in enumerate(self.tower()):
            shapes[f"w{i}"], shapes[f"b{i}"] = (b, a), (b,)
        shapes["wp"], shapes["bp"] = (self.predict_in,), ()
        return shapes

    def dense_size(self) -> int:
        return sum(math.prod(s) for s in self.dense_shapes().values())


def init_dense(spec: NeuMFSpec, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """The reference initialisation: Xavier-uniform tower, Kaiming-uniform (sigmoid gain) predictor, zero biases."""
    out = {}
    for i, (a, b) in enumerate(spec.tower()):
        bound = math.sqrt(6.0 / (a + b))
        out[f"w{i}"] = (torch.rand(b, a, generator=gen) * 2 - 1) * bound
        out[f"b{i}"] = torch.zeros(b)
    bound = math.sqrt(3.0 / spec.predict_in)
    out["wp"] = (torch.rand(spec.predict_in, generator=gen) * 2 - 1) * bound
    out["bp"] = torch.zeros(())
    return out


def neumf_scores(spec: NeuMFSpec, dense: dict[str, torch.Tensor], users: torch.Tensor,
                 items: torch.Tensor) -> torch.Tensor:
    """Scores of every (client, sample, item) slot.

    dense: per-client weights, leading axis C. users: (C, T, d) the client's own user
    rows per table. items: (C, B, J, T, d) realized item rows (J items per sample:
    the positive then the negatives for BPR, one item for ratings). Returns (C, B, J).
    """
    C, B, J = items.shape[:3]
    parts = []
    t = 0
    if spec.gmf_dim:
        parts.append(users[:, None, None, 0, :] * items[..., 0, :])  # (C, B, J, d)
        t = 1
    u_m, i_m = users[:, t, :], items[..., t, :].reshape(C, B * J, -1)
    w0 = dense["w0"]  # (C, out, 2d): [user; item] -> split so the user half is applied once per client
    d = spec.mlp_dim
    h = torch.baddbmm((torch.bmm(w0[:, :, :d], u_m[:, :, None])[:, :, 0] + dense["b0"])[:, None, :],
                      i_m, w0[:, :, d:].transpose(1, 2))
    h = F.relu(h)
    for i in range(1, spec.layers):
        h = F.relu(torch.baddbmm(dense[f"b{i}"][:, None, :], h, dense[f"w{i}"].transpose(1, 2)))
    parts.append(h.view(C, B, J, -1))
    z = torch.cat(parts, -1) if len(parts) > 1 else parts[0]
    return (z * dense["wp"][:, None, None, :]).sum(-1) + dense["bp"][:, None, None]


def neumf_all_items(spec: NeuMFSpec, dense: dict[str, torch.Tensor], users: torch.Tensor,
                    items: torch.Tensor) -> torch.Tensor:
    """Server-side scores of every item for a few users: users (u, T, d), items (I, T, d) -> (u, I).

    dense has no client axis. The first tower layer is split into its user and item halves, so the
    (u, I, width) activations are formed once.
    """
    d = spec.mlp_dim
    t = 1 if spec.gmf_dim else 0
    w0 = dense["w0"]
    a = users[:, t, :] @ w0[:, :d].T + dense["b0"]  # (u, h)
    b = items[:, t, :] @ w0[:, d:].T  # (I, h)
    h = F.relu(a[:, None, :] + b[None, :, :])
    for i in range(1, spec.layers):
        h = F.relu(h @ dense[f"w{i}"].T + dense[f"b{i}"])
    wp = dense["wp"]
    out = h @ wp[spec.gmf_dim:] + dense["bp"]
    if spec.gmf_dim:
        out = out + (users[:, 0, :] * wp[:spec.gmf_dim]) @ items[:, 0, :].T
    return out


def neumf_pair_scores(spec: NeuMFSpec, dense: dict[str, torch.Tensor], users: torch.Tensor,
                      items: torch.Tensor) -> torch.Tensor:
    """Server-side scores of (user, item) pairs: users, items (N, T, d) -> (N,)."""
    t = 1 if spec.gmf_dim else 0
    h = F.relu(torch.cat([users[:, t], items[:, t]], -1) @ dense["w0"].T + dense["b0"])
    for i in range(1, spec.layers):
        h = F.relu(h @ dense[f"w{i}"].T + dense[f"b{i}"])
    wp = dense["wp"]
    out = h @ wp[spec.gmf_dim:] + dense["bp"]
    if spec.gmf_dim:
        out = out + (users[:, 0] * items[:, 0]) @ wp[:spec.gmf_dim]
    return out


def bpr_loss(scores: torch.Tensor, mask: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Sum over clients of each client's batch-mean BPR loss; negatives' scores are averaged (reference code)."""
    z = scores[..., 0] - scores[..., 1:].mean(-1)
    return -((F.logsigmoid(z) * mask).sum(1) / count).sum()


def mse_loss(scores: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    return ((((scores[..., 0] - target) ** 2) * mask).sum(1) / count).sum()


def l2_penalty(users: torch.Tensor, items: torch.Tensor, mask: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """1/2 (||user rows||^2 + ||item rows||^2) per sample, batch mean per client (the 'BPR decay' term)."""
    per = 0.5 * (items.pow(2).sum((2, 3, 4)) + users.pow(2).sum((1, 2))[:, None])
    return ((per * mask).sum(1) / count).sum()


# --- the general model: a two-layer perceptron on a flat parameter vector -----------
@dataclass(frozen=True)
class MLPSpec:
    n_in: int = 64
    hidden: int = 512
    n_out: int = 10

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {"w1": (self.hidden, self.n_in), "b1": (self.hidden,), "w2": (self.n_out, self.hidden),
                "b2": (self.n_out,)}

    @property
    def size(self) -> int:
        return sum(math.prod(s) for s in self.shapes().values())

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """(C, n) -> per-client weights, leading axis C (views)."""
        out, pos = {}, 0
        for k, s in self.shapes().items():
            size = math.prod(s)
            out[k] = flat[:, pos:pos + size].reshape(flat.shape[0], *s)
            pos += size
        return out


def init_mlp(spec: MLPSpec, gen: torch.Generator) -> torch.Tensor:
    """torch.nn.Linear's default initialisation, flattened."""
    parts = []
    for fan_in, fan_out in ((spec.n_in, spec.hidden), (spec.hidden, spec.n_out)):
        bound = 1.0 / math.sqrt(fan_in)
        parts.append((torch.rand(fan_out * fan_in, generator=gen) * 2 - 1) * bound)
        parts.append((torch.rand(fan_out, generator=gen) * 2 - 1) * bound)
    return torch.cat(parts)


def mlp_logits(spec: MLPSpec, w: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """x: (C, B, n_in) -> (C, B, n_out)."""
    h = F.relu(torch.baddbmm(w["b1"][:, None, :], x, w["w1"].transpose(1, 2)))
    return torch.baddbmm(w["b2"][:, None, :], h, w["w2"].transpose(1, 2))
