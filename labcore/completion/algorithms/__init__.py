"""One file per matrix-completion algorithm, all behind `base.Algorithm` (init, step, factors).

    from labcore.completion.algorithms import make
    alg = make("asd", problem, rank=2)
"""
from __future__ import annotations

from ..config import ALGORITHMS
from .asd import ASD
from .base import Algorithm
from .cgiht import CGIHT
from .fgd import FGD
from .irls import MatrixIRLS
from .lmafit import LMaFit
from .lrgeomcg import LRGeomCG
from .niht import NIHT
from .scaled_asd import ScaledASD
from .scaled_gd import ScaledGD
from .soft_impute import SoftImpute

REGISTRY: dict[str, type[Algorithm]] = {c.name: c for c in (ASD, ScaledASD, LMaFit, NIHT, CGIHT, FGD, ScaledGD,
                                                             LRGeomCG, MatrixIRLS, SoftImpute)}
assert tuple(REGISTRY) == ALGORITHMS


def make(name: str, problem, rank: int, seed: int = 0, init: str = "spectral") -> Algorithm:
    if name not in REGISTRY:
        raise ValueError(f"algorithm={name!r} is invalid: allowed values are {', '.join(REGISTRY)}")
    return REGISTRY[name](problem, rank, seed=seed, init=init)


__all__ = ["Algorithm", "REGISTRY", "make"]
