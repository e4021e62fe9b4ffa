"""The wireless link's budget rule (Eq. 6 of the wireless topic's report), on its own so that the run configuration
can check a link without loading the channel (torch, the quantizer): a link carries K = 2^budget_bits levels
error-free, and a message of more levels arrives with noise."""
from __future__ import annotations


def exceeds(k: int, budget_bits: int) -> bool:
    """True when k levels exceed the link's budget K (the noisy branch of Eq. 6); budget 0 = no limit."""
    return budget_bits != 0 and k > 2**budget_bits
