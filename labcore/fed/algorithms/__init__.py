"""The federated algorithms of the engine, one file each. `FedAvg` (fedavg.py) defines the hooks the round calls;
every other algorithm overrides one or two of them. A run has one global algorithm (`algorithm_class`) and, with
Ditto or APFL, a personal model trained beside it (`personalization_class`). Beside them, and combined with any:
the server's step (`server_opt.py`: FedAvg's, FedAvgM, FedAdam, FedYogi), the backdoor attacks (`attacks.py`) and
the robust aggregators against them (`defenses.py`).

To add an algorithm: a subclass of `FedAvg` in a file of its own here, overriding the hooks it changes, a line in
`algorithm_class`, and its config field (`config.RunConfig`, checked in `config.check_algorithm`).
"""
from __future__ import annotations

from . import attacks, defenses, server_opt
from .ditto import APFL, Ditto
from .fedavg import FedAvg
from .fedprox import FedProx
from .perfedavg import PerFedAvg
from .pfedme import PFedMe
from .qffl import QFFL
from .scaffold import Scaffold

__all__ = ["attacks", "defenses", "server_opt", "APFL", "Ditto", "FedAvg", "FedProx", "PFedMe", "PerFedAvg", "QFFL",
           "Scaffold", "algorithm_class", "personalization_class"]


def algorithm_class(cfg) -> type[FedAvg]:
    """The global algorithm a config runs (the config allows one at a time: `config.check_algorithm`)."""
    if cfg.personalization == "pfedme":
        return PFedMe
    if cfg.personalization == "perfedavg":
        return PerFedAvg
    if cfg.scaffold:
        return Scaffold
    if cfg.qffl_q:
        return QFFL
    if cfg.prox_mu:
        return FedProx
    return FedAvg


def personalization_class(cfg) -> type[Ditto] | None:
    """The personal model trained beside the global algorithm, if any."""
    return {"ditto": Ditto, "apfl": APFL}.get(cfg.personalization)
