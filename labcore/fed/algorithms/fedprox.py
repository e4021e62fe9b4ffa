"""FedProx (Li et al. 2020): FedAvg whose local objective adds the proximal term (mu / 2) ||w - w_global||^2, which
keeps a client's steps near the model it received. It overrides one step of FedAvg, the local objective; the pull
itself is in the trainers (`methods.base.train_client`, and the compiled kernels tested equal to it)."""
from __future__ import annotations

from ...config import ConfigError
from ..local_train import train_cohort_readable
from .fedavg import FedAvg


class FedProx(FedAvg):
    # its lazily applied pull, trained in the summing kernel, differed from the update table's in the last bits in a
    # test suite run from an empty compile cache: FedProx keeps the table
    sums_on_arrival = False

    @classmethod
    def check_trainer(cls, cfg, trainer, layout: str, engine_trainer: bool) -> None:
        if not (engine_trainer or trainer is train_cohort_readable):  # the trainers that implement the pull
            raise ConfigError(f"prox_mu={cfg.prox_mu} needs the engine's trainer (FedProx is in its compiled local "
                              f"training); layout={layout!r} trains with {getattr(trainer, '__name__', trainer)}: "
                              "use layout='rows' or prox_mu=0")

    def local_options(self) -> dict:
        return {"prox_mu": self.cfg.prox_mu}
