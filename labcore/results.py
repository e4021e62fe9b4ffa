"""A run's result: the per-round table (one row per round) and the payload ledger."""
from __future__ import annotations

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

KB, MB = 2**10, 2**20  # binary, as the app shows bytes (labcore.units)

# Result.ledger_by_round's columns: the names the run table's CSV gives bytes (labcore/app/downloads.py) and the
# words the Privacy page uses for sigma and epsilon
LEDGER_VIEW = {"round": "round", "up": "upload, all clients (KB)", "down": "download, all clients (KB)",
               "cum": "cumulative traffic (MB)", "dp_sigma": "noise multiplier sigma", "epsilon": "epsilon spent"}


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

    def ledger_by_round(self) -> pd.DataFrame:
        """The ledger summed over message parts, one row per round: all clients' upload and download (KB) and the
        traffic so far (MB); with DP, the round's noise multiplier and the accountant's epsilon after the round
        (from the run table), so the privacy spent reads next to the bytes sent. Without DP there is no epsilon
        column. Rounds are the run table's (counted from 0); a round the ledger has no row for sent 0 bytes."""
        import pandas as pd

        sums = self.ledger.groupby(["round", "direction"])["bytes"].sum().unstack("direction")
        rounds = sorted({int(r) for r in sums.index} | {int(r) for r in self.table.get("round", ())})
        sums = sums.reindex(index=rounds, columns=["up", "down"], fill_value=0).fillna(0)
        up, down = sums["up"].to_numpy(), sums["down"].to_numpy()
        out = pd.DataFrame({LEDGER_VIEW["round"]: rounds, LEDGER_VIEW["up"]: up / KB, LEDGER_VIEW["down"]: down / KB,
                            LEDGER_VIEW["cum"]: (up + down).cumsum() / MB})
        if self.config.dp_mode != "none" and "epsilon" in self.table:
            t = self.table.set_index("round").reindex(rounds)
            out[LEDGER_VIEW["dp_sigma"]] = t["dp_sigma"].to_numpy()
            out[LEDGER_VIEW["epsilon"]] = t["epsilon"].to_numpy()
        return out

    # --- on disk (labcore.runner.store) ------------------------------------------------------------------
    TABLES = ("table", "ledger")

    def save(self, folder: Path, run_timing: dict | None = None) -> None:
        from .runner.store import save_run

        save_run(folder, {"table": self.table, "ledger": self.ledger},
                 {"config": self.config.to_dict(), "notes": self.notes, "complete": self.complete}, run_timing)

    @staticmethod
    def load(folder: Path) -> "Result":
        """The stored result, after checking it against its integrity record (`DamagedResult` otherwise)."""
        from .runner.store import load_run

        tables, meta = load_run(folder, Result.TABLES)
        return Result(from_dict(meta["config"]), tables["table"], tables["ledger"], meta.get("notes", ""),
                      meta.get("complete", True), cached=True)
