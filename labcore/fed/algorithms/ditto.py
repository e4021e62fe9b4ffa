"""Ditto (Li et al. 2021) and APFL (Deng et al. 2020): every user also trains a personal model on its device, beside
whatever global algorithm the run uses (FedAvg, FedProx, SCAFFOLD, q-FFL). Nothing personal leaves the device, so
the uplink is the global algorithm's. The personal steps are in `fed/personal.py` (`PersonalModels.train`); here:
when they run (after the round's local training, on the same batches) and what they cost.

Ditto pulls the personal table toward the global one by lambda. APFL trains and ranks through the mixture
alpha v + (1 - alpha) w of the personal model and the client's local copy of the global one, which moves during the
round's steps (Algorithm 1): it overrides one thing, the kind of personal model. APFL's replay of that local copy
covers FedAvg's and FedProx's local steps, so the config refuses it with SCAFFOLD."""
from __future__ import annotations

from ..personal import PersonalModels


class Ditto:
    kind = "ditto"
    work_per_sample = 1  # one personal step on every batch of the global training

    def __init__(self, cfg, Q, P):
        self.cfg = cfg
        self.models = PersonalModels(Q, P, self.kind, cfg.ditto_lambda, cfg.apfl_alpha)

    def train(self, sim, clients, plan) -> None:
        # before the round's update is applied: sim.Q and sim.P are still what the cohort started from
        self.models.train(clients, sim.Q, sim.P, plan, sim.cfg.lr, sim.cfg.weight_decay, sim.cfg.prox_mu)

    def quality(self, sim) -> dict:
        return self.models.quality(sim)

    def state(self) -> dict:
        return {"personal": self.models.state_dict()}

    def load_state(self, st: dict) -> None:
        self.models.load_state_dict(st["personal"])


class APFL(Ditto):
    kind = "apfl"
