"""The low-rank SDP topic's math: problem validation, the mixing kernels against a plain loop, certificates,
every method against cvxpy/SCS, Goemans-Williamson rounding, the graph loaders."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import shared_data
from labcore.sdp import graphs
from labcore.sdp import mixing_kernels as K
from labcore.sdp.certificates import certificate, normalize_rows
from labcore.sdp.config import SdpConfig
from labcore.sdp.mixing import csr_arrays, initial_factor
from labcore.sdp.problem import ProblemError, check_rank, cut_value, diag_sdp, maxcut
from labcore.sdp.rounding import GW_ALPHA, best_cut, round_cuts
from labcore.sdp.run import run, solve
from labcore.typed_config import ConfigError

TRIANGLE = np.ones((3, 3)) - np.eye(3)


# --- the problem and its validation ------------------------------------------------------------------------
def test_triangle_sdp_value_is_nine_quarters():
    """Three unit vectors at 120 degrees: (1/4) * 6 * (1 - cos 120) = 2.25, above the best cut 2."""
    p = maxcut(TRIANGLE)
    ang = 2 * np.pi * np.arange(3) / 3
    V = np.column_stack([np.cos(ang), np.sin(ang)])
    cert = certificate(p, V)
    assert cert.primal == pytest.approx(2.25, abs=1e-12)
    assert cert.bound == pytest.approx(2.25, abs=1e-9)  # the dual point proves it optimal
    assert cut_value(p, np.array([1, -1, 1])) == 2.0


@pytest.mark.parametrize("W, field, words", [
    (np.array([[0, 1.0], [0, 0]]), "W", "not symmetric"),
    (np.array([[0, -1.0], [-1, 0]]), "W", "negative weights"),
    (np.zeros((4, 4)), "W", "no edges"),
    (np.zeros((0, 0)), "W", "empty"),
    (np.ones((2, 3)), "W", "not square"),
])
def test_bad_graphs_fail_naming_the_field(W, field, words):
    with pytest.raises(ProblemError, match=rf"^{field} is invalid: .*{words}"):
        maxcut(W)


def test_signed_problems_are_allowed_but_must_be_symmetric():
    C = np.array([[0, -1.0, 2], [-1, 0, 0.5], [2, 0.5, 0]])
    assert diag_sdp(C).n == 3
    with pytest.raises(ProblemError, match="^C is invalid: the matrix is not symmetric"):
        diag_sdp(np.triu(C))


@pytest.mark.parametrize("k", [0, -2, 1.5, True])
def test_rank_must_be_a_positive_integer(k):
    with pytest.raises(ProblemError, match=r"^k=.* is invalid: the rank k .* integer >= 1"):
        check_rank(k)


@pytest.mark.parametrize("bad, field", [({"k": -1}, "k"), ({"method": "sdpt3"}, "method"), ({"rule": "best"}, "rule"),
                                        ({"n": 1}, "n"), ({"tol": 0.0}, "tol"),
                                        ({"method": "mixing++", "rule": "greedy"}, "rule"),
                                        ({"avg_degree": 200.0}, "avg_degree")])
def test_config_errors_name_the_field(bad, field):
    with pytest.raises(ConfigError, match=rf"^{field}=.* is invalid: "):
        SdpConfig(**bad)


def test_same_config_same_numbers():
    cfg = SdpConfig(method="mixing", rule="uniform", max_iters=20)
    a, b = run(cfg).trace, run(cfg).trace
    assert np.array_equal(a["primal"].to_numpy(), b["primal"].to_numpy())
    assert cfg.key() == SdpConfig(method="mixing", rule="uniform", max_iters=20).key() != SdpConfig().key()


# --- the mixing kernels -------------------------------------------------------------------------------------
@pytest.mark.parametrize("beta", [0.0, 0.8])
def test_numba_sweep_equals_the_plain_loop(beta):
    p = maxcut(graphs.random_graph(60, 5, seed=3, weighted=True))
    arrays = csr_arrays(p)
    order = np.random.default_rng(0).integers(0, 60, 120).astype(np.int64)
    V1 = initial_factor(60, 8, 1)
    V2 = V1.copy()
    K.sweep_order(*arrays, V1, order, beta)
    K.python_sweep(*arrays, V2, order, beta)
    np.testing.assert_allclose(V1, V2, atol=1e-12)


def test_each_mixing_update_lowers_the_objective():
    p = maxcut(graphs.random_graph(50, 4, seed=1))
    arrays = csr_arrays(p)
    V = initial_factor(50, 6, 0)
    last = p.objective(V)
    for i in range(50):
        K.sweep_order(*arrays, V, np.array([i], dtype=np.int64), 0.0)
        now = p.objective(V)
        assert now <= last + 1e-12
        last = now


def test_greedy_picks_the_largest_decrease_and_keeps_g_exact():
    p = maxcut(graphs.random_graph(40, 4, seed=2))
    V = initial_factor(40, 5, 0)
    G = p.C @ V
    gains = np.linalg.norm(G, axis=1) + np.einsum("ij,ij->i", V, G)
    before = p.objective(V)
    assert K.greedy_steps(*csr_arrays(p), V, G, 1) == 1
    assert before - p.objective(V) == pytest.approx(2 * gains.max(), rel=1e-10)  # the picked block's decrease
    K.greedy_steps(*csr_arrays(p), V, G, 30)
    np.testing.assert_allclose(G, p.C @ V, atol=1e-10)


def test_the_dual_bound_is_a_bound_for_any_point():
    p = maxcut(graphs.random_graph(80, 4, seed=4))
    cert_opt = run(SdpConfig(n=80, graph_seed=4, method="mixing++", max_iters=400, tol=1e-9)).final
    for seed in range(3):
        c = certificate(p, normalize_rows(np.random.default_rng(seed).normal(size=(80, 3))))
        assert c.primal <= cert_opt["bound"] + 1e-9 and c.bound >= cert_opt["primal"] - 1e-9


# --- every method against cvxpy/SCS ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def scs_optimum():
    from labcore.sdp.reference import reference_optimum

    cfg = SdpConfig(n=100, avg_degree=4.0, graph_seed=7)
    from labcore.sdp.run import build_problem

    p = build_problem(cfg)
    return p, reference_optimum(p, eps=1e-8)[0]


@pytest.mark.parametrize("method, extra", [
    ("mixing", {"rule": "cyclic"}), ("mixing", {"rule": "uniform"}), ("mixing", {"rule": "importance"}),
    ("mixing", {"rule": "greedy"}), ("mixing++", {}), ("bm", {"max_iters": 40}),
    ("inface", {"max_iters": 1500, "cert_every": 0}),
    pytest.param("hazan", {"max_iters": 3000, "cert_every": 0}, marks=pytest.mark.slow),
])
def test_every_method_matches_scs_within_1e4(scs_optimum, method, extra):
    p, opt = scs_optimum
    cfg = SdpConfig(n=100, graph_seed=7, method=method, tol=1e-7, **{"max_iters": 1000, **extra})
    final = solve(p, cfg).final
    assert abs(final["primal"] - opt) / opt < 1e-4, (final["primal"], opt)
    assert final["primal"] <= opt + 1e-5 * opt and final["bound"] >= opt - 1e-5 * opt  # certified both sides


def test_hazan_rank_grows_at_most_one_per_step_and_its_value_approaches_scs(scs_optimum):
    p, opt = scs_optimum
    tr = solve(p, SdpConfig(n=100, graph_seed=7, method="hazan", max_iters=300, tol=1e-9)).trace
    assert (tr["rank"] <= tr["iter"] + 1).all()
    assert abs(tr["primal"].iloc[-1] - opt) / opt < 5e-3


def test_synchronization_problem_recovers_signs():
    cfg = SdpConfig(graph="sync", n=120, noise=0.5, method="mixing", max_iters=300, tol=1e-8)
    res = run(cfg)
    _, z = graphs.synchronization(120, 0.5, 0)
    x = np.sign(res.V @ np.linalg.svd(res.V, full_matrices=False)[2][0])
    assert abs(x @ z) / 120 > 0.9


# --- rounding --------------------------------------------------------------------------------------------------
def test_rounding_beats_the_goemans_williamson_ratio():
    res = run(SdpConfig(n=100, graph_seed=7, method="mixing++", tol=1e-7))
    vals = round_cuts(res.problem, res.V, trials=100)
    sdp = res.final["bound"]
    assert (vals <= sdp + 1e-9).all()  # no cut beats the relaxation
    best, x = best_cut(res.problem, res.V, trials=100)
    assert best == vals.max() == cut_value(res.problem, x)
    assert best / sdp >= GW_ALPHA


# --- loaders ------------------------------------------------------------------------------------------------------
def test_planetoid_graph_loader_reads_the_pickled_dict(tmp_path):
    from collections import defaultdict

    adj = defaultdict(list, {0: [1, 2, 2], 1: [0], 2: [0, 2], 3: []})  # repeats and a self-loop, as in Planetoid
    (tmp_path / "planetoid").mkdir()
    with open(tmp_path / "planetoid" / "ind.cora.graph", "wb") as f:
        pickle.dump(adj, f, protocol=2)
    A = graphs.cora(root=tmp_path)
    assert A.shape == (4, 4) and A.nnz == 4 and (A != A.T).nnz == 0 and A.diagonal().sum() == 0


def test_trust_network_loader_reads_crlf_pairs(tmp_path):
    (tmp_path / "lastfm").mkdir()
    (tmp_path / "lastfm" / "trustnetwork.txt").write_bytes(b"1\t3\r\n3\t1\r\n2\t3\r\n")
    A = graphs.lastfm(root=tmp_path)
    assert A.shape == (3, 3) and A.nnz == 4


def test_missing_graph_says_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LABCORE_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(graphs.GraphNotFound, match="LABCORE_DATA"):
        graphs.lastfm(root=tmp_path / "nowhere")


@pytest.mark.skipif(shared_data() is None, reason="LABCORE_DATA not set")
def test_real_graphs_have_the_documented_sizes():
    A = graphs.cora()
    assert A.shape == (2708, 2708) and A.nnz == 2 * 5278
    B = graphs.lastfm()
    assert B.shape == (1892, 1892) and B.nnz == 2 * 12717
