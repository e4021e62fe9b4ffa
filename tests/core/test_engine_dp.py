"""Differential privacy in the engine's rounds: the epsilon column, the budget stop, distributed DP under secure
aggregation and its epsilon with dropouts, and the plain round untouched when DP is off."""
import math

import numpy as np
import pytest
import torch
from scipy import stats

from labcore.config import RunConfig
from labcore.fed import sampling as S
from labcore.fed.engine import Simulation, run
from labcore.privacy import dp

from conftest import assert_a_stopped_run_resumes, make_tiny

DP = dict(client_schedule="poisson", aggregation="weighted", clients_per_round=10, local_epochs=1, batch_size=16,
          dim=8, eval_every=4, rank_every=0)


def test_epsilon_grows_round_by_round_as_the_accountant_says(tiny):
    cfg = RunConfig(method="colr", rank=2, dp_mode="central", dp_noise_multiplier=1.2, dp_clip=0.5, rounds=4, **DP)
    res = run(cfg, data=tiny, use_cache=False, progress=False)
    eps = res.table["epsilon"].tolist()
    assert all(b > a > 0 for a, b in zip(eps, eps[1:]))
    q = 10 / tiny.n_users
    assert eps[-1] == pytest.approx(dp.epsilon_rdp(q, 1.2, 4, 1 / tiny.n_users), rel=1e-9)
    assert np.isfinite(res.table["hr"].dropna()).all()


def test_a_run_with_a_budget_stops_before_a_round_would_exceed_it(tiny, tmp_path):
    q, delta = 10 / tiny.n_users, 1 / tiny.n_users
    target = dp.epsilon_rdp(q, 1.0, 3, delta) + 1e-6  # three rounds fit, the fourth would not
    cfg = RunConfig(method="fedmf", dp_mode="central", dp_noise_multiplier=1.0, dp_target_epsilon=target, rounds=8,
                    **DP)
    res = run(cfg, data=tiny, cache_dir=tmp_path, progress=False)
    assert len(res.table) == 3 and res.complete
    assert res.table["epsilon"].iloc[-1] <= target
    assert "Stopped by the privacy budget after 3 of 8 rounds" in res.notes
    again = run(cfg, data=tiny, cache_dir=tmp_path, progress=False)  # the stored result, not a further round
    assert again.cached and len(again.table) == 3


def test_a_target_epsilon_alone_sets_the_noise_that_spends_it_in_the_rounds(tiny):
    cfg = RunConfig(method="fedmf", dp_mode="central", dp_target_epsilon=3.0, rounds=4, **DP)
    res = run(cfg, data=tiny, use_cache=False, progress=False)
    assert len(res.table) == 4 and 2.9 < res.table["epsilon"].iloc[-1] <= 3.0


def test_dp_off_leaves_the_plain_round_and_its_cache_key_unchanged(tiny):
    plain = RunConfig(method="fedmf", aggregation="weighted", clients_per_round=10, rounds=2, dim=8, eval_every=2)
    off = RunConfig(**{**plain.to_dict(), "dp_noise_multiplier": 0.0, "dp_clip": 1.0, "dp_mode": "none"})
    assert off.key() == plain.key()
    a = run(plain, data=tiny, use_cache=False, progress=False).table
    b = run(off, data=tiny, use_cache=False, progress=False).table
    assert a["loss"].tolist() == b["loss"].tolist() and a["hr"].dropna().tolist() == b["hr"].dropna().tolist()
    assert a["epsilon"].isna().all()


def _noise_of_round(cfg, data, clean_cfg) -> tuple[np.ndarray, int]:
    """The aggregate's noise in round 0: the noisy round's aggregate minus the same round's without noise."""
    views = []
    for c in (cfg, clean_cfg):
        sim = Simulation(c, data)
        sim.keep_view = True
        sim.step()
        views.append((sim.view["aggregate"].double(), int(len(sim.view["plan"].n_pos))))
    return (views[0][0] - views[1][0]).numpy().ravel(), views[0][1]


def test_distributed_noise_under_secure_aggregation_has_central_noise_std():
    """The unmasked sum of the clients' noise shares against the server's noise: their std, after the fixed
    denominator, is sigma C sqrt(M / M_expected) / M_expected and sigma C / M_expected. Each is a two-sided
    chi-square test at level 0.001 on the aggregate's 1600 values (the variance's relative spread sqrt(2 / 1600) =
    3.5 %: a std 10 % off moves the variance 6 spreads and is rejected with power > 0.99), and the two samples'
    variances agree in an F-test at level 0.001."""
    data = make_tiny(n_users=40, n_items=400, max_items=30)
    base = dict(DP, rounds=1, dp_noise_multiplier=0.8, dp_clip=0.3)
    noise_c, m_c = _noise_of_round(RunConfig(dp_mode="central", **base), data,
                                   RunConfig(**{**base, "dp_mode": "central", "dp_noise_multiplier": 0.0}))
    dist = dict(base, dp_mode="distributed", encryption="secagg")
    noise_d, m_d = _noise_of_round(RunConfig(**dist), data, RunConfig(**{**dist, "dp_noise_multiplier": 0.0}))
    assert m_c == m_d  # the same Poisson cohort
    n, lo_hi = noise_c.size, stats.chi2.ppf([0.0005, 0.9995], noise_c.size - 1)
    central_std = 0.8 * 0.3 / 10
    dist_std = central_std * math.sqrt(m_d / 10)
    for noise, std in ((noise_c, central_std), (noise_d, dist_std)):
        assert lo_hi[0] < (n - 1) * noise.var() / std**2 < lo_hi[1]
    f = (noise_d.var() * 10 / m_d) / noise_c.var()  # the distributed noise at the expected cohort
    assert stats.f.ppf(0.0005, n - 1, n - 1) < f < stats.f.ppf(0.9995, n - 1, n - 1)


def test_dropouts_lower_the_noise_and_the_table_accounts_what_was_left():
    data = make_tiny(n_users=40, n_items=60)
    cfg = RunConfig(method="fedmf", dp_mode="distributed", encryption="secagg", dropout=0.1, rounds=6,
                    dp_noise_multiplier=1.0, dp_clip=0.5, **{**DP, "eval_every": 6})
    res = run(cfg, data=data, use_cache=False, progress=False)
    t = res.table
    assert (t["clients_dropped"] > 0).any()
    assert (t["dp_sigma"] < 1.0).any()  # rounds whose survivors carried less than the full noise
    assert t["epsilon"].iloc[-1] == pytest.approx(dp.epsilon_of_rounds(t["dp_sigma"], 10 / 40, 1 / 40), rel=1e-12)
    full = dp.epsilon_rdp(10 / 40, 1.0, 6, 1 / 40)
    print(f"epsilon after 6 rounds with 10% dropout: {t['epsilon'].iloc[-1]:.4f} (nominal sigma: {full:.4f})")


def test_local_dp_is_accounted_without_amplification(tiny):
    cfg = RunConfig(method="fedmf", dp_mode="local", dp_noise_multiplier=2.0, rounds=2, **DP)
    res = run(cfg, data=tiny, use_cache=False, progress=False)
    assert res.table["epsilon"].iloc[-1] == pytest.approx(dp.epsilon_rdp(1.0, 2.0, 2, 1 / tiny.n_users), rel=1e-9)


def test_a_dp_run_resumes_to_the_same_numbers(tiny, tmp_path):
    cfg = RunConfig(method="fedmf", dp_mode="central", dp_noise_multiplier=1.0, rounds=5, checkpoint_every=1, **DP)
    assert_a_stopped_run_resumes(cfg, tiny, tmp_path, stop_after=2)


def test_central_dp_clips_on_arrival_with_the_numbers_of_the_table_up_to_rounding(tiny, monkeypatch):
    """Central FedMF clips each client's rows as the client ends (no update table); a round that keeps the table
    clips it into a buffer kept from round to round, unless the round's view is kept (attacks, app): those two give
    the same bits, and the sum on arrival their numbers up to the order its norms are summed in."""
    cfg = RunConfig(method="fedmf", dp_mode="central", dp_noise_multiplier=1.0, dp_clip=0.1, rounds=3, **DP)
    arrival, table, viewed = (Simulation(cfg, tiny) for _ in range(3))
    monkeypatch.setattr(table, "_sums_on_arrival", lambda t: False)
    viewed.keep_view = True
    rows = {}
    for name, sim in (("arrival", arrival), ("table", table), ("viewed", viewed)):
        rows[name] = [sim.step() for _ in range(cfg.rounds)]
    assert arrival._sums_on_arrival(0) and not viewed._sums_on_arrival(0)
    assert "dp_clipped" in table._workspace._bufs and "dp_clipped" not in arrival._workspace._bufs
    assert "dp_clipped" not in viewed._workspace._bufs
    assert torch.equal(table.Q, viewed.Q) and torch.equal(table.P, viewed.P)
    assert torch.allclose(arrival.Q, table.Q, rtol=1e-4, atol=1e-6)
    assert torch.allclose(arrival.P, table.P, rtol=1e-4, atol=1e-6)
    assert [r["epsilon"] for r in rows["arrival"]] == [r["epsilon"] for r in rows["table"]]


@pytest.mark.parametrize("mode", ["distributed", "local"])
def test_noise_shares_on_the_sum_on_arrival_give_the_numbers_of_the_table_up_to_rounding(tiny, mode, monkeypatch):
    """Where nothing reads a client's update, distributed and local DP sum the clipped rows as each client ends
    and draw the clients' noise shares on the sum, from the same stream as a round that keeps the update table."""
    cfg = RunConfig(method="fedmf", dp_mode=mode, dp_noise_multiplier=1.0, dp_clip=0.1, rounds=3, **DP)
    arrival, table = Simulation(cfg, tiny), Simulation(cfg, tiny)
    monkeypatch.setattr(table, "_sums_on_arrival", lambda t: False)
    rows = {name: [sim.step() for _ in range(cfg.rounds)] for name, sim in (("arrival", arrival), ("table", table))}
    assert arrival._sums_on_arrival(0)
    assert torch.allclose(arrival.Q, table.Q, rtol=1e-4, atol=1e-6)
    assert torch.allclose(arrival.P, table.P, rtol=1e-4, atol=1e-6)
    assert [r["epsilon"] for r in rows["arrival"]] == [r["epsilon"] for r in rows["table"]]


def _privatize_calls(monkeypatch) -> list:
    """Record `noised` of each call of RoundDP.privatize_clients (the clients that drew their own noise share)."""
    calls, original = [], dp.RoundDP.privatize_clients

    def spy(self, decoded, gen, out=None, noised=None):
        calls.append(None if noised is None else [int(m) for m in noised])
        return original(self, decoded, gen, out, noised)
    monkeypatch.setattr(dp.RoundDP, "privatize_clients", spy)
    return calls


@pytest.mark.parametrize("mode", ["local", "distributed"])
def test_each_client_noises_its_own_update_where_one_is_read(tiny, mode, monkeypatch):
    """The noise is drawn on the sum only for the clients whose update nothing reads alone: an attack view (the
    curious server) keeps every client's dense noised table, noise on every value, the rows the client did not
    touch too; secure aggregation masks the noised updates of its he_real_clients (the others are summed in
    plaintext, and their shares drawn on the sum)."""
    calls = _privatize_calls(monkeypatch)
    cfg = RunConfig(method="fedmf", dp_mode=mode, dp_noise_multiplier=1.0, dp_clip=0.5, rounds=1, **DP)
    for method, extra in (("fedmf", {}), ("colr", {"rank": 2})):  # FedMF sums on arrival; CoLR's A table is summed
        Simulation(cfg.replace(method=method, **extra), tiny).step()
    viewed = Simulation(cfg, tiny)
    viewed.keep_view = True
    viewed.step()
    masked = Simulation(cfg.replace(encryption="secagg", he_real_clients=3), tiny)
    masked.step()
    M = len(S.round_clients("poisson", tiny.n_users, cfg.clients_per_round, cfg.seed, 0))
    real = masked.secure.real_clients(0, M).tolist()
    assert calls == [[], None, real] and len(real) == 3
    decoded = viewed.view["decoded"]
    assert decoded.shape == (len(viewed.view["plan"].n_pos), tiny.n_items, cfg.dim) and bool((decoded != 0).all())


@pytest.mark.parametrize("method,extra", [("fedmf", {}), ("colr", {"rank": 2})])
@pytest.mark.parametrize("mode", ["local", "distributed"])
def test_without_noise_the_sum_shortcut_gives_the_per_client_numbers(tiny, mode, method, extra):
    """sigma 0 leaves the clip alone: three rounds with the noise on the sum and three with each client's own
    table (the kept view forces it) give the same model to float rounding."""
    cfg = RunConfig(method=method, dp_mode=mode, dp_noise_multiplier=0.0, dp_clip=0.05, rounds=3, **extra, **DP)
    summed, per_client = Simulation(cfg, tiny), Simulation(cfg, tiny)
    per_client.keep_view = True
    for _ in range(cfg.rounds):
        summed.step(), per_client.step()
    assert torch.allclose(summed.Q, per_client.Q, rtol=1e-5, atol=1e-7)
    assert torch.allclose(summed.P, per_client.P, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("encryption", ["none", "secagg"])
@pytest.mark.parametrize("mode", ["local", "distributed"])
def test_the_noise_drawn_on_the_sum_in_a_round_has_the_shares_std(mode, encryption):
    """FedMF's round-0 change of the item table with noise minus without (the same cohort and training): the
    noise on the sum after the fixed denominator, s sqrt(M) / M_expected (s a client's share: sigma C locally,
    sigma C / sqrt(M_expected) distributed), in a two-sided chi-square test at level 0.001 on its 3200 values.
    Power: the variance's relative spread is sqrt(2 / 3200) = 2.5 %, so a std 10 % off (21 % in variance, 8
    spreads) is rejected with power > 0.99. Under secure aggregation two clients noise their own masked tables and
    the others' shares are one draw on the sum."""
    data = make_tiny(n_users=40, n_items=400, max_items=30)
    cfg = RunConfig(method="fedmf", dp_mode=mode, dp_noise_multiplier=0.8, dp_clip=0.3, rounds=1,
                    encryption=encryption, **DP)
    noisy, clean = Simulation(cfg, data), Simulation(cfg.replace(dp_noise_multiplier=0.0), data)
    assert torch.equal(noisy.Q, clean.Q)
    noisy.step(), clean.step()
    M = len(S.round_clients("poisson", data.n_users, 10, cfg.seed, 0))  # the round's cohort
    noise = (noisy.Q.double() - clean.Q.double()).numpy().ravel()
    want = dp.client_noise_std(mode, 0.8, 0.3, 10.0) * math.sqrt(M) / 10
    n, (lo, hi) = noise.size, stats.chi2.ppf([0.0005, 0.9995], noise.size - 1)
    assert lo < (n - 1) * noise.var() / want**2 < hi
    assert not lo < (n - 1) * noise.var() / (1.1 * want) ** 2 < hi
