"""Which compiled kernel trains a run: one rule, read by the cache key (`config.RunConfig.small_rank_kernel`) and by
the trainer (`local_train.train_cohort`), so the two cannot disagree.

The kernels differ in their last bits (summation order; the small-rank kernel's exp is a polynomial), so a run's
kernel is part of what its cache key must tell apart. Nothing here imports numba or the engine: the config reads
it at import.
"""
from __future__ import annotations

# CoLR / SCoLR at rank <= SMALL_RANK without FedProx train in the kernel compiled for their rank (`fused_lowrank`).
# Above rank 4 its fully unrolled rank-r loops no longer pay (CoLR@8: 4.6 s against 2.7 s for 100 paper rounds).
SMALL_RANK = 4
KERNELS = ("full", "full_scaffold", "lowrank", "lowrank_small")


def choose_kernel(*, low_rank: bool, rank: int, prox_mu: float = 0.0, scaffold: bool = False) -> str:
    """The kernel of a run's local training, one of KERNELS.

    low_rank: the clients train A of q = Q + B A (CoLR, SCoLR), else the full item table's update (FedMF, SVD,
    Top-K); rank: the width of B; prox_mu: FedProx's pull (its kernels apply it; the small-rank one does not);
    scaffold: SCAFFOLD's corrected steps (full table only)."""
    if low_rank:
        return "lowrank_small" if rank <= SMALL_RANK and not prox_mu else "lowrank"
    return "full_scaffold" if scaffold else "full"
