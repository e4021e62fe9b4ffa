"""q-FFL (Li et al. 2020, "Fair resource allocation in federated learning"; q-FedAvg, Alg. 2): clients with a
higher loss weigh more in the server's sum, so the model's quality spreads less over the clients. Each client also
sends its loss at the global model before training (one float); FedAvg's weights become `qffl_weights`."""
from __future__ import annotations

import numpy as np
import torch

from ...methods.base import Wire
from ..updates import RowUpdate
from .fedavg import FedAvg


class QFFL(FedAvg):
    sums_on_arrival = False

    def __init__(self, cfg, data, Q, P):
        super().__init__(cfg, data, Q, P)
        self.loss_before: np.ndarray | None = None

    def before_training(self, sim, clients, plan) -> None:
        self.loss_before = client_losses(sim.Q, sim.P[clients], plan)

    def extra_uplink(self) -> list:
        return [Wire("loss_before", "values", torch.from_numpy(self.loss_before)[:, None])]

    def weigh(self, weights, decoded):
        cfg = self.cfg
        return qffl_weights(weights, self.loss_before, update_sq_norms(decoded), cfg.qffl_q,
                            cfg.qffl_lipschitz or 1.0 / cfg.lr)


def client_losses(Q: torch.Tensor, p: torch.Tensor, plan) -> np.ndarray:
    """Each client's mean BCE over its round's samples at the global item table and its own user vector, before
    local training (q-FFL's F_k(w^t)), float64."""
    from ..kernels.fused import client_bce

    Qn, Pn = (np.ascontiguousarray(t.to(torch.float32).numpy()) for t in (Q, p))
    total = client_bce(Qn, Pn, plan.sample_client, plan.sample_item, plan.sample_label)
    return total / np.bincount(plan.sample_client, minlength=len(plan.clients))


def update_sq_norms(decoded) -> np.ndarray:
    """||client m's item-table update||^2 for every client of the cohort (float64)."""
    if isinstance(decoded, RowUpdate):
        sq = torch.einsum("rd,rd->r", decoded.values, decoded.values).double().numpy()  # float32 sums: weights
        return np.bincount(decoded.client.numpy(), sq, minlength=decoded.n_clients)
    return (decoded.double() ** 2).flatten(1).sum(1).numpy()


def qffl_weights(weights: torch.Tensor, loss: np.ndarray, sq_norm: np.ndarray, q: float, L: float) -> torch.Tensor:
    """q-FedAvg's aggregate as per-client weights (Li et al. 2020, Alg. 2; their code takes L = 1 / lr):

        Delta w_k = L (w - w_k),  h_k = q F_k^(q-1) ||Delta w_k||^2 + L F_k^q,
        w+ = w - sum_k F_k^q Delta w_k / sum_k h_k
        so  w+ - w = sum_k p_k F_k^q D_k / sum_k p_k (q F_k^(q-1) L ||D_k||^2 + F_k^q)      (D_k = w_k - w)

    p_k: the engine's FedAvg weights standing for their sampling by data size. q = 0 gives the FedAvg weights
    exactly (the float64 ratio rounds back to them)."""
    p = weights.to(torch.float64).numpy()
    Fq = loss ** q
    h = q * loss ** (q - 1) * L * sq_norm + Fq
    return torch.from_numpy(p * Fq / float((p * h).sum())).to(torch.float32)
