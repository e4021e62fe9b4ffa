"""Figure cards of the federated-optimization topic (registered on import).

The original papers print these results as figures without numbers (FedProx Fig. 1, SCAFFOLD's drift plots,
q-FFL's accuracy histograms, the backdoor papers' curves), so each card checks the expected shape stated in
`expected` and shows ours; `paper` holds the claim being checked, one row per quantity. Every compared row is
therefore a claim (kind "claim"; a threshold no paper prints says it is the lab's target) or shown for information
(kind "shown"), never a number.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures.registry import FigureCard, with_run_times
from ..figures.registry import register as _register_card
from . import experiments as ex
from . import plots
from .config import FLConfig
from .simulation import run_times

CLAIM_COLUMNS = ["quantity", "claim"]


def _claims(*rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=CLAIM_COLUMNS)


def _claim(quantity, paper, ours, ok, note=""):
    """A row checking a claim (an ordering, "above", "equal"): these papers print figures, not numbers."""
    return {"quantity": quantity, "paper": paper, "ours": ours, "ok": ok, "kind": "claim", "note": note}


def _shown(quantity, paper, ours, note=""):
    """A row shown for information, not checked."""
    return {"quantity": quantity, "paper": paper, "ours": ours, "ok": None, "kind": "shown", "note": note}


def _sized(df: pd.DataFrame, size: str) -> pd.DataFrame:
    return df.assign(size=size)


def _final(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return df.sort_values("round", kind="stable").groupby(keys, as_index=False).tail(1)  # stable: rows in run order


# --- FedProx Fig. 1 ----------------------------------------------------------------------------------------------
def _stragglers_compute(size, progress):
    return _sized(ex._frame(ex.stragglers_runs(size), progress)[["stragglers", "method", "round", "train_loss"]], size)


def _stragglers_compare(ours, paper):
    last = ours[ours["round"] > ours["round"].max() * 0.75]
    at = lambda s, m: last[(last.stragglers == s) & (last.method == m)]["train_loss"]  # noqa: E731
    fa, fp = at(0.9, "FedAvg (drops stragglers)"), at(0.9, "FedProx mu=1")
    same = np.abs(at(0.0, "FedProx mu=0").values - at(0.0, "FedAvg (drops stragglers)").values).max()
    return pd.DataFrame([
        _claim("final training loss at 90% stragglers: FedProx mu=1 < FedAvg", "lower (Fig. 1, Synthetic(1,1))",
               f"{fp.iloc[-1]:.3f} vs {fa.iloc[-1]:.3f}", bool(fp.iloc[-1] < fa.iloc[-1])),
        _claim("instability over the last quarter of rounds (std of the loss), 90% stragglers",
               "FedAvg unstable, FedProx stable", f"FedAvg {fa.std():.3f}, FedProx {fp.std():.3f}",
               bool(fp.std() < fa.std())),
        _claim("0% stragglers: FedProx mu=0 equals FedAvg", "identical curves",
               f"max |diff| {same:.2e}", bool(same <= 1e-9)),
    ])


def register(card: FigureCard) -> FigureCard:
    """Register a card; one over the dense simulations also keeps their run times (the engine's cards are timed by
    the card writer)."""
    if any(isinstance(c, FLConfig) for c in card.configs("smoke")):
        card = with_run_times(card, run_times)
    return _register_card(card)


register(FigureCard(
    id="flalgos-fedprox-stragglers", title="FedProx Fig. 1: stragglers on Synthetic(1,1)",
    caption="Training loss of FedAvg (which drops stragglers), FedProx with mu=0 and with mu=1 (which keep their "
            "partial work) at 0 %, 50 % and 90 % stragglers on Synthetic(1,1).",
    kind="figure", paper=_claims(("final loss at 90% stragglers", "FedProx mu=1 below FedAvg; FedAvg unstable")),
    configs=lambda size: ex.configs(ex.stragglers_runs(size)), compute_fn=_stragglers_compute,
    plot_fn=plots.stragglers, compare_fn=_stragglers_compare, tolerance=None,
    tolerance_text="shape: FedProx mu=1 ends lower and varies less than FedAvg at 90 % stragglers",
    expected="At 0 % stragglers the three curves nearly coincide; at 90 % FedAvg's loss jumps around while "
             "FedProx (mu=1) decreases steadily and ends lower.",
    columns=("stragglers", "method", "round", "train_loss"),
    notes=("FedProx runs E = 20 epochs of batch 10; we run a fixed 50 minibatch steps of batch 10 a round (a "
           "power-law device would otherwise take thousands of steps), 200 rounds.",
           "Stragglers take a uniform 1..K-1 steps, as FedProx's 'uniformly at random between 1 and E'.",
           "The generator is FedProx's recipe (lognormal(4,2)+50 samples, 90 % train) with our seeds: absolute "
           "losses differ from the figure's."),
    paper_ref="Li et al., FedProx (MLSys 2020), Fig. 1, top row", dataset="Synthetic(1,1)"))


# --- SCAFFOLD: quadratics -------------------------------------------------------------------------------------------
def _quad_compute(size, progress):
    return _sized(ex._frame(ex.quadratic_runs(size), progress)[["method", "round", "distance", "up_bytes"]], size)


def _quad_compare(ours, paper):
    fin = _final(ours, ["method"]).set_index("method")["distance"]
    return pd.DataFrame([
        _claim("SCAFFOLD distance to x* (full participation)", "converges to x* (< 1e-8: the lab's target)",
               f"{fin['SCAFFOLD']:.2e}", bool(fin["SCAFFOLD"] < 1e-8)),
        _claim("FedAvg distance to x* (its floor)", "stalls at a floor (> 1e-3: the lab's target)",
               f"{fin['FedAvg']:.2e}", bool(fin["FedAvg"] > 1e-3)),
    ])


register(FigureCard(
    id="flalgos-scaffold-quadratics", title="SCAFFOLD vs FedAvg on heterogeneous quadratics",
    caption="Distance to the optimum of the average of 10 quadratics with different curvatures and optima, "
            "full participation, 10 local steps.",
    kind="figure", paper=_claims(("SCAFFOLD", "converges to x* (Karimireddy et al., Thm. III / Fig. 3 shape)"),
                                 ("FedAvg", "stalls at a heterogeneity floor")),
    configs=lambda size: ex.configs(ex.quadratic_runs(size)), compute_fn=_quad_compute, plot_fn=plots.quadratics,
    compare_fn=_quad_compare, tolerance=None, tolerance_text="SCAFFOLD < 1e-8, FedAvg > 1e-3",
    expected="SCAFFOLD's distance falls linearly on a log scale to machine precision; FedAvg and FedProx level off.",
    columns=("method", "round", "distance"),
    notes=("Deterministic full gradients in float64; the wire carries float64 for this task.",),
    paper_ref="Karimireddy et al., SCAFFOLD (ICML 2020)", dataset="quadratics"))


# --- SCAFFOLD: digits ---------------------------------------------------------------------------------------------
def _drift_compute(size, progress):
    cols = ["dirichlet_alpha", "method", "round", "train_loss", "test_acc", "drift", "up_bytes"]
    return _sized(ex._frame(ex.drift_runs(size), progress)[cols], size)


def _drift_compare(ours, paper):
    fin = _final(ours, ["dirichlet_alpha", "method"])
    g = lambda a, m, c: float(fin[(fin.dirichlet_alpha == a) & (fin.method == m)][c].iloc[0])  # noqa: E731
    lo, hi = min(ex.DRIFT_ALPHAS), max(ex.DRIFT_ALPHAS)
    ratio = g(lo, "SCAFFOLD", "up_bytes") / g(lo, "FedAvg", "up_bytes")
    return pd.DataFrame([
        _claim(f"final test accuracy at Dirichlet {lo}: SCAFFOLD above FedAvg", "SCAFFOLD above FedAvg",
               f"{g(lo, 'SCAFFOLD', 'test_acc'):.3f} vs {g(lo, 'FedAvg', 'test_acc'):.3f}",
               bool(g(lo, "SCAFFOLD", "test_acc") > g(lo, "FedAvg", "test_acc")),
               "one seed: no spread to compare with"),
        _shown(f"FedAvg loses more accuracy from Dirichlet {hi} to {lo} than SCAFFOLD", "drift hurts FedAvg more",
               f"FedAvg {g(hi, 'FedAvg', 'test_acc') - g(lo, 'FedAvg', 'test_acc'):+.3f}, SCAFFOLD "
               f"{g(hi, 'SCAFFOLD', 'test_acc') - g(lo, 'SCAFFOLD', 'test_acc'):+.3f}", "information"),
        _claim("uplink bytes SCAFFOLD / FedAvg", "twice (control variates, Alg. 1)", f"{ratio:.3f}",
               bool(abs(ratio - 2) < 0.01), "within 0.01 of 2 (framing bytes)"),
    ])


register(FigureCard(
    id="flalgos-scaffold-digits", title="Client drift on digits: FedAvg, FedProx, SCAFFOLD",
    caption="Test accuracy against rounds on digits over 30 clients at Dirichlet 0.1 and 1.0, 20 local steps.",
    kind="figure", paper=_claims(("heterogeneous data", "SCAFFOLD above FedAvg, at 2x the bytes")),
    configs=lambda size: ex.configs(ex.drift_runs(size)), compute_fn=_drift_compute, plot_fn=plots.drift,
    compare_fn=_drift_compare, tolerance=None,
    tolerance_text="SCAFFOLD's final accuracy above FedAvg's at Dirichlet 0.1; uplink 2x within 0.01",
    expected="At alpha 1.0 the three agree; at alpha 0.1 FedAvg oscillates and SCAFFOLD is steadier, paying twice "
             "the uplink and downlink bytes.",
    columns=("dirichlet_alpha", "method", "round", "test_acc"),
    notes=("SCAFFOLD's paper uses EMNIST; we use scikit-learn's digits with multinomial logistic regression.",),
    paper_ref="Karimireddy et al., SCAFFOLD (ICML 2020), Section 7", dataset="digits"))


# --- q-FFL -----------------------------------------------------------------------------------------------------------
QFFL_COLUMNS = ["q", "train_acc_mean", "train_acc_var", "train_acc_worst10", "acc_mean", "acc_var", "train_loss"]


def _qffl_compute(size, progress):
    return _sized(_final(ex._frame(ex.qffl_runs(size), progress), ["q"])[QFFL_COLUMNS], size)


def _qffl_compare(ours, paper):
    o = ours.sort_values("q").reset_index(drop=True)
    v0 = o["train_acc_var"].iloc[0]
    best = o["train_acc_var"].iloc[1:].idxmin()
    v1, q1 = o.loc[best, "train_acc_var"], o.loc[best, "q"]
    cost = o.loc[best, "train_acc_mean"] - o["train_acc_mean"].iloc[0]
    return pd.DataFrame([
        _claim(f"variance of per-device accuracy, q = {q1:g} vs q = 0", "lower", f"{v1:.4f} vs {v0:.4f}",
               bool(v1 < v0)),
        _claim(f"mean per-device accuracy cost at q = {q1:g} (points)", "small (the lab's target: > -3)",
               f"{100 * cost:+.1f}", bool(cost > -0.03)),
        _shown("worst-10 % device accuracy at that q vs q = 0", "higher",
               f"{o.loc[best, 'train_acc_worst10']:.3f} vs {o['train_acc_worst10'].iloc[0]:.3f}", "information"),
        _shown("the same variance on the devices' test splits", "lower",
               f"{o.loc[best, 'acc_var']:.4f} vs {o['acc_var'].iloc[0]:.4f}",
               "information: 5-50 test samples a device, binomial noise p(1-p)/n is about this size"),
    ])


register(FigureCard(
    id="flalgos-qffl-fairness", title="q-FFL: fairness of per-device accuracy against q",
    caption="Variance and mean of the per-device accuracy of q-FedAvg's global model for q in {0, 1, 3} on "
            "Synthetic(1,1), all 100 devices every round.",
    kind="figure", paper=_claims(("q > 0", "lower variance of per-device accuracy at a small cost of the mean")),
    configs=lambda size: ex.configs(ex.qffl_runs(size)), compute_fn=_qffl_compute, plot_fn=plots.qffl,
    compare_fn=_qffl_compare, tolerance=None,
    tolerance_text="variance lower for some q > 0 with the mean within 3 points",
    expected="Variance falls as q grows while the mean drops a little.",
    columns=("q", "train_acc_mean", "train_acc_var"),
    notes=("100 devices like q-FFL's Synthetic (FedProx's recipe for the data), all of them every round, 1500 rounds "
           "of 2 local steps. With 30 devices the effect was half as large (variance -5.5 % at q = 3).",
           "Accuracy per device is measured on its training rows: the FedProx recipe leaves 5 test samples to the "
           "smallest devices, so test-split variance is mostly binomial noise (shown for information).",
           "q-FedAvg with L = 1 / lr as the reference code; the same lr for every q (the paper tunes it)."),
    paper_ref="Li, Sanjabi, Beirami, Smith, q-FFL (ICLR 2020), Table 1 / Fig. 1", dataset="Synthetic(1,1)"))


# --- personalization -------------------------------------------------------------------------------------------------
def _personal_compute(size, progress):
    rows = []
    for label, cfg in ex.personal_runs(size):
        from .simulation import run

        cl = run(cfg).clients
        col = "personal_acc" if "personal_acc" in cl else "test_acc"
        rows.append(pd.DataFrame({"method": label["method"], "client": cl["client"], "accuracy": cl[col]}))
    return _sized(pd.concat(rows, ignore_index=True), size)


def _personal_compare(ours, paper):
    m = ours.groupby("method")["accuracy"].mean()
    g = m["FedAvg (global)"]
    return pd.DataFrame([_claim(f"{k}: mean personalized accuracy > global", "above the global model",
                                f"{m[k]:.3f} vs {g:.3f}", bool(m[k] > g)) for k in ("Ditto", "pFedMe", "APFL")]
                        + [_shown("Per-FedAvg (FO) after one local step", "above the global model",
                                  f"{m['Per-FedAvg (FO)']:.3f} vs {g:.3f}", "information")])


register(FigureCard(
    id="flalgos-personalization", title="Personalization at Dirichlet 0.1 on digits",
    caption="Per-client test accuracy of the global FedAvg model and of Ditto, pFedMe, APFL and Per-FedAvg's "
            "personalized models; 30 clients, Dirichlet 0.1 label skew.",
    kind="figure", paper=_claims(("personalized models", "above the global model on skewed clients")),
    configs=lambda size: ex.configs(ex.personal_runs(size)), compute_fn=_personal_compute,
    plot_fn=plots.personalization, compare_fn=_personal_compare, tolerance=None,
    tolerance_text="mean personalized accuracy above the global model's (Ditto, pFedMe, APFL)",
    expected="Each personalized method's box sits above FedAvg's, clients holding only a few classes gain most.",
    columns=("method", "client", "accuracy"),
    notes=("lambda = 0.1 for Ditto and pFedMe, alpha = 0.5 (fixed) for APFL, one local step of 0.05 for "
           "Per-FedAvg's personalization.",),
    paper_ref="Li et al. 2021 (Ditto); Dinh et al. 2020 (pFedMe); Deng et al. 2020 (APFL); Fallah et al. 2020",
    dataset="digits"))


# --- backdoors -------------------------------------------------------------------------------------------------------
def _backdoor_compute(size, progress):
    df = _final(ex._frame(ex.backdoor_runs(size), progress), ["attack", "defense"])
    df = df.rename(columns={"test_acc": "clean_acc"})
    if "backdoor" not in df:
        df["backdoor"] = np.nan
    return _sized(df[["attack", "defense", "clean_acc", "backdoor"]].reset_index(drop=True), size)


def _backdoor_compare(ours, paper):
    clean = float(ours[ours.attack == "none"]["clean_acc"].iloc[0])
    r = ours[ours.attack == "replacement"].set_index("defense")
    rows = [_claim("model replacement, plain FedAvg: backdoor success", "near 100 % (>= 0.90: the lab's target)",
                   f"{r.loc['none', 'backdoor']:.3f}",
                   bool(r.loc["none", "backdoor"] >= 0.9))]
    for d in ("norm clipping", "median"):
        drop = clean - r.loc[d, "clean_acc"]
        rows.append(_claim(f"{d}: backdoor success", "mostly removed (< 0.20: the lab's target)",
                           f"{r.loc[d, 'backdoor']:.3f}",
                           bool(r.loc[d, "backdoor"] < 0.2)))
        rows.append(_claim(f"{d}: clean accuracy drop (points)", "small (< 3: the lab's target)", f"{100 * drop:.1f}",
                           bool(drop < 0.03)))
    return pd.DataFrame(rows)


register(FigureCard(
    id="flalgos-backdoor", title="Backdoors and robust aggregation",
    caption="Clean accuracy and backdoor success after model replacement (Bagdasaryan et al.) and DBA (Xie et al.) "
            "by 3 of 30 clients, with each defense.",
    kind="figure", paper=_claims(("model replacement, no defense", "backdoor success near 100 %"),
                                 ("norm clipping / median", "backdoor mostly removed at a small clean cost")),
    configs=lambda size: ex.configs(ex.backdoor_runs(size)), compute_fn=_backdoor_compute, plot_fn=plots.backdoor,
    compare_fn=_backdoor_compare, tolerance=None,
    tolerance_text="replacement >= 90 % on FedAvg; clipping and median < 20 % with < 3 points clean loss",
    expected="Without a defense the boosted update plants the trigger; median, trimmed mean, Krum and clipping "
             "remove it, Krum costing the most clean accuracy.",
    columns=("attack", "defense", "clean_acc", "backdoor"),
    notes=("Trigger: a saturated 2x4 pixel block in the top-left corner (DBA: four 2-pixel pieces, one per "
           "attacker), target label 0; attackers poison half of each batch.",
           "Both attacks scale their update by gamma = cohort / (server lr x attackers in the cohort) "
           "(Bagdasaryan's n / eta, shared among the attackers; DBA scales too, as Xie et al.).",
           "Numbers are read at the last round; attacks run from round 40 of 60."),
    paper_ref="Bagdasaryan et al. (AISTATS 2020); Xie et al., DBA (ICLR 2020); Sun et al. 2019",
    dataset="digits"))


# --- bytes -----------------------------------------------------------------------------------------------------------
def _bytes_compute(size, progress):
    return _sized(ex.bytes_table(size, progress), size)


def _bytes_compare(ours, paper):
    s = ours[(ours.algorithm == "scaffold") & (ours.quantize_bits == 0)]
    up, down = float(s["up_vs_fedavg"].iloc[0]), None
    f = ours[(ours.algorithm == "fedavg") & (ours.quantize_bits == 0)]
    down = float(s["down_bytes_per_client"].iloc[0] / f["down_bytes_per_client"].iloc[0])
    return pd.DataFrame([
        _claim("SCAFFOLD uplink / FedAvg uplink", "twice (Alg. 1: Delta y and Delta c)", f"{up:.4f}",
               bool(abs(up - 2) < 0.01), "within 0.01 of 2 (framing bytes)"),
        _claim("SCAFFOLD downlink / FedAvg downlink", "twice (Alg. 1: x and c)", f"{down:.4f}",
               bool(abs(down - 2) < 0.01), "within 0.01 of 2 (framing bytes)"),
    ])


register(FigureCard(
    id="flalgos-bytes", title="Bytes per round of every algorithm (measured)",
    caption="Measured uplink and downlink bytes per client and round from the payload ledger, with and without "
            "4-bit QSGD on the uplink.",
    kind="table", paper=_claims(("SCAFFOLD", "sends x and c down, Delta y and Delta c up: twice FedAvg")),
    configs=lambda size: ex.configs(ex.bytes_runs(size)), compute_fn=_bytes_compute, plot_fn=plots.bytes_bars,
    compare_fn=_bytes_compare, tolerance=0.01, tolerance_text="ratio within 0.01 of 2",
    expected="Every algorithm but SCAFFOLD (2x) and q-FedAvg (one extra float h) sends what FedAvg sends.",
    columns=("algorithm", "up_bytes_per_client", "down_bytes_per_client"),
    paper_ref="Karimireddy et al. 2020, Alg. 1", dataset="digits"))


# --- the algorithms on the lab's engine ------------------------------------------------------------------------------
def _engine_compute(size, progress):
    return _sized(ex.engine_table(size, progress), size)


def _engine_compare(ours, paper):
    fin = _final(ours, ["method", "algorithm"]).set_index(["method", "algorithm"])
    hr = lambda m, a: float(fin.loc[(m, a), "hr"])  # noqa: E731
    down = lambda m, a: float(fin.loc[(m, a), "bytes_down_client"])  # noqa: E731
    fedmf, colr = ours["method"].unique()[:2]
    rows = []
    for algo, why in (("FedProx mu=0.01", "a small pull costs little when nothing drifts far"),
                      ("FedAvgM", "momentum 0.5 with server step 0.5: the same effective step")):
        for m in (fedmf, colr):
            gap = abs(hr(m, algo) - hr(m, "FedAvg"))
            rows.append(_claim(f"{m}: final HR@10, {algo} vs FedAvg", "within 1 point (the lab's target)",
                               f"{hr(m, algo):.4f} vs {hr(m, 'FedAvg'):.4f}", bool(gap <= 0.01), why))
    ratio = down(colr, "FedAdam") / down(colr, "FedAvg")
    rows.append(_claim(f"{colr}: downlink per client, FedAdam / FedAvg",
                       "d / r = 16 (the lab's: the server's step is dense)",
                       f"{ratio:.2f}", bool(abs(ratio - 16) <= 0.5),
                       "the optimizer state stays on the server, so clients receive its step, not A"))
    same = down(fedmf, "FedAdam") / down(fedmf, "FedAvg")
    rows.append(_claim(f"{fedmf}: downlink per client, FedAdam / FedAvg",
                       "1 (the lab's: FedMF's broadcast is dense already)",
                       f"{same:.4f}", bool(abs(same - 1) <= 0.001)))
    for algo in ("FedAdam", "FedYogi"):
        rows.append(_shown(f"{colr}: final HR@10, {algo} (server step 0.01) vs FedAvg", "-",
                           f"{hr(colr, algo):.4f} vs {hr(colr, 'FedAvg'):.4f}",
                           "information: server step size and tau not tuned (Reddi et al. tune both per task)"))
    return pd.DataFrame(rows)


register(FigureCard(
    id="flalgos-engine-ml1m",
    title="The algorithms on the lab's engine: FedProx and adaptive servers with FedMF and CoLR",
    caption="HR@10 against rounds and the downlink a client receives per round, FedMF d=64 and CoLR@4 on "
            "MovieLens-1M at CoLR's settings, under FedAvg, FedProx, FedAvgM, FedAdam and FedYogi.",
    kind="figure", paper=_claims(("stateful server optimizers", "keep momentum / moments on the server (Reddi et "
                                                                "al. 2021, Alg. 2)")),
    configs=lambda size: ex.configs(ex.engine_runs(size)), compute_fn=_engine_compute, plot_fn=plots.engine,
    compare_fn=_engine_compare, tolerance=0.01,
    tolerance_text="FedProx (mu 0.01) and FedAvgM within 1 HR@10 point of FedAvg; CoLR's downlink 16x (d / r) "
                   "under a stateful server optimizer, FedMF's unchanged",
    expected="FedProx and FedAvgM follow FedAvg's curve; a stateful server optimizer turns CoLR's compressed "
             "downlink (A, items x r) into a dense one (items x d), 16 times more bytes, while FedMF's dense "
             "broadcast stays the same size.",
    columns=("method", "algorithm", "round", "hr", "bytes_down_client"),
    notes=("Ours, not a figure of a paper: the survey's algorithms on the lab's recommendation engine, where they "
           "compose with CoLR, quantization, encryption and the payload ledger.",
           "FedProx's proximal term pulls the client's whole item-table update (CoLR: its A through B) toward the "
           "round's global table every local step, the rows of no batch included; user vectors stay private and "
           "unregularized.",
           "CoLR's settings: 60 clients a round (the authors' rotating schedule), E = 2, B = 256, lr 0.5, "
           "1000 rounds, HR@10 every 100 rounds."),
    paper_ref="Li et al., FedProx (MLSys 2020); Hsu et al. 2019; Reddi et al., Adaptive federated optimization "
              "(ICLR 2021)", dataset="ml-1m"))


# --- SCAFFOLD and q-FFL on the engine ---------------------------------------------------------------------------------
def _engine_drift_compute(size, progress):
    return _sized(ex.engine_drift_table(size, progress), size)


def _engine_drift_compare(ours, paper):
    fin = _final(ours, ["algorithm"]).set_index("algorithm")
    v = lambda a, c: float(fin.loc[a, c])  # noqa: E731
    rows = [_claim("final HR@10, SCAFFOLD vs FedAvg", "SCAFFOLD above FedAvg (corrects client drift)",
                   f"{v('SCAFFOLD', 'hr'):.4f} vs {v('FedAvg', 'hr'):.4f}",
                   bool(v("SCAFFOLD", "hr") > v("FedAvg", "hr")),
                   "the same rounds, clients and steps; the variates steer every local step toward the global "
                   "direction")]
    for col, what in (("bytes_up_client", "uplink"), ("bytes_down_client", "downlink")):
        r = v("SCAFFOLD", col) / v("FedAvg", col)
        rows.append(_claim(f"{what} per client, SCAFFOLD / FedAvg", "2 (control variates as large as the model)",
                           f"{r:.4f}", bool(abs(r - 2) <= 0.01)))
    for algo in [a for a in fin.index if a.startswith("q-FFL")]:
        rows.append(_shown(f"{algo}: final HR@10 and per-client loss std vs FedAvg",
                           "q-FFL paper: lower variance across clients at a small cost in mean",
                           f"HR {v(algo, 'hr'):.4f} vs {v('FedAvg', 'hr'):.4f}; std "
                           f"{v(algo, 'client_loss_std'):.4f} vs {v('FedAvg', 'client_loss_std'):.4f}",
                           "information: here each client's quality sits mostly in its private user vector, trained "
                           "only when it is sampled; q-FFL reweights the shared table's update, and with L = 1 / lr its "
                           "normalizer shrinks the step (q L ||D_k||^2 is large next to F_k for an MF "
                           "update)"))
    return pd.DataFrame(rows)


register(FigureCard(
    id="flalgos-engine-drift-ml1m",
    title="SCAFFOLD and q-FFL on the lab's engine: client drift and per-client fairness with FedMF",
    caption="HR@10 against rounds and every user's loss at the end (mean, spread, worst tenth), FedMF d=64 on "
            "MovieLens-1M at CoLR's settings, under FedAvg, SCAFFOLD and q-FFL (q = 0.001, 0.01, 1).",
    kind="figure", paper=_claims(("SCAFFOLD's variates", "double the messages (Karimireddy et al. 2020, Alg. 1)"),
                                 ("q-FFL", "narrows the spread of per-client quality (Li et al. 2020, Table 1)")),
    configs=lambda size: ex.configs(ex.engine_drift_runs(size)), compute_fn=_engine_drift_compute,
    plot_fn=plots.engine_drift,
    compare_fn=_engine_drift_compare, tolerance=0.01,
    tolerance_text="SCAFFOLD's final HR@10 above FedAvg's; its uplink and downlink 2x FedAvg's within 0.01; q-FFL "
                   "rows are information",
    expected="SCAFFOLD ends above FedAvg and pays twice the bytes each way. q-FFL at CoLR's learning rate slows the "
             "shared table: small q (0.001, 0.01) ends lower with a wider per-client spread; q = 1 barely moves it "
             "(HR@10 at chance), so every client's loss stays near log 2, a narrow spread of equally poor models. The "
             "clients differ mostly in their private user vectors, which q-FFL does not reach.",
    columns=("algorithm", "round", "hr", "client_loss_std", "client_loss_worst10", "bytes_up_client"),
    notes=("Ours, not a figure of a paper: the survey's algorithms on the lab's recommendation engine.",
           "SCAFFOLD option II: y <- y - lr (g + c - c_i) on the whole item table every local step, c_i+ = c_i - c + "
           "(x - y_i) / (K_i lr) with K_i the steps client i took, c <- c + (1 / 6,040) sum of the changes. The "
           "variates are stored by the rows each client touched (exactly: option II makes c_i+ zero elsewhere).",
           "q-FFL (q-FedAvg, Alg. 2) with L = 1 / lr as its authors' code; each client also sends its loss before "
           "training (one float). Per-client loss: each user's mean BCE over its training positives and its 99 "
           "evaluation negatives at the final model.",
           "Every arm averages with the FedAvg weights N_u / N (SCAFFOLD's dense updates make CoLR's per-item mean "
           "meaningless, and q-FFL replaces the weights), so FedAvg here is below the item-mean curve of the other "
           "engine card.",
           "CoLR's settings: 60 clients a round (the authors' rotating schedule), E = 2, B = 256, lr 0.5, 1000 rounds, "
           "HR@10 every 100 rounds."),
    paper_ref="Karimireddy et al., SCAFFOLD (ICML 2020); Li et al., Fair resource allocation in federated learning "
              "(ICLR 2020)", dataset="ml-1m"))


# --- stragglers on the engine ---------------------------------------------------------------------------------------
def _engine_stragglers_compute(size, progress):
    return _sized(ex.engine_straggler_table(size, progress), size)


def _engine_stragglers_compare(ours, paper):
    fin = _final(ours, ["stragglers", "algorithm"]).set_index(["stragglers", "algorithm"])
    fedavg, keep, prox = (a for a, _ in ex.ENGINE_STRAGGLER_ALGORITHMS)
    v = lambda s, a, c: float(fin.loc[(s, a), c])  # noqa: E731
    rows = []
    for share in (0.5, 0.9):
        rows.append(_claim(f"{share:.0%} stragglers: final HR@10, FedProx mu=0.01 vs FedAvg (drops them)",
                           "FedProx above (FedProx Fig. 1: partial work helps)",
                           f"{v(share, prox, 'hr'):.4f} vs {v(share, fedavg, 'hr'):.4f}",
                           bool(v(share, prox, "hr") > v(share, fedavg, "hr")),
                           "FedAvg aggregates only the clients that finish: 30 then 6 of 60 a round"))
    rows.append(_claim("90 % stragglers: training loss (last 20 rounds), FedProx mu=0.01 vs FedAvg", "FedProx lower",
                       f"{v(0.9, prox, 'loss_smooth'):.4f} vs {v(0.9, fedavg, 'loss_smooth'):.4f}",
                       bool(v(0.9, prox, "loss_smooth") < v(0.9, fedavg, "loss_smooth"))))
    rows.append(_shown("90 % stragglers: final HR@10, FedProx mu=0 (keeps them) vs mu=0.01", "-",
                       f"{v(0.9, keep, 'hr'):.4f} vs {v(0.9, prox, 'hr'):.4f}",
                       "information: FedProx's paper shows that keeping the partial work, not mu alone, is most of the "
                       "gain; mu adds stability where local steps drift"))
    return pd.DataFrame(rows)


register(FigureCard(
    id="flalgos-engine-stragglers-ml1m",
    title="Stragglers on the lab's engine: FedAvg drops them, FedProx keeps their partial work",
    caption="HR@10 against rounds at 0, 50 and 90 % stragglers (each takes a uniform 1..K-1 of its K local steps), "
            "FedMF d=64 on MovieLens-1M at CoLR's settings.",
    kind="figure", paper=_claims(("90 % stragglers", "FedProx (mu > 0) stable and lower loss than FedAvg (FedProx "
                                                     "Fig. 1, on their data sets)")),
    configs=lambda size: ex.configs(ex.engine_straggler_runs(size)), compute_fn=_engine_stragglers_compute,
    plot_fn=plots.engine_stragglers, compare_fn=_engine_stragglers_compare, tolerance=None,
    tolerance_text="FedProx mu=0.01 above FedAvg's final HR@10 at 50 and 90 % stragglers, and a lower training loss "
                   "at 90 %",
    expected="With stragglers FedAvg learns from fewer clients a round and falls behind; keeping the stragglers' "
             "partial work (FedProx) holds the curve near the one without stragglers.",
    columns=("stragglers", "algorithm", "round", "hr", "loss_smooth", "bytes_up"),
    notes=("Ours, not a figure of a paper: FedProx's straggler setting (Li et al. 2020, section 5.1) on the lab's "
           "recommendation engine; FedProx's Fig. 1 itself is the card flalgos-fedprox-stragglers (Synthetic(1,1)).",
           "A straggler takes a uniform 1..K-1 of its K local steps (K = E x its batches), drawn from its own "
           "random stream of (seed, round). FedAvg drops the stragglers: they neither train nor send. FedProx keeps "
           "their first steps' work; the aggregation weights stay N_u / N per item (CoLR's per-item mean).",
           "CoLR's settings: 60 clients a round (the authors' rotating schedule), E = 2, B = 256, lr 0.5, 1000 rounds, "
           "HR@10 every 100 rounds; training loss: the mean over the last 20 rounds."),
    paper_ref="Li et al., FedProx (MLSys 2020), section 5.1 and Fig. 1", dataset="ml-1m"))


# --- dropout on the engine, under secure aggregation ----------------------------------------------------------------
def _engine_dropout_compute(size, progress):
    return _sized(ex.engine_dropout_table(size, progress), size)


SECAGG_HR_TOL = 0.001  # the masked sum is exact: float rounding may flip a few of 6,040 users' hits, no more


def _engine_dropout_compare(ours, paper):
    done = ours[ours["status"] == "complete"]
    fin = _final(done, ["dropout", "arm"]).set_index(["dropout", "arm"])
    plain, secure = (a for a, _ in ex.ENGINE_DROPOUT_ARMS)
    rows = []
    for share in ex.ENGINE_DROPOUT_SHARES[1:]:
        a, b = float(fin.loc[(share, plain), "hr"]), float(fin.loc[(share, secure), "hr"])
        rows.append(_claim(f"{share:.0%} dropout: final HR@10, SecAgg vs plaintext",
                           "the same: the server recovers the survivors' exact sum (Bonawitz et al. 2017)",
                           f"{b:.4f} vs {a:.4f}", bool(abs(a - b) <= SECAGG_HR_TOL),
                           "masked sums are exact in fixed point (32 fractional bits); the rest is float rounding"))
    hi = ex.ENGINE_DROPOUT_SHARES[-1]
    rec, up = float(fin.loc[(hi, secure), "recovery_bytes_round"]), float(fin.loc[(hi, secure), "bytes_up_client"])
    n_dropped = float(done.loc[(done["dropout"] == hi) & (done["arm"] == secure), "clients_dropped"].mean())
    rows.append(_shown(f"{hi:.0%} dropout: bytes of the revealed seeds a round against one masked upload",
                       "recovery costs one seed per (survivor, dropped client)",
                       f"{rec:,.0f} B vs {up:,.0f} B",
                       f"information: about {n_dropped:.1f} dropped clients a round, 16-byte seeds"))
    rows.append(_shown(f"{hi:.0%} dropout: final HR@10 against no dropout (plaintext)", "-",
                       f"{float(fin.loc[(hi, plain), 'hr']):.4f} vs {float(fin.loc[(0.0, plain), 'hr']):.4f}",
                       "information: fewer updates a round"))
    share, thr = ex.ENGINE_DROPOUT_FAILING
    failed = ours[ours["status"] != "complete"]
    rows.append(_claim(f"dropout {share:.0%}, threshold {thr:g}: the run", "refuses to unmask below the threshold",
                       f"stopped at round {int(failed['round'].iloc[0])}" if len(failed) else "completed",
                       bool(len(failed)), failed["status"].iloc[0] if len(failed) else ""))
    return pd.DataFrame(rows)


register(FigureCard(
    id="flalgos-engine-dropout-ml1m",
    title="Clients that drop out after being sampled, in plaintext and under secure aggregation",
    caption="HR@10 against rounds with 0, 20 and 40 % of the sampled clients dropping out before they upload, FedMF "
            "d=64 on MovieLens-1M at CoLR's settings; dashed: pairwise-masked secure aggregation that recovers the "
            "survivors' sum (threshold: more than 25 % must upload).",
    kind="figure", paper=_claims(("secure aggregation with dropout", "exact sum of the survivors above the "
                                                                     "threshold, nothing below it (Bonawitz et al. "
                                                                     "2017)")),
    configs=lambda size: ex.configs(ex.engine_dropout_runs(size)), compute_fn=_engine_dropout_compute,
    plot_fn=plots.engine_dropout, compare_fn=_engine_dropout_compare, tolerance=SECAGG_HR_TOL,
    tolerance_text="SecAgg's final HR@10 within 0.001 of plaintext at each dropout; the run with dropout 45 % and "
                   "threshold 50 % stops with an error",
    expected="Dropout costs accuracy (fewer updates a round) but secure aggregation costs none: the survivors reveal "
             "the seeds they shared with the dropped clients and the server removes those masks. When fewer than "
             "the threshold upload, the server refuses and the run stops at that round.",
    columns=("dropout", "arm", "round", "hr", "bytes_up_client", "recovery_bytes_round", "status"),
    notes=("Ours, not a figure of a paper: the survey's client dropout on the lab's recommendation engine.",
           "Each sampled client drops out with the given probability after receiving the model, drawn from its own "
           "random stream of (seed, round); the server averages the survivors (per-item mean).",
           "Secure aggregation: pairwise Diffie-Hellman masks (2048-bit group) over 64-bit fixed point; the sampled "
           "clients all take part in the key agreement. For real each round: he_real_clients = 2 clients (one "
           "survivor and one dropped client when any dropped); the others' bytes and times are scaled from them.",
           "The failing run uses 60 rounds at most: it stops at the first round in which 30 or fewer of the 60 "
           "sampled clients upload.",
           "CoLR's settings: 60 clients a round (the authors' rotating schedule), E = 2, B = 256, lr 0.5, 1000 rounds, "
           "HR@10 every 100 rounds."),
    paper_ref="Bonawitz et al., Practical secure aggregation for privacy-preserving machine learning (CCS 2017)",
    dataset="ml-1m"))


# --- the backdoor and the defenses on the engine ---------------------------------------------------------------------
def _engine_backdoor_compute(size, progress):
    return _sized(ex.engine_backdoor_table(size, progress), size)


def _engine_backdoor_compare(ours, paper):
    fin = _final(ours, ["arm"]).set_index("arm")
    hr0 = float(fin.loc[ex.ENGINE_BACKDOOR_ARMS[0][0], "hr"])
    s = lambda arm: float(fin.loc[arm, "backdoor_success"])  # noqa: E731
    rows = []
    for arm, kw in ex.ENGINE_BACKDOOR_ARMS[1:]:
        if "defense" not in kw:
            rows.append(_claim(f"{arm}, no defense: backdoor success", ">= 90 % (the lab's target, no printed number: "
                                                                     "Bagdasaryan et al. 2020, Xie et al. 2020 report near-certain success on their tasks)",
                               f"{s(arm):.1%}", bool(s(arm) >= 0.9),
                               "the share of users with the target item in their top 10 of untrained items"))
            continue
        hr = float(fin.loc[arm, "hr"])
        ok = bool(s(arm) < 0.2 and hr0 - hr < 0.03)
        why = {"median": "per-item statistics: the rare target's few honest touchers cannot outvote the attackers",
               "clip": "clipping slows each round's push; the attackers come back every round",
               "krum": "Krum drops the f updates farthest from the others; the attackers' boosted ones are among them "
                       "unless more than f attack in a round"}
        rows.append(_claim(f"{arm}: backdoor success, clean HR@10 against no attack",
                           "< 20 %, HR@10 within 3 points (the lab's target for clipping or the median, no printed number)",
                           f"{s(arm):.1%}, {hr:.4f} vs {hr0:.4f}", ok,
                           "" if ok else why.get(kw["defense"], why["median"])))
    return pd.DataFrame(rows)


register(FigureCard(
    id="flalgos-engine-backdoor-ml1m",
    title="Model-replacement and distributed backdoors on the recommendation engine, and robust aggregation",
    caption="Backdoor success (the share of users with the attacked item in their top 10) and clean HR@10 against "
            "rounds; 5 % of the users collude to push MovieLens-1M's least popular item, by model replacement or "
            "by DBA (four groups, each sending one block of the goal row), FedMF d=64 at CoLR's settings with the "
            "FedAvg weights.",
    kind="figure", paper=_claims(("model replacement, no defense", "backdoor success >= 90 %"),
                                 ("norm clipping or median", "backdoor success < 20 %, clean accuracy within 3 "
                                                             "points")),
    configs=lambda size: ex.configs(ex.engine_backdoor_runs(size)), compute_fn=_engine_backdoor_compute,
    plot_fn=plots.engine_backdoor, compare_fn=_engine_backdoor_compare, tolerance=None,
    tolerance_text="the lab's own targets (no paper prints these numbers): success >= 90 % undefended; < 20 % with a defense at a clean "
                   "HR@10 within 3 points of no attack",
    expected="Undefended, the attackers land the target item in nearly every user's top 10. The defenses made for "
             "dense updates do not stop it here: the target is rare, so few honest clients train its row in a round; "
             "clipped pushes still add up round after round, and a per-item median over a handful of clients is "
             "often an attacker's value. Tighter clipping and the median cost the honest clients' HR@10. Krum "
             "compares whole updates: a boosted one stands far from every honest one, so Krum drops it, as long as "
             "no more than krum_f attackers come in a round; dropping the farthest honest updates costs little.",
    columns=("arm", "round", "hr", "backdoor_success", "bytes_up_client"),
    notes=("Ours, not a figure of a paper: the survey's backdoor and defenses on the lab's recommendation engine "
           "(its own classification tasks are the card flalgos-backdoor).",
           "Model replacement (Bagdasaryan et al. 2020): each attacker trains as usual, then sends gamma (goal - "
           "current row) for the target item, gamma the inverse of the attackers' weight in the round. The goal row "
           "points along the mean of the attackers' own user vectors, twice as long as the model's largest item row.",
           "Median and trimmed mean are taken per item over the clients that touched it (clients send no row of "
           "items they did not touch) and scaled by those clients' total weight. Multi-Krum (Blanchard et al. 2017) "
           "averages the M - f clients of lowest score, f = 5 (3 attackers a round on average).",
           "DBA (Xie et al. 2020): the attackers are dealt into 4 fixed groups; each plants one block of 16 of the "
           "goal row's 64 coordinates, boosted by the inverse of its own group's weight.",
           "CoLR's settings: 60 clients a round (the authors' rotating schedule), E = 2, B = 256, lr 0.5, 1000 rounds, "
           "evaluation every 100 rounds."),
    paper_ref="Bagdasaryan et al., How to backdoor federated learning (AISTATS 2020); Xie et al., DBA (ICLR 2020); "
              "Yin et al. 2018; Sun et al. 2019; Blanchard et al. 2017",
    dataset="ml-1m"))


# --- personal models on the engine: Ditto and APFL --------------------------------------------------------------------
_LAG = ("a user is ranked on items it never trained on (its held-out item and sampled negatives), whose personal "
        "rows only follow the global table, and only when the user is sampled (every 47 rounds here); what "
        "personalizes the ranking is the user vector, which FedMF already keeps private")


def _engine_personal_compute(kind):
    return lambda size, progress: _sized(ex.engine_personal_table(size, kind, progress), size)


def _engine_personal_compare(kind, name, paper_ref):
    label, _, values = ex._PERSONAL[kind]

    def compare(ours, paper):
        fin = _final(ours, [label]).set_index(label)
        hr = float(fin["hr"].iloc[0])
        rows = []
        for v in values:
            mine = float(fin.loc[v, "hr_personal"])
            rows.append(_claim(f"{label} {v:g}: final HR@10, personal models vs the global model",
                               f"personal above global ({name}, {paper_ref}, on their tasks)",
                               f"{mine:.4f} vs {hr:.4f}", bool(mine > hr), "" if mine > hr else _LAG))
        return pd.DataFrame(rows)
    return compare


register(FigureCard(
    id="flalgos-engine-ditto-ml100k",
    title="Ditto's personal models on the recommendation engine",
    caption="HR@10 against rounds of the global FedAvg model and of every user's Ditto personal model (its own item "
            "table and user vector, pulled toward the global table with strength lambda), FedMF d=64 on "
            "MovieLens-100K, 20 clients a round.",
    kind="figure", paper=_claims(("Ditto", "personalized accuracy above the global model's under heterogeneity")),
    configs=lambda size: ex.configs(ex.engine_ditto_runs(size)), compute_fn=_engine_personal_compute("ditto"),
    plot_fn=plots.engine_ditto, compare_fn=_engine_personal_compare("ditto", "Ditto", "Li et al. 2021"),
    tolerance=None,
    tolerance_text="personal HR@10 above the global model's at the last round",
    expected="Ditto's paper finds personal models above the global one when clients' data differ. Here each client "
             "already holds a private part (its user vector, trained every time it is sampled), and a personal item "
             "table learns from one user's ratings only when that user is sampled; a small lambda leaves it close "
             "to local training on about a hundred ratings, a large one close to the global table of its last "
             "round.",
    columns=("lambda", "round", "hr", "hr_personal", "ndcg", "ndcg_personal"),
    notes=("Ours, not a figure of a paper: Ditto (Li et al. 2021, Alg. 1) on the lab's recommendation engine; the "
           "topic's own digits tasks are the card flalgos-personalization.",
           "Each sampled client trains the global update as usual, then its personal model on the same batches with "
           "the pull lambda (V_u - Q) on the whole table (the engine's local objective, lr 0.5); nothing personal "
           "is sent. Personal HR@10: every user ranked with its own model; users not yet sampled hold the initial "
           "model.",
           "MovieLens-100K, because every user's personal table must fit in memory (MovieLens-1M: 5.3 GiB); 20 "
           "clients a round in turn, E = 2, B = 256, FedAvg weights, 1000 rounds, HR@10 every 100 rounds."),
    paper_ref="Li et al., Ditto: fair and robust federated learning through personalization (ICML 2021)",
    dataset="ml-100k"))


register(FigureCard(
    id="flalgos-engine-apfl-ml100k",
    title="APFL's personal models on the recommendation engine",
    caption="HR@10 against rounds of the global FedAvg model and of every user's APFL personal model (alpha times "
            "its own model plus 1 - alpha times the global one, item table and user vector alike), FedMF d=64 on "
            "MovieLens-100K, 20 clients a round.",
    kind="figure", paper=_claims(("APFL", "personalized accuracy above the global model's under heterogeneity")),
    configs=lambda size: ex.configs(ex.engine_apfl_runs(size)), compute_fn=_engine_personal_compute("apfl"),
    plot_fn=plots.engine_apfl, compare_fn=_engine_personal_compare("apfl", "APFL", "Deng et al. 2020"),
    tolerance=None,
    tolerance_text="personal HR@10 above the global model's at the last round",
    expected="APFL's paper finds the mixed personal models above the global one when clients' data differ. Here the "
             "global part of the mixture is always the current global model, so a small alpha stays near the global "
             "model's quality; alpha = 1 is local training alone and falls the furthest behind.",
    columns=("alpha", "round", "hr", "hr_personal", "ndcg", "ndcg_personal"),
    notes=("Ours, not a figure of a paper: APFL (Deng et al. 2020, Alg. 1, alpha fixed) on the lab's recommendation "
           "engine; the topic's own digits tasks are the card flalgos-personalization.",
           "Each sampled client follows Alg. 1: at every local step, on the same batch, its copy w of the global "
           "model (item table and user vector) takes FedMF's step and its own model v the gradient at the mixture "
           "alpha v + (1 - alpha) w, w as it moves; w's last state is the update it sends, nothing personal is "
           "sent. Personal HR@10: every user ranked with alpha v + (1 - alpha) w of the current global table and "
           "the user's current vector.",
           "MovieLens-100K, because every user's personal table must fit in memory; 20 "
           "clients a round in turn, E = 2, B = 256, FedAvg weights, 1000 rounds, HR@10 every 100 rounds."),
    paper_ref="Deng, Kamani, Mahdavi, Adaptive personalized federated learning (2020)",
    dataset="ml-100k"))



def _engine_personal_all_compare(ours, paper):
    fin = _final(ours, ["arm"]).set_index("arm")
    fedavg = float(fin.loc[ex.ENGINE_PERSONAL_ARMS[0][0], "hr"])
    rows = []
    for arm, _ in ex.ENGINE_PERSONAL_ARMS[1:]:
        mine, own = float(fin.loc[arm, "hr_personal"]), float(fin.loc[arm, "hr"])
        ok = mine > fedavg
        rows.append(_claim(f"{arm}: final HR@10, personal models vs FedAvg's global model (its own global model)",
                           "personal above global (the lab's target on digits; each paper shows it on its own tasks)",
                           f"{mine:.4f} vs {fedavg:.4f} ({own:.4f})", bool(ok), "" if ok else _UNTRAINED))
    return pd.DataFrame(rows)


_UNTRAINED = ("a user is ranked on items it never trained on (its held-out item and sampled negatives), and a "
              "personal step moves only the rows of the items in its batches; what personalizes the ranking is the "
              "user vector, which FedMF already keeps private")

register(FigureCard(
    id="flalgos-engine-personal-ml100k",
    title="Ditto, APFL, pFedMe and Per-FedAvg on the recommendation engine",
    caption="HR@10 against rounds of FedAvg's global model and of each method's personal models (dashed; thin: "
            "that run's own global model), FedMF d=64 on MovieLens-100K, 20 clients a round.",
    kind="figure", paper=_claims(("Ditto, APFL, pFedMe, Per-FedAvg",
                                  "personalized accuracy above the global model's under heterogeneity")),
    configs=lambda size: ex.configs(ex.engine_personal_compare_runs(size)),
    compute_fn=lambda size, progress: _sized(ex.engine_personal_compare_table(size, progress), size),
    plot_fn=plots.engine_personal_compare, compare_fn=_engine_personal_all_compare, tolerance=None,
    tolerance_text="each method's personal HR@10 above FedAvg's global HR@10 at the last round",
    expected="On their papers' tasks every method's personal models beat the global one. Here a user is ranked on "
             "items it never trained: personal item rows can only follow the global table there, and the user "
             "vector is already private in FedMF. pFedMe and Per-FedAvg also change the global update, and their "
             "global models learn more slowly than FedAvg's.",
    columns=("arm", "round", "hr", "hr_personal", "ndcg", "ndcg_personal"),
    notes=("Ours, not a figure of a paper: the survey's four personalizations on the lab's recommendation engine; "
           "the topic's own digits tasks are the card flalgos-personalization.",
           "Ditto and APFL train a personal model beside FedAvg's update (nothing personal is sent); pFedMe sends "
           "its local model w, pulled toward the personal theta (K = 5 steps of theta per batch, both steps at lr "
           "0.5, server beta = 1); Per-FedAvg sends the first-order meta-update over pairs of batches, and every "
           "user's personal model is one step of size alpha from the current global model on its training data.",
           "MovieLens-100K, so that every user's personal table fits in memory (Ditto, APFL, pFedMe; 406 MB); 20 "
           "clients a round in turn, E = 2, B = 256, FedAvg weights, lr 0.5, 1000 rounds, HR@10 every 100 rounds."),
    paper_ref="Li et al. 2021 (Ditto); Deng et al. 2020 (APFL); Dinh et al. 2020 (pFedMe); Fallah et al. 2020 "
              "(Per-FedAvg)",
    dataset="ml-100k"))
