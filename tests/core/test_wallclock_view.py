"""The wall-clock model as a view: a run re-timed for other bandwidths and tiers equals the run trained with them."""
import numpy as np
import pytest

from labcore import RunConfig
from labcore.fed.engine import Simulation
from labcore.net.wallclock import VIEW_FIELDS, recompute, training_config

STRAGGLER = ((0.9, 1.0, 1.0), (0.1, 0.05, 0.05))


def _table(cfg, data):
    sim = Simulation(cfg, data)
    for _ in range(cfg.rounds):
        sim.step()
    return sim.result(True).table


@pytest.mark.parametrize("method", ["colr", "fedmf", "topk"])
def test_re_timing_a_run_equals_training_it_with_the_other_links(tiny, method):
    base = RunConfig(method=method, dim=8, rank=3, rounds=4, clients_per_round=10, eval_every=2, rank_every=0)
    other = base.replace(bw_up=0.02, bw_down=3.0, r_comp=3.0, c_comp=1.0, bandwidth_tiers=STRAGGLER)
    trained, wanted = _table(base, tiny), _table(other, tiny)
    view = recompute(trained, base, other, tiny.train_counts())
    for col in ("t_comm", "t_comp", "t_round", "wallclock"):
        np.testing.assert_allclose(view[col], wanted[col], rtol=1e-9, err_msg=col)
    assert view["wallclock"].iloc[-1] != pytest.approx(trained["wallclock"].iloc[-1])  # the clock did move
    # and nothing the training produced differs: that is why no retraining is needed
    for col in ("loss", "hr", "bytes_up", "bytes_down"):
        np.testing.assert_array_equal(trained[col].fillna(-1), wanted[col].fillna(-1))
    back = recompute(view, other, base, tiny.train_counts())  # and back again
    np.testing.assert_allclose(back["wallclock"], trained["wallclock"], rtol=1e-9)


def test_training_config_resets_only_the_wall_clock_fields_and_keeps_stored_keys():
    cfg = RunConfig(method="fedmf", bw_up=0.02, bandwidth_tiers=STRAGGLER, rank=3)
    base = training_config(cfg)
    assert base == RunConfig(method="fedmf", rank=3)
    assert base.key() == RunConfig(method="fedmf", rank=3).key()  # the cache key rules are untouched
    assert set(VIEW_FIELDS) <= set(RunConfig.__dataclass_fields__)


def test_re_timing_refuses_configs_that_train_differently(tiny):
    base = RunConfig(dim=8, rounds=1, clients_per_round=10, rank_every=0)
    with pytest.raises(ValueError, match="wall-clock"):
        recompute(_table(base, tiny), base, base.replace(rank=2), tiny.train_counts())


def test_re_timing_accepts_fields_the_cache_key_ignores(tiny):
    # a channel budget over an unquantized link trains the same run (same key): the hub hands back the run
    # stored with budget 0, and re-timing it for budget 3 plus other links must work
    base = RunConfig(dim=8, rounds=1, clients_per_round=10, rank_every=0)
    view = base.replace(down_link_budget=3, bw_up=3.0, bandwidth_tiers=STRAGGLER)
    assert training_config(view).key() == base.key()
    table = recompute(_table(base, tiny), base, view, tiny.train_counts())
    assert len(table) == 1
    with pytest.raises(ValueError, match="wall-clock"):  # with quantized downloads the budget does train differently
        q = base.replace(down_bits=4)
        recompute(_table(q, tiny), q, q.replace(down_link_budget=3), tiny.train_counts())
