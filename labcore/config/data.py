"""The data a run trains on."""
from __future__ import annotations

from dataclasses import dataclass

from ..typed_config import fail
from .group import ConfigGroup

DATASETS = ("synthetic", "ml-1m", "ml-100k", "pinterest")
SYNTHETIC_SIZES = ("tiny", "small", "medium", "ml1m")


@dataclass(frozen=True)
class DataConfig(ConfigGroup):
    dataset: str = "synthetic"
    synthetic_size: str = "small"
    data_seed: int = 0
    data_skew: float = 1.0  # synthetic only: spread of the clients' data sizes (0 = equal, larger = a few heavy)

    CHOICES = {"dataset": DATASETS, "synthetic_size": SYNTHETIC_SIZES}
    # beyond a skew of ~2 the per-size cap and the 20-interaction floor lower the Gini again
    RANGES = {"data_seed": (0, 2**63 - 1), "data_skew": (0.0, 2.0)}

    @classmethod
    def check_rules(cls, c) -> None:
        if c.dataset != "synthetic" and c.data_skew != 1.0:
            fail("data_skew", c.data_skew, f"data_skew applies to synthetic data only; {c.dataset} has its own, "
                                            "fixed per-client data sizes (use data_skew=1.0 or dataset='synthetic')")
