"""STTFedRec (Qin et al., "Split Two-tower Model for Efficient and Privacy-Preserving Cross-device Federated
Recommendation") as figure cards: Table 2 and Table 3 (MovieLens columns), Fig. 4 to 6, and the privacy of
obfuscated requests.

Importing this module registers the cards (after the registry's own cards). The runs live in
`labcore.sttfedrec.experiments`; full-size results are stored as results/<card id>.csv/.json by
`python -m labcore.sttfedrec.experiments --full --save`.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..figures import registry as _registry
from ..figures.registry import FigureCard

SPLIT_NOTE = ("ML-1M from the LightGCN lists (no timestamps, no ratings.dat): every rating is a click; test = "
              "test.txt clicks, each ranked with 10 sampled unrated movies (section 4.1's ten per click); per-user AUC, "
              "Precision@10, NDCG@10 averaged over users. The paper's own filtering (6,022 users x 3,043 items) is not "
              "documented; ours is 6,040 x 3,706.")
PROFILE_NOTE = ("User features: gender, age, occupation, zip3 as hashed tokens plus the letter trigrams of 5 profile "
                "titles per user. Without timestamps the 'earlier clicks' are a seeded random set of the user's training "
                "clicks; they are features only, never training targets.")
ROUNDS_NOTE = ("Budget (the whole reproduction runs in ~35 min of a shared 2-core CPU): 400 federated rounds "
               "(K = 50, T = 10, one request per client per round: 20,000 clicks seen, 2.6% of the training clicks), "
               "600 centralized steps of 256 requests (154k clicks). Models are not converged; compare differences "
               "and orderings, not absolute values.")
OPT_NOTE = ("lr 1e-3 with lr * 0.99 every 10 rounds (the paper's 1e-4 and 'decay factor 0.01' are ambiguous and too "
            "slow for our round budget); FedAdam b1 0.9, b2 0.99 as in Eq. 13-15; softmax smoothing gamma = 10 on the "
            "cosine (DSSM's gamma; Eq. 8 as printed has none); dropout 0.2; N(0, 0.1) init; 4,096 hash buckets for "
            "4,224 distinct letter trigrams.")
SMOKE_NOTE = "Smoke size: a 300-user synthetic movie catalogue for a few rounds; it tests the pipeline only."


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["quantity", "paper", "ours", "ok", "note"])


def _pct(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.2f}"


# --- Table 2 -------------------------------------------------------------------------------------------------
def _table2_card() -> FigureCard:
    from . import experiments as E
    from .plots import table2_bars

    def compare(ours, paper):
        o = ours.set_index("model")
        p = paper.set_index("model")
        rows = []
        for fl, stt in (("FL-DSSM", "STTFedRec-DSSM"), ("FL-CLSM", "STTFedRec-CLSM")):
            if fl in o.index and stt in o.index:
                d = o.loc[stt, "auc"] - o.loc[fl, "auc"]
                pd_ = p.loc[stt, "auc"] - p.loc[fl, "auc"] if stt in p.index else float("nan")
                rows.append({"quantity": f"{stt} AUC - {fl} AUC (points)", "paper": f"{pd_:+.2f}",
                             "ours": f"{100 * d:+.2f}", "ok": abs(d) <= 0.01,
                             "note": "split learning does not change the math: within 1 AUC point"})
        for m in ours["model"]:
            if m in p.index:
                rows.append({"quantity": f"{m} AUC / P@10 / NDCG@10",
                             "paper": f"{p.loc[m, 'auc']:.2f} / {p.loc[m, 'p10']:.2f} / {p.loc[m, 'ndcg10']:.2f}",
                             "ours": f"{_pct(o.loc[m, 'auc'])} / {_pct(o.loc[m, 'p10'])} / {_pct(o.loc[m, 'ndcg10'])}",
                             "ok": None, "note": "information (different split, candidates and budget)"})
        for tower in ("DSSM", "CLSM"):
            if tower in o.index and f"FL-{tower}" in o.index:
                rows.append({"quantity": f"centralized {tower} AUC above FL-{tower}", "paper": "yes",
                             "ours": f"{_pct(o.loc[tower, 'auc'])} vs {_pct(o.loc[f'FL-{tower}', 'auc'])}",
                             "ok": None, "note": "shape (the centralized model saw 7.7x more clicks)"})
        return _frame(rows)

    return FigureCard(
        id="sttfedrec-table2-ml1m",
        title="Table 2: AUC, Precision@10, NDCG@10 of the eight models, MovieLens-1M",
        caption=("Table 2. Performance comparison results of different models in terms of AUC, Precision@10, and "
                 "nDCG@10 on MovieLens and Adressa datasets."),
        kind="table", paper=E.TABLE2_PAPER.copy(), configs=lambda size: E.table2_configs(size),
        compute_fn=lambda size, progress: E.table2(size, progress), plot_fn=table2_bars, compare_fn=compare,
        tolerance=0.01, tolerance_text="STTFedRec within 1 AUC point of naive FL, for DSSM and for CLSM",
        expected=("STTFedRec matches naive FL (the paper: 69.05 vs 69.34 DSSM, 73.50 vs 73.53 CLSM); federated "
                  "two-tower models trail the centralized ones; CLSM above DSSM."),
        columns=("model", "auc", "p10", "ndcg10"),
        notes=(SPLIT_NOTE, PROFILE_NOTE, ROUNDS_NOTE, OPT_NOTE,
               "FCF is the core FedMF engine (d = 64, lr 0.5, 2 local epochs, 4 negatives per click, 400 rounds of "
               "K = 50) scored with the same candidates. FedMVMF is a lab variant (linear multi-view factors: item id "
               "embedding + linear map of its trigrams; user = private on-device vector + linear map of its features; "
               "same requests and FedAdam), not Flanagan et al.'s code.",
               "STTFedRec rounds are computed as the sum of the clients' gradients; on rounds 0 and 200 the real "
               "chain runs on the 50 per-client gradients and its sum is used (chain_max_diff in the run history).",
               SMOKE_NOTE),
        paper_ref="Table 2 (section 4.2), MovieLens column", dataset="ml-1m",
    )


# --- Table 3 -------------------------------------------------------------------------------------------------
def _table3_card() -> FigureCard:
    from . import efficiency as F
    from . import experiments as E
    from .plots import table3_bars

    def compute(size, progress):
        return E.table3(size)[0]

    def compare(ours, paper):
        o = ours.set_index("model")
        p = paper.set_index("model")
        rows = []
        for tower in ("DSSM", "CLSM"):
            fl, st = f"FL-{tower}", f"STTFedRec-{tower}"
            if fl not in o.index or st not in o.index:
                continue
            for col, unit in (("train_ms", "ms"), ("infer_ms", "ms"), ("train_mb", "MB"), ("infer_mb", "MB")):
                for m in (fl, st):
                    rows.append({"quantity": f"{m} {col.replace('_', ' ')}", "paper": f"{p.loc[m, col]:g} {unit}",
                                 "ours": f"{o.loc[m, col]:.3g} {unit}", "ok": None, "note": "information"})
            pt = F.TABLE3_PAPER_IMPROVEMENT[tower.lower()]
            rows.append({"quantity": f"{tower}: device time improvement (training + inference)",
                         "paper": f"x{pt['time']}", "ours": f"x{o.loc[st, 'x_total_ms']:.1f}",
                         "ok": bool(o.loc[st, "x_total_ms"] > 1), "note": "shape: STTFedRec faster"})
            rows.append({"quantity": f"{tower}: device training time with the chain's share work",
                         "paper": "not reported", "ours": f"x{o.loc[st, 'x_train_with_chain_ms']:.2f}",
                         "ok": None, "note": "information: the chain's fixed-point shares dominate on the device"})
            rows.append({"quantity": f"{tower}: training bytes on device<->server links (64-bit ring)",
                         "paper": f"x{pt['comm']}", "ours": f"x{o.loc[st, 'x_train_mb_server_links']:.2f}",
                         "ok": bool(o.loc[st, "x_train_mb_server_links"] > 1), "note": "shape: STTFedRec smaller"})
            r32 = f"{st}/ring32"
            if r32 in o.index:
                rows.append({"quantity": f"{tower}: the same with a 32-bit ring (20 fractional bits)",
                             "paper": f"x{pt['comm']}", "ours": f"x{o.loc[r32, 'x_train_mb_server_links']:.2f}",
                             "ok": None, "note": "information: shares as large as float32 gradients"})
            rows.append({"quantity": f"{tower}: all training bytes incl. the device-to-device share (64-bit ring)",
                         "paper": "not counted", "ours": f"x{o.loc[st, 'x_train_mb']:.2f}", "ok": None,
                         "note": "information: < 1 means STTFedRec sends more"})
        return _frame(rows)

    return FigureCard(
        id="sttfedrec-table3-ml1m",
        title="Table 3: per-device training / inference time and communication, FL vs STTFedRec, MovieLens-1M",
        caption=("Table 3. Efficiency comparison result on computation and communication cost of per round training "
                 "and online inferring. The running time (in millisecond) and communication size (in megabytes) on "
                 "MovieLens and Adressa datasets."),
        kind="table", paper=F.TABLE3_PAPER.copy(), configs=lambda size: [E.base(size)], compute_fn=compute,
        plot_fn=table3_bars, compare_fn=compare, tolerance=None,
        tolerance_text="shape: STTFedRec's device time and device<->server training bytes below naive FL's",
        expected=("Inference dominates FL's device time (hashing the raw catalogue and running the item tower on "
                  "every item); STTFedRec only scores received embeddings. Training bytes roughly halve on the "
                  "server links (one tower instead of two)."),
        columns=("model", "train_ms", "infer_ms", "total_ms", "train_mb", "infer_mb", "total_mb"),
        notes=("Measured on this machine, one thread, one device at a time; medians over 20 devices; FL and "
               "STTFedRec measurements alternate so both see the same machine load. Device factor 1.0 (this CPU); "
               "a slower phone scales both columns alike.",
               "Training time in the paper's form excludes the chain; the device's chain work (fixed-point encoding "
               "and one uniform share of its whole gradient) is the chain_ms column.",
               "Bytes are serialized real messages of one device in one round: FL: request ids, raw records of the "
               "requested items, both towers down, both gradients up. STTFedRec: request ids, item embeddings, the "
               "round's union ids and the user tower down; the share to the next device and the mixed upload to "
               "the aggregation server, each carrying [user-tower gradient | item-embedding gradients in the union "
               "space | loss] as 64-bit ring words.",
               "Inference: FL downloads the raw catalogue (the paper's 0.14 MB); STTFedRec downloads 100 candidate "
               "embeddings (the paper's 0.05 MB). The whole catalogue of embeddings would be 1.8 MB "
               "(infer_catalogue_mb), 13x the raw text.",
               "Our towers are larger than the paper's (4,096 hash buckets: 1.1 M DSSM and 3.7 M CLSM parameters "
               "per tower), so absolute MB are ~3x the paper's.",
               SMOKE_NOTE),
        paper_ref="Table 3 (section 4.3), MovieLens columns", dataset="ml-1m",
    )


# --- Fig. 4 ---------------------------------------------------------------------------------------------------
def _fig4_card() -> FigureCard:
    from . import experiments as E
    from .plots import rho_curves

    def compare(ours, paper):
        rows = []
        series = ours["series"].unique() if "series" in ours else ["one click"]
        for s in series:
            for tower in ("dssm", "clsm"):
                d = ours[(ours["tower"] == tower) & ((ours["series"] == s) if "series" in ours else True)]
                d = d.sort_values("rho")
                if len(d) < 2:
                    continue
                lo, hi = d.iloc[0], d.iloc[-1]
                checked = s == "one click"
                rows.append({"quantity": f"STTFedRec-{tower.upper()} ({s}) AUC at rho={hi['rho']:.2f} vs "
                                         f"rho={lo['rho']:.2f}", "paper": "higher (Adressa)",
                             "ours": f"{_pct(hi['auc'])} vs {_pct(lo['auc'])}",
                             "ok": bool(hi["auc"] >= lo["auc"]) if checked else None,
                             "note": "shape" if checked else "information: a lower rho sees more clicks per round"})
                rows.append({"quantity": f"STTFedRec-{tower.upper()} ({s}) AUC / NDCG@10 by rho",
                             "paper": "rise with rho", "ours": "; ".join(f"{r:.2f}: {_pct(a)} / {_pct(n)}" for r, a, n in
                                                                        zip(d["rho"], d["auc"], d["ndcg10"])),
                             "ok": None, "note": "information"})
        return _frame(rows)

    return FigureCard(
        id="sttfedrec-fig4-ml1m",
        title="Fig. 4: effect of rho (share of non-clicked items in a request) on STTFedRec",
        caption="Figure 4. The performance by factor of negative sampling rate on Adressa",
        kind="figure", paper=pd.DataFrame(columns=["tower", "rho", "auc", "ndcg10"]),
        configs=lambda size: E.fig4_configs(size), compute_fn=lambda size, progress: E.fig4(size, progress),
        plot_fn=rho_curves, compare_fn=compare, tolerance=None,
        tolerance_text=("shape: with one click per request, AUC at rho = 0.9 not below AUC at rho = 0.5, for both "
                        "towers"),
        expected="AUC and NDCG@10 rise with rho (more negatives per click).",
        columns=("tower", "rho", "auc", "p10", "ndcg10"),
        notes=("The paper's Fig. 4 is on Adressa and given as an image only; ours is ML-1M.",
               "Two readings of rho. 'T = 10': the paper's grid {0.5, ..., 0.9} with T = 10 items per request, so "
               "rho = 0.5 trains on 5 clicks per request and rho = 0.9 on 1 (a lower rho sees 5x more clicks per "
               "round). 'one click': one click per request and T - 1 non-clicks, T = 2, 3, 4, 5, 10 "
               "(rho = 1 - 1/T = 0.5, 0.67, 0.75, 0.8, 0.9): the same clicks, more negatives per click.",
               "200 rounds per point (K = 50), otherwise Table 2's settings.", SMOKE_NOTE),
        paper_ref="Fig. 4 (section 4.4)", dataset="ml-1m",
    )


# --- Fig. 5 / 6 -------------------------------------------------------------------------------------------------
def _k_card(tower: str) -> FigureCard:
    from . import experiments as E
    from .plots import k_figure

    n = 5 if tower == "dssm" else 6

    def compute(size, progress):
        return E.fig56_frame(size, tower, progress)

    def plot(ours, paper):
        return k_figure(ours[ours["kind"] == "curve"], ours[ours["kind"] == "chain"], tower)

    def compare(ours, paper):
        rows = []
        c = ours[(ours["kind"] == "chain") & (ours["mode"] == "shares")].sort_values("K")
        if len(c) >= 2:
            sas = c["sas_ms"].to_numpy()
            dev = c["device_ms"].to_numpy()
            ks = c["K"].astype(int).tolist()
            rows.append({"quantity": f"aggregation server time, K = {ks}", "paper": "grows with K",
                         "ours": ", ".join(f"{x:.0f} ms" for x in sas), "ok": bool(np.all(np.diff(sas) > 0)),
                         "note": "shape"})
            rows.append({"quantity": f"device chain time, K = {ks}", "paper": "flat in K",
                         "ours": ", ".join(f"{x:.0f} ms" for x in dev),
                         "ok": bool(dev.max() <= 2.0 * dev.min()), "note": "shape: within a factor 2 across K"})
            rows.append({"quantity": "device bytes per round (share + upload)", "paper": "not affected by K",
                         "ours": ", ".join(f"{x / 2**20:.2f} MB" for x in c["device_bytes_sent"]), "ok": None,
                         "note": "information: grows slowly with K (item-embedding gradients live in the round's "
                                 "union of requested items)"})
        f = ours[(ours["kind"] == "curve") & (ours["final"] == True)].sort_values("K")  # noqa: E712
        if len(f) >= 2:
            rows.append({"quantity": f"final AUC, K = {f['K'].astype(int).tolist()}", "paper": "rises with K",
                         "ours": ", ".join(_pct(x) for x in f["auc"]), "ok": bool(f["auc"].iloc[-1] >= f["auc"].iloc[0]),
                         "note": "shape: the largest K at least the smallest K"})
        return _frame(rows)

    return FigureCard(
        id=f"sttfedrec-fig{n}-ml1m",
        title=f"Fig. {n}: effect of K on convergence and secure-aggregation time (STTFedRec-{tower.upper()})",
        caption=f"Figure {n}. The efficiency by factor of K on Adressa (STTFedRec-{tower.upper()})",
        kind="figure", paper=pd.DataFrame(columns=["K", "auc"]), configs=lambda size: E.fig56_configs(size, tower),
        compute_fn=compute, plot_fn=plot, compare_fn=compare, tolerance=None,
        tolerance_text="shape: server time grows with K, device time flat, final AUC not lower at the largest K",
        expected=("A larger K converges faster per round; the aggregation server's time grows with K; a device's "
                  "chain time does not (it only talks to its neighbour and the server)."),
        columns=("kind", "K"),
        notes=("The paper's Fig. 5 / 6 are on Adressa, images only; ours is ML-1M.",
               "Convergence: 150 rounds per K, AUC on 500 evaluation users every 25 rounds, full evaluation at the end.",
               "Chain costs per round, 64-bit ring: a device's own work (fixed-point encoding, one uniform share, "
               "a subtraction and an addition) on its full vector [user-tower gradient | union x 128 "
               "item-embedding gradients | loss], the least disturbed of 5 runs; the aggregation server adding the "
               "K full-length uploads. The real chain runs on a 65,536-value slice of K random gradients to check "
               "that its sum is exact. 'relay' rows: the running-sum variant (K + 1 sequential hops).",
               SMOKE_NOTE),
        paper_ref=f"Fig. {n} (section 4.4)", dataset="ml-1m",
    )


# --- privacy of obfuscated requests ------------------------------------------------------------------------------
def _privacy_card() -> FigureCard:
    from . import experiments as E
    from .plots import privacy_curves

    def compute(size, progress):
        return E.privacy_frame(E.privacy(size))

    def plot(ours, paper):
        return privacy_curves(ours[ours["kind"] == "rho"])

    def compare(ours, paper):
        r = ours[ours["kind"] == "rho"]
        rows = []
        rand = r[r["attack"] == "random"]
        rows.append({"quantity": "random guess precision vs chance (1 - rho)", "paper": "-",
                     "ours": f"max gap {float((rand['precision'] - rand['chance']).abs().max()):.3f}",
                     "ok": bool((rand["precision"] - rand["chance"]).abs().max() <= 0.03), "note": "sanity"})
        gains = {}
        for neg in ("uniform", "popular"):
            pop = r[(r["attack"] == "popularity") & (r["negatives"] == neg)].sort_values("rho")
            gains[neg] = (pop["precision"] - pop["chance"]).to_numpy()
            rows.append({"quantity": f"popularity attack: precision above chance ({neg} negatives), rho = "
                                     + ", ".join(f"{x:.1f}" for x in pop["rho"]),
                         "paper": "-", "ours": ", ".join(f"{g:+.3f}" for g in gains[neg]),
                         "ok": bool((gains[neg] > 0).all()) if neg == "uniform" else None,
                         "note": "uniform non-clicks are less popular than clicks" if neg == "uniform" else
                                 "information"})
        if len(gains["uniform"]) and len(gains["uniform"]) == len(gains["popular"]):
            rows.append({"quantity": "popularity-matched non-clicks cut the attack's gain at least in half",
                         "paper": "-", "ours": ", ".join(f"{p / u:.2f}" for p, u in zip(gains["popular"], gains["uniform"])),
                         "ok": bool((gains["popular"] <= 0.5 * gains["uniform"]).all()),
                         "note": "ratio of gains (popular / uniform), by rho"})
        lk = ours[ours["kind"] == "linkage"]
        for neg, g in lk.groupby("negatives"):
            rows.append({"quantity": f"linkage attack precision by linked participations ({neg})", "paper": "-",
                         "ours": ", ".join(f"{int(a)}: {b:.2f}" for a, b in zip(g["rounds_linked"], g["precision"])),
                         "ok": None, "note": "information: repeats betray clicks"})
        return _frame(rows)

    return FigureCard(
        id="sttfedrec-privacy-ml1m",
        title="Privacy: how well the server guesses the real clicks of an obfuscated request, by rho",
        caption="(not a figure of the paper) Obfuscated item requests, section 3.3 step 2.",
        kind="figure", paper=pd.DataFrame(columns=["rho", "precision"]), configs=lambda size: [],
        compute_fn=compute, plot_fn=plot, compare_fn=compare, tolerance=None,
        tolerance_text=("random guesses at chance; popularity attack above chance with uniform non-clicks, and its "
                        "gain at least halved by popularity-matched non-clicks"),
        expected=("A random guess finds 1 - rho of the clicks. Uniform non-clicks are less popular than real clicks, "
                  "so ranking by popularity beats chance; linking a device's requests over rounds beats it more."),
        columns=("kind", "attack", "rho", "precision", "auc"),
        notes=("ML-1M, 1,000 devices, 10 requests each of T = 10; the server is given the true click counts "
               "(worst case) for the popularity attack; 'linkage' links a device's 10 requests (the linkage rows: 1 "
               "to 20 requests of 500 devices at rho = 0.9).",
               "Popularity-matched non-clicks are drawn with probability proportional to (clicks + 1) among the "
               "items the device never clicked. They match the catalogue's click distribution, not each device's "
               "(devices are sampled uniformly, and light users click more popular items), so some gain remains.",
               SMOKE_NOTE),
        paper_ref="section 3.3 (no numbers in the paper)", dataset="ml-1m",
    )


CARD_IDS = ("sttfedrec-table2-ml1m", "sttfedrec-table3-ml1m", "sttfedrec-fig4-ml1m", "sttfedrec-fig5-ml1m",
            "sttfedrec-fig6-ml1m", "sttfedrec-privacy-ml1m")


def _register_all() -> None:
    _registry._ensure_loaded()  # the registry loads its own cards only while it is empty: load them first
    for card in (_table2_card(), _table3_card(), _fig4_card(), _k_card("dssm"), _k_card("clsm"), _privacy_card()):
        if card.id not in _registry._CARDS:
            _registry.register(card)


_register_all()
