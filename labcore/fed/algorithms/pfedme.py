"""pFedMe (Dinh et al. 2020): each client trains a personal model theta with a Moreau-envelope pull toward its local
copy w, and sends w's update; theta is the user's personal model. The steps are in `fed/meta_train.py`
(`train_pfedme`); here: they replace FedAvg's local objective, and every user's theta is kept and ranked with."""
from __future__ import annotations

from ..meta_train import train_pfedme
from ..personal import PersonalModels
from .fedavg import FedAvg


class PFedMe(FedAvg):
    sums_on_arrival = False

    def __init__(self, cfg, data, Q, P):
        super().__init__(cfg, data, Q, P)
        self.models = PersonalModels(Q, P, "pfedme")
        self.work_per_sample = cfg.pfedme_steps  # theta's steps on every batch

    def local_train(self, sim, clients, plan, setup):
        cfg = sim.cfg
        local, theta_rows, theta_p, rnd = train_pfedme(sim.Q, sim.P[clients], plan, cfg.lr, cfg.weight_decay,
                                                       cfg.pfedme_lambda, cfg.pfedme_steps)
        self.models.store(clients, sim.Q, rnd.row_client, rnd.row_item, rnd.Qr + theta_rows, theta_p)
        return local

    def personal_quality(self, sim) -> dict:
        return self.models.quality(sim)

    def state(self) -> dict:
        return {"personal": self.models.state_dict()}

    def load_state(self, st: dict) -> None:
        self.models.load_state_dict(st["personal"])
