"""How the federation trains and is evaluated: rounds, cohorts, local steps, the seed."""
from __future__ import annotations

from dataclasses import dataclass

from .group import ConfigGroup

AGGREGATIONS = ("item_mean", "weighted")
CLIENT_SCHEDULES = ("uniform", "rotating", "poisson")  # labcore.fed.sampling.round_clients


@dataclass(frozen=True)
class TrainingConfig(ConfigGroup):
    rounds: int = 200
    clients_per_round: int = 60
    client_schedule: str = "uniform"  # "rotating": users shuffled once, M a round in turn (the CoLR authors' code)
    local_epochs: int = 2
    batch_size: int = 256
    lr: float = 0.5
    weight_decay: float = 1e-4
    num_negatives: int = 4
    aggregation: str = "item_mean"
    # evaluation
    eval_every: int = 20
    rank_every: int = 10  # effective rank of client updates every k rounds (0 = never)
    top_k: int = 10
    # reproducibility and bookkeeping
    seed: int = 0
    checkpoint_every: int = 50  # does not change the numbers: never in the cache key

    CHOICES = {"aggregation": AGGREGATIONS, "client_schedule": CLIENT_SCHEDULES}
    RANGES = {
        "rounds": (1, 10**7), "clients_per_round": (1, 10**7), "local_epochs": (1, 1000), "batch_size": (1, 1 << 20),
        "num_negatives": (0, 1000), "eval_every": (1, 10**7), "rank_every": (0, 10**7), "top_k": (1, 100),
        "seed": (0, 2**63 - 1), "checkpoint_every": (1, 10**7)}
    POSITIVE = ("lr",)
    NONNEGATIVE = ("weight_decay",)
    AT_MOST = {"lr": 1e4, "weight_decay": 1e4}

    @classmethod
    def unused(cls, c) -> tuple[str, ...]:
        return ("checkpoint_every",)
