"""Clients that drop out after being sampled, on the core engine: who drops, what the survivors send and learn, and
secure aggregation that recovers the survivors' exact sum above its threshold and stops the run below it."""
import numpy as np
import pytest
import torch

from labcore.config import ConfigError, RunConfig
from labcore.fed import dropout
from labcore.fed import sampling as S
from labcore.fed.engine import Simulation, run
from labcore.net.message import frame_bytes
from labcore.privacy.secagg import SEED_BYTES, SecureAggregationError
from labcore.scale.federation import check_supported

from conftest import assert_a_stopped_run_resumes

FAST = dict(clients_per_round=8, local_epochs=2, batch_size=16, dim=8, rank=2, eval_every=3, rounds=3, rank_every=0)


def test_threshold_is_strictly_more_than_the_share_and_at_most_everyone():
    assert [dropout.threshold(n, 0.5) for n in (1, 2, 7, 8, 10)] == [1, 2, 4, 5, 6]  # a strict majority
    assert dropout.threshold(10, 1.0) == 10 and dropout.threshold(10, 0.95) == 10
    assert dropout.threshold(10, 0.05) == 1 and dropout.threshold(3, 0.34) == 2


def test_each_client_drops_with_its_chance_the_same_way_for_the_same_seed_and_never_all():
    draws = np.stack([dropout.draw(50, 0.3, seed=1, round_idx=t) for t in range(200)])
    assert abs(draws.mean() - 0.3) < 0.01
    assert np.array_equal(draws[17], dropout.draw(50, 0.3, seed=1, round_idx=17))
    assert not np.array_equal(draws[17], dropout.draw(50, 0.3, seed=2, round_idx=17))
    assert not dropout.draw(8, 0.0, 0, 0).any()
    kept = [dropout.draw(2, 0.99, 0, t) for t in range(50)]
    assert all(d.sum() <= 1 for d in kept) and any(d.sum() == 1 for d in kept)  # a round keeps an update


def test_survivors_train_and_upload_while_every_sampled_client_downloads(tiny, monkeypatch):
    cfg = RunConfig(method="fedmf", aggregation="weighted", dropout=0.4, **FAST)
    sim = Simulation(cfg, tiny)
    P0 = sim.P.clone()
    row = sim.step()
    sampled = S.round_clients(cfg.client_schedule, tiny.n_users, cfg.clients_per_round, cfg.seed, 0)
    gone = dropout.draw(len(sampled), 0.4, cfg.seed, 0)
    assert 0 < gone.sum() < len(sampled) and row["clients_dropped"] == gone.sum()
    assert torch.equal(sim.P[sampled[gone]], P0[sampled[gone]])  # a dropped client's vector stays as it was
    assert not torch.equal(sim.P[sampled[~gone]], P0[sampled[~gone]])
    led = sim.ledger.frame()
    assert set(led[led.direction == "up"].messages) == {int((~gone).sum())}
    assert set(led[led.direction == "down"].messages) == {len(sampled)}
    # the same round with the survivors sampled and no dropout: the same model
    ref = Simulation(RunConfig(method="fedmf", aggregation="weighted", **FAST), tiny)
    ref_clients = sampled[~gone]
    monkeypatch.setattr(S, "round_clients", lambda *a, **k: ref_clients)
    ref.step()
    assert torch.equal(ref.Q, sim.Q)


@pytest.mark.parametrize("method, aggregation", [("fedmf", "weighted"), ("colr", "item_mean"),
                                                 ("scolr", "weighted")])
def test_secure_aggregation_recovers_the_survivors_exact_sum(tiny, method, aggregation):
    kw = dict(method=method, aggregation=aggregation, dropout=0.4, secagg_threshold=0.1, **FAST)
    plain = Simulation(RunConfig(**kw), tiny)
    masked = Simulation(RunConfig(encryption="secagg", he_real_clients=4, **kw), tiny)
    for t in range(3):
        a, b = plain.step(), masked.step()
        assert a["clients_dropped"] == b["clients_dropped"] > 0
        assert b["he_check_err"] < 1e-8  # the recovered real partial sum against the same sum in plaintext
        assert float((plain.Q - masked.Q).abs().max()) < 1e-6  # fixed point with 32 fractional bits
        led = masked.ledger.frame()
        led = led[led["round"] == t]
        D = int(b["clients_dropped"])
        M = masked.cfg.clients_per_round - D
        seeds = led[led.part == "secagg.revealed_seeds"].iloc[0]
        assert seeds.messages == M and seeds.bits == 8 * M * D * SEED_BYTES  # one seed per survivor and dropout
        keys = led[led.part == "secagg.public_key"].iloc[0]
        assert keys.messages == M + D  # every sampled client took part in the key agreement
        request = led[led.part == "secagg.dropped"].iloc[0]
        assert request.messages == M and request.bytes == M * (frame_bytes("secagg.dropped", 0) + 4 * D)
        assert b["bytes_up"] == led[led.direction == "up"].bytes.sum()
        assert b["bytes_down"] == led[led.direction == "down"].bytes.sum()


def test_below_the_threshold_the_run_stops_loudly_at_that_round(tiny, tmp_path):
    cfg = RunConfig(method="fedmf", aggregation="weighted", encryption="secagg", dropout=0.4, secagg_threshold=0.5,
                    **{**FAST, "rounds": 6})
    short = next(t for t in range(6) if (~dropout.draw(8, 0.4, 0, t)).sum() < dropout.threshold(8, 0.5))
    sim = Simulation(cfg, tiny)
    for _ in range(short):
        sim.step()
    with pytest.raises(SecureAggregationError, match=rf"round {short + 1}: only \d of the 8 sampled clients uploaded "
                                                     r"\(dropout=0.4\), below .*t=5 \(secagg_threshold=0.5"):
        sim.step()
    assert sim.round == short  # the failed round changed nothing
    with pytest.raises(SecureAggregationError, match="Lower dropout, lower secagg_threshold"):
        run(cfg, data=tiny, cache_dir=tmp_path, progress=False)
    run(cfg.replace(secagg_threshold=0.1), data=tiny, cache_dir=tmp_path, progress=False)  # a lower bar: it runs


def test_a_stopped_run_with_dropout_resumes_to_the_same_numbers(tiny, tmp_path):
    cfg = RunConfig(method="fedmf", aggregation="weighted", dropout=0.3, **{**FAST, "rounds": 10})
    assert_a_stopped_run_resumes(cfg, tiny, tmp_path, stop_after=4)


@pytest.mark.parametrize("bad, message", [
    (dict(dropout=-0.1), r"dropout=-0.1 .*0.0.*0.99"), (dict(dropout=1.0), r"dropout=1.0 .*0.0.*0.99"),
    (dict(secagg_threshold=0.0), r"secagg_threshold=0.0 .*\(0, 1\]"),
    (dict(secagg_threshold=1.5), r"secagg_threshold=1.5 .*\(0, 1\]"),
])
def test_bad_dropout_settings_name_the_field(bad, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig(**bad)


def test_dropout_changes_the_key_only_when_set_and_the_threshold_only_when_it_can_bind():
    base = RunConfig()
    assert RunConfig(dropout=0.0).key() == base.key()
    assert RunConfig(secagg_threshold=0.9).key() == base.key()  # no secure aggregation: no threshold
    assert RunConfig(encryption="secagg", secagg_threshold=0.9).key() == RunConfig(encryption="secagg").key()
    assert RunConfig(dropout=0.2).key() != base.key()
    assert (RunConfig(encryption="secagg", dropout=0.2, secagg_threshold=0.9).key()
            != RunConfig(encryption="secagg", dropout=0.2).key())
    assert RunConfig(dropout=0.2).describe() != base.describe()


def test_flower_refuses_dropout_and_stragglers_rather_than_ignoring_them():
    for bad in (dict(dropout=0.2), dict(stragglers=0.5)):
        with pytest.raises(ValueError, match=rf"{next(iter(bad))}=0.\d is not available over Flower"):
            check_supported(RunConfig(**bad))
