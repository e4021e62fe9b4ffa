"""Lab 04's wall-clock panel at smoke size: time is not the round count in disguise. On the lab's base run a few slow
devices (2 % with a twentieth of the uplink) stretch FedMF's wall-clock by more than half, and CoLR@4, with far
fewer bytes to push through them, reaches HR@10 0.4 sooner on the clock than FedMF does, though later in rounds."""
import numpy as np

from labcore.colr import exercises as ex
from labcore.fed.engine import run

TIERS = ((0.98, 1.0, 1.0), (0.02, 0.1, 0.05))  # the notebook's


def _first(table, column: str, hr: float) -> float:
    ev = table.dropna(subset=["hr"])
    return float(ev.loc[ev["hr"] >= hr, column].iloc[0]) if (ev["hr"] >= hr).any() else np.inf


def test_slow_links_show_on_the_clock_and_colr_gets_there_first():
    base = ex.wallclock_config(False, method="fedmf")
    fedmf, fedmf_tiers, colr_tiers = (run(c, use_cache=False, progress=False).table for c in (
        base, base.replace(bandwidth_tiers=TIERS), base.replace(method="colr", rank=4, bandwidth_tiers=TIERS)))
    assert fedmf["t_comm"].sum() / fedmf["t_round"].sum() > 0.1  # communication is a visible part of the round
    assert fedmf_tiers["wallclock"].iloc[-1] > 1.5 * fedmf["wallclock"].iloc[-1]
    assert _first(colr_tiers, "round", 0.4) > _first(fedmf_tiers, "round", 0.4)
    assert _first(colr_tiers, "wallclock", 0.4) < _first(fedmf_tiers, "wallclock", 0.4)
