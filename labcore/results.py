"""A run's result: the per-round table (one row per round) and the payload ledger."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .config import RunConfig, from_dict

if TYPE_CHECKING:  # pandas is imported where a table is read or made: not while a run trains (93 MB resident)
    import pandas as pd

ROUND_COLUMNS = ("round", "loss", "hr", "ndcg", "bytes_up", "bytes_down", "bytes_up_client", "bytes_down_client",
                 "cum_bytes", "t_comm", "t_comp", "t_round", "wallclock", "n90_mean", "n90_std", "n99_mean",
                 "n99_std", "erank_mean", "sec_local",
                 # effective rank of the round's aggregated update (the server's aggregate), on rank_every rounds
                 "agg_n90", "agg_n99", "agg_erank",
                 # encryption (NaN without): HE compute per client and at the server (s, measured; scaled from
                 # the he_real_clients protected for real when he_extrapolated), and the real partial sum's error
                 "he_client_s", "he_server_s", "he_extrapolated", "he_check_err",
                 # on evaluation rounds: every user's mean BCE over its training positives and evaluation negatives
                 # at the global model (its own user vector): mean, spread and the worst tenth (q-FFL's fairness)
                 "client_loss_mean", "client_loss_std", "client_loss_worst10",
                 # with dropout: sampled clients that left before uploading (NaN without dropout)
                 "clients_dropped",
                 # with attack: malicious clients in the round; on evaluation rounds the share of users with the
                 # target item in their top 10 (NaN without attack)
                 "attackers", "backdoor_success",
                 # Ditto: HR@10 / NDCG@10 with every user's personal model (evaluation rounds; NaN without)
                 "hr_personal", "ndcg_personal",
                 # differential privacy (labcore.privacy.dp): the noise multiplier the round's sum carried and
                 # the accountant's epsilon after the round (NaN without)
                 "dp_sigma", "epsilon")


@dataclass(eq=False)
class Result:
    config: RunConfig
    table: pd.DataFrame  # ROUND_COLUMNS; hr/ndcg are NaN on rounds without evaluation
    ledger: pd.DataFrame  # Ledger.COLUMNS
    notes: str = ""  # how the dataset was split (shown next to every figure)
    complete: bool = True
    cached: bool = False

    @property
    def final(self) -> dict[str, float]:
        ev = self.table.dropna(subset=["hr"])
        last = ev.iloc[-1] if len(ev) else None
        return {"hr": float(last["hr"]) if last is not None else float("nan"),
                "ndcg": float(last["ndcg"]) if last is not None else float("nan"),
                "bytes_up": int(self.table["bytes_up"].sum()), "bytes_down": int(self.table["bytes_down"].sum()),
                "wallclock_min": float(self.table["t_round"].sum() / 60), "rounds": int(len(self.table))}

    def part_bytes(self) -> pd.DataFrame:
        """Total measured bytes per (direction, part), with the theoretical bytes beside them."""
        g = self.ledger.groupby(["direction", "part", "kind"], as_index=False)[["bytes", "bits"]].sum()
        g["theoretical_bytes"] = g["bits"] / 8
        return g

    # --- on disk ----------------------------------------------------------
    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.table.to_csv(folder / "table.csv", index=False)
        self.ledger.to_csv(folder / "ledger.csv", index=False)
        meta = {"config": self.config.to_dict(), "notes": self.notes, "complete": self.complete}
        (folder / "result.json").write_text(json.dumps(meta, indent=1, default=list))

    @staticmethod
    def load(folder: Path) -> "Result":
        import pandas as pd

        meta = json.loads((folder / "result.json").read_text())
        return Result(from_dict(meta["config"]), pd.read_csv(folder / "table.csv"), pd.read_csv(folder / "ledger.csv"),
                      meta.get("notes", ""), meta.get("complete", True), cached=True)
