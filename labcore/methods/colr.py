"""CoLR (Algorithm 1) and SCoLR (Algorithm 2).

CoLR: each round the server draws B (d x r) and shares it (as a seed); clients
freeze Q and B and train only A_u (N x r, initialised at 0) and their user
vector; the server averages the A_u and every client folds B A into Q. The
aggregate stays rank r, so the downlink is as small as the uplink, and it is a
plain sum: additively homomorphic encryption applies directly.

SCoLR: B has r_g columns; each client draws r_u in [min, r_g] and a random
subset S_u of the columns, trains only those and uploads (S_u, A_u).
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..fed.updates import LocalResult, LowRank, RowUpdate
from .base import FedMF, RoundSetup, RowBlock, Wire


def train_client(Q: torch.Tensor, p: torch.Tensor, batches, lr: float, weight_decay: float, B: torch.Tensor,
                 col_scale: torch.Tensor, prox_mu: float = 0.0) -> tuple[torch.Tensor, torch.Tensor, float]:
    """One CoLR / SCoLR client's local training (Algorithm 1, the client's part): its user vector after training, its
    A (N x r) and its summed loss. The engine runs the same steps compiled (`fed.kernels.fused` and, at a small rank,
    `fed.kernels.fused_lowrank`), tested equal to this.

    The client's item table is Q + A B^T: Q (N x d) the round's global table and B (d x r) the server's random
    matrix, both frozen; only A (from 0) and the user vector are trained, so the upload is A, r numbers an item.
    Loss and step are FedMF's (`base.train_client`) with e = Q_i + B a_i, whose gradient for a_i is, by the chain
    rule, B^T times the gradient for e. col_scale (r,): A's learning rate per column, sqrt(r / d) (the paper's
    Appendix A; 1 without it) times SCoLR's column mask S_u (0 on the columns the client does not train).
    prox_mu: FedProx's mu/2 ||A B^T||^2, whose gradient is mu A B^T B. batches: (items, labels) of each step."""
    p, A, loss_sum = p.clone(), Q.new_zeros(Q.shape[0], B.shape[1]), 0.0
    for items, labels in batches:
        e = Q[items] + A[items] @ B.T  # (b, d): the batch's item embeddings
        x = e @ p
        loss_sum += float(F.binary_cross_entropy_with_logits(x, labels, reduction="sum"))
        g = torch.sigmoid(x) - labels
        grad_p = (g[:, None] * e).mean(0) + 2 * weight_decay * p
        grad_a = (g[:, None] * p + 2 * weight_decay * e) @ B  # each sample's gradient for its item's row of A
        occurrences = torch.bincount(items, minlength=Q.shape[0])[items]
        grad_A = torch.zeros_like(A).index_add_(0, items, grad_a / occurrences[:, None])
        grad_A += prox_mu * (A @ B.T) @ B  # 0 without FedProx
        A = A - lr * col_scale * grad_A
        p = p - lr * grad_p
    return p, A, loss_sum


def draw_B(kind: str, d: int, r: int, gen: torch.Generator) -> torch.Tensor:
    """The three distributions of CoLR's Fig. 5, and the sphere rescaled to their second moment."""
    G = torch.randn(d, r, generator=gen)
    if kind == "normal":  # N(0, 1/r) entries: E[B B^T] = (d... ) unbiased per Lemma A.2
        return G / math.sqrt(r)
    if kind == "orthonormal":  # orthonormal columns scaled so that E[B B^T] = I
        Qm, _ = torch.linalg.qr(G)
        return Qm * math.sqrt(d / r)
    if kind == "sphere":  # columns uniform on the unit sphere: E[B B^T] = (r/d) I, smaller steps
        return G / G.norm(dim=0, keepdim=True)
    if kind == "sphere_scaled":  # the same directions scaled by sqrt(d/r): E[B B^T] = I like the other two
        return G / G.norm(dim=0, keepdim=True) * math.sqrt(d / r)
    raise ValueError(f"b_init={kind!r}: allowed values are normal, orthonormal, sphere, sphere_scaled")


class CoLR(FedMF):
    name = "colr"
    layout = "factor"  # A travels column by column: the dense decode was (M, r, N) seen as (M, N, r)

    def _ranks(self, n_clients: int, gen: torch.Generator) -> np.ndarray:
        return np.full(n_clients, self.cfg.rank)

    def setup_round(self, round_idx: int, n_clients: int, gen: torch.Generator) -> RoundSetup:
        seed = int(torch.randint(0, 2**62, (1,), generator=gen))
        B = draw_B(self.cfg.b_init, self.d, self.cfg.rank, torch.Generator().manual_seed(seed))
        ranks = self._ranks(n_clients, gen)
        # column order per client: its S_u first (the uploaded prefix), then the rest
        order = torch.stack([torch.randperm(self.cfg.rank, generator=gen) for _ in range(n_clients)]) \
            if (ranks < self.cfg.rank).any() else torch.arange(self.cfg.rank).repeat(n_clients, 1)
        mask = torch.zeros(n_clients, self.cfg.rank)
        mask.scatter_(1, order, (torch.arange(self.cfg.rank)[None, :] < torch.from_numpy(ranks)[:, None]).float())
        scale = torch.from_numpy(np.sqrt(ranks / self.d) if self.cfg.lowrank_lr_scale else np.ones(n_clients)).float()
        return RoundSetup(LowRank(B, mask, scale), seed, {"order": order, "ranks": ranks})

    def uplink(self, local: LocalResult, setup: RoundSetup) -> list[Wire]:
        if local.rows is not None:
            return self._uplink_rows(local.rows, setup)
        A = local.update  # (M, N, r)
        order, ranks = setup.extra["order"], setup.extra["ranks"]
        if not (ranks < self.cfg.rank).any():  # CoLR: every client sends all columns in B's order
            return [Wire("A", "factors", A.transpose(1, 2).reshape(A.shape[0], -1))]
        # (M, r, N) with each client's own columns first: its message is a prefix
        compact = A.gather(2, order[:, None, :].expand(-1, A.shape[1], -1)).transpose(1, 2).reshape(A.shape[0], -1)
        wires = [Wire("A", "factors", compact, ranks * self.n_items if (ranks < self.cfg.rank).any() else None)]
        if (ranks < self.cfg.rank).any():  # SCoLR also uploads S_u as column indices
            wires.append(Wire("S", "indices", order.to(torch.uint8), ranks))
        return wires

    def _uplink_rows(self, rows: RowUpdate, setup: RoundSetup) -> list[Wire]:
        """The same parts as `uplink`, by touched rows: each row's r values in the client's column order."""
        order, ranks = setup.extra["order"], setup.extra["ranks"]
        if not (ranks < self.cfg.rank).any():
            return [Wire("A", "factors", None, rows=RowBlock(rows, "factor"))]
        compact = rows.values.gather(1, order[rows.client])
        return [Wire("A", "factors", None, ranks * self.n_items, rows=RowBlock(rows.with_values(compact), "factor")),
                Wire("S", "indices", order.to(torch.uint8), ranks)]

    def _decode_rows(self, rows: RowUpdate, setup: RoundSetup) -> RowUpdate:
        if not (setup.extra["ranks"] < self.cfg.rank).any():
            return rows
        order = setup.extra["order"][rows.client]
        keep = torch.from_numpy(setup.extra["ranks"])[:, None] > torch.arange(self.cfg.rank)[None, :]
        compact = rows.values * keep[rows.client].to(rows.values.dtype)  # beyond r_u nothing was sent
        A = torch.zeros_like(compact)
        A.scatter_(1, order, compact)  # S_u^T A_u: back to B's columns
        return rows.with_values(A)

    def decode_uplink(self, wires: dict[str, Wire], setup: RoundSetup,
                      touched: RowUpdate | None = None) -> torch.Tensor | RowUpdate:
        if wires["A"].rows is not None:
            return self._decode_rows(wires["A"].rows.update, setup)
        sent = wires["A"].onto_rows(touched, self.cfg.rank, "factor") if touched is not None else None
        if sent is not None:  # quantized: read back onto the touched rows, each client's columns in its sent order
            return self._decode_rows(sent, setup)
        order = setup.extra["order"]
        M = order.shape[0]
        compact = wires["A"].data.view(M, self.cfg.rank, self.n_items).transpose(1, 2)  # (M, N, r) in sent order
        if not (setup.extra["ranks"] < self.cfg.rank).any():  # CoLR: already in B's column order, nothing cut
            # Kept in the sent (transposed) layout, as the general path's zeros_like + scatter_ also leaves it:
            # the same float summation order in the aggregate, so stored results stay bit for bit.
            return compact
        keep = torch.from_numpy(setup.extra["ranks"])[:, None] > torch.arange(self.cfg.rank)[None, :]
        compact = compact * keep[:, None, :].to(compact.dtype)  # beyond r_u nothing was sent
        A = torch.zeros_like(compact)
        A.scatter_(2, order[:, None, :].expand(-1, self.n_items, -1), compact)  # S_u^T A_u: back to B's columns
        return A

    def downlink(self, aggregate: torch.Tensor, setup: RoundSetup) -> list[Wire]:
        wires = [Wire("A", "factors", aggregate.reshape(1, -1))]
        if self.cfg.b_as_seed:
            wires.append(Wire("B_seed", "seed", torch.tensor([[setup.seed]], dtype=torch.int64)))
        else:
            wires.append(Wire("B", "factors", setup.lowrank.B.reshape(1, -1)))
        return wires

    def downlink_delta(self, wires: dict[str, Wire], setup: RoundSetup) -> torch.Tensor:
        A = wires["A"].data.view(self.n_items, self.cfg.rank)
        return A @ setup.lowrank.B.T


class SCoLR(CoLR):
    name = "scolr"

    def _ranks(self, n_clients: int, gen: torch.Generator) -> np.ndarray:
        lo, hi = self.cfg.scolr_min_rank, self.cfg.rank
        return torch.randint(lo, hi + 1, (n_clients,), generator=gen).numpy()
