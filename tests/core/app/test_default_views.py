"""What each page's default view claims, checked on that view's own config (issue: defaults that show the point).

The Compare page opens on CoLR's claim: at equal bytes, CoLR@r scores above FedMF with d = r, for every r.
The Explorer's "Start here" asks the student to watch the share of communication in the round time while changing
the method and the uplink bandwidth: at the page's defaults that share must be large enough to see move."""
import pytest

from labcore.app import sweeps
from labcore.app.state import COMPARE, EXPLORER
from labcore.fed.engine import run


def _comm_share(cfg) -> float:
    t = run(cfg, use_cache=False, progress=False).table
    return float(t["t_comm"].sum() / t["t_round"].sum())


@pytest.fixture(scope="module")
def shares():
    base = EXPLORER.base
    return {"colr": _comm_share(base), "fedmf": _comm_share(base.replace(method="fedmf")),
            "colr, uplink 0.01 MB/s": _comm_share(base.replace(bw_up=0.01))}


def test_the_explorers_default_shows_communication_in_the_round_time(shares):
    """The numbers "Start here" gives (about 1 % for CoLR@4, about 16 % for FedMF; the clock is the calibrated
    model, the same on every machine), and the uplink slider's low end making communication matter again."""
    from labcore.app.pages import explorer
    text = open(explorer.__file__).read()
    assert "about 1 % of a CoLR@4" in text and "about 16 % of a FedMF" in text
    assert EXPLORER.base.method == "colr" and EXPLORER.base.rank == 4
    assert 0.005 <= shares["colr"] < 0.02, shares
    assert 0.14 <= shares["fedmf"] < 0.18, shares
    assert shares["colr, uplink 0.01 MB/s"] >= 0.10, shares


def test_the_compares_default_shows_colr_above_fedmf_at_equal_bytes_for_every_rank():
    plan, skipped = sweeps.sweep(COMPARE.base, "rank", COMPARE.option_defaults()["values"])
    assert not skipped
    tables = {p.label: run(p.cfg, use_cache=False, progress=False).table for p in plan
              if p.label != f"FedMF d={COMPARE.base.dim}"}  # the full-size baseline is not a pair
    d = COMPARE.base.dim
    for r in COMPARE.option_defaults()["values"]:
        colr, fedmf = tables[f"CoLR@{r} (d={d})"], tables[f"FedMF d={r}"]
        assert colr["bytes_up"].sum() == pytest.approx(fedmf["bytes_up"].sum(), rel=0.01)  # equal bytes
        assert colr["hr"].iloc[-1] > fedmf["hr"].iloc[-1], (r, colr["hr"].iloc[-1], fedmf["hr"].iloc[-1])
