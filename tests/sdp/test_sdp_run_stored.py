"""A solved config is stored once and read back with the same trace and factor (`sdp.run.solve_stored`)."""
import numpy as np

from labcore.sdp import config

from labcore.sdp.config import SdpConfig
from labcore.sdp.run import _folder, build_problem, solve, solve_stored


def test_a_stored_solve_reads_back_the_trace_and_factor_it_made():
    cfg = SdpConfig(graph="random", n=40, method="mixing++", max_iters=30, cert_every=5, seed=3)
    problem = build_problem(cfg)
    first = solve_stored(problem, cfg)
    assert (_folder(cfg) / "result.json").exists()
    again = solve_stored(problem, cfg)
    assert again.trace.equals(first.trace) and np.array_equal(again.V, first.V)
    fresh = solve(problem, cfg)  # the same numbers as an unstored solve, float for float
    assert np.array_equal(fresh.V, first.V)
    assert np.allclose(fresh.trace["primal"], first.trace["primal"], rtol=0, atol=0)


def test_a_new_code_version_does_not_read_the_solves_of_the_old(monkeypatch):
    cfg = SdpConfig(graph="random", n=30, method="mixing", max_iters=10, cert_every=5)
    solve_stored(build_problem(cfg), cfg)
    monkeypatch.setattr(config, "CODE_VERSION", config.CODE_VERSION + 1)
    assert not (_folder(cfg) / "result.json").exists()
