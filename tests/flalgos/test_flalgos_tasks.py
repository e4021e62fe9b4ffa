"""End-to-end behaviour of the federated-optimization topic on its tasks (small, seconds)."""
from __future__ import annotations

import pytest
import torch

from labcore.flalgos.config import ALGORITHMS, PERSONALIZED, FLConfig
from labcore.flalgos.simulation import Simulation, run
from labcore.net.message import frame_bytes
from labcore.typed_config import ConfigError

MF = dict(task="mf", mf_dataset="synthetic-small", clients_per_round=30, local_steps=5, batch_size=8, lr=10.0,
          rounds=8, eval_every=4, weighting="uniform")


# DP-FedAvg's Poisson cohorts have random sizes (its bytes and training: tests/flalgos/test_flalgos_dp.py)
@pytest.mark.parametrize("alg", [a for a in ALGORITHMS if a not in PERSONALIZED + ("dpfedavg",)])
def test_every_global_algorithm_trains_mf_with_private_user_vectors(alg):
    cfg = FLConfig(algorithm=alg, mu=0.1, q=0.5, server_lr=0.03 if alg in ("fedadam", "fedyogi") else 1.0, **MF)
    sim = Simulation(cfg)
    users0 = sim.problem.users.clone()
    res = sim.run()
    assert not torch.equal(users0, sim.problem.users)  # the devices trained their own vectors
    up = res.ledger[res.ledger.direction == "up"]
    n_values = sim.problem.I * cfg.mf_dim
    assert set(up.part) <= {"delta", "dcontrol", "h"}  # no user vector ever travels
    per_message = 4 * n_values + frame_bytes("delta", 1)  # float32 item-table change + framing
    assert int(up[up.part == "delta"].bytes.sum()) == cfg.rounds * cfg.clients_per_round * per_message
    assert res.history["train_loss"].notna().all()


def test_mf_learns_beyond_random_ranking_and_matches_core_metric():
    sim = Simulation(FLConfig(algorithm="fedavg", **{**MF, "rounds": 30, "eval_every": 30, "clients_per_round": 60}))
    h = sim.run().history
    assert h["test_acc"].iloc[-1] > h["test_acc"].iloc[0] + 0.1
    assert abs(sim.problem.hit_ratio(sim.strategy.w) - h["test_acc"].iloc[-1]) < 1e-9  # labcore.metrics HR@10


def test_mf_rejects_personalization_and_backdoors():
    with pytest.raises(ConfigError, match="^algorithm="):
        FLConfig(task="mf", algorithm="ditto")
    with pytest.raises(ConfigError, match="^attack="):
        FLConfig(task="mf", attack="replacement", attackers=1)


def test_personalized_beats_global_on_skewed_digits():
    base = dict(task="digits", dirichlet_alpha=0.1, n_clients=20, clients_per_round=10, local_steps=10,
                batch_size=10, lr=0.05, rounds=15, eval_every=15)
    g = run(FLConfig(algorithm="fedavg", **base)).history["acc_mean"].iloc[-1]
    for alg in ("ditto", "apfl"):
        p = run(FLConfig(algorithm=alg, **base)).history["personal_acc_mean"].iloc[-1]
        assert p > g, (alg, p, g)


def test_model_replacement_plants_the_backdoor_and_median_stops_it():
    base = dict(task="digits", n_clients=20, clients_per_round=10, local_steps=10, batch_size=10, lr=0.1,
                rounds=24, eval_every=24, attack="replacement", attackers=2, attack_from=18)
    plain = run(FLConfig(**base)).history.iloc[-1]
    med = run(FLConfig(defense="median", **base)).history.iloc[-1]
    assert plain["backdoor"] > 0.5 > med["backdoor"]


def test_all_algorithms_run_with_stragglers_dropouts_and_quantization():
    for alg in ALGORITHMS:
        cfg = FLConfig(algorithm=alg, task="digits", n_clients=12, clients_per_round=6, local_steps=4, batch_size=8,
                       rounds=3, eval_every=3, stragglers=0.5, dropout=0.2, quantize_bits=8,
                       server_lr=0.03 if alg in ("fedadam", "fedyogi") else 1.0)
        h = Simulation(cfg).run().history
        assert h["test_acc"].notna().all(), alg
