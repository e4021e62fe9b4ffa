"""DP-FedAvg in the FL-algorithms topic's dense model: the same math as the engine's (labcore.privacy.dp)."""
import math

import numpy as np
import pytest
import torch

from labcore.flalgos.config import FLConfig
from labcore.flalgos.simulation import Aggregation, Simulation
from labcore.flalgos.strategies import DPFedAvg
from labcore.privacy import dp
from labcore.typed_config import ConfigError

BASE = dict(algorithm="dpfedavg", task="digits", n_clients=20, clients_per_round=5, local_steps=4, batch_size=8,
            rounds=6, eval_every=3)


def test_dp_fedavg_clips_sums_noises_and_divides_by_the_expected_cohort():
    cfg = FLConfig(**BASE, clip_norm=1.0, dp_noise=0.0)
    sim = Simulation(cfg)
    delta = torch.tensor([[3.0, 4.0], [0.3, 0.4]], dtype=torch.float64)
    ops = Aggregation(cfg, 2, torch.arange(2), 0)
    agg = sim.strategy.aggregate({"delta": delta}, torch.ones(2), ops)["delta"]
    assert torch.allclose(agg, torch.tensor([0.9, 1.2], dtype=torch.float64) / 5)


def test_dp_fedavg_trains_on_poisson_cohorts_and_reports_epsilon():
    sim = Simulation(FLConfig(**BASE, clip_norm=0.5, dp_noise=1.0))
    h = sim.run().history
    assert h["epsilon"].iloc[0] == 0 and h["epsilon"].iloc[-1] == pytest.approx(dp.epsilon_rdp(0.25, 1.0, 6, 0.05))
    assert h["test_acc"].notna().all()
    sizes = [len(sim.plan(torch.Generator().manual_seed(0))[0]) for sim.round in range(30)]
    assert len(set(sizes)) > 2


def test_dp_fedavg_refuses_a_defense_by_name():
    with pytest.raises(ConfigError, match="^defense="):
        FLConfig(**BASE, defense="median")
