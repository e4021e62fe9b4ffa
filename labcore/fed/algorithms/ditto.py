"""Ditto (Li et al. 2021) and APFL (Deng et al. 2020): every user also trains a personal model on its device, beside
whatever global algorithm the run uses (FedAvg, FedProx, SCAFFOLD, q-FFL). Nothing personal leaves the device, so
the uplink is the global algorithm's. The personal steps are in `fed/personal.py` (`PersonalModels.train`); here:
when they run (after the round's local training, on the same batches) and what they cost.

Ditto pulls the personal table toward the global one by lambda; APFL ranks with the mixture alpha V_u + (1 - alpha) Q
and overrides one thing, the kind of personal model."""
from __future__ import annotations

from ..personal import PersonalModels


class Ditto:
    kind = "ditto"
    work_per_sample = 1  # one personal step on every batch of the global training

    def __init__(self, cfg, Q, P):
        self.cfg = cfg
        self.models = PersonalModels(Q, P, self.kind, cfg.ditto_lambda, cfg.apfl_alpha)

    def train(self, sim, clients, plan) -> None:
        self.models.train(clients, sim.Q, plan, sim.cfg.lr, sim.cfg.weight_decay)

    def quality(self, sim) -> dict:
        return self.models.quality(sim)

    def state(self) -> dict:
        return {"personal": self.models.state_dict()}

    def load_state(self, st: dict) -> None:
        self.models.load_state_dict(st["personal"])


class APFL(Ditto):
    kind = "apfl"
