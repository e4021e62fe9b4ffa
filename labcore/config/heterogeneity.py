"""Systems heterogeneity: clients that do part of their work, or drop out of the round."""
from __future__ import annotations

from dataclasses import dataclass

from .group import ConfigGroup

STRAGGLER_POLICIES = ("auto", "drop", "keep")  # labcore.fed.stragglers


@dataclass(frozen=True)
class HeterogeneityConfig(ConfigGroup):
    # (labcore.fed.stragglers) this share of each cohort takes a uniform 1..K-1 of its K steps
    stragglers: float = 0.0
    straggler_policy: str = "auto"  # auto (plain FedAvg drops them, FedProx / SCAFFOLD / q-FFL keep them), drop, keep
    # (labcore.fed.dropout) each sampled client's chance to drop out after the downlink, before its upload
    dropout: float = 0.0

    CHOICES = {"straggler_policy": STRAGGLER_POLICIES}
    RANGES = {"stragglers": (0.0, 1.0), "dropout": (0.0, 0.99)}

    @classmethod
    def unused(cls, c) -> tuple[str, ...]:
        return ("straggler_policy",) if not c.stragglers else ()  # no straggler: no policy applies
