"""Stragglers on the core engine (FedProx's systems heterogeneity): who straggles and how many steps it takes, the
plan cut short, and what FedAvg (drops them) and FedProx (keeps their partial work) send and learn."""
import numpy as np
import pytest
import torch

from labcore.config import ConfigError, RunConfig
from labcore.fed import sampling as S
from labcore.fed import stragglers
from labcore.fed.engine import Simulation, run
from labcore.fed.local_train import train_cohort
from oracles.fed_loop import train_clients_loop

FAST = dict(method="fedmf", clients_per_round=10, local_epochs=2, batch_size=16, dim=8, eval_every=5, rounds=6,
            rank_every=0)


def test_draws_a_share_of_the_cohort_and_fewer_steps_for_each():
    K = np.array([1, 2, 5, 8, 8, 3, 9, 4, 6, 7])
    slow, steps = stragglers.draw(K, 0.5, seed=3, round_idx=7)
    assert slow.sum() == 5 and np.array_equal(steps[~slow], K[~slow])
    assert np.all((steps[slow] >= 1) & ((steps[slow] < K[slow]) | (K[slow] == 1)))  # 1..K-1; K = 1 stays 1
    again = stragglers.draw(K, 0.5, seed=3, round_idx=7)
    assert np.array_equal(again[0], slow) and np.array_equal(again[1], steps)  # same seed, same draw
    assert not stragglers.draw(K, 0.0, 3, 7)[0].any()
    assert stragglers.draw(K, 1.0, 3, 7)[0].all() and stragglers.draw(K, 1.0, 3, 7, keep_one=True)[0].sum() == 9


def test_a_cut_plan_keeps_each_clients_first_steps_and_only_their_samples(tiny):
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(8), 4, 2, 16, 0, 0)
    steps = np.maximum(plan.n_steps // 2, 1)
    cut = stragglers.truncate(plan, steps)
    assert np.array_equal(cut.n_steps, steps)
    for m in range(8):
        for t in range(int(steps[m])):
            a, b = plan.steps[t, m], cut.steps[t, m]
            assert np.array_equal(plan.sample_item[a[a >= 0]], cut.sample_item[b[b >= 0]])
            assert np.array_equal(plan.sample_label[a[a >= 0]], cut.sample_label[b[b >= 0]])
        used = np.concatenate([plan.steps[t, m][plan.steps[t, m] >= 0] for t in range(int(steps[m]))])
        assert sorted(cut.sample_item[cut.sample_client == m]) == sorted(plan.sample_item[used])
    assert stragglers.truncate(plan, plan.n_steps) is plan
    with pytest.raises(ValueError, match="between 1 and"):
        stragglers.truncate(plan, plan.n_steps + 1)


def test_a_straggler_trains_its_first_steps_in_the_compiled_trainer_as_in_the_loop(tiny):
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(6), 4, 2, 16, 0, 0)
    cut = stragglers.truncate(plan, np.maximum(plan.n_steps - 2, 1))
    g = torch.Generator().manual_seed(0)
    Q, P = torch.randn(tiny.n_items, 6, generator=g) * 0.3, torch.randn(6, 6, generator=g) * 0.3
    fast, loop = train_cohort(Q, P, cut, 0.2, 1e-3, prox_mu=0.1), train_clients_loop(Q, P, cut, 0.2, 1e-3, prox_mu=0.1)
    assert torch.allclose(fast.dense_update(), loop.update, rtol=0, atol=1e-6)
    assert torch.equal(fast.touched_dense(), loop.touched)  # only the items of the steps it took
    assert fast.n_samples == loop.n_samples < int((plan.slots >= 0).sum())


def test_fedavg_drops_stragglers_and_fedprox_keeps_their_partial_work(tiny):
    def uploads(cfg):
        sim = Simulation(cfg, tiny)
        sim.step()
        return int(sim.ledger.frame().query("direction == 'up' and part == 'delta_Q'")["messages"].sum()), sim

    assert uploads(RunConfig(**FAST))[0] == 10
    assert uploads(RunConfig(stragglers=0.5, **FAST))[0] == 5  # plain FedAvg: "auto" drops them
    kept, prox = uploads(RunConfig(stragglers=0.5, prox_mu=0.01, **FAST))
    assert kept == 10 and not prox.cfg.drops_stragglers()
    assert uploads(RunConfig(stragglers=0.5, straggler_policy="keep", **FAST))[0] == 10
    assert uploads(RunConfig(stragglers=0.9, **FAST))[0] == 1
    assert uploads(RunConfig(stragglers=1.0, **FAST))[0] == 1  # dropping all would leave nothing to aggregate


def test_no_stragglers_is_the_plain_run_bit_for_bit_and_keeps_the_cache_key(tiny):
    a = run(RunConfig(**FAST), data=tiny, use_cache=False, progress=False)
    b = run(RunConfig(stragglers=0.0, straggler_policy="keep", **FAST), data=tiny, use_cache=False, progress=False)
    assert a.table["loss"].tolist() == b.table["loss"].tolist()
    assert RunConfig().key() == RunConfig(straggler_policy="keep").key() != RunConfig(stragglers=0.5).key()
    c = run(RunConfig(stragglers=0.5, prox_mu=0.01, **FAST), data=tiny, use_cache=False, progress=False)
    assert c.table["loss"].tolist() != a.table["loss"].tolist() and np.isfinite(c.table["loss"]).all()


@pytest.mark.parametrize("bad,words", [
    (dict(stragglers=1.5), "stragglers=1.5 is invalid"),
    (dict(stragglers=-0.1), "stragglers=-0.1 is invalid"),
    (dict(straggler_policy="sometimes"),
     "straggler_policy='sometimes' is invalid: allowed values are auto, drop, keep"),
])
def test_bad_straggler_settings_name_the_field(bad, words):
    with pytest.raises(ConfigError, match=words):
        RunConfig(**bad)
