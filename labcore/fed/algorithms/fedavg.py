"""FedAvg on the engine (McMahan et al. 2017): each sampled client trains the global model on its own data and sends
its update; the server adds the updates weighted by the clients' data sizes. Every other algorithm of the engine is
a subclass of `FedAvg` that overrides one or two of its hooks, as Flower's strategies do (`FedProx(FedAvg)`):

- `before_training`: what a client measures before it trains (q-FFL: its loss at the global model);
- `local_train`: the local objective (FedProx's pull, SCAFFOLD's correction, pFedMe's and Per-FedAvg's steps);
- `uplink`: what the clients send and the server sums (SCAFFOLD: two dense messages and its variates);
- `extra_uplink`, `weigh`: a part more on the uplink, and each client's weight in the sum (q-FFL);
- `extra_downlink`: a part more in the broadcast (SCAFFOLD's c);
- `personal_quality`: the quality of every user's personal model (pFedMe, Per-FedAvg);
- `state`, `load_state`: what a checkpoint keeps of the algorithm (variates, personal models).

`engine.Simulation.step` plays the round and calls these hooks; it names no algorithm. The CoLR update a client
computes is the method's (`methods/colr.py`), the same under every algorithm here.
"""
from __future__ import annotations

import numpy as np
import torch

from ..local_train import LocalResult


class FedAvg:
    # the server may add each client's rows as the client ends, without an update table (`engine.sums_on_arrival`)
    sums_on_arrival = True
    work_per_sample = 1  # gradient evaluations per training sample (the time model's compute share)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # a sum taken as clients end never shows the server a client's update: an algorithm that trains, sends or
        # weighs updates its own way needs them, unless it says otherwise
        if "sums_on_arrival" not in vars(cls) and any(h in vars(cls) for h in ("local_train", "uplink", "weigh")):
            cls.sums_on_arrival = False

    def __init__(self, cfg, data, Q: torch.Tensor, P: torch.Tensor):
        self.cfg = cfg

    @classmethod
    def check_trainer(cls, cfg, trainer, layout: str, engine_trainer: bool) -> None:
        """Refuse a trainer this algorithm's local objective is not written in (`Simulation(trainer=...)`);
        `engine_trainer`: it is the engine's compiled one (`local_train.train_cohort`)."""

    @classmethod
    def memory(cls, cfg, data, touched_rows: int) -> dict[str, int]:
        """Bytes this algorithm's own state adds to a round's peak (`engine.estimate_memory`), by what holds them."""
        return {}

    def local_options(self) -> dict:
        """Keyword arguments of the local objective for the trainer (FedAvg: none)."""
        return {}

    # --- one round, in the order the engine calls them ---------------------------------------------------------
    def before_training(self, sim, clients: np.ndarray, plan) -> None:
        pass

    def local_train(self, sim, clients: np.ndarray, plan, setup) -> LocalResult:
        cfg = sim.cfg
        if sim.uses_engine_trainer and not sim.keep_view:  # W reused round to round (see Workspace)
            return sim.trainer(sim.Q, sim.P[clients], plan, cfg.lr, cfg.weight_decay, setup.lowrank, sim._workspace,
                               sum_on_arrival=sim.arrival_sum(plan.n_pos), **self.local_options())
        return sim.trainer(sim.Q, sim.P[clients], plan, cfg.lr, cfg.weight_decay, setup.lowrank,
                           **self.local_options())

    def uplink(self, sim, t: int, local: LocalResult, clients: np.ndarray, setup, n_pos: np.ndarray,
               n_steps: np.ndarray, n_dropped: int):
        """The method's uplink through quantization, the ledger (or encryption) and the server's sum
        (`Simulation._uplink`): (wires, wires sent, bytes per client, decoded updates, aggregate, secure round, t1)."""
        return sim._uplink(t, local, setup, n_pos, n_dropped)

    def extra_uplink(self) -> list:
        return []

    def weigh(self, weights: torch.Tensor, decoded) -> torch.Tensor:
        """Each client's weight in the server's sum (FedAvg: its share of the cohort's positives)."""
        return weights

    def extra_downlink(self) -> list:
        return []

    def personal_quality(self, sim) -> dict:
        return {}

    # --- checkpoints ----------------------------------------------------------------------------------------------
    def state(self) -> dict:
        return {}

    def load_state(self, st: dict) -> None:
        pass

