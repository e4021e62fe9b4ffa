"""Who takes part, at what size, and the memory a device needs (the low-rank baseline's math: `fair.fedhm`).

Methods (all run by `labcore.fair.engine`):

* ``fedavg``   every device holds the full model (the upper reference).
* ``fair``     FAIR-HET: every device trains at its own capacity in a hashed subspace.
* ``fair-hom`` "model loss": every device at the scheme's smallest capacity (largest ratio).
* ``full-trn`` "data loss": only the devices that hold the full model (1x) take part.
* ``fedhm``    FedHM / HeteroFL-style low-rank tables: a device at ratio r holds
               U (rows x k) and V (k x d) with k = d / r, from the truncated SVD of
               the server table; the server averages the products U V. A rank-k
               factorization stores k (rows + d) values, so it cannot go beyond a
               compression of d (k >= 2 here; N/A otherwise, as in the paper).
* ``fixed``    traditional FL at one model size r (`model_ratio`): the devices that can hold
               it (capacity ratio <= r) take part, all at r. FULL-TRN is r = 1, FAIR-HOM
               is r = the smallest capacity; between them lies the trade-off of Fig. 1.
* ``consistent=False`` (with fair or fair-hom): the ablation of section 6.4, every
               device draws its own hash, so the subspaces are not nested.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from .fedhm import fedhm_rank, mlp_fedhm_ranks
from .model import MLPSpec

if TYPE_CHECKING:
    from .config import FairConfig


def device_ratios(cfg: FairConfig, n_users: int) -> np.ndarray:
    """Each device's compression ratio under the capacity scheme (1 = holds the full model)."""
    ratios = np.asarray(cfg.ratios(), dtype=np.int64)
    if cfg.assign == "random":  # the paper's Table 3: a seeded random share of devices at the first tier
        k = max(1, int(round(cfg.full_fraction * n_users)))
        chosen = np.random.default_rng(cfg.assign_seed).choice(n_users, size=k, replace=False)
        out = np.full(n_users, ratios[1], np.int64)
        out[chosen] = ratios[0]
        return out
    group = (np.arange(n_users) * len(ratios)) // n_users  # first 1/L of users by id at ratios[0], ...
    return ratios[group]


def eligible_users(cfg: FairConfig, ratios: np.ndarray) -> np.ndarray:
    if cfg.method == "full-trn":
        return np.nonzero(ratios == 1)[0]
    if cfg.method == "fixed":
        return np.nonzero(ratios <= cfg.model_ratio)[0]
    return np.arange(ratios.size)


def training_ratio(cfg: FairConfig, device_ratio: np.ndarray) -> np.ndarray:
    """The ratio a device trains at under the method."""
    if cfg.method in ("fedavg", "full-trn"):
        return np.ones_like(device_ratio)
    if cfg.method == "fair-hom":
        return np.full_like(device_ratio, max(cfg.ratios()))
    if cfg.method == "fixed":
        return np.full_like(device_ratio, cfg.model_ratio)
    return device_ratio


# --- memory a device needs ------------------------------------------------------------
def device_memory(cfg: FairConfig, table_rows: int, n_tables: int, dense_values: int, user_values: int,
                  dims: dict[int, int]) -> list[dict]:
    """Model values a device stores, per tier of the scheme (float32 bytes)."""
    rows = []
    full_table = table_rows * cfg.dim if cfg.task != "mlp" else table_rows
    for ratio in sorted(set(cfg.ratios())):
        r_train = int(training_ratio(cfg, np.array([ratio]))[0])
        if (cfg.method == "full-trn" and ratio != 1) or (cfg.method == "fixed" and ratio > cfg.model_ratio):
            rows.append({"tier": f"{ratio}x", "takes_part": False, "values": 0, "bytes": 0, "ratio_actual": np.nan})
            continue
        if cfg.method == "fedhm" and r_train > 1 and cfg.task != "mlp":
            k = fedhm_rank(cfg.dim, r_train)
            table = k * (table_rows + cfg.dim)
        elif cfg.method == "fedhm" and r_train > 1:
            shapes = MLPSpec(64, cfg.hidden, 10).shapes()
            ks = mlp_fedhm_ranks(shapes, r_train)
            table = sum((ks[n] * (s[0] + s[1]) if ks[n] < min(s) else s[0] * s[1]) if len(s) == 2 else s[0]
                        for n, s in shapes.items())
        else:
            table = dims[r_train]
        values = n_tables * table + dense_values + user_values
        full = n_tables * full_table + dense_values + user_values
        rows.append({"tier": f"{ratio}x", "takes_part": True, "train_ratio": r_train, "table_values": table,
                     "values": values, "bytes": 4 * values, "ratio_actual": full / values})
    return rows
