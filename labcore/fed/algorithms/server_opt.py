"""The server's step: what the server adds to the global model given the round's mean update Delta.

One implementation for every place a server steps: the core engine's item table (`RunConfig.server_optimizer`)
and the FL-algorithms topic's models (`labcore.flalgos.strategies`).

    FedAvg   step = eta Delta                                     (Reddi et al. 2021, Alg. 1; eta = 1: McMahan)
    FedAvgM  v <- beta v + Delta;  step = eta v                   (Hsu et al. 2019)
    FedAdam  m <- b1 m + (1 - b1) Delta;  v <- b2 v + (1 - b2) Delta^2;  step = eta m / (sqrt(v) + tau)
    FedYogi  as FedAdam with v <- v - (1 - b2) Delta^2 sign(v - Delta^2)      (Reddi et al. 2021, Alg. 2:
             no bias correction, v starts at tau^2)

The state (v, m) is the server's alone: clients are stateless, so with a stateful optimizer the broadcast is the
step itself, not the method's compressed aggregate (the engine sends it dense; the ledger charges it).
"""
from __future__ import annotations

import torch

from ...config import SERVER_OPTIMIZERS


class FedAvg:
    name = "fedavg"
    stateful = False

    def __init__(self, lr: float = 1.0, momentum: float = 0.9, beta1: float = 0.9, beta2: float = 0.99,
                 tau: float = 1e-3):
        self.lr, self.momentum, self.beta1, self.beta2, self.tau = lr, momentum, beta1, beta2, tau

    def step(self, delta: torch.Tensor) -> torch.Tensor:
        return self.lr * delta

    def state_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if isinstance(v, torch.Tensor)}

    def load_state_dict(self, state: dict) -> None:
        for k, v in state.items():
            setattr(self, k, v)


class FedAvgM(FedAvg):
    name = "fedavgm"
    stateful = True

    def step(self, delta):
        v = getattr(self, "v", None)
        self.v = (self.momentum * v if v is not None else torch.zeros_like(delta)) + delta
        return self.lr * self.v


class FedAdam(FedAvg):
    name = "fedadam"
    stateful = True

    def second_moment(self, d: torch.Tensor) -> torch.Tensor:
        return self.beta2 * self.v + (1 - self.beta2) * d * d

    def step(self, delta):
        if getattr(self, "m", None) is None:
            self.m, self.v = torch.zeros_like(delta), torch.full_like(delta, self.tau**2)
        self.m = self.beta1 * self.m + (1 - self.beta1) * delta
        self.v = self.second_moment(delta)
        return self.lr * self.m / (self.v.sqrt() + self.tau)


class FedYogi(FedAdam):
    name = "fedyogi"

    def second_moment(self, d):
        d2 = d * d
        return self.v - (1 - self.beta2) * d2 * torch.sign(self.v - d2)


# one per name in SERVER_OPTIMIZERS (tests/core/test_engine_algorithms.py)
CLASSES = (FedAvg, FedAvgM, FedAdam, FedYogi)


def make(name: str, **hyper) -> FedAvg:
    classes = {c.name: c for c in CLASSES}
    if name not in classes:
        raise ValueError(f"server_optimizer={name!r}: allowed values are {', '.join(SERVER_OPTIMIZERS)}")
    return classes[name](**hyper)
