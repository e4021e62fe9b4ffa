"""Tiny exact cases for the federated-optimization topic's update rules, data and wire."""
from __future__ import annotations

import gzip
import json
import struct

import numpy as np
import pytest
import torch

from labcore.flalgos import defenses, tasks
from labcore.flalgos.config import FLConfig
from oracles.flalgos_loop import local_train_loop
from labcore.flalgos.simulation import Simulation, round_generator
from labcore.flalgos.strategies import RoundContext, Scaffold
from labcore.net.message import frame_bytes
from labcore.typed_config import ConfigError

QUAD = dict(task="quadratic", n_clients=10, clients_per_round=10, local_steps=10, lr=0.1, weighting="uniform",
            eval_every=10)
DIGITS = dict(task="digits", n_clients=12, clients_per_round=6, local_steps=5, batch_size=8, lr=0.1, rounds=4,
              eval_every=2)


def play(cfg: FLConfig, rounds: int | None = None) -> Simulation:
    sim = Simulation(cfg)
    for _ in range(rounds or cfg.rounds):
        sim.step()
    return sim


# --- SCAFFOLD: the mistakes users of other frameworks keep reporting ---------------------------------------------
def test_scaffold_control_variates_start_at_zero():
    s = Simulation(FLConfig(algorithm="scaffold", **QUAD)).strategy
    assert torch.count_nonzero(s.c) == 0 and torch.count_nonzero(s.c_i) == 0



def test_scaffold_option_ii_uses_steps_taken_local_lr_and_one_over_n():
    # partial participation and stragglers: K differs per client, N = 10 > cohort of 4
    cfg = FLConfig(algorithm="scaffold", **{**QUAD, "clients_per_round": 4, "stragglers": 0.5})
    sim = Simulation(cfg)
    s: Scaffold = sim.strategy
    q, x0 = sim.problem.q, s.w.clone()
    cohort, steps, uploads = sim.plan(round_generator(cfg.seed, 0))
    assert len(set(steps.tolist())) > 1  # some stragglers took fewer steps
    sim.step()
    expected_sum = torch.zeros_like(x0)
    for cid, k in zip(cohort.tolist(), steps.tolist()):
        y = x0.clone()
        for _ in range(k):  # c = c_i = 0 in round 0: plain gradient steps
            y = y - cfg.lr * (q.A[cid] @ (y - q.b[cid]))
        c_new = (x0 - y) / (k * cfg.lr)  # c_i - c + (x - y_i) / (K_i eta_l), K_i = steps actually taken
        assert torch.allclose(s.c_i[cid], c_new, rtol=1e-12, atol=1e-12)
        expected_sum += c_new
    assert torch.allclose(s.c, expected_sum / cfg.n_clients, rtol=1e-12, atol=1e-14)  # (1/N) sum, not 1/|S|


def test_scaffold_correction_sign():
    cfg = FLConfig(algorithm="scaffold", **QUAD)
    sim = play(cfg, 2)
    s, q = sim.strategy, sim.problem.q
    cid = 3
    theta = torch.randn(1, q.b.shape[1], dtype=torch.float64)
    ctx = RoundContext(2, torch.tensor([cid]), torch.tensor([1]), sim.problem.draw(torch.tensor([cid]), 1, 1, None),
                       None)
    g = sim.problem.grads(theta, ctx.batches, 0)
    got = s.correct(g, theta, ctx)
    assert torch.allclose(got, g - s.c_i[cid] + s.c)  # y <- y - eta (g_i(y) - c_i + c)
    assert not torch.allclose(got, g + s.c_i[cid] - s.c)


def test_quadratics_scaffold_reaches_optimum_fedavg_stalls():
    res = {a: Simulation(FLConfig(algorithm=a, rounds=100, **QUAD)).run().history for a in ("fedavg", "scaffold")}
    assert res["scaffold"]["distance"].iloc[-1] < 1e-8
    assert res["fedavg"]["distance"].iloc[-1] > 1e-3
    # a floor, not slow progress: FedAvg's distance no longer moves
    assert abs(res["fedavg"]["distance"].iloc[-1] - res["fedavg"]["distance"].iloc[-3]) < 1e-9


# --- special cases that must reduce to FedAvg ----------------------------------------------------------------------
@pytest.mark.parametrize("model", ["logreg", "mlp"])
def test_fedprox_mu_zero_is_fedavg_bit_for_bit(model):
    kw = {**DIGITS, "model": model, "stragglers": 0.5, "straggler_policy": "keep"}
    a = play(FLConfig(algorithm="fedavg", **kw)).strategy.w
    b = play(FLConfig(algorithm="fedprox", mu=0.0, **kw)).strategy.w
    assert torch.equal(a, b)
    c = play(FLConfig(algorithm="fedprox", mu=0.5, **kw)).strategy.w
    assert not torch.equal(a, c)


def test_fedavgm_momentum_zero_is_fedavg_bit_for_bit():
    a = play(FLConfig(algorithm="fedavg", **DIGITS)).strategy.w
    b = play(FLConfig(algorithm="fedavgm", server_momentum=0.0, **DIGITS)).strategy.w
    assert torch.equal(a, b)
    assert not torch.equal(a, play(FLConfig(algorithm="fedavgm", server_momentum=0.9, **DIGITS)).strategy.w)


def test_qffl_q_zero_is_fedavg():
    # q-FedAvg averages uniformly; with q = 0: w - sum L (w - w_k) / (M L) = mean w_k
    a = play(FLConfig(algorithm="fedavg", **QUAD, rounds=5)).strategy.w
    b = play(FLConfig(algorithm="qffl", q=0.0, **QUAD, rounds=5)).strategy.w
    assert torch.allclose(a, b, rtol=1e-12, atol=1e-13)
    kw = {**DIGITS, "weighting": "uniform"}
    a = play(FLConfig(algorithm="fedavg", **kw)).strategy.w
    b = play(FLConfig(algorithm="qffl", q=0.0, **kw)).strategy.w
    assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(a, play(FLConfig(algorithm="qffl", q=2.0, **kw)).strategy.w, atol=1e-3)


# --- the batched path against autograd and against a per-client loop -----------------------------------------------
@pytest.mark.parametrize("model", ["logreg", "mlp"])
def test_batched_gradient_matches_autograd(model):
    sim = Simulation(FLConfig(model=model, **DIGITS))
    p = sim.problem
    g = torch.Generator().manual_seed(1)
    b = p.draw(torch.arange(5), 1, 7, g)
    theta = 0.1 * torch.randn(5, p.P, generator=g)
    assert torch.allclose(p.grads(theta, b, 0), p.autograd_grads(theta, b, 0), atol=1e-6)


@pytest.mark.parametrize("alg", ["fedavg", "fedprox", "scaffold"])
def test_batched_local_training_matches_client_loop(alg):
    cfg = FLConfig(algorithm=alg, mu=0.3, model="mlp", stragglers=0.5, straggler_policy="keep", **DIGITS)
    sim = play(cfg, 2)  # SCAFFOLD's variates are non-zero by now
    gen = round_generator(cfg.seed, 99)
    cohort, steps, _ = sim.plan(gen)
    ctx = RoundContext(2, cohort, steps, sim.problem.draw(cohort, cfg.local_steps, cfg.batch_size, gen), gen)
    assert torch.allclose(sim.strategy.local_train(ctx), local_train_loop(sim.strategy, ctx), atol=1e-5)


# --- stragglers, dropouts, secure aggregation --------------------------------------------------------------------
def test_fedavg_drops_stragglers_fedprox_keeps_them():
    kw = {**DIGITS, "stragglers": 0.5}
    up = {}
    for a in ("fedavg", "fedprox"):
        sim = play(FLConfig(algorithm=a, **kw), 1)
        led = sim.ledger.frame()
        up[a] = int(led[(led.direction == "up") & (led.part == "delta")]["messages"].sum())
    assert up["fedprox"] == DIGITS["clients_per_round"] and up["fedavg"] == DIGITS["clients_per_round"] // 2


def test_secure_aggregation_with_dropouts_matches_plain_and_fails_below_threshold():
    from labcore.privacy.secagg import SecureAggregationError

    kw = {**DIGITS, "dropout": 0.3, "rounds": 2}
    plain = play(FLConfig(**kw)).strategy.w
    masked = play(FLConfig(secagg=True, secagg_threshold=2, **kw)).strategy.w
    assert torch.allclose(plain, masked, atol=1e-5)
    with pytest.raises(SecureAggregationError, match="below the threshold"):
        play(FLConfig(secagg=True, secagg_threshold=6, **{**kw, "dropout": 0.5}))


# --- bytes ------------------------------------------------------------------------------------------------------
def test_scaffold_doubles_the_measured_traffic():
    led = {a: play(FLConfig(algorithm=a, **DIGITS), 1).ledger.frame() for a in ("fedavg", "scaffold")}
    P = 64 * 10 + 10
    for a, parts in (("fedavg", ("delta",)), ("scaffold", ("delta", "dcontrol"))):
        up = led[a][led[a].direction == "up"]
        assert int(up.bytes.sum()) == DIGITS["clients_per_round"] * sum(4 * P + frame_bytes(n, 1) for n in parts)
    for d in ("up", "down"):
        f, s = (int(led[a][led[a].direction == d].bytes.sum()) for a in ("fedavg", "scaffold"))
        assert 1.99 < s / f < 2.01


def test_quantization_mod_composes_with_scaffold():
    led = play(FLConfig(algorithm="scaffold", quantize_bits=4, **DIGITS), 1).ledger.frame()
    up = led[led.direction == "up"]
    assert {"delta.codes", "dcontrol.codes"} <= set(up.part)
    assert up.bytes.sum() < 0.3 * DIGITS["clients_per_round"] * 2 * 4 * 650


# --- defenses -----------------------------------------------------------------------------------------------------
def test_robust_aggregators():
    x = torch.tensor([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0], [100.0, -50.0]])
    assert torch.equal(defenses.median(x), torch.tensor([1.5, 1.5]))
    assert torch.equal(defenses.median(x[:3]), torch.tensor([1.0, 2.0]))
    assert torch.equal(defenses.trimmed_mean(x, 0.25), torch.tensor([1.5, 1.5]))
    pts = torch.cat([torch.zeros(5, 2) + 0.01 * torch.arange(5)[:, None], torch.tensor([[50.0, 50.0]])])
    _, best = defenses.krum(pts, 1)
    assert best < 5
    c = defenses.clip_rows(torch.tensor([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    assert torch.allclose(torch.linalg.vector_norm(c, dim=1), torch.tensor([1.0, 0.5]))


# --- data ---------------------------------------------------------------------------------------------------------
def test_synthetic_follows_fedprox_recipe():
    d = tasks.synthetic(1.0, 1.0, n_clients=30, seed=0)
    assert d.n_features == 60 and d.n_classes == 10 and d.n_clients == 30
    total = (d.train_sizes + d.test_sizes).numpy()
    rng = np.random.default_rng(0)
    assert np.array_equal(total, rng.lognormal(4, 2, 30).astype(int) + 50)  # power-law sizes, >= 50
    assert np.array_equal(d.train_sizes.numpy(), (0.9 * total).astype(int))
    # alpha = beta = 0: every device shares the same model prior, so labels are less device-specific
    same = tasks.synthetic(0.0, 0.0, n_clients=30, seed=0)
    assert len(np.unique(d.y_train.numpy())) >= 2 and len(np.unique(same.y_train.numpy())) >= 2


def test_dirichlet_and_quantity_skew_splits():
    y = np.repeat(np.arange(10), 100)
    for split, alpha in (("dirichlet", 0.1), ("quantity", 0.5), ("iid", 1.0)):
        parts = tasks.split_indices(y, 20, split, alpha, seed=0)
        allidx = np.concatenate(parts)
        assert len(allidx) == len(y) and len(np.unique(allidx)) == len(y)  # a partition
    classes = lambda parts: np.mean([len(np.unique(y[p])) for p in parts])  # noqa: E731
    sizes = lambda parts: np.std([len(p) for p in parts])  # noqa: E731
    assert classes(tasks.split_indices(y, 20, "dirichlet", 0.1, 0)) < classes(tasks.split_indices(y, 20, "dirichlet",
                                                                                                  100.0, 0)) - 3
    assert sizes(tasks.split_indices(y, 20, "quantity", 0.5, 0)) > 5 * sizes(tasks.split_indices(y, 20, "iid", 1, 0))


def _idx(path, arr):
    code = {np.uint8: 0x08}[arr.dtype.type]
    head = bytes([0, 0, code, arr.ndim]) + struct.pack(f">{arr.ndim}I", *arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(head + arr.tobytes())


def test_mnist_idx_reader_on_generated_files(tmp_path):
    from labcore.flalgos import files

    rng = np.random.default_rng(0)
    for split, n in (("train", 120), ("t10k", 40)):
        _idx(tmp_path / f"{split}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28), dtype=np.uint8))
        _idx(tmp_path / f"{split}-labels-idx1-ubyte.gz", rng.integers(0, 10, n, dtype=np.uint8))
    img = files.read_idx(tmp_path / "train-images-idx3-ubyte.gz")
    assert img.shape == (120, 28, 28) and img.dtype == np.uint8
    d = files.load_mnist(n_clients=4, split="iid", root=tmp_path, download=False)
    assert d.n_features == 784 and d.n_clients == 4 and len(d.y_train) + len(d.y_test) == 160
    assert float(d.x_train.max()) <= 1.0
    (tmp_path / "bad.gz").write_bytes(gzip.compress(b"\x01\x02\x03\x04"))
    with pytest.raises(ValueError, match="not an IDX file"):
        files.read_idx(tmp_path / "bad.gz")
    assert set(files.MNIST_FILES) == {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                      "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}
    assert all(len(h) == 64 for h in files.MNIST_FILES.values())


def test_femnist_leaf_reader_on_generated_files(tmp_path):
    from labcore.flalgos import files

    rng = np.random.default_rng(0)
    for part, n in (("train", 9), ("test", 3)):
        (tmp_path / "femnist" / part).mkdir(parents=True)
        users = [f"f{i:04d}" for i in range(3)]
        blob = {"users": users, "num_samples": [n] * 3,
                "user_data": {u: {"x": rng.random((n, 784)).round(3).tolist(), "y": rng.integers(0, 62, n).tolist()}
                              for u in users}}
        (tmp_path / "femnist" / part / "all_data_0.json").write_text(json.dumps(blob))
    d = files.load_femnist(n_clients=3, root=tmp_path)
    assert d.n_clients == 3 and d.n_classes == 62
    assert d.train_sizes.tolist() == [9, 9, 9] and d.test_sizes.tolist() == [3, 3, 3]


# --- bad input ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, field", [
    (dict(mu=-0.1), "mu"), (dict(q=-1.0), "q"), (dict(dirichlet_alpha=0.0), "dirichlet_alpha"),
    (dict(attack="replacement", attackers=40), "attackers"), (dict(algorithm="qffl", defense="median"), "defense"),
    (dict(secagg=True, defense="krum"), "defense"), (dict(defense="krum", krum_f=4), "krum_f"),
    (dict(algorithm="magic"), "algorithm"), (dict(clients_per_round=31), "clients_per_round"),
    (dict(attack="dba"), "attackers"), (dict(task="quadratic", algorithm="ditto"), "algorithm"),
])
def test_bad_input_names_field_and_allowed(bad, field):
    with pytest.raises(ConfigError, match=rf"^{field}=.* is invalid: "):
        FLConfig(**bad)


def test_same_config_same_numbers():
    a = Simulation(FLConfig(**DIGITS)).run().history
    b = Simulation(FLConfig(**DIGITS)).run().history
    assert a.drop(columns=[]).equals(b)
