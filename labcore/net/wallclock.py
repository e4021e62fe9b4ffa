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
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported where a table is made: an engine process never needs it (93 MB)
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
    import pandas as pd

    rows = []
    for i, res in enumerate(results):
        t = res.table
        rows.append({"method": labels[i] if labels else res.config.describe(),
                     "communication (min)": t["t_comm"].sum() / 60, "computation (min)": t["t_comp"].sum() / 60,
                     "total (min)": t["t_round"].sum() / 60})
    return pd.DataFrame(rows)


# --- the wall-clock model as a view over a finished (or running) run ----------------------------------------

# Config fields that only move the simulated clock: training never reads them (device tiers are drawn from
# their own random stream), so a run's HR, loss and bytes are the same for every value of them.
VIEW_FIELDS = ("bw_down", "bw_up", "r_comp", "c_comp", "bandwidth_tiers")
TIME_COLUMNS = ("t_comm", "t_comp", "t_round", "wallclock")


def model_of(cfg) -> RoundTimeModel:
    return RoundTimeModel(cfg.bw_down, cfg.bw_up, cfg.r_comp, cfg.c_comp, cfg.bandwidth_tiers)


def training_config(cfg):
    """`cfg` with the wall-clock knobs at their defaults: the run that has to be trained for any of them."""
    from dataclasses import fields

    defaults = {f.name: f.default for f in fields(cfg) if f.name in VIEW_FIELDS}
    return cfg.replace(**defaults)


def same_training(a, b) -> bool:
    """Do two configs train the same run (they differ at most in wall-clock knobs)?

    Compared by cache key, as the hub and the disk cache find runs: fields that cannot change the numbers
    (a channel budget over an unquantized link, unused encryption settings, bookkeeping) may differ.
    """
    return training_config(a).key() == training_config(b).key()


def _tiers(cfg, n_users: int) -> np.ndarray:
    from ..fed.sampling import SETUP, round_rng

    return model_of(cfg).assign_tiers(n_users, round_rng(cfg.seed, SETUP, 1))  # as the engine draws them


def recompute(table: pd.DataFrame, trained, view, train_counts: np.ndarray) -> pd.DataFrame:
    """The per-round table of the run `trained` as the wall-clock model of `view` times it.

    Only t_comm, t_comp, t_round and wallclock change. Per round, the cohort is drawn again (the engine's
    schedule: no training), each client's computation rebuilt from its samples (calibrated constants, or
    the measured sec_local shared in proportion to work), the server time taken from the stored round
    (what is left of t_round after the slowest client under `trained`), and the bytes from the measured
    ledger columns. Exact when every client of a round uploads the same number of bytes (FedMF, CoLR, SVD,
    Top-K, quantized or not); under SCoLR and ciphertexts each client is given the round's mean upload.
    `train_counts`: training interactions per user (InteractionData.train_counts()).
    """
    from ..fed.sampling import round_clients

    if not len(table):
        return table.copy()
    if not same_training(trained, view):
        raise ValueError("recompute: the two configs differ in more than the wall-clock fields "
                         f"({', '.join(VIEW_FIELDS)})")
    c = trained
    n_users = len(train_counts)
    old, new = model_of(trained), model_of(view)
    tier_old, tier_new = _tiers(trained, n_users), _tiers(view, n_users)
    work = (1 + c.num_negatives) * c.local_epochs
    out = table.copy()
    cols = {k: np.empty(len(table)) for k in ("t_comm", "t_comp", "t_round")}
    he = table["he_client_s"].to_numpy(float) if "he_client_s" in table else np.full(len(table), np.nan)
    for i, (t, up_total, down, sec_local) in enumerate(zip(table["round"].astype(int), table["bytes_up"],
                                                            table["bytes_down_client"], table["sec_local"])):
        clients = round_clients(c.client_schedule, n_users, c.clients_per_round, c.seed, int(t))
        samples = train_counts[clients] * work
        if c.comp_time == "measured":
            t_sim = float(sec_local) * samples / max(samples.sum(), 1)
        else:
            t_sim = c.sec_per_sample * samples
        if not np.isnan(he[i]):
            t_sim = t_sim + he[i]
        up = np.full(len(clients), float(up_total) / len(clients))
        down_b = np.full(len(clients), float(down))
        before = old.round_time(down_b, up, t_sim, tier_old[clients], 0.0)
        t_server = max(float(table["t_round"].iloc[i]) - before["t_round"], 0.0)
        r = new.round_time(down_b, up, t_sim, tier_new[clients], t_server)
        for k in cols:
            cols[k][i] = r[k]
    for k, v in cols.items():
        out[k] = v
    out["wallclock"] = np.cumsum(cols["t_round"])
    return out
