"""Per-FedAvg, first order (Fallah et al. 2020): a model-agnostic meta-learning step on each pair of batches, so
that one step of a user's own data from the global model is a good personal model. The steps are in
`fed/meta_train.py` (`train_perfedavg`, `perfedavg_quality`); here: they replace FedAvg's local objective, and each
evaluation makes every user's personal model."""
from __future__ import annotations

from ..meta_train import perfedavg_quality, train_perfedavg
from .fedavg import FedAvg


class PerFedAvg(FedAvg):
    sums_on_arrival = False

    def local_train(self, sim, clients, plan, setup):
        cfg = sim.cfg
        return train_perfedavg(sim.Q, sim.P[clients], plan, cfg.lr, cfg.weight_decay, cfg.perfedavg_alpha)

    def personal_quality(self, sim) -> dict:
        hr, ndcg = perfedavg_quality(sim.Q, sim.P, sim.data, sim.sampler, sim.cfg, sim.round)
        return {"hr_personal": hr, "ndcg_personal": ndcg}
