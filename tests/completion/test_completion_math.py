"""Exact small cases for the completion topic: the stable error, the sparse operations, the problem generator,
the information limit and the config's errors."""
import warnings

import numpy as np
import pytest

from labcore.completion.config import CompletionConfig, ConfigError, from_dict
from labcore.completion.errors import dense_relative_error, relative_error, trace_error
from labcore.completion.ops import lowrank_plus_sparse_svd, sample
from labcore.completion.problem import InformationLimitWarning, _triangle, make_problem, spectrum


@pytest.mark.parametrize("m,n,r1,r2", [(7, 5, 1, 2), (30, 40, 3, 3), (60, 25, 5, 2)])
def test_stable_error_matches_dense(m, n, r1, r2):
    rng = np.random.default_rng(m)
    U, V, A, B = (rng.standard_normal(s) for s in ((m, r1), (n, r1), (m, r2), (n, r2)))
    assert relative_error(U, V, A, B) == pytest.approx(dense_relative_error(U, V, A, B), rel=1e-12)


def test_stable_error_resolves_tiny_errors_where_traces_floor():
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((80, 3)), rng.standard_normal((60, 3))
    for size in (1e-6, 1e-10, 1e-13):
        U = A + size * rng.standard_normal(A.shape)
        dense = dense_relative_error(U, B, A, B)
        assert relative_error(U, B, A, B) == pytest.approx(dense, rel=1e-4)
    # the same factors give exactly zero; the trace formula cannot see below ~1e-8
    assert relative_error(A, B, A, B) < 1e-14
    U = A + 1e-13 * rng.standard_normal(A.shape)
    assert relative_error(U, B, A, B) < 1e-11
    assert trace_error(U, B, A, B) > 1e-10 or trace_error(U, B, A, B) == 0.0


def test_sample_is_the_dense_product_on_the_entries():
    rng = np.random.default_rng(2)
    U, V = rng.standard_normal((9, 3)), rng.standard_normal((7, 3))
    rows, cols = rng.integers(0, 9, 20), rng.integers(0, 7, 20)
    np.testing.assert_allclose(sample(U, V, rows, cols), (U @ V.T)[rows, cols], rtol=1e-13)


def test_lowrank_plus_sparse_svd_matches_dense_svd():
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    L, R = rng.standard_normal((50, 2)) * [10, 5], rng.standard_normal((40, 2))
    S = sp.random(50, 40, density=0.1, random_state=4, format="csr")
    W = L @ R.T + S.toarray()
    U, s, V = lowrank_plus_sparse_svd(S, L, R, 2, rng, power_iters=6)
    np.testing.assert_allclose(s, np.linalg.svd(W, compute_uv=False)[:2], rtol=1e-8)
    np.testing.assert_allclose(np.abs(np.sum(U * (W @ V), axis=0)), s, rtol=1e-8)


def test_top_svd_is_exact_where_a_sketch_mixes_the_noise_bulk():
    """Fig. 1's kind of problem: sigma_2 of M* is inside the sampling noise of P(M) / share, so sigma_2 and sigma_3
    of the seen matrix are close; the start must still be its exact top-2 SVD."""
    from labcore.completion.algorithms.base import top_svd
    from labcore.completion.config import CompletionConfig
    from labcore.completion.problem import make_problem

    p = make_problem(CompletionConfig(n=400, m=400, rank=2, share=0.05, kappa=200.0))
    S = p.matrix(p.vals / p.share_seen)
    U, s, V = top_svd(S, 2, np.random.default_rng(0))
    dU, ds, dVt = np.linalg.svd(S.toarray())
    np.testing.assert_allclose(s, ds[:2], rtol=1e-8)
    np.testing.assert_allclose(np.abs(np.sum(U * dU[:, :2], axis=0)), 1.0, atol=1e-6)


def test_spectrum_has_the_condition_number():
    s = spectrum(5, 200.0)
    assert s[0] / s[-1] == pytest.approx(200.0) and np.all(np.diff(s) < 0)


def test_synthetic_problem_rectangular_share_rank_and_noise():
    cfg = CompletionConfig(m=60, n=90, rank=3, share=0.3, kappa=20.0)
    p = make_problem(cfg)
    assert (p.m, p.n) == (60, 90) and p.n_seen == round(0.3 * 60 * 90)
    assert len(set(zip(p.rows, p.cols))) == p.n_seen and np.all(np.diff(p.rows) >= 0)  # distinct, CSR order
    A, B = p.truth
    sv = np.linalg.svd(A @ B.T, compute_uv=False)
    assert sv[0] / sv[2] == pytest.approx(20.0) and sv[3] < 1e-12
    np.testing.assert_allclose(p.vals, (A @ B.T)[p.rows, p.cols], rtol=1e-12)
    noisy = make_problem(cfg.replace(noise=0.1))
    rel = np.linalg.norm(noisy.vals - p.vals) / np.linalg.norm(p.vals)
    assert rel == pytest.approx(0.1, rel=0.1)
    assert make_problem(cfg).vals.tolist() == p.vals.tolist()  # same config, same problem


def test_psd_problem_is_symmetric():
    p = make_problem(CompletionConfig(m=40, n=40, rank=2, share=0.3, psd=True, noise=0.01))
    M = p.matrix(p.vals).toarray()
    np.testing.assert_allclose(M, M.T)
    A, B = p.truth
    assert np.linalg.eigvalsh(A @ B.T).min() > -1e-12


def test_triangle_indexing():
    n = 6
    lin = np.arange(n * (n + 1) // 2)
    i, j = _triangle(lin, n)
    expected = [(a, b) for a in range(n) for b in range(a, n)]
    assert list(zip(i.tolist(), j.tolist())) == expected


def test_information_limit_warns_and_names_the_numbers():
    cfg = CompletionConfig(m=100, n=100, rank=20, share=0.2)  # 2000 seen < 20 * 180 = 3600
    assert cfg.below_information_limit() and cfg.degrees_of_freedom() == 3600
    with pytest.warns(InformationLimitWarning, match="3,600 degrees of freedom"):
        make_problem(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_problem(cfg.replace(share=0.4))  # 4000 >= 3600: no warning


@pytest.mark.parametrize("bad,field,text", [
    (dict(rank=50, m=50, n=80), "rank", "min(m, n) = 50"),
    (dict(share=0.0), "share", "(0, 1]"),
    (dict(share=1.5), "share", "(0, 1]"),
    (dict(algorithm="als"), "algorithm", "asd, scaled_asd"),
    (dict(algorithm="fgd"), "algorithm", "PSD"),
    (dict(psd=True, m=10, n=12, rank=2), "psd", "square"),
    (dict(dataset="netflix"), "dataset", "ml-100k"),
])
def test_bad_input_names_the_field(bad, field, text):
    with pytest.raises(ConfigError, match=f"^{field}=") as e:
        CompletionConfig(**bad)
    assert text in str(e.value)


def test_from_dict_coerces_strings_and_rejects_unknown_fields():
    assert from_dict({"n": "300", "share": "0.1"}).n == 300
    with pytest.raises(ConfigError, match="valid fields are"):
        from_dict({"size": 3})
    assert CompletionConfig().key() == CompletionConfig().key() != CompletionConfig(seed=1).key()
