"""Every algorithm recovers the easy problem; the harness's budget, logging, cache and processes; Fig. 1's
ordering on a small case; real ratings read from a file written here in the u.data format."""
import math

import numpy as np
import pandas as pd
import pytest

from labcore.completion.algorithms import REGISTRY, make
from labcore.completion.config import ALGORITHMS, CompletionConfig
from labcore.completion.harness import COLUMNS, race_one, run, run_many
from labcore.completion.problem import make_problem

EASY = dict(n=500, m=500, rank=2, share=0.4, kappa=2.0)
ITERS = {"fgd": 400, "soft_impute": 300, "scaled_gd": 300, "asd": 200, "lmafit": 200}


def test_every_algorithm_is_registered_behind_one_interface():
    assert tuple(REGISTRY) == ALGORITHMS
    p = make_problem(CompletionConfig(n=60, m=60, rank=2, share=0.5, psd=True))
    for name in ALGORITHMS:
        alg = make(name, p, 2)
        alg.init()
        alg.step()
        U, V = alg.factors()
        assert U.shape == (60, 2) and V.shape == (60, 2) and alg.iteration == 1


@pytest.mark.parametrize("name", ALGORITHMS)
def test_recovers_the_easy_problem(name):
    cfg = CompletionConfig(**EASY, psd=(name == "fgd"), algorithm=name, max_iters=ITERS.get(name, 100),
                           budget_s=600.0, log_points=40, stop_below=1e-10)
    df = race_one(cfg)
    assert df["error"].min() < 1e-8, df[["iteration", "error"]].tail()


def test_fig1_ordering_irls_converges_where_asd_stalls():
    hard = dict(n=500, m=500, rank=2, share=0.05, kappa=200.0, budget_s=600.0, log_points=10)
    asd = race_one(CompletionConfig(**hard, algorithm="asd", max_iters=300))
    irls = race_one(CompletionConfig(**hard, algorithm="irls", max_iters=40, stop_below=1e-9))
    assert asd["error"].min() > 1e-2
    assert irls["error"].min() < 1e-6


def test_harness_log_is_tidy_and_within_budget():
    cfg = CompletionConfig(n=200, m=200, rank=2, share=0.3, algorithm="asd", budget_s=0.5, log_points=10)
    df = race_one(cfg)
    assert list(df.columns) == list(COLUMNS)
    assert (df["t"] <= cfg.budget_s).all() and df["t"].is_monotonic_increasing
    assert df["iteration"].is_monotonic_increasing and (df["key"] == cfg.key()).all()
    assert df["error"].iloc[-1] < df["error"].iloc[0]


def test_the_budget_is_cpu_time_of_the_thread_not_wall_clock(monkeypatch):
    """A fake CPU clock that advances 1 s per reading while the wall-clock barely moves: the run stops by the
    CPU clock (init + 3 steps of 1 s fit a 4.5 s budget, the 4th step would end at 5 s), wall_s is logged."""
    import labcore.completion.harness as H

    ticks = iter(range(10**6))
    monkeypatch.setattr(H.time, "thread_time", lambda: float(next(ticks)))
    cfg = CompletionConfig(n=100, m=100, rank=2, share=0.3, algorithm="asd", budget_s=4.5, log_points=50)
    df = race_one(cfg)
    assert df["iteration"].max() == 3 and df["t"].iloc[-1] == 4.0
    assert (df["wall_s"] < df["t"]).all() and (df["wall_s"] >= 0).all()


def test_asd_starts_from_the_authors_split_of_the_exact_svd():
    """Tanner & Wei's start: X0 = U_r S_r, Y0 = V_r of the exact top-r SVD of P(M) / share."""
    p = make_problem(CompletionConfig(n=300, m=300, rank=2, share=0.1, kappa=200.0))
    alg = make("asd", p, 2)
    alg.init()
    X, Y = alg.factors()
    np.testing.assert_allclose(Y.T @ Y, np.eye(2), atol=1e-10)
    dense = np.linalg.svd(p.matrix(p.vals / p.share_seen).toarray())
    np.testing.assert_allclose(np.abs(Y.T @ dense[2][:2].T), np.eye(2), atol=1e-6)


def test_iteration_mode_is_deterministic_and_cached(tmp_path):
    cfg = CompletionConfig(n=150, m=150, rank=2, share=0.3, algorithm="lmafit", max_iters=12, log_points=5,
                           budget_s=600.0)
    a = run(cfg)
    assert a["iteration"].tolist() == [0, 3, 6, 9, 12]
    b = race_one(cfg)
    np.testing.assert_array_equal(a["error"].to_numpy(), b["error"].to_numpy())
    again = run(cfg)  # from the cache: the logged times are the first run's
    assert again["t"].tolist() == a["t"].tolist()


def test_run_many_in_two_processes_equals_one_process():
    cfgs = [CompletionConfig(n=120, m=120, rank=2, share=0.4, algorithm=a, max_iters=8, log_points=3,
                             budget_s=600.0) for a in ("asd", "scaled_asd", "niht")]
    two = run_many(cfgs, jobs=2)
    one = pd.concat([race_one(c) for c in cfgs], ignore_index=True)
    assert two["algorithm"].tolist() == one["algorithm"].tolist()
    np.testing.assert_allclose(two["error"].to_numpy(), one["error"].to_numpy(), rtol=1e-9)


def test_divergence_is_recorded_and_stops_the_run():
    # ScaledGD's fixed step is too long for this hard problem: its error blows up
    cfg = CompletionConfig(n=300, m=300, rank=2, share=0.05, kappa=200.0, algorithm="scaled_gd", max_iters=3000,
                           log_points=60, budget_s=600.0)
    df = race_one(cfg)
    assert df["diverged"].iloc[-1] and math.isinf(df["error"].iloc[-1])
    assert df["iteration"].iloc[-1] < 3000


def test_noisy_rectangular_problem_runs_to_the_noise_level():
    cfg = CompletionConfig(m=150, n=250, rank=3, share=0.4, noise=1e-3, algorithm="scaled_asd", max_iters=60,
                           log_points=4, budget_s=600.0)
    err = race_one(cfg)["error"].iloc[-1]
    assert 1e-5 < err < 1e-2


def _write_udata(folder, n_users=40, n_items=30, seed=0):
    rng = np.random.default_rng(seed)
    u, v = rng.random((n_users, 2)), rng.random((n_items, 2))
    lines = []
    for i in range(n_users):
        for j in rng.choice(n_items, 15, replace=False):
            r = int(np.clip(np.round(1 + 2 * u[i] @ v[j] * 2), 1, 5))
            lines.append(f"{i + 1}\t{j + 1}\t{r}\t{881250949 + i}")
    (folder / "ml-100k").mkdir()
    (folder / "ml-100k" / "u.data").write_text("\n".join(lines) + "\n")
    return len(lines)


def test_ratings_problem_from_a_u_data_file(tmp_path, monkeypatch):
    from labcore.completion import ratings

    total = _write_udata(tmp_path)
    monkeypatch.setenv("LABCORE_DATA", str(tmp_path))
    ratings.read_ratings.cache_clear()
    cfg = CompletionConfig(dataset="ml-100k", m=1000, n=1000, rank=2, share=0.3, algorithm="asd", max_iters=5,
                           log_points=3, budget_s=600.0)
    p = make_problem(cfg)
    assert p.n_seen + len(p.test_vals) == total and abs(p.n_seen / total - 0.3) < 0.08
    df = race_one(cfg)
    assert {"error", "rmse"} <= set(df.columns) and df["rmse"].notna().all()
    ratings.read_ratings.cache_clear()


def test_missing_ratings_file_says_where_to_put_it(tmp_path, monkeypatch):
    from labcore.completion import ratings
    from labcore.data.errors import DatasetNotFoundError

    monkeypatch.setenv("LABCORE_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("labcore.data.locations.data_home", lambda: tmp_path / "nowhere")
    with pytest.raises(DatasetNotFoundError, match="ratings.dat"):
        ratings.find_ratings("ml-1m", download=False)


def test_exercise_checks_compute_their_answers():
    from labcore.completion import exercises as ex

    assert ex.check_degrees_of_freedom(..., 300, 300, 2).ok is None
    assert ex.check_degrees_of_freedom(2 * (600 - 2), 300, 300, 2).ok
    assert not ex.check_degrees_of_freedom(600, 300, 300, 2).ok
    assert ex.check_min_share(2 * (600 - 2) / 300 ** 2, n=300, rank=2).ok
    assert not ex.check_min_share(0.5, n=300, rank=2).ok
    race = pd.DataFrame({"algorithm": ["asd", "asd", "irls", "irls"], "t": [0.1, 0.5, 0.1, 0.3],
                         "error": [1e-3, 1e-9, 1e-2, 1e-10]})
    assert ex.check_fastest("irls", race).ok and not ex.check_fastest("asd", race).ok
    cfg = ex.lab_config(paper=False)
    assert ex.lab_config(paper=True).n == 1000 and cfg.n == 300 and ex.lab_config(rank=3).rank == 3


def test_ml100k_ratings_problem_from_the_real_file():
    from conftest import shared_data

    from labcore.completion import ratings

    if shared_data() is None or not (shared_data() / "ml-100k" / "u.data").exists():
        pytest.skip("LABCORE_DATA with ml-100k/u.data is not set")
    ratings.read_ratings.cache_clear()
    p = make_problem(CompletionConfig(dataset="ml-100k", m=100_000, n=100_000, rank=5, share=0.3))
    assert (p.m, p.n) == (943, 1682) and p.n_seen + len(p.test_vals) == 100_000
    assert abs(p.n_seen - 30_000) < 600 and set(np.unique(p.vals)) == {1.0, 2.0, 3.0, 4.0, 5.0}
    df = race_one(CompletionConfig(dataset="ml-100k", m=100_000, n=100_000, rank=5, share=0.3, algorithm="asd",
                                   max_iters=300, log_points=30, budget_s=600.0))
    # fitting the 30 % seen ratings ever closer: the held-out error passes a minimum and rises (Fig. 4)
    assert df["fit"].iloc[-1] < df["fit"].iloc[0]
    assert df["error"].iloc[-1] > 1.05 * df["error"].min()
    ratings.read_ratings.cache_clear()
