"""Figure cards of the DP topic (registered on import). They are lab experiments, not a paper's numbers: each card
checks the shape the mechanism implies (stated in `expected`), and `paper` holds that claim."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures.registry import FigureCard, register
from . import experiments as ex
from . import plots

LAB = "lab experiment (not a paper's numbers)"


def _claims(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=["quantity", "claim"])


def _row(quantity, claim, ours, ok, note=""):
    return {"quantity": quantity, "paper": claim, "ours": ours, "ok": ok, "note": note}


# --- HR@10 against epsilon ---------------------------------------------------------------------------------------
def _hr_configs(size):
    return [c for *_, c in ex.hr_runs(size)]


def _hr_compute(size, progress):
    return ex.hr_table(size, progress).assign(size=size)


def _hr_compare(ours, paper):
    g = ours.groupby(["method", "sigma"])["hr"].mean()
    rows = []
    for method in ours["method"].unique():
        plain, noisiest = g[(method, 0.0)], g[(method, ours["sigma"].max())]
        rows.append(_row(f"{method}: HR@10 without DP >= at the largest sigma", "noise costs accuracy",
                         f"{plain:.4f} vs {noisiest:.4f}", bool(plain >= noisiest)))
    eps = ours[ours.sigma > 0].groupby("sigma")["epsilon"].agg(["min", "max"])
    rows.append(_row("epsilon depends on (q, sigma, rounds) only: the same for both methods", "equal",
                     f"max spread {float((eps['max'] - eps['min']).max()):.2e}",
                     bool(np.allclose(eps["min"], eps["max"], rtol=1e-9))))
    return pd.DataFrame(rows)


register(FigureCard(
    id="dp-hr-epsilon", title="HR@10 against epsilon: FedMF and CoLR@4 under central DP-FedAvg",
    caption=f"{LAB}. HR@10 after training with central DP-FedAvg (clip C, Gaussian noise sigma C on the sum, "
            "fixed denominator, Poisson sampling) at several noise multipliers, and without DP, for FedMF and "
            "CoLR@4. Epsilon from Opacus's RDP accountant at delta = 1 / users.",
    kind="figure", paper=_claims(("HR@10", "falls as epsilon shrinks"),
                                 ("epsilon", "the same at equal sigma for every method")),
    configs=_hr_configs, compute_fn=_hr_compute, plot_fn=plots.hr_vs_epsilon, compare_fn=_hr_compare,
    tolerance=None, tolerance_text="shape: HR@10 without DP >= with the most noise; epsilon equal across methods",
    expected="HR@10 rises with epsilon toward the no-DP run. CoLR@4's update (A, 4 columns) is clipped to the same "
             "C as FedMF's 64 columns and gets the same noise per value over far fewer values.",
    columns=("method", "sigma", "seed", "epsilon", "hr"),
    notes=(f"Full size: ML-1M at CoLR's settings (d = 64, 60 clients a round expected, E = 2, B = 256, 1000 rounds)"
           f" with Poisson cohorts instead of the rotating schedule, aggregation 'weighted' (the fixed "
           f"denominator), C = {ex.DP_CLIP}, sigma in {ex.NOISE_LEVELS}, seeds {ex.SEEDS['full']}.",
           "The no-DP point uses the same Poisson schedule and denominator-free FedAvg weights."),
    paper_ref=LAB, dataset="ML-1M"))


# --- the curious server against epsilon ----------------------------------------------------------------------------
def _curious_compute(size, progress):
    return ex.curious_table(size).assign(size=size)


def _curious_compare(ours, paper):
    plain = ours[ours["mode"] == "no DP"].iloc[0]
    local = ours[ours["mode"] == "local"].sort_values("sigma")
    central = ours[ours["mode"] == "central"]
    return pd.DataFrame([
        _row("local DP, upload precision at the largest sigma < without DP", "noise hides the item set",
             f"{local['upload_precision'].iloc[-1]:.3f} vs {plain['upload_precision']:.3f}",
             bool(local["upload_precision"].iloc[-1] < plain["upload_precision"])),
        _row("central DP: the upload the server sees is not noised", "central DP trusts the server",
             f"{central['upload_precision'].min():.3f} (no DP {plain['upload_precision']:.3f})",
             bool(central["upload_precision"].min() >= plain["upload_precision"] - 0.05)),
    ])


register(FigureCard(
    id="dp-curious-server", title="The curious server against a DP run: item-set precision against epsilon",
    caption=f"{LAB}. The Encryption page's curious server (labcore.privacy.server_attack) recovers each client's "
            "item set from what it receives in two FedMF rounds: each upload and the round's aggregate, under "
            "central and local DP at several noise multipliers, and without DP.",
    kind="figure", paper=_claims(("local DP", "upload precision falls toward chance as epsilon shrinks"),
                                 ("central DP", "uploads are in clear to the server: no protection from it")),
    configs=lambda size: [], compute_fn=_curious_compute, plot_fn=plots.curious_vs_epsilon,
    compare_fn=_curious_compare, tolerance=None,
    tolerance_text="shape: local DP's upload precision at the most noise below no DP's; central's upload unchanged",
    expected="Under local DP the upload's precision falls with epsilon toward the base rate; under central DP the "
             "server sees each clipped update in clear (only the aggregate it publishes is private).",
    columns=("mode", "sigma", "epsilon", "upload_precision", "aggregate_precision"),
    notes=("Epsilon after the two attacked rounds: local DP without amplification (q = 1), central with q.",),
    paper_ref=LAB, dataset="ML-1M"))


# --- gradient inversion against each defense --------------------------------------------------------------------
def _inv_compute(size, progress):
    return ex.inversion_table(size).assign(size=size)


def _inv_compare(ours, paper):
    g = ours.groupby("defense", sort=False)["psnr"].mean()
    rows = [_row("no defense: PSNR well above the mean image's", "the digit comes back",
                 f"{g['none']:.1f} dB vs {ours['chance_psnr'].mean():.1f} dB",
                 bool(g["none"] > ours["chance_psnr"].mean() + 15))]
    for name, v in g.items():
        if name != "none":
            rows.append(_row(f"{name}: PSNR", "below no defense (rank 1: equal for one image)", f"{v:.1f} dB",
                             None if name == "rank 1" else bool(v < g["none"])))
    return pd.DataFrame(rows)


register(FigureCard(
    id="dp-inversion", title="Gradient inversion of an 8x8 digit: PSNR under each defense",
    caption=f"{LAB}. Geiping et al.'s attack (cosine loss + total variation, Adam) on the digits MLP of the "
            "FL-algorithms topic rebuilds one client's image from its update after one local step; each defense "
            "changes what the server receives.",
    kind="figure", paper=_claims(("no defense", "recognizable digit (high PSNR)"),
                                 ("each defense", "lower PSNR")),
    configs=lambda size: [], compute_fn=_inv_compute, plot_fn=plots.psnr_by_defense, compare_fn=_inv_compare,
    tolerance=None, tolerance_text="shape: no defense > mean image + 15 dB; each defense below no defense",
    expected="About 50 dB without a defense; more local steps, Top-K, QSGD, DP noise and secure aggregation drop it "
             "toward the mean image's 10 dB. A rank-1 update keeps one image's gradient whole (it is rank 1).",
    columns=("defense", "seed", "psnr", "chance_psnr"),
    notes=("Smoke: 150 attack iterations, one seed, without the batch of 8; full: 600 iterations, 3 seeds.",),
    paper_ref=LAB, dataset="sklearn digits"))
