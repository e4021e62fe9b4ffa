"""The round-time model of CoLR section 5.2 (2), after Wang et al. (2021).

T_round = S_down/B_down + S_up/B_up + max_j (R_comp T_sim_j + C_comp) + T_server

With heterogeneous links (bandwidth tiers) every sampled client has its own
B_down, B_up and the slowest client sets the round:
T_round = max_j (S_down/B_down_j + S_up_j/B_up_j + R_comp T_sim_j + C_comp) + T_server.
We report t_comm and t_comp of that slowest client (plus T_server in t_comp),
so t_round = t_comm + t_comp. MB = 2**20 bytes, which reproduces the paper's
Table 2 communication column.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

MB = 2**20


@dataclass(frozen=True)
class RoundTimeModel:
    bw_down: float = 0.75  # MB/s
    bw_up: float = 0.25
    r_comp: float = 7.0
    c_comp: float = 10.0
    tiers: tuple = ()  # ((share, down_factor, up_factor), ...)

    def assign_tiers(self, n_users: int, rng: np.random.Generator) -> np.ndarray:
        """A fixed tier per user (device), drawn once per run."""
        if not self.tiers:
            return np.zeros(n_users, dtype=np.int64)
        shares = np.array([t[0] for t in self.tiers], dtype=float)
        return rng.choice(len(self.tiers), size=n_users, p=shares / shares.sum())

    def round_time(self, down_bytes: np.ndarray, up_bytes: np.ndarray, t_sim: np.ndarray, tier: np.ndarray,
                   t_server: float) -> dict[str, float]:
        f_down = np.array([t[1] for t in self.tiers])[tier] if self.tiers else np.ones(len(up_bytes))
        f_up = np.array([t[2] for t in self.tiers])[tier] if self.tiers else np.ones(len(up_bytes))
        comm = down_bytes / MB / (self.bw_down * f_down) + up_bytes / MB / (self.bw_up * f_up)
        comp = self.r_comp * t_sim + self.c_comp
        j = int(np.argmax(comm + comp))
        return {"t_comm": float(comm[j]), "t_comp": float(comp[j] + t_server),
                "t_round": float(comm[j] + comp[j] + t_server)}


def table2(results, labels=None) -> pd.DataFrame:
    """CoLR Table 2's form: communication, computation and total minutes per run."""
    rows = []
    for i, res in enumerate(results):
        t = res.table
        rows.append({"method": labels[i] if labels else res.config.describe(),
                     "communication (min)": t["t_comm"].sum() / 60, "computation (min)": t["t_comp"].sum() / 60,
                     "total (min)": t["t_round"].sum() / 60})
    return pd.DataFrame(rows)
