"""GIST for real: m worker processes over torch.distributed (gloo, loopback) give the simulation's weights."""
import pytest
import torch

from labcore.gist.config import GistConfig
from labcore.gist.distributed import run_distributed, timing_summary
from labcore.gist.simulate import run


@pytest.mark.parametrize("kw", [pytest.param(dict(split="layer1", local=1), marks=pytest.mark.slow),
                                dict(split="both", hidden=16, local=2)])
def test_two_processes_give_the_simulation_weights(kw):
    cfg = GistConfig(graph="synthetic", subnets=2, epochs=10, lr=0.05, **kw)
    sim = run(cfg, rounds=3)
    real = run_distributed(cfg, rounds=3, timeout=240)
    for name in sim.params:
        assert torch.equal(sim.params[name], real.params[name]), name
    # the same merged model gives the same accuracies; each subnet's losses are the same floats
    assert sim.history["val_acc"].tolist() == real.history["val_acc"].tolist()
    assert sim.subnet_loss["loss"].tolist() == real.subnet_loss["loss"].tolist()
    # every worker sent, per sync, exactly the message the simulation's ledger measured
    t = timing_summary(real)
    assert t["bytes_sent_per_worker_per_sync"] == sim.bytes_per_subnet("up")
    assert real.bytes_per_subnet("up") == sim.bytes_per_subnet("up")
    assert t["comm_per_sync_s"] > 0 and len(real.timing["per_worker"]) == 2 * 3


def test_a_bad_graph_fails_before_any_process_starts(tmp_path, monkeypatch):
    from labcore.gist import graph

    monkeypatch.setenv("LABCORE_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    graph._load.cache_clear()
    graph.tensors.cache_clear()
    from labcore.gist.planetoid import PlanetoidError

    monkeypatch.setattr("labcore.gist.planetoid.data_home", lambda: tmp_path)
    with pytest.raises(PlanetoidError, match="missing ind.citeseer"):
        run_distributed(GistConfig(graph="citeseer", subnets=2), rounds=1)
