"""The Explorer's instant payload sizes equal what the ledger measures in a real round."""
import itertools

import numpy as np
import pytest

from conftest import make_tiny
from labcore import RunConfig
from labcore.app.analytic import payload_summary, payload_table
from labcore.fed.engine import Simulation

VARIANTS = [{}, {"compress_down": False, "b_as_seed": False, "aggregation": "weighted"}]


def _measured(sim, direction):
    led = sim.ledger.frame()
    led = led[led.direction == direction]
    return (dict(zip(led.part, led.bytes / led.messages)), dict(zip(led.part, led.bits / led.messages)))


@pytest.mark.parametrize("method, up_bits, down_bits, variant",
                         list(itertools.product(["fedmf", "colr", "svd", "topk"], [0, 4], [0, 3], range(2))))
def test_payload_table_matches_the_ledger_of_a_real_round(tiny, method, up_bits, down_bits, variant):
    cfg = RunConfig(dataset="synthetic", method=method, dim=8, rank=3, up_bits=up_bits, down_bits=down_bits,
                    rounds=1, clients_per_round=10, topk_ratio=0.1, quant_bucket=16, **VARIANTS[variant])
    sim = Simulation(cfg, tiny)
    sim.step()
    t = payload_table(cfg, tiny.n_items)
    for direction in ("up", "down"):
        mbytes, mbits = _measured(sim, direction)
        a = t[t.direction == direction]
        assert dict(zip(a.part, a.bytes)) == pytest.approx(mbytes), direction
        assert dict(zip(a.part, a.bits)) == pytest.approx(mbits), direction


def test_scolr_sizes_are_the_expectation_over_local_ranks():
    data = make_tiny(n_users=200, n_items=60)
    cfg = RunConfig(method="scolr", dim=8, rank=6, scolr_min_rank=2, rounds=8, clients_per_round=100)
    sim = Simulation(cfg, data)
    for _ in range(cfg.rounds):
        sim.step()
    t = payload_table(cfg, data.n_items)
    mbytes, _ = _measured(sim, "up")
    expected = dict(zip(t[t.direction == "up"].part, t[t.direction == "up"].bytes))
    assert expected["A"] == pytest.approx(4 * 60 * 4 + 1 + 1 + 11 + 4)  # mean r_u = 4
    assert mbytes["A"] == pytest.approx(expected["A"], rel=0.05)


def test_summary_compares_with_fedmf():
    # its speed (no training: milliseconds) is measured by benchmarks/app_latency.py, not asserted here
    cfg = RunConfig(method="colr", dim=64, rank=4)
    s = payload_summary(cfg, 3706)
    assert s["up_ratio"] == pytest.approx(4 / 64, rel=0.05)
    assert s["round_total"] == cfg.clients_per_round * (s["up_client"] + s["down_client"])
    assert np.isfinite(list(s.values())).all()
