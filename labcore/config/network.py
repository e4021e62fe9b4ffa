"""The network and wall-clock model (CoLR section 5.2 (2), Wang et al. 2021 defaults), and the wireless channel of
the quantized messages."""
from __future__ import annotations

from dataclasses import dataclass

from ..typed_config import fail
from .group import ConfigGroup

COMP_TIME_MODES = ("calibrated", "measured")


@dataclass(frozen=True)
class NetworkConfig(ConfigGroup):
    bw_down: float = 0.75  # MB/s, MB = 2**20 bytes (matches the paper's Table 2)
    bw_up: float = 0.25
    r_comp: float = 7.0
    c_comp: float = 10.0
    bandwidth_tiers: tuple = ()  # ((share, down_factor, up_factor), ...): heterogeneous links
    comp_time: str = "calibrated"  # "measured" uses this machine's timings (not reproducible)
    sec_per_sample: float = 2e-6  # calibrated client simulation cost per local sample-epoch
    sec_per_value: float = 2e-9  # calibrated server cost per aggregated value
    # the wireless channel of the quantized messages (the wireless topic's Eq. 6): log2 of the number of levels K
    # a link carries error-free; quantized levels beyond K arrive with noise N(0, 1/(4K^2)). 0 = no limit.
    # It acts on quantized messages (up_bits / down_bits); a float32 link is not affected.
    up_link_budget: int = 0
    down_link_budget: int = 0

    CHOICES = {"comp_time": COMP_TIME_MODES}
    RANGES = {"up_link_budget": (0, 24), "down_link_budget": (0, 24)}
    POSITIVE = ("bw_down", "bw_up")
    NONNEGATIVE = ("r_comp", "c_comp", "sec_per_sample", "sec_per_value")
    # far beyond any run of the lab, low enough that the wall-clock model's products stay finite floats
    AT_MOST = {"bw_down": 1e9, "bw_up": 1e9, "r_comp": 1e9, "c_comp": 1e9, "sec_per_sample": 1.0,
                                "sec_per_value": 1.0}

    @classmethod
    def check_rules(cls, c) -> None:
        tiers = c.bandwidth_tiers
        if not isinstance(tiers, tuple):
            fail("bandwidth_tiers", tiers, "expected a tuple of (share, down_factor, up_factor)")
        for t in tiers:
            if not (isinstance(t, tuple) and len(t) == 3
                    and all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= 1e6 for x in t)):
                fail("bandwidth_tiers", tiers, "each tier is (share > 0, down_factor > 0, up_factor > 0), each at "
                                               "most 1e6, e.g. [[0.5, 1, 1], [0.5, 0.2, 0.2]]")
        if tiers and abs(sum(t[0] for t in tiers) - 1) > 1e-6:
            fail("bandwidth_tiers", tiers, "the shares must add up to 1")

    @classmethod
    def unused(cls, c) -> tuple[str, ...]:
        # a channel budget acts on quantized levels only: over a float32 link it cannot change the numbers
        return tuple(f"{d}_link_budget" for d in ("up", "down") if not getattr(c, f"{d}_bits"))
