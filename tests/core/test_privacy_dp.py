"""Differential privacy's math (labcore.privacy.dp): clipping, the fixed denominator, the Gaussian noise, Poisson
sampling, Opacus's accountants against closed forms, and bad input named by field."""
import math

import numpy as np
import pytest
import torch
from scipy import stats

from labcore.config import ConfigError, RunConfig
from labcore.fed import sampling as S
from labcore.fed.aggregate import aggregate, fedavg_weights
from labcore.fed.local_train import RowUpdate, SummedRows
from labcore.privacy import dp


def test_clipping_scales_only_the_updates_above_the_norm():
    x = torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    assert torch.equal(dp.clip_updates(x, 1.0), torch.tensor([[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]]))
    assert dp.clip_updates(x, math.inf) is x  # no clip: not one float operation on the values
    dense = torch.tensor([[[3.0, 0.0], [0.0, 4.0]], [[0.1, 0.0], [0.0, 0.0]]])  # client 0: norm 5, client 1: 0.1
    rows = RowUpdate.from_dense(dense, dense.abs().sum(2) > 0)
    assert torch.allclose(dp.clip_rows(rows, 1.0).dense(), dp.clip_updates(dense, 1.0))
    assert torch.allclose(dp.clip_rows(rows, 1.0).dense()[0].norm(), torch.tensor(1.0))
    buffer = torch.full_like(rows.values, float("nan"))  # the engine's reused buffer: the same values, in it
    assert torch.equal(dp.clip_rows(rows, 1.0, out=buffer).values, dp.clip_rows(rows, 1.0).values)
    assert dp.clip_rows(rows, 1.0, out=buffer).values.data_ptr() == buffer.data_ptr()


def test_the_sum_is_divided_by_the_expected_cohort_not_the_actual_one():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])  # two clients came; four were expected (q N = 4)
    g = torch.Generator().manual_seed(0)
    assert torch.equal(dp.noisy_mean(x, math.inf, 0.0, 4.0, g), torch.tensor([1.0, 1.5]))
    assert torch.equal(dp.noisy_mean(x, 1.0, 0.0, 4.0, g), dp.clip_updates(x, 1.0).sum(0) / 4)


def test_noise_std_on_a_known_sum():
    """All updates zero, so the sum is 0 and the output is the noise / denominator: its sample std over n = 40000
    values against sigma C / denominator, a two-sided chi-square test at level 0.001. Power: the sample std's
    relative spread is 1 / sqrt(2 n) = 0.35 %, so a std off by 2 % (5.7 spreads) is caught with power > 0.99."""
    sigma, C, denom, n = 1.3, 0.7, 5.0, 40_000
    out = dp.noisy_mean(torch.zeros(3, n), C, sigma, denom, torch.Generator().manual_seed(57)).double()
    want = sigma * C / denom
    chi2 = (n - 1) * out.var().item() / want**2
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], n - 1)
    assert lo < chi2 < hi
    assert abs(out.mean().item()) < 4 * want / math.sqrt(n)
    # and the same statistic rejects a std 2 % off
    assert not lo < (n - 1) * out.var().item() / (1.02 * want) ** 2 < hi


def test_poisson_sampling_rate():
    q, n = 0.03, 200_000
    got = dp.poisson_sample(n, q, np.random.default_rng(3))
    assert abs(len(got) - q * n) < 4 * math.sqrt(n * q * (1 - q))  # binomial: 4 standard deviations
    assert np.all(np.diff(got) > 0)
    sizes = [len(S.round_clients("poisson", 500, 20, 0, t)) for t in range(400)]  # the engine's cohorts
    assert abs(np.mean(sizes) - 20) < 4 * math.sqrt(500 * 0.04 * 0.96 / 400)
    assert len(set(sizes)) > 5  # a random size, not a fixed one


def test_rdp_at_full_participation_equals_the_composed_gaussian_closed_form():
    """q = 1: T rounds of the Gaussian mechanism have RDP T a / (2 sigma^2) at order a. Opacus turns RDP into
    (epsilon, delta) with Balle et al. 2020 (Thm. 21): eps = min_a T a/(2 s^2) + log(1/delta)/(a-1) + log((a-1)/a)
    - log(a)/(a-1), which is below Mironov's classic min_a T a/(2 s^2) + log(1/delta)/(a-1)."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis.rdp import compute_rdp
    T, sigma, delta = 20, 3.0, 1e-5
    a = np.array(RDPAccountant.DEFAULT_ALPHAS, dtype=np.float64)
    rdp = compute_rdp(q=1.0, noise_multiplier=sigma, steps=T, orders=a)
    assert np.allclose(rdp, T * a / (2 * sigma**2), rtol=1e-12)
    balle = np.min(T * a / (2 * sigma**2) + np.log(1 / delta) / (a - 1) + np.log((a - 1) / a) - np.log(a) / (a - 1))
    classic = np.min(T * a / (2 * sigma**2) + np.log(1 / delta) / (a - 1))
    eps = dp.epsilon_rdp(1.0, sigma, T, delta)
    assert eps == pytest.approx(balle, rel=1e-12)
    assert eps <= classic
    # the per-round accountant of the engine gives the same number
    assert dp.epsilon_of_rounds([sigma] * T, 1.0, delta) == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize("q,sigma,T", [(0.01, 1.0, 500), (0.1, 1.5, 50)])
def test_prv_estimate_is_at_most_the_rdp_bound(q, sigma, T):
    rdp, prv = dp.epsilon_rdp(q, sigma, T, 1e-5), dp.epsilon_prv(q, sigma, T, 1e-5)
    assert 0 < prv <= rdp


def test_noise_for_a_target_epsilon_spends_it():
    sigma = dp.noise_for_epsilon(2.0, 0.05, 100, 1e-5)
    assert dp.epsilon_rdp(0.05, sigma, 100, 1e-5) <= 2.0
    assert dp.epsilon_rdp(0.05, sigma * 0.97, 100, 1e-5) > 2.0 - 0.02  # not far more noise than needed
    assert dp.epsilon_rdp(0.05, 0.0, 100, 1e-5) == math.inf


def test_no_noise_and_no_clip_leave_a_real_rounds_aggregate_bit_for_bit(tiny):
    from labcore.fed.engine import Simulation
    cfg = RunConfig(method="fedmf", aggregation="weighted", clients_per_round=8, local_epochs=1, batch_size=16,
                    dim=8, rounds=1, eval_every=1)
    sim = Simulation(cfg, tiny)
    sim.keep_view = True
    sim.step()
    decoded, plan = sim.view["decoded"], sim.view["plan"]
    w = fedavg_weights(torch.from_numpy(plan.n_pos))
    rd = dp.RoundDP("central", 0.0, math.inf, 1e-5, 0.5, 8.0, 0.0, 1)
    g = torch.Generator().manual_seed(0)
    plain = aggregate(decoded, "weighted", w, None)
    # the engine adds each client's rows as the client ends: the same sum in another order, equal to rounding (how
    # far depends on the CPU's vector width: 1 float32 ulp on AVX-512)
    torch.testing.assert_close(plain, sim.view["aggregate"])
    private = aggregate(rd.privatize_clients(decoded, g), "weighted", w, None) + rd.server_noise((50, 8), g,
                                                                                                torch.float32)
    assert torch.equal(private, plain)
    rows = RowUpdate.from_dense(decoded, decoded.abs().sum(2) > 0)
    assert torch.equal(aggregate(rd.privatize_clients(rows, g), "weighted", w, None),
                       aggregate(rows, "weighted", w, None))


@pytest.mark.parametrize("kw,field", [
    (dict(dp_noise_multiplier=-0.5), "dp_noise_multiplier"),
    (dict(dp_clip=0.0), "dp_clip"),
    (dict(dp_clip=-1.0), "dp_clip"),
    (dict(dp_delta=1.0), "dp_delta"),
    (dict(dp_delta=-0.1), "dp_delta"),
    (dict(dp_mode="global"), "dp_mode"),
    (dict(client_schedule="uniform"), "client_schedule"),
    (dict(client_schedule="rotating"), "client_schedule"),
    (dict(aggregation="item_mean"), "aggregation"),
    (dict(defense="median"), "defense"),
    (dict(scaffold=True), "scaffold"),
])
def test_bad_input_names_the_field(kw, field):
    base = dict(dp_mode="central", dp_noise_multiplier=1.0, client_schedule="poisson", aggregation="weighted")
    with pytest.raises(ConfigError, match=rf"^{field}="):
        RunConfig(**{**base, **kw})


def test_bad_mechanism_parameters_name_the_field():
    with pytest.raises(ValueError, match="dp_noise_multiplier"):
        dp.epsilon_rdp(0.1, -1.0, 10, 1e-5)
    with pytest.raises(ValueError, match="dp_delta"):
        dp.epsilon_rdp(0.1, 1.0, 10, 0.0)
    with pytest.raises(ValueError, match="dp_sampling_rate"):
        dp.poisson_sample(10, 1.5, np.random.default_rng(0))


def test_a_target_the_rounds_cannot_meet_is_refused_by_name(tiny):
    from labcore.fed.engine import Simulation
    base = dict(client_schedule="poisson", aggregation="weighted", clients_per_round=6, rounds=3, dim=8)
    with pytest.raises(dp.PrivacyBudgetError, match="dp_target_epsilon"):  # one round at sigma 0.5 spends more
        Simulation(RunConfig(dp_mode="central", dp_noise_multiplier=0.5, dp_target_epsilon=0.01, **base), tiny)
    with pytest.raises(dp.PrivacyBudgetError, match="dp_target_epsilon"):  # no sigma Opacus can find
        dp.noise_for_epsilon(1e-9, 1.0, 10**6, 1e-5)


def test_a_poisson_round_is_never_empty_and_draws_the_same_for_the_same_seed():
    sizes = [len(S.round_clients("poisson", 50, 1, 0, t)) for t in range(200)]  # e^-1: a third of draws are empty
    assert min(sizes) >= 1
    assert np.array_equal(S.round_clients("poisson", 50, 1, 0, 7), S.round_clients("poisson", 50, 1, 0, 7))


@pytest.mark.parametrize("shape", [(3,), (15,), (16,), (17, 3), (3706, 64)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_noise_is_randn_times_its_std_to_the_bit(shape, dtype):
    """`gaussian` draws the noise scaled where that is faster; the numbers stay randn * std."""
    for std in (2.5e-3, 0.1, 0.37, 7.0):
        expected = torch.randn(shape, generator=torch.Generator().manual_seed(3), dtype=dtype).mul_(std)
        assert torch.equal(dp.gaussian(shape, std, torch.Generator().manual_seed(3), dtype), expected)


# --- the clients' noise drawn on the sum ----------------------------------------------------------------------
def _noisy_sum(rd, decoded, gen, noised=None):
    """The engine's DP step on a cohort before the fixed denominator: privatized (the clients in `noised` draw their
    own share, None: all), summed with equal weights, times the cohort, plus the server's noise, which carries the
    other clients' shares (`Simulation._uplink`)."""
    M = decoded.shape[0]
    agg = aggregate(rd.privatize_clients(decoded, gen, noised=noised), "weighted",
                    fedavg_weights(torch.ones(M, dtype=torch.int64)), None)
    return agg * M + rd.server_noise(agg.shape, gen, agg.dtype, 0 if noised is None else M - len(noised))


def _cohort(M, N, k, seed=0, scale=0.01):
    """A RowUpdate of M clients that touched a few rows each (norms about scale * sqrt(5 k))."""
    g = torch.Generator().manual_seed(seed)
    dense = torch.zeros(M, N, k)
    for m in range(M):
        dense[m, torch.randperm(N, generator=g)[:5]] = scale * torch.randn(5, k, generator=g)
    return RowUpdate.from_dense(dense, dense.abs().sum(2) > 0), dense


@pytest.mark.parametrize("mode", ["local", "distributed"])
def test_the_noise_drawn_on_the_sum_has_the_std_of_the_clients_shares(mode):
    """M = 5 clients below the clip, so the sum is known: the noise of the per-client path (each client noises its
    dense table), of the shortcut (one draw on the sum) and of the mix secure aggregation uses (clients 1 and 3
    noise their own tables, the other three shares are one draw on the sum), over n = 40000 values, each against
    s sqrt(M) (s a client's share) in a two-sided chi-square test at level 0.001, and the last two against the
    first in an F-test at level 0.001. Power: the sample variance's relative spread is sqrt(2 / n) = 0.7 %, so a
    std 2 % off (4 % in variance, 5.7 spreads) is rejected with power > 0.99, as the last line checks."""
    M, N, k, sigma, C = 5, 625, 64, 1.3, 0.7
    rd = dp.RoundDP(mode, sigma, C, 1e-5, 0.5, 6.0, 0.0, 1)
    rows, dense = _cohort(M, N, k)
    known = dense.sum(0).double()
    want = dp.client_noise_std(mode, sigma, C, 6.0) * math.sqrt(M)
    n, (lo, hi) = N * k, stats.chi2.ppf([0.0005, 0.9995], N * k - 1)
    noise = {}
    for noised in (None, (), (1, 3)):
        g = torch.Generator().manual_seed(11)
        noise[noised] = (_noisy_sum(rd, rows, g, noised).double() - known).ravel()
        assert lo < (n - 1) * noise[noised].var().item() / want**2 < hi
        assert abs(noise[noised].mean().item()) < 4 * want / math.sqrt(n)
    for noised in ((), (1, 3)):
        f = noise[noised].var().item() / noise[None].var().item()
        assert stats.f.ppf(0.0005, n - 1, n - 1) < f < stats.f.ppf(0.9995, n - 1, n - 1)
    assert not lo < (n - 1) * noise[()].var().item() / (1.02 * want) ** 2 < hi


@pytest.mark.parametrize("mode", ["local", "distributed"])
def test_without_noise_the_sum_shortcut_equals_the_per_client_path(mode):
    """sigma 0: only the clip is left, and the rows summed with their clip factors equal the dense per-client path
    (clip each client's table, sum) to float rounding, for a RowUpdate and for a dense cohort; the fixed
    denominator is the same."""
    rows, dense = _cohort(6, 40, 8, scale=0.2)  # norms about 1.3: a clip of 1.3 binds for some clients only
    norms = dense.reshape(6, -1).norm(dim=1)
    assert (norms > 1.3).any() and (norms < 1.3).any()
    rd = dp.RoundDP(mode, 0.0, 1.3, 1e-5, 0.5, 8.0, 0.0, 1)
    g = torch.Generator().manual_seed(0)
    clipped_dense = dp.clip_updates(dense, 1.3).sum(0)
    for cohort in (rows, dense):
        shortcut = _noisy_sum(rd, cohort, g, noised=())
        assert torch.allclose(shortcut, _noisy_sum(rd, cohort, g), rtol=1e-5, atol=1e-7)
        assert torch.allclose(shortcut, _noisy_sum(rd, cohort, g, noised=(0, 4)), rtol=1e-5, atol=1e-7)
        assert torch.allclose(shortcut, clipped_dense, rtol=1e-5, atol=1e-7)
    assert isinstance(rd.privatize_clients(rows, g, noised=()), SummedRows)  # no dense table was made


def test_the_per_client_path_draws_the_numbers_it_drew_with_whole_tables(monkeypatch):
    """The per-client path noises and clips in place and in chunks; the numbers are those of the whole-table
    arithmetic: `(x.double() ** 2).sum(1)` for the squared norms, `x + gaussian(x.shape)` for the noise."""
    monkeypatch.setattr(dp, "NOISE_CHUNK", 64)  # many chunks on small tables
    for shape in [(3,), (15,), (100,), (128,), (129,), (130,), (143,), (144,), (7, 3, 31), (5, 40, 9)]:
        for dtype in (torch.float32, torch.float64):
            x = torch.randn(shape, generator=torch.Generator().manual_seed(1), dtype=dtype)
            want = x + dp.gaussian(x.shape, 0.3, torch.Generator().manual_seed(2), dtype)
            assert torch.equal(dp.add_gaussian_(x.clone(), 0.3, torch.Generator().manual_seed(2)), want)
    for M in (1, 2, 3, 5, 6, 9):
        for n in (7, 40_000):  # 40000: more than torch's grain, where a lone row's sum is split in threads
            flat = torch.randn(M, n, generator=torch.Generator().manual_seed(M)) * torch.rand(M, 1)
            assert torch.equal(dp.sq_norms(flat), (flat.to(torch.float64) ** 2).sum(1))
            assert torch.equal(dp.clip_updates(flat.clone(), 0.5, overwrite=True), dp.clip_updates(flat, 0.5))
