"""The compression method: what a client sends of its item-table update, and how it is quantized."""
from __future__ import annotations

from dataclasses import dataclass

from ..typed_config import fail
from .group import ConfigGroup

METHODS = ("fedmf", "colr", "scolr", "svd", "topk")
B_INITS = ("normal", "orthonormal", "sphere", "sphere_scaled")


@dataclass(frozen=True)
class MethodConfig(ConfigGroup):
    method: str = "colr"
    dim: int = 64  # embedding size d
    rank: int = 4  # CoLR / SVD rank r; SCoLR global rank r_g
    scolr_min_rank: int = 1  # SCoLR draws r_u uniformly in [scolr_min_rank, rank]
    topk_ratio: float = 0.0625  # Top-K keeps this fraction of the update's values
    b_init: str = "normal"  # distribution of CoLR's B (Fig. 5)
    b_as_seed: bool = True  # send B as a seed instead of a d x r matrix
    lowrank_lr_scale: bool = True  # scale A's learning rate by sqrt(r/d) (CoLR Appendix A)
    compress_down: bool = True  # SVD / Top-K also compress the aggregated downlink
    up_bits: int = 0  # stochastic quantization of the uplink; 0 = off (float32)
    down_bits: int = 0
    quant_bucket: int = 512  # values per norm scale in the quantizer

    CHOICES = {"method": METHODS, "b_init": B_INITS}
    RANGES = {"dim": (1, 4096), "rank": (1, 4096), "scolr_min_rank": (1, 4096), "up_bits": (0, 32),
                               "down_bits": (0, 32), "quant_bucket": (1, 1 << 24)}

    @classmethod
    def check_rules(cls, c) -> None:
        if not 0 < c.topk_ratio <= 1:
            fail("topk_ratio", c.topk_ratio, "allowed range is (0, 1]")
        if c.method in ("colr", "scolr", "svd") and c.rank > c.dim:
            fail("rank", c.rank, f"must be <= dim ({c.dim}): a rank-r update of a d-dimensional embedding has r <= d")
        if c.method == "scolr" and c.scolr_min_rank > c.rank:
            fail("scolr_min_rank", c.scolr_min_rank, f"must be <= rank ({c.rank})")
