"""SCAFFOLD (Karimireddy et al. 2020, Alg. 1, option II): every local step is corrected by c - c_i, the server's
control variate minus the client's, so that clients with different data drift less apart. The variates and their
update live in `fed/scaffold.py` (`ControlVariates`); here is what the algorithm changes in FedAvg's round: the
local objective, an uplink of two dense messages (y_i - x and c_i+ - c_i), and c in the broadcast."""
from __future__ import annotations

import time

import numpy as np
import torch

from ...config import ConfigError
from ..aggregate import fedavg_weights
from ..scaffold import ControlVariates
from .fedavg import FedAvg


class Scaffold(FedAvg):
    sums_on_arrival = False

    def __init__(self, cfg, data, Q, P):
        super().__init__(cfg, data, Q, P)
        self.variates = ControlVariates(data.n_users, data.n_items, cfg.dim)
        self._cohort = None

    @classmethod
    def check_trainer(cls, cfg, trainer, layout: str, engine_trainer: bool) -> None:
        if not engine_trainer:
            raise ConfigError(f"scaffold=True needs the engine's trainer (SCAFFOLD's correction is in its compiled "
                              f"local training); layout={layout!r} trains with {getattr(trainer, '__name__', trainer)}"
                              ": use layout='rows' or scaffold=False")

    @classmethod
    def memory(cls, cfg, data, touched_rows: int) -> dict[str, int]:
        # every user's c_i by the rows it last touched (all users, not the cohort), the round's old and new variates
        # of the cohort, and c with the round's dense sums
        N, d = data.n_items, cfg.dim
        kept = int(np.minimum(data.train_counts().astype(np.int64) * (1 + cfg.num_negatives), N).sum())
        return {"SCAFFOLD's control variates": kept * (d * 4 + 4) + 3 * touched_rows * (d * 4 + 8) + 4 * N * d * 4}

    def local_train(self, sim, clients, plan, setup):
        cfg = sim.cfg
        self._cohort = self.variates.cohort_rows(clients)  # gathered once for training and the exchange
        return sim.trainer(sim.Q, sim.P[clients], plan, cfg.lr, cfg.weight_decay, None,
                            None if sim.keep_view else sim._workspace,
                            variates=self.variates.trainer_inputs(self._cohort, plan.order))

    def uplink(self, sim, t, local, clients, setup, n_pos, n_steps, n_dropped):
        t1 = time.perf_counter()
        up, agg = self.variates.exchange(local.rows, clients, self._cohort, n_steps, sim.cfg.lr,
                                         fedavg_weights(torch.from_numpy(n_pos)))
        self._cohort = None
        return up, up, sim.ledger.record(t, "up", up), local.rows, agg, None, t1

    def extra_downlink(self) -> list:
        return [self.variates.broadcast()]

    def state(self) -> dict:
        return {"variates": self.variates.state_dict()}

    def load_state(self, st: dict) -> None:
        self.variates.load_state_dict(st["variates"])
