"""One file per method; `make_method` picks one by the config's name."""
from ..config import METHODS, RunConfig
from .base import FedMF, RoundSetup, Wire
from .colr import CoLR, SCoLR
from .svd import SVDCompression
from .topk import TopKCompression

REGISTRY = {m.name: m for m in (FedMF, CoLR, SCoLR, SVDCompression, TopKCompression)}
assert tuple(REGISTRY) == METHODS


def make_method(cfg: RunConfig, n_items: int):
    return REGISTRY[cfg.method](cfg, n_items)


__all__ = ["FedMF", "CoLR", "SCoLR", "SVDCompression", "TopKCompression", "Wire", "RoundSetup", "make_method", "REGISTRY"]
