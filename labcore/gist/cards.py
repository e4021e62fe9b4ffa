"""The GIST figure cards: Table 1, the appendix tables at local = 1, Fig. 4, LayerNorm on/off, bytes per sync.

Importing this module registers them. `smoke` trains a few epochs on a small synthetic graph (seconds);
`full` is the reproduction on Cora and CiteSeer (Planetoid split, 5 seeds unless a card says otherwise).
"""
from __future__ import annotations

import pandas as pd

from ..figures.registry import SPREAD_SIGMAS, FigureCard, InCardClock, with_run_times
from ..figures.registry import seed_tolerance as registry_seed_tolerance
from ..figures.registry import register as _register
from ..net.message import frame_bytes
from . import experiments, paper, plots
from .config import GistConfig

CARDS: dict[str, FigureCard] = {}  # this topic's cards, by id (usable while other topics are being edited)


def register(card: FigureCard, timings=experiments.train_seconds) -> FigureCard:
    card = with_run_times(card, timings)  # the seconds its runs took when they were trained
    CARDS[card.id] = card
    return _register(card)


SEEDS = {"smoke": (0,), "full": (0, 1, 2, 3, 4)}  # every card, as the report's 5 trials
APPENDIX_EPOCHS = 200  # the authors' default (--n-epochs 200); the appendix does not say
SMOKE = dict(graph="synthetic", epochs=12)
COMMON_NOTES = (
    "Split: Planetoid's (Kipf): 140 / 500 / 1000 nodes on Cora, 120 / 500 / 1000 on CiteSeer. The report's "
    "validation accuracies are multiples of 1/300 on Cora, so its validation set was not Planetoid's 500 nodes.",
    "The report's 'Test Best' is the best test accuracy over all epochs (authors' code); we give that as test_max "
    "and, as the honest number, the test accuracy at the best validation epoch (test_at_best_val).",
    "Training as the authors' code: Adam re-created at every sync (with local = 1 each step is Adam's first step, "
    "close to sign descent), lr /10 at 50 % and 75 % of the epochs, weight decay 5e-4, dropout 0.5 on the hidden "
    "layer, LayerNorm over the whole hidden matrix. Unlike the authors' code the output bias is merged (averaged) "
    "at every sync.",
    "Features, chosen per row on validation: every row is run with the authors' Gaussian random projection of the "
    "row-normalised bag of words to floor(F/m)*m dimensions and with the bag of words itself, zero-padded to "
    "ceil(F/m)*m columns (GistConfig.random_projection); the row shows the one with the higher mean best-validation "
    "accuracy over its seeds (column 'features', the other's in 'val_best_other'). Neither wins everywhere.",
    "One correction of ours (GistConfig.rescale_input, on unless a card says otherwise): a subnet's input columns "
    "are multiplied by m, as inverted dropout does with keep rate 1/m. A subnet sums over F/m features, so without "
    "it the merged model's first-layer pre-activations are m times what the subnets trained on (measured on "
    "trained Cora models, m = 2: std ratio 1.93 and 1.92, seeds 0 and 1). On Cora's validation split (m = 2, "
    "Table 1's settings, 3 seeds) it lifts the best validation accuracy from 78.8 to 79.9 %; scaling by sqrt(m) "
    "(the ratio at initialisation) gives the same best validation (80.0, seeds 0 and 1) and a lower validation "
    "accuracy at the last epoch (78.5 against 79.0).",
    "Every checked row runs this variant (rescale_input on), which the report does not have: a row within "
    "tolerance says our variant matches the report's number, not that the report's method reproduces. The "
    "faithful method (rescale_input off) has not been re-run at full size.",
)


def _size_cfg(size: str, **kw) -> dict:
    return {**kw, **SMOKE} if size == "smoke" else kw


STATED_TOLERANCE = 3.0  # points, for a row without a seed spread


def seed_tolerance(std: float, seeds: int, report_runs: int) -> float:
    """The registry's rule (`labcore.figures.registry.seed_tolerance`) in points, 3 where there is no spread."""
    return registry_seed_tolerance(std, seeds, report_runs, STATED_TOLERANCE)


def _pct_rows(ours: pd.DataFrame, paper_df: pd.DataFrame, keys: list[str], pairs, report_runs: int,
              check) -> pd.DataFrame:
    """One row per (config, metric pair): paper beside ours; `check(row)` says whether the row is checked (a number
    the report prints, at a tolerance from our seed spread) or shown."""
    out = []
    for _, o in ours.iterrows():
        sel = paper_df
        for k in keys:
            sel = sel[sel[k] == o[k]]
        label = ", ".join(f"{k}={o[k]}" for k in keys)
        for ours_col, paper_col, what in pairs:
            p = float(sel[paper_col].iloc[0]) if len(sel) and paper_col in sel else float("nan")
            v = float(o[ours_col])
            checked = check(o, ours_col) and p == p and o.get("graph") != "synthetic"
            std, seeds = float(o.get(ours_col + "_std", float("nan"))), int(o.get("seeds", 1))
            tol = seed_tolerance(std, seeds, report_runs)
            ok = bool(abs(v - p) <= tol) if checked else None
            note = f"± {std:.1f} over {seeds} seed(s)" + (f"; within {tol:.1f}" if checked else "")
            out.append({"quantity": f"{label}: {what}", "paper": p, "ours": round(v, 2), "ok": ok,
                        "kind": "number" if checked else "shown", "note": note})
    return pd.DataFrame(out)


FEATURES = {True: "projection", False: "bag of words"}  # GistConfig.random_projection, as the cards name it


def both_features(configs: list[GistConfig]) -> list[GistConfig]:
    """Every config with the projection and with the (zero-padded) bag of words."""
    return [c.replace(random_projection=p) for c in configs for p in FEATURES]


def select_features(table: pd.DataFrame) -> pd.DataFrame:
    """Per row (all fields but the features), the feature treatment with the higher mean best validation accuracy
    (ties: the authors' projection); 'val_best_other' is the best validation accuracy of the one not kept."""
    keys = [c for c in table.columns if c in GistConfig.__dataclass_fields__ and c != "random_projection"]
    rows = []
    for _, g in table.groupby(keys, sort=False):
        g = g.sort_values("random_projection", ascending=False)  # projection first: it wins ties
        best = g.loc[g["val_best"].idxmax()].copy()
        other = g.drop(index=best.name)
        best["features"] = FEATURES[bool(best["random_projection"])]
        best["val_best_other"] = float(other["val_best"].iloc[0]) if len(other) else float("nan")
        rows.append(best)
    return pd.DataFrame(rows).reset_index(drop=True)


# --- Table 1 --------------------------------------------------------------------------------------------------
def table1_configs(size: str) -> list[GistConfig]:
    out = []
    for _, r in paper.TABLE1.iterrows():
        epochs = int(r.epochs) if size == "full" else max(3, int(r.epochs) // 40)
        for s in SEEDS[size]:
            kw = dict(graph="cora", subnets=int(r.subnets), split="layer1", hidden=16, local=1, epochs=epochs,
                      lr=float(r.lr), layernorm=bool(r.layernorm), seed=s)
            out.append(GistConfig(**(kw if size == "full" else {**kw, "graph": "synthetic"})))
    return both_features(out)


def _grid(size: str, configs_fn, progress: bool) -> pd.DataFrame:
    frame = experiments.summaries(configs_fn(size), progress=progress)
    return select_features(experiments.over_seeds(frame))


def table1_compute(size: str, progress: bool) -> pd.DataFrame:
    return _grid(size, table1_configs, progress)


def table1_compare(ours: pd.DataFrame, paper_df: pd.DataFrame) -> pd.DataFrame:
    pairs = [("test_last", "test_last", "test % at the last epoch"),
             ("test_max", "test_best", "best test % over epochs"),
             ("test_at_best_val", "test_best", "test % at best validation (paper: best test)")]
    return _pct_rows(ours, paper_df, ["subnets"], pairs, 1,  # the report: one run per row
                     lambda o, col: col == "test_last" and o["subnets"] <= 4)


register(FigureCard(
    id="gist-table1-cora", kind="table", dataset="cora",
    title="GCN-IST, first layer split: accuracy against the number of subnets (Table 1, Cora)",
    caption="Table 1. Experiments on GCN-IST with partitioning on first GCN layer only",
    paper=paper.TABLE1, configs=table1_configs, compute_fn=table1_compute,
    plot_fn=lambda o, p: plots.ours_vs_paper(o, p, "subnets", "test_last", "test_last",
                                             title="Table 1 (Cora): test accuracy at the last epoch"),
    compare_fn=table1_compare, tolerance=SPREAD_SIGMAS,
    tolerance_text="test accuracy at the last epoch within 2 standard deviations of (our mean over 5 seeds - the "
                   "report's single run), from our seed spread, for m <= 4 (about 1 point); m = 8 shown",
    expected="accuracy falls slowly with m: about 80 % at m = 1 and 2, a few points less at m = 8",
    columns=("subnets", "test_last", "test_at_best_val", "val_best", "test_max", "features", "val_best_other"),
    notes=COMMON_NOTES + (
        "Table 1's rows use different epochs (400, 200, 100, 50 for m = 1, 2, 4, 8: the same total subnet steps "
        "per subnet width), learning rates and LayerNorm settings; we use each row's. The report gives one run "
        "per row; we give the mean and std over 5 seeds.",
        "m = 1 (the report: 'IST? False') is plain training at lr 0.1 for 400 epochs; the correction changes "
        "nothing there (m = 1 sees every feature). It sits under our Kipf baseline (81.7) because Table 1's recipe "
        "is not Kipf's: lr 0.1, L2 on every layer, no input dropout (on validation, m = 2, 2 seeds: L2 on theta1 "
        "only plus input dropout, +0.6 points of best validation); keeping Adam's state across syncs instead of a "
        "fresh Adam per sync: +0.5 best validation at m = 1 (3 seeds), the same test accuracy at the last epoch. On "
        "top of the rescaling neither moved m = 2's best validation (seed 0), so neither is adopted.",
        "The report's Cora split is not Planetoid's (validation accuracies in multiples of 1/300: the old DGL "
        "loader's 300 validation nodes), so its absolute numbers (its m = 1 beats Kipf's 81.5) are not ours to "
        "match point for point; the decay with m is.",
        "Misses at the seed-spread tolerance: m = 1 and m = 2 end 1.6 and 2.1 points under the report's single "
        "run (tolerances 0.8 and 1.2 points); m = 4 is within (78.8 against 77.6).",
    ),
    paper_ref="Table 1 of the first report (GCN-IST)"))


# --- appendix tables at local = 1 ----------------------------------------------------------------------------------
APPENDIX_GRAPHS = ("cora", "citeseer")


def appendix_configs(size: str) -> list[GistConfig]:
    rows = paper.APPENDIX[(paper.APPENDIX.local == 1) & paper.APPENDIX.graph.isin(APPENDIX_GRAPHS)]
    if size == "smoke":
        rows = rows[rows.graph == "cora"]
    out = []
    for _, r in rows.iterrows():
        for s in SEEDS[size]:
            kw = dict(graph=r.graph, subnets=int(r.subnets), split=r.split, hidden=int(r.hidden), local=1,
                      epochs=APPENDIX_EPOCHS, lr=float(r.lr), layernorm=True, seed=s)
            out.append(GistConfig(**_size_cfg(size, **kw)))
    return both_features(out)


def appendix_compute(size: str, progress: bool) -> pd.DataFrame:
    return _grid(size, appendix_configs, progress)


def appendix_compare(ours: pd.DataFrame, paper_df: pd.DataFrame) -> pd.DataFrame:
    pairs = [("test_max", "test_best", "best test % over epochs"), ("val_best", "val_best", "best validation %"),
             ("test_last", "test_last", "test % at the last epoch"),
             ("test_at_best_val", "test_best", "test % at best validation (paper: best test)")]
    return _pct_rows(ours, paper_df, ["graph", "split", "subnets"], pairs, 5,  # the report: means over 5 trials
                     lambda o, col: col == "test_max" and o["graph"] == "cora")


register(FigureCard(
    id="gist-appendix-local1", kind="table", dataset="cora, citeseer",
    title="GCN-IST with a sync after every epoch: layer 1 split (hidden 16) and both layers split (hidden 64)",
    caption="Appendix tables (local iterations = 1 rows): Cora and CiteSeer, m = 2, 4, 8",
    paper=paper.APPENDIX[paper.APPENDIX.local == 1].reset_index(drop=True), configs=appendix_configs,
    compute_fn=appendix_compute,
    plot_fn=lambda o, p: plots.ours_vs_paper(o, p, "subnets", "test_max", "test_best", facet="graph", series="split",
                                             title="Appendix, local = 1: best test accuracy over epochs"),
    compare_fn=appendix_compare, tolerance=SPREAD_SIGMAS,
    tolerance_text="Cora: best test accuracy over epochs within 2 standard deviations of (our mean - the "
                   "appendix's mean, 5 runs each), from our seed spread; CiteSeer shown",
    expected="Cora near 79-80 % for m = 2 and 4 in both modes; both-layer split drops more at m = 8",
    columns=("graph", "split", "subnets", "test_max", "test_at_best_val", "test_last", "val_best", "features",
             "val_best_other"),
    notes=COMMON_NOTES + (
        f"Epochs: {APPENDIX_EPOCHS} (the authors' default; the appendix does not state it). LayerNorm on. "
        f"{len(SEEDS['full'])} seeds per row, as the report.",
        "Which appendix table is which mode is our reading (A = layer 1, hidden 16; B = both layers, hidden 64): "
        "the report's three appendix tables carry no captions.",
        "CiteSeer is not checked: the report's CiteSeer accuracies (75-76 %) are 5 points above any GCN on "
        "Planetoid's CiteSeer split (Kipf: 70.3 %) and the report counts 3,312 nodes (the original graph) where "
        "Planetoid has 3,327; its split was evidently not Planetoid's, which we use.",
        "PubMed rows are not run: the local data lacks ind.pubmed.allx (the loader says so).",
        "Misses at the seed-spread tolerance (0.5 to 0.7 points), all above the report: both layers split at "
        "m = 2, 4 and 8 (81.2, 81.9, 82.1 against 80.2, 80.6, 76.3). "
        "Without the input rescaling both layers at m = 8 was 76.4 (2 seeds); with it m = 8 loses nothing "
        "against m = 2.",
    ),
    paper_ref="Appendix tables of the first report (rows with local iterations = 1)"))


# --- appendix table C at local = 10 and 20: the faithful method, and ours beside it -------------------------------
C_LOCALS = (10, 20)
VARIANTS = {False: "faithful", True: "rescaled input (ours)"}  # GistConfig.rescale_input


def appendix_c_configs(size: str) -> list[GistConfig]:
    rows = paper.APPENDIX_C[paper.APPENDIX_C.local.isin(C_LOCALS)]
    if size == "smoke":
        rows = rows[(rows.graph == "cora") & (rows.local == 10) & rows.subnets.isin((2, 8))]
    out = []
    for _, r in rows.iterrows():
        local = int(r.local) if size == "full" else 3
        for s in SEEDS[size]:
            for rescale in VARIANTS:
                kw = dict(graph=r.graph, subnets=int(r.subnets), split="both", hidden=64, local=local,
                          epochs=APPENDIX_EPOCHS, lr=float(r.lr), layernorm=True, rescale_input=rescale, seed=s)
                out.append(GistConfig(**_size_cfg(size, **kw)))
    return out  # the authors' projection at every point, as Fig. 4


def appendix_c_compute(size: str, progress: bool) -> pd.DataFrame:
    out = experiments.over_seeds(experiments.summaries(appendix_c_configs(size), progress=progress))
    out["variant"] = out["rescale_input"].map(VARIANTS)
    return out


def appendix_c_compare(ours: pd.DataFrame, paper_df: pd.DataFrame) -> pd.DataFrame:
    both = pd.concat([paper_df.assign(variant=v) for v in VARIANTS.values()], ignore_index=True)
    pairs = [("test_max", "test_best", "best test % over epochs"), ("test_last", "test_last", "test % at the last epoch")]
    return _pct_rows(ours, both, ["graph", "local", "subnets", "variant"], pairs, 5,  # the report: 5 trials
                     lambda o, col: col == "test_max" and o["graph"] == "cora" and o["variant"] == "faithful")


register(FigureCard(
    id="gist-appendix-c", kind="table", dataset="cora, citeseer",
    title="Both layers split with LayerNorm, 10 and 20 local iterations: the collapse at m = 8",
    caption="Appendix table C (LayerNorm on, both layers split, hidden 64): rows with local iterations = 10 and 20, "
            "Cora and CiteSeer, m = 2, 4, 8",
    paper=paper.APPENDIX_C[paper.APPENDIX_C.local.isin(C_LOCALS)].reset_index(drop=True), configs=appendix_c_configs,
    compute_fn=appendix_c_compute,
    plot_fn=lambda o, p: plots.ours_vs_paper(o[o.variant == "faithful"], p, "subnets", "test_max", "test_best",
                                             facet="graph", series="local",
                                             title="Appendix C (faithful method): best test accuracy over epochs"),
    compare_fn=appendix_c_compare, tolerance=SPREAD_SIGMAS,
    tolerance_text="Cora, the report's method (no input rescaling): best test accuracy over epochs within 2 standard "
                   "deviations of (our mean - the appendix's mean, 5 runs each), from our seed spread; CiteSeer and "
                   "our rescaled variant shown",
    expected="m = 2 and 4 near the local = 1 accuracy; m = 8 collapses as the local iterations grow (the report: "
             "Cora 62.1 at 10, 57.0 at 20)",
    columns=("graph", "local", "subnets", "variant", "test_max", "test_last", "val_best"),
    notes=COMMON_NOTES[:3] + COMMON_NOTES[4:5] + (
        "Rows: the report's method (rescale_input off, the checked rows) and, beside each, ours with the input "
        "rescaled (shown). Features: the authors' random projection at every point (choosing per row on "
        "validation, as the local = 1 cards do, would double the runs).",
        f"Epochs: {APPENDIX_EPOCHS}; learning rates of appendix table C; LayerNorm on; {len(SEEDS['full'])} seeds "
        "per row, as the report.",
        "CiteSeer is not checked: the report's CiteSeer split is not Planetoid's (see gist-appendix-local1).",
        "Misses: m = 4 and m = 8 at both local counts, all above the report (ours 78.8 and 73.9 at 10 local "
        "iterations, 78.6 and 74.9 at 20, against 76.4, 62.1, 76.6, 57.0); m = 2 is within. The collapse at "
        "m = 8 is not reproduced: the report's method loses 4.5 points from m = 2 to m = 8 at 20 local iterations "
        "(the report: 21.9), ours with the input rescaled loses none. Ruled out as the cause: the input rescaling "
        "(both variants are run). Not ruled out: the report's split (its validation accuracies are multiples of "
        "1/300, not Planetoid's 500 nodes), its number of epochs (not stated; 200 here) and the output bias, "
        "which the authors' code keeps per subnet and we merge at every sync.",
    ),
    paper_ref="Appendix table C of the first report (rows with local iterations = 10 and 20)"))


# --- Fig. 4 ---------------------------------------------------------------------------------------------------
FIG4_LOCALS = {"smoke": (1, 3), "full": (1, 5, 10, 20, 30)}
FIG4_GRAPHS = APPENDIX_GRAPHS


def fig4_configs(size: str) -> list[GistConfig]:
    graphs = FIG4_GRAPHS if size == "full" else ("cora",)
    rows = paper.APPENDIX[paper.APPENDIX.graph.isin(graphs) & paper.APPENDIX.local.isin(FIG4_LOCALS["full"])]
    out = []
    for _, r in rows.iterrows():
        local = int(r.local)
        if size == "smoke":
            if local not in (1, 5) or int(r.subnets) == 4:
                continue
            local = 1 if local == 1 else 3
        for s in SEEDS[size]:
            kw = dict(graph=r.graph, subnets=int(r.subnets), split=r.split, hidden=int(r.hidden), local=local,
                      epochs=APPENDIX_EPOCHS, lr=float(r.lr), layernorm=True, seed=s)
            out.append(GistConfig(**_size_cfg(size, **kw)))
    return out  # the authors' projection at every point (both treatments would double its 300 runs)


def fig4_compute(size: str, progress: bool) -> pd.DataFrame:
    return _grid(size, fig4_configs, progress)


def fig4_compare(ours: pd.DataFrame, paper_df: pd.DataFrame) -> pd.DataFrame:
    return _pct_rows(ours, paper_df, ["graph", "split", "local", "subnets"],
                     [("test_max", "test_best", "best test % over epochs")], 5,
                     lambda o, col: o["graph"] == "cora")


register(FigureCard(
    id="gist-fig4", kind="figure", dataset="cora, citeseer",
    title="Accuracy against local iterations between syncs, per number of subnets (Fig. 4)",
    caption="Figure 4. Results across different number of local iterations and subnetworks for all datasets. "
            "Results are included for both one layer and two layer IST. The hidden size for one layer and two "
            "layer IST were 16 and 64, respectively.",
    paper=paper.APPENDIX, configs=fig4_configs, compute_fn=fig4_compute, plot_fn=plots.fig4_lines,
    compare_fn=fig4_compare, tolerance=SPREAD_SIGMAS,
    tolerance_text="Cora: best test accuracy over epochs within 2 standard deviations of (our mean - the "
                   "appendix's mean, 5 runs each), from our seed spread; CiteSeer shown",
    expected="accuracy decreases slowly as local iterations grow; more subnets lose more, most with both layers split",
    columns=("graph", "split", "subnets", "local", "test_max", "test_at_best_val", "test_last", "features",
             "val_best_other"),
    notes=COMMON_NOTES + (
        f"{len(SEEDS['full'])} seeds per point, as the report. Features: the authors' projection at every point (not "
        "chosen per row as on the other cards: running both treatments would double the card's 300 runs).",
        "Misses at the seed-spread tolerance (0.5 to 2.2 points): 13 of the 30 Cora points. Nine of the ten m = 8 "
        "points are above the report (layer 1 by 2.0 to 3.3 points at local 5 to 30, both layers split by 2.8 to "
        "6.0), and m = 4 at local 20 (layer 1) and local 5 and 10 (both) by 1.0, 0.9 and 1.3; both layers split, "
        "m = 2, local 5 is under it by 1.3. With "
        "the input rescaling m = 8 loses about as little as m = 2 (within 1 point with both layers split), where "
        "the report's m = 8 with both layers split is 3 to 7 points under its m = 2.",
        "CiteSeer is shown, not checked (its split differs from the report's: see gist-appendix-local1).",
        "Fig. 4 plots the appendix tables; we overlay their 'Test Best' column.",
    ),
    paper_ref="Fig. 4 and the appendix tables of the first report"))


# --- LayerNorm on/off with both layers split -------------------------------------------------------------------
def layernorm_configs(size: str) -> list[GistConfig]:
    rows = paper.APPENDIX_C[(paper.APPENDIX_C.graph == "cora") & (paper.APPENDIX_C.local == 1)]
    out = []
    for _, r in rows.iterrows():
        for ln in (True, False):
            for s in SEEDS[size]:
                kw = dict(graph="cora", subnets=int(r.subnets), split="both", hidden=64, local=1,
                          epochs=APPENDIX_EPOCHS, lr=float(r.lr), layernorm=ln, seed=s)
                out.append(GistConfig(**_size_cfg(size, **kw)))
    return both_features(out)


def layernorm_compute(size: str, progress: bool) -> pd.DataFrame:
    out = _grid(size, layernorm_configs, progress)
    out["LayerNorm"] = out["layernorm"].map({True: "on", False: "off"})
    return out


def layernorm_compare(ours: pd.DataFrame, paper_df: pd.DataFrame) -> pd.DataFrame:
    rows, gains = [], {}
    for m, g in ours.groupby("subnets"):
        on = float(g[g.layernorm]["test_at_best_val"].iloc[0])
        off = float(g[~g.layernorm]["test_at_best_val"].iloc[0])
        p = paper_df[(paper_df.graph == "cora") & (paper_df.local == 1) & (paper_df.subnets == m)]
        smoke = (g["graph"] == "synthetic").any()
        rows.append({"quantity": f"m={m}: test % at best validation, LayerNorm on", "ours": round(on, 2),
                     "paper": float(p["test_best"].iloc[0]) if len(p) else float("nan"), "ok": None,
                     "kind": "shown", "note": "paper: Table C 'Test Best' (LayerNorm on)"})
        rows.append({"quantity": f"m={m}: LayerNorm on minus off (points)", "ours": round(on - off, 2),
                     "paper": float("nan"), "ok": None, "kind": "shown", "note": "test % at best validation"})
        gains[m] = on - off
    smoke = (ours["graph"] == "synthetic").any()
    worse = [f"m={m}: {d:+.2f}" for m, d in gains.items() if d <= 0]
    # the report: "when both layers are partitioned, layer normalization becomes essential": at every m it ran
    rows.append({"quantity": "LayerNorm on beats off at every m", "ours": "; ".join(worse) or "yes",
                 "paper": "LayerNorm 'becomes essential' when both layers are split",
                 "ok": None if smoke else not worse, "kind": "shown" if smoke else "claim",
                 "note": "ours lists the m where off is as good or better"})
    return pd.DataFrame(rows)


register(FigureCard(
    id="gist-layernorm-cora", kind="figure", dataset="cora",
    title="Both layers split (hidden 64): LayerNorm on against off",
    caption="Sec. 4.4: when both layers are partitioned, layer normalization becomes essential to the convergence "
            "of the global model (appendix table C for LayerNorm on)",
    paper=paper.APPENDIX_C, configs=layernorm_configs, compute_fn=layernorm_compute,
    plot_fn=lambda o, p: plots.ours_vs_paper(o, p.assign(LayerNorm="on")[p.local == 1] if len(p) else p,
                                             "subnets", "test_at_best_val", "test_best", series="LayerNorm",
                                             title="Cora, both layers split: test accuracy at best validation"),
    compare_fn=layernorm_compare, tolerance=None,
    tolerance_text="claim: LayerNorm on beats LayerNorm off (test % at best validation) at every m = 2, 4, 8",
    expected="without LayerNorm the merged model degrades as m grows; with it m = 8 stays usable",
    columns=("subnets", "layernorm", "test_at_best_val", "test_last", "test_max", "features", "val_best_other"),
    notes=COMMON_NOTES + ("Learning rates of appendix table C (0.05 at local = 1). "
                          f"{len(SEEDS['full'])} seeds per point.",
                          "Miss: at m = 2 LayerNorm off is 2.0 points better (82.7 against 80.7); on wins at m = 4 "
                          "(+2.4) and m = 8 (+9.7). The report's claim has no m restriction."),
    paper_ref="Sec. 4.4 and appendix table C of the first report"))


# --- bytes per subnet per sync --------------------------------------------------------------------------------
def bytes_configs(size: str) -> list[GistConfig]:
    graph = "synthetic" if size == "smoke" else "cora"
    return [GistConfig(graph=graph, subnets=m, split=s, hidden=h, epochs=1)
            for s, h in (("layer1", 16), ("both", 64)) for m in (1, 2, 4, 8)]


BLOCK_PARTS = {"layer1": ("theta1",), "both": ("theta1", "theta2")}
BYTES_CLOCK = InCardClock()  # the one measured round each bytes config runs in the card, by config key


def bytes_compute(size: str, progress: bool) -> pd.DataFrame:
    from .simulate import run

    rows = []
    for cfg in bytes_configs(size):
        res = BYTES_CLOCK.time(cfg.key(), run, cfg, rounds=1)
        led = res.ledger[(res.ledger.direction == "up")]
        per = led.groupby("part")["bytes"].sum() / cfg.subnets
        f, h, c = res.params["theta1"].shape[0], cfg.hidden, res.params["theta2"].shape[1]
        m = cfg.subnets
        n1, n2 = f * h, h * c
        values = n1 // m if cfg.split == "layer1" else n1 // m**2 + n2 // m
        parts = BLOCK_PARTS[cfg.split]
        measured = float(sum(per[p] for p in parts))
        rows.append({"graph": cfg.graph, "split": cfg.split, "subnets": m, "hidden": h, "features": f,
                     "theta1_values": n1, "theta2_values": n2, "formula_bytes": 4 * values,
                     "measured_block_bytes": measured, "framing_bytes": sum(frame_bytes(p, 2) for p in parts),
                     "measured_bytes": float(per.sum())})
    return pd.DataFrame(rows)


def bytes_compare(ours: pd.DataFrame, paper_df: pd.DataFrame) -> pd.DataFrame:
    out = []
    for _, r in ours.iterrows():
        formula = "|θ1|/m" if r.split == "layer1" else "|θ1|/m² + |θ2|/m"
        out.append({"quantity": f"{r.split}, m={r.subnets}: block bytes per subnet per sync ({formula} x 4 B)",
                    "paper": float(r.formula_bytes), "ours": float(r.measured_block_bytes - r.framing_bytes),
                    "ok": float(r.measured_block_bytes - r.framing_bytes) == float(r.formula_bytes),
                    "kind": "claim",  # the report states the partition, not byte counts
                    "note": f"measured minus {int(r.framing_bytes)} B of part headers; the whole message "
                            f"(with b1, b2 and the averaged θ2 when only layer 1 is split) is {int(r.measured_bytes)} B"})
    return pd.DataFrame(out)


register(FigureCard(
    id="gist-bytes", kind="figure", dataset="cora",
    title="Bytes one subnet sends per sync, measured by the payload ledger",
    caption="Sec. 3.1: with layer 1 split a subnet owns |θ1|/m of θ1; with both layers split |θ1|/m² + |θ2|/m",
    paper=pd.DataFrame(columns=["split", "subnets", "formula_bytes"]), configs=bytes_configs,
    compute_fn=bytes_compute, plot_fn=lambda o, p: plots.bytes_bars(o), compare_fn=bytes_compare, tolerance=0.0,
    tolerance_text="exact: measured bytes of the partitioned blocks minus part headers = 4 B x the formula",
    expected="halving with every doubling of m for layer 1; about a quarter (θ1) per doubling with both split",
    columns=("split", "subnets", "formula_bytes", "measured_block_bytes", "measured_bytes"),
    notes=("The formula is the report's block count (float32); 'paper' is that formula, not a printed number: "
           "each row is a claim.", "Byte counts do not depend on the input rescaling (rescale_input).",
           "The random projection makes the feature count a multiple of m (1432 on Cora for m = 2, 4, 8).")),
    timings=BYTES_CLOCK)

CARD_IDS = tuple(CARDS)
