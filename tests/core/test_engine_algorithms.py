"""FedProx and the server optimizers (FedAvgM, FedAdam, FedYogi) on the core engine: tiny exact cases for the
server's step, the compiled FedProx trainer against the per-client torch loop, and the engine's runs."""
import numpy as np
import pytest
import torch

from conftest import assert_a_stopped_run_resumes
from labcore.config import ConfigError, RunConfig
from labcore.fed import sampling as S
from labcore.fed.algorithms import server_opt
from labcore.fed.engine import Simulation, run
from labcore.fed.local_train import LowRank, train_cohort
from oracles.fed_loop import train_clients_loop

FAST = dict(clients_per_round=8, local_epochs=2, batch_size=16, dim=8, rank=2, eval_every=5, rounds=10, rank_every=0)


# --- the server's step, by hand ----------------------------------------------------------------------------------
def test_every_allowed_server_optimizer_has_its_class():
    from labcore.config import SERVER_OPTIMIZERS

    assert tuple(c.name for c in server_opt.CLASSES) == SERVER_OPTIMIZERS
    assert [type(server_opt.make(n)).name for n in SERVER_OPTIMIZERS] == list(SERVER_OPTIMIZERS)


def test_server_steps_by_hand():
    d1, d2 = torch.tensor([1.0, -2.0]), torch.tensor([0.5, 0.5])
    assert torch.equal(server_opt.make("fedavg", lr=0.5).step(d1), torch.tensor([0.5, -1.0]))
    m = server_opt.make("fedavgm", lr=2.0, momentum=0.5)
    assert torch.equal(m.step(d1), torch.tensor([2.0, -4.0]))  # v = d1
    assert torch.equal(m.step(d2), torch.tensor([2.0, -1.0]))  # v = 0.5 d1 + d2 = (1, -0.5)
    a = server_opt.make("fedadam", lr=1.0, beta1=0.5, beta2=0.75, tau=0.5)
    # m = 0.5 d1 = (0.5, -1); v = 0.75 tau^2 + 0.25 d1^2 = (0.4375, 1.1875); step = m / (sqrt(v) + tau)
    v = torch.tensor([0.4375, 1.1875])
    assert torch.allclose(a.step(d1), torch.tensor([0.5, -1.0]) / (v.sqrt() + 0.5), rtol=0, atol=1e-7)
    y = server_opt.make("fedyogi", lr=1.0, beta1=0.5, beta2=0.75, tau=0.5)
    # v = tau^2 - 0.25 d1^2 sign(tau^2 - d1^2) = 0.25 + 0.25 d1^2 = (0.5, 1.25)
    assert torch.allclose(y.step(d1), torch.tensor([0.5, -1.0]) / (torch.tensor([0.5, 1.25]).sqrt() + 0.5),
                          rtol=0, atol=1e-7)
    with pytest.raises(ValueError, match="server_optimizer='adam'.*fedavg, fedavgm, fedadam, fedyogi"):
        server_opt.make("adam")


# --- FedProx in the compiled trainer ---------------------------------------------------------------------------
@pytest.mark.parametrize("lowrank", [False, True])
def test_compiled_fedprox_equals_the_per_client_loop_and_pulls_toward_the_global_table(tiny, lowrank):
    """The per-client loop adds mu/2 ||table - Q||^2 over the whole table to every step's loss (torch autograd);
    the compiled trainer pulls every row of the client's update, the rows of no batch lazily."""
    m = 12
    plan = S.plan_round(tiny, S.NegativeSampler(tiny), np.arange(m), 4, 3, 16, 0, 0)
    g = torch.Generator().manual_seed(0)
    Q, P = torch.randn(tiny.n_items, 6, generator=g) * 0.3, torch.randn(m, 6, generator=g) * 0.3
    lr_ = None
    if lowrank:  # SCoLR-like: per-client column masks and learning-rate scales
        mask = (torch.arange(3)[None, :] < torch.randint(1, 4, (m, 1), generator=g)).float()
        lr_ = LowRank(torch.randn(6, 3, generator=g) / 3**0.5, mask, torch.rand(m, generator=g) + 0.5)
    sizes = []
    for mu in (0.0, 0.5, 3.0):
        fast = train_cohort(Q, P, plan, 0.1, 1e-2, lr_, prox_mu=mu)
        loop = train_clients_loop(Q, P, plan, 0.1, 1e-2, lr_, prox_mu=mu)
        assert torch.allclose(fast.dense_update(), loop.update, rtol=0, atol=1e-6)
        assert torch.allclose(fast.p, loop.p, rtol=0, atol=1e-6)
        sizes.append(float(fast.dense_update().norm()))
    assert sizes[0] > sizes[1] > sizes[2] > 0  # a stronger pull keeps the local table nearer the global one
    plain = train_cohort(Q, P, plan, 0.1, 1e-2, lr_)
    zero = train_cohort(Q, P, plan, 0.1, 1e-2, lr_, prox_mu=0.0)
    assert torch.equal(plain.rows.values, zero.rows.values) and torch.equal(plain.p, zero.p)


@pytest.mark.parametrize("method", ["fedmf", "colr"])
def test_engine_fedprox_at_mu_zero_is_fedavg_and_a_small_mu_stays_near_it(tiny, method):
    base = run(RunConfig(method=method, **FAST), data=tiny, use_cache=False, progress=False)
    zero = run(RunConfig(method=method, prox_mu=0.0, **FAST), data=tiny, use_cache=False, progress=False)
    assert base.table["loss"].tolist() == zero.table["loss"].tolist()
    small = run(RunConfig(method=method, prox_mu=1e-3, **FAST), data=tiny, use_cache=False, progress=False)
    assert small.table["loss"].tolist() != base.table["loss"].tolist()
    assert np.allclose(small.table["loss"], base.table["loss"], rtol=1e-2, atol=0)


# --- the server optimizers in the engine ------------------------------------------------------------------------
def _state_after(cfg, data, rounds):
    sim = Simulation(cfg, data)
    rows = [sim.step() for _ in range(rounds)]
    return sim, rows


@pytest.mark.parametrize("method", ["fedmf", "colr", "svd"])
def test_fedavgm_with_momentum_zero_is_fedavg_bit_for_bit(tiny, method):
    plain, _ = _state_after(RunConfig(method=method, **FAST), tiny, 4)
    m0, rows = _state_after(RunConfig(method=method, server_optimizer="fedavgm", server_momentum=0.0, **FAST), tiny, 4)
    assert torch.equal(plain.Q, m0.Q) and torch.equal(plain.P, m0.P)


def test_fedavg_server_step_size_scales_the_broadcast_change(tiny):
    one, _ = _state_after(RunConfig(method="colr", **FAST), tiny, 1)
    half, _ = _state_after(RunConfig(method="colr", server_lr=0.5, **FAST), tiny, 1)
    start = Simulation(RunConfig(method="colr", **FAST), tiny).Q
    assert torch.allclose(half.Q - start, 0.5 * (one.Q - start), rtol=0, atol=1e-6)
    assert not torch.equal(half.Q, one.Q)


@pytest.mark.parametrize("opt", ["fedavgm", "fedadam", "fedyogi"])
def test_a_stateful_server_broadcasts_its_dense_step_and_the_ledger_charges_it(tiny, opt):
    """CoLR's broadcast is A (items x rank); the server's optimizer state lives on the server, so the clients
    receive its step, items x d values."""
    _, plain = _state_after(RunConfig(method="colr", **FAST), tiny, 2)
    sim, rows = _state_after(RunConfig(method="colr", server_optimizer=opt, server_lr=0.05, **FAST), tiny, 2)
    values = tiny.n_items * FAST["dim"]
    assert rows[-1]["bytes_down_client"] >= 4 * values > plain[-1]["bytes_down_client"]
    assert sim.ledger.frame().query("direction == 'down'")["part"].unique().tolist() == ["server_step"]
    assert all(np.isfinite(r["loss"]) for r in rows)


@pytest.mark.parametrize("opt", ["fedavgm", "fedadam", "fedyogi"])
def test_a_stopped_run_with_a_server_optimizer_resumes_to_the_same_numbers(tiny, tmp_path, opt):
    """The optimizer's moments are in the checkpoint: without them the resumed run would restart them at zero."""
    cfg = RunConfig(method="fedmf", server_optimizer=opt, server_lr=0.05, checkpoint_every=3, **FAST)
    assert_a_stopped_run_resumes(cfg, tiny, tmp_path)


# --- bad input -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad,words", [
    (dict(prox_mu=-0.1), "prox_mu=-0.1 is invalid: must be >= 0"),
    (dict(server_optimizer="adam"), "server_optimizer='adam' is invalid: allowed values are fedavg, fedavgm, fedadam"),
    (dict(server_lr=0.0), "server_lr=0.0 is invalid"),
    (dict(server_momentum=1.0), "server_momentum=1.0 is invalid"),
    (dict(server_beta2=-0.5), "server_beta2=-0.5 is invalid"),
    (dict(server_tau=0.0), "server_tau=0.0 is invalid"),
])
def test_bad_algorithm_settings_name_the_field(bad, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        RunConfig(**bad)


def test_fedprox_needs_the_compiled_trainer_and_flower_refuses_what_it_lacks(tiny):
    with pytest.raises(ConfigError, match="prox_mu=0.1 needs the engine's trainer.*layout='dense'"):
        Simulation(RunConfig(prox_mu=0.1, **FAST), tiny, layout="dense")
    from labcore.scale.federation import check_supported

    for bad in (dict(prox_mu=0.1), dict(server_optimizer="fedadam"), dict(server_lr=0.5)):
        with pytest.raises(ValueError, match=f"{next(iter(bad))}=.* is not available over Flower"):
            check_supported(RunConfig(**bad))


def test_unused_server_settings_stay_out_of_the_cache_key():
    assert RunConfig(server_momentum=0.5).key() == RunConfig().key()  # FedAvg has no momentum
    assert RunConfig(server_optimizer="fedavgm", server_tau=0.1).key() == RunConfig(server_optimizer="fedavgm").key()
    assert RunConfig(server_optimizer="fedadam", server_tau=0.1).key() != RunConfig(server_optimizer="fedadam").key()


def test_a_pull_that_would_overshoot_is_refused_before_training_and_a_divergence_stops_the_run(tiny):
    from labcore.fed.engine import DivergedError

    with pytest.raises(ConfigError, match=r"prox_mu=10.0 is invalid: must be below 2 with lr=0.5: every local step"):
        Simulation(RunConfig(method="fedmf", prox_mu=10.0, **FAST), tiny)
    with pytest.raises(ConfigError, match=r"prox_mu=1.0 is invalid: must be below 1 with lr=0.5 and colr at d/r = 8/2"):
        Simulation(RunConfig(method="colr", prox_mu=1.0, **FAST), tiny)
    Simulation(RunConfig(method="colr", prox_mu=0.9, **FAST), tiny)  # below the bound: accepted
    with pytest.raises(DivergedError, match=r"round \d+: the run diverged .*: lower lr \(now 1000\)"):
        run(RunConfig(method="fedmf", lr=1000.0, **FAST), data=tiny, use_cache=False, progress=False)


# --- the algorithms' hooks (fed/algorithms) ------------------------------------------------------------------------
@pytest.mark.parametrize("fields, name", [({}, "FedAvg"), ({"prox_mu": 0.1}, "FedProx"),
                                          ({"scaffold": True}, "Scaffold"), ({"qffl_q": 1.0}, "QFFL"),
                                          ({"personalization": "pfedme"}, "PFedMe"),
                                          ({"personalization": "perfedavg"}, "PerFedAvg"),
                                          ({"personalization": "ditto"}, "FedAvg"),
                                          ({"personalization": "ditto", "prox_mu": 0.1}, "FedProx")])
def test_each_config_runs_one_global_algorithm(fields, name):
    from labcore.fed.algorithms import algorithm_class

    assert algorithm_class(RunConfig(method="fedmf", aggregation="weighted", **fields)).__name__ == name


def test_the_round_names_no_algorithm():
    """`Simulation.step` and the uplink it calls are the round's protocol: what an algorithm changes is in its
    hooks (fed/algorithms), so no branch of theirs reads an algorithm's setting."""
    import ast
    import inspect
    import textwrap

    settings = {"scaffold", "qffl_q", "prox_mu", "personalization", "pfedme_steps", "pfedme_lambda", "ditto_lambda",
                "apfl_alpha", "perfedavg_alpha", "qffl_lipschitz", "variates"}
    for fn in (Simulation.step, Simulation._uplink, Simulation._times, Simulation.state, Simulation.load_state):
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not read & settings, (fn.__name__, read & settings)


def test_an_algorithm_of_ones_own_overrides_one_hook(tiny):
    """A student's algorithm: FedAvg with every client weighted equally, one hook overridden. It changes the run,
    and with the FedAvg weights handed back it gives FedAvg's numbers bit for bit."""
    from labcore.fed.algorithms import FedAvg

    class EqualWeights(FedAvg):
        def weigh(self, weights, decoded):
            return torch.full_like(weights, 1.0 / len(weights))

    class SameWeights(FedAvg):
        def weigh(self, weights, decoded):
            return weights

    cfg = RunConfig(method="fedmf", aggregation="weighted", **FAST)
    runs = {}
    for name, algo in (("fedavg", None), ("same", SameWeights), ("equal", EqualWeights)):
        sim = Simulation(cfg, tiny, algorithm=algo)
        for _ in range(3):
            sim.step()
        runs[name] = sim.Q
    assert torch.equal(runs["fedavg"], runs["same"])
    assert not torch.equal(runs["fedavg"], runs["equal"])
