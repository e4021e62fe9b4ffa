"""A run whose loss or weights stop being finite stops with the lab's one DivergedError before any metric of that
state is reported: the core engine (and its command line, in one line), the FL algorithms, STTFedRec, FAIR, GIST
and the GCN baseline. Where a valid config diverges for real (FedMF at lr=100, gradient descent on a quadratic
at a step far above 2/L) it is run as it is; elsewhere the weights are set to NaN, the state a divergence leaves."""
from __future__ import annotations

import contextlib
import io
import math

import pytest
import torch

from labcore.diverged import DivergedError, check_finite


def test_check_finite_names_where_and_what_to_lower():
    check_finite("round 3", 0.5, [torch.ones(3)])
    with pytest.raises(DivergedError, match=r"^round 3: the run diverged \(training loss nan\): lower lr \(now 9\)$"):
        check_finite("round 3", math.nan, lower="lr (now 9)")
    with pytest.raises(DivergedError, match=r"training loss 0\.5, weights not finite"):
        check_finite("epoch 2", torch.tensor(0.5), [torch.tensor([1.0, math.inf])])
    assert issubclass(DivergedError, ValueError) and issubclass(DivergedError, FloatingPointError)
    from labcore.fed.engine import DivergedError as EngineDivergedError

    assert EngineDivergedError is DivergedError


def test_engine_divergence_is_one_line_of_the_command_line(tmp_path):
    from labcore.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", "--method", "fedmf", "--lr", "100", "--synthetic-size", "tiny", "--clients-per-round",
                     "10", "--rounds", "20", "--eval-every", "20", "--rank-every", "0", "--quiet", "--no-cache",
                     "--cache-dir", str(tmp_path)])
    assert code == 2
    assert err.getvalue().count("\n") == 1, err.getvalue()
    assert err.getvalue().startswith("labcore: round ") and "the run diverged" in err.getvalue()
    assert "lower lr (now 100)" in err.getvalue()
    assert not list(tmp_path.rglob("result.json"))  # nothing reported, nothing cached as a result


def test_fl_algorithms_stop_a_diverging_run_before_its_accuracy():
    from labcore.flalgos.config import FLConfig
    from labcore.flalgos.simulation import Simulation

    sim = Simulation(FLConfig(task="quadratic", lr=1e4, rounds=10, eval_every=1, n_clients=10, clients_per_round=5))
    with pytest.raises(DivergedError, match=r"round \d+: the run diverged .*lower lr \(now 10000\)"):
        sim.run()
    assert all(math.isfinite(r["train_loss"]) for r in sim.rows)  # only the finite rounds were reported


def test_sttfedrec_stops_before_a_metric_of_nan_weights():
    from labcore.sttfedrec.config import STTConfig
    from labcore.sttfedrec.frameworks import FedTrainer

    trainer = FedTrainer(STTConfig(synthetic_users=50, synthetic_items=60, rounds=2, eval_every=1,
                                   clients_per_round=5, eval_users=20))
    with torch.no_grad():
        next(trainer.model.parameters()).fill_(math.nan)
    with pytest.raises(DivergedError, match=r"^round 1: the run diverged"):
        trainer.step()
    assert trainer.rows == []


def test_fair_stops_before_a_metric_of_nan_weights():
    from labcore.fair.config import FairConfig
    from labcore.fair.engine import FairSimulation

    sim = FairSimulation(FairConfig(rounds=2, eval_every=1))
    sim.theta[0][0] = math.nan
    with pytest.raises(DivergedError, match=r"^round 1: the run diverged .*weights not finite"):
        sim.step()
    assert sim.rows_out == []


def _nan_params(make):
    def wrapped(*args, **kw):
        params = make(*args, **kw)
        with torch.no_grad():
            next(iter(params.values())).fill_(math.nan)
        return params
    return wrapped


def test_gist_stops_before_a_metric_of_nan_weights(monkeypatch):
    from labcore.gist import simulate
    from labcore.gist.config import GistConfig

    monkeypatch.setattr(simulate, "initial_params", _nan_params(simulate.initial_params))
    with pytest.raises(DivergedError, match=r"^epoch 1, subnet 0: the run diverged"):
        simulate.run(GistConfig(graph="synthetic", epochs=4))


def test_gcn_baseline_stops_before_a_metric_of_nan_weights(monkeypatch):
    from labcore.gist import baseline
    from labcore.gist.config import KipfConfig

    monkeypatch.setattr(baseline, "init_params", _nan_params(baseline.init_params))
    with pytest.raises(DivergedError, match=r"^epoch 1: the run diverged"):
        baseline.train_gcn(KipfConfig(graph="synthetic", epochs=4))
