"""Figure cards of the DP topic (registered on import). They are lab experiments, not a paper's numbers: each card
checks the shape the mechanism implies (stated in `expected`), and `paper` holds that claim. So every compared row
is a claim (kind "claim") or shown for information (kind "shown"), never a number; where the runs have several
seeds, an ordering holds only by more than SE_MARGIN standard errors of the seeds."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures.registry import FigureCard, register
from . import experiments as ex
from . import plots

LAB = "lab experiment (not a paper's numbers)"


def _claims(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=["quantity", "claim"])


SE_MARGIN = 2


def _claim(quantity, claim, ours, ok, note=""):
    return {"quantity": quantity, "paper": claim, "ours": ours, "ok": bool(ok), "kind": "claim", "note": note}


def _shown(quantity, claim, ours, note=""):
    return {"quantity": quantity, "paper": claim, "ours": ours, "ok": None, "kind": "shown", "note": note}


def _mean_se(values: pd.Series) -> tuple[float, float]:
    """Mean over seeds and its standard error (0 with one seed: no spread to judge by)."""
    n = values.count()
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0


def _falls(means: list[float], ses: list[float]) -> tuple[bool, str]:
    """Falls as the noise grows: no step up by more than the seeds' noise, and the last clearly below the first."""
    tol = [SE_MARGIN * float(np.hypot(a, b)) for a, b in zip(ses, ses[1:])]
    steps_ok = all(b <= a + t for a, b, t in zip(means, means[1:], tol))
    end = SE_MARGIN * float(np.hypot(ses[0], ses[-1]))
    return steps_ok and means[0] - means[-1] > end, f"no step up by more than {SE_MARGIN} seed SE, the ends apart " \
                                                    f"by more than {end:.2g}"


# --- HR@10 against epsilon ---------------------------------------------------------------------------------------
def _hr_configs(size):
    return [c for *_, c in ex.hr_runs(size)]


def _hr_compute(size, progress):
    return ex.hr_table(size, progress).assign(size=size)


def _hr_compare(ours, paper):
    rows = []
    for method in ours["method"].unique():
        mine = ours[ours["method"] == method]
        plain, _ = _mean_se(mine[~mine["clipped"]]["hr"])
        dp_runs = mine[mine["clipped"]]
        by_sigma = [_mean_se(g["hr"]) for _, g in dp_runs.groupby("sigma")]  # sigma ascending, the clip alone first
        means, ses = [m for m, _ in by_sigma], [e for _, e in by_sigma]
        ok, why = _falls(means, ses)
        rows.append(_claim(f"{method}: HR@10 from the clip alone to the largest sigma", "falls as epsilon shrinks",
                           " -> ".join(f"{m:.4f}" for m in means), ok, why))
        rows.append(_shown(f"{method}: HR@10 without DP, then clipped to C alone", "(the clip's own cost)",
                           f"{plain:.4f} -> {means[0]:.4f}"))
    eps = ours[ours.sigma > 0].groupby("sigma")["epsilon"].agg(["min", "max"])
    rows.append(_claim("epsilon depends on (q, sigma, rounds) only: the same for both methods", "equal",
                       f"max spread {float((eps['max'] - eps['min']).max()):.2e}",
                       np.allclose(eps["min"], eps["max"], rtol=1e-9)))
    return pd.DataFrame(rows)


register(FigureCard(
    id="dp-hr-epsilon", title="HR@10 against epsilon: FedMF and CoLR@4 under central DP-FedAvg",
    caption=f"{LAB}. HR@10 after training with central DP-FedAvg (clip C, Gaussian noise sigma C on the sum, "
            "fixed denominator, Poisson sampling) at several noise multipliers, clipped without noise, and without "
            "DP, for FedMF and CoLR@4. Epsilon from Opacus's RDP accountant at delta = 1 / users.",
    kind="figure", paper=_claims(("HR@10", "falls as epsilon shrinks"),
                                 ("epsilon", "the same at equal sigma for every method")),
    configs=_hr_configs, compute_fn=_hr_compute, plot_fn=plots.hr_vs_epsilon, compare_fn=_hr_compare,
    tolerance=None, tolerance_text="shape: HR@10 falls from the clip alone to the most noise (no step up by more "
                                   "than 2 standard errors of the seeds, the ends further apart); epsilon equal "
                                   "across methods",
    expected="HR@10 rises with epsilon toward the no-DP run. CoLR@4's update (A, 4 columns) is clipped to the same "
             "C as FedMF's 64 columns and gets the same noise per value over far fewer values.",
    columns=("method", "clipped", "sigma", "seed", "epsilon", "hr"),
    notes=(f"Full size: ML-1M at CoLR's settings (d = 64, 60 clients a round expected, E = 2, B = 256, 1000 rounds)"
           f" with Poisson cohorts instead of the rotating schedule, aggregation 'weighted' (the fixed "
           f"denominator), C = {ex.HR_CLIP}, sigma in {ex.NOISE_LEVELS}, seeds {ex.SEEDS['full']}.",
           "The clip-alone point (sigma 0) is clipped to C with no noise: the noise's cost is measured from it, the "
           "clip's own cost from the no-DP point, which uses the same Poisson schedule and denominator-free FedAvg "
           "weights."),
    paper_ref=LAB, dataset="ML-1M"))


# --- the curious server against epsilon ----------------------------------------------------------------------------
def _curious_compute(size, progress):
    return ex.curious_table(size).assign(size=size)


def _curious_compare(ours, paper):
    plain = ours[ours["mode"] == "no DP"].iloc[0]
    local = ours[ours["mode"] == "local"].sort_values("sigma")
    central = ours[ours["mode"] == "central"]
    curve = [float(plain["upload_precision"])] + list(local["upload_precision"])
    base = float(plain["base_rate"]) if "base_rate" in ours else float("nan")
    falls = all(b <= a for a, b in zip(curve, curve[1:])) and curve[-1] < curve[0]
    # "toward chance": the noisiest run ends nearer the base rate than the no-DP precision
    near_chance = abs(curve[-1] - base) < abs(curve[-1] - curve[0])
    return pd.DataFrame([
        _claim("local DP: upload precision from no DP to the largest sigma", "falls toward chance as epsilon shrinks",
               " -> ".join(f"{v:.3f}" for v in curve) + f" (base rate {base:.3f})", falls and near_chance,
               "one run per point: non-increasing at every step, and the last nearer the base rate than no DP's"),
        _claim("central DP: the upload the server sees is not noised", "central DP trusts the server",
               f"{central['upload_precision'].min():.3f} (no DP {plain['upload_precision']:.3f})",
               central["upload_precision"].min() >= plain["upload_precision"] - 0.05,
               "within 0.05 of no DP's (the lab's margin: clipping may change the upload a little)"),
    ])


register(FigureCard(
    id="dp-curious-server", title="The curious server against a DP run: item-set precision against epsilon",
    caption=f"{LAB}. The Encryption page's curious server (labcore.colr.curious_server) recovers each client's "
            "item set from what it receives in two FedMF rounds: each upload and the round's aggregate, under "
            "central and local DP at several noise multipliers, and without DP.",
    kind="figure", paper=_claims(("local DP", "upload precision falls toward chance as epsilon shrinks"),
                                 ("central DP", "uploads are in clear to the server: no protection from it")),
    configs=lambda size: [], compute_fn=_curious_compute, plot_fn=plots.curious_vs_epsilon,
    compare_fn=_curious_compare, tolerance=None,
    tolerance_text="shape: local DP's upload precision falls with sigma toward the base rate; central's upload "
                   "within 0.05 of no DP's",
    expected="Under local DP the upload's precision falls with epsilon toward the base rate; under central DP the "
             "server sees each clipped update in clear (only the aggregate it publishes is private).",
    columns=("mode", "sigma", "epsilon", "upload_precision", "aggregate_precision"),
    notes=("Epsilon after the two attacked rounds: local DP without amplification (q = 1), central with q.",),
    paper_ref=LAB, dataset="ML-1M"))


# --- gradient inversion against each defense --------------------------------------------------------------------
def _inv_compute(size, progress):
    return ex.inversion_table(size).assign(size=size)


def _inv_compare(ours, paper):
    g = {name: _mean_se(d["psnr"]) for name, d in ours.groupby("defense", sort=False)}
    none, none_se = g["none"]
    chance = ours["chance_psnr"].mean()
    rows = [_claim("no defense: PSNR well above the mean image's", "the digit comes back",
                   f"{none:.1f} dB vs {chance:.1f} dB", none > chance + 15, "15 dB above: the lab's target")]
    for name, (v, se) in g.items():
        if name == "rank 1":  # a rank-1 update of one image is that image's gradient: nothing to check
            rows.append(_shown(f"{name}: PSNR", "equal to no defense for one image", f"{v:.1f} dB"))
        elif name != "none":
            margin = SE_MARGIN * float(np.hypot(se, none_se))
            rows.append(_claim(f"{name}: PSNR", "below no defense", f"{v:.1f} dB", v < none - margin,
                               f"by more than {SE_MARGIN} seed SE ({margin:.2g} dB)"))
    return pd.DataFrame(rows)


register(FigureCard(
    id="dp-inversion", title="Gradient inversion of an 8x8 digit: PSNR under each defense",
    caption=f"{LAB}. Geiping et al.'s attack (cosine loss + total variation, Adam) on the digits MLP of the "
            "FL-algorithms topic rebuilds one client's image from its update after one local step; each defense "
            "changes what the server receives.",
    kind="figure", paper=_claims(("no defense", "recognizable digit (high PSNR)"),
                                 ("each defense", "lower PSNR")),
    configs=lambda size: [], compute_fn=_inv_compute, plot_fn=plots.psnr_by_defense, compare_fn=_inv_compare,
    tolerance=None, tolerance_text="shape: no defense > mean image + 15 dB; each defense below no defense by more "
                                   "than 2 standard errors of the seeds",
    expected="About 55 dB without a defense; more local steps, Top-K, QSGD, DP noise and secure aggregation drop it "
             "toward the mean image's 10 dB. A rank-1 update keeps one image's gradient whole (it is rank 1).",
    columns=("defense", "seed", "psnr", "chance_psnr"),
    notes=("Smoke: 150 attack iterations, one seed, without the batch of 8; full: 600 iterations, 3 seeds.",),
    paper_ref=LAB, dataset="sklearn digits"))
