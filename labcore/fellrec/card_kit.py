"""What both backbones' FELLRec cards share: the topic's card dict, the registration, the row shape of a
comparison (kind: a paper number checked with a tolerance, a paper claim checked as stated, or shown), and the
checks both backbones run alike: Table 1's two checked rows, Table 6, Figs. 3 and 4 (the probes and the
offloading costs)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures.registry import FigureCard, with_run_times
from ..figures.registry import register as _register


CARDS: dict[str, FigureCard] = {}  # this topic's cards by id (read without loading every topic's cards)


def register(card: FigureCard) -> FigureCard:
    from .experiments import runs_meta

    card = with_run_times(card, runs_meta)  # the seconds its runs took when they were trained
    CARDS[card.id] = card
    return _register(card)


def _smoke(ours) -> bool:
    return "size" in ours and len(ours) and ours["size"].iloc[0] == "smoke"


def _with_size(fn):
    def compute(size, progress):
        out = fn(size, progress) if fn.__code__.co_argcount == 2 else fn(size)
        return out.assign(size=size)
    return compute


NUMBER, CLAIM, SHOWN = "number", "claim", "shown"  # a compare row's kind


def _row(q, paper, ours, ok, kind, note=""):
    """One compare row. kind: a paper number checked with a tolerance, a paper claim checked as stated, or shown
    (no verdict: ok None exactly for shown rows)."""
    if kind not in (NUMBER, CLAIM, SHOWN) or (kind == SHOWN) != (ok is None):
        raise ValueError(f"row {q!r}: kind={kind!r} with ok={ok!r}")
    return {"quantity": q, "paper": paper, "ours": ours, "ok": ok, "kind": kind, "note": note}


def _above_all(a, bs) -> bool:
    """'a outperforms b' as stated: strictly above every b."""
    return bool(all(a > b for b in bs))


def _gain_tolerance(o) -> float:
    """Two standard errors of the relative gain FELLRec / FedAvg - 1, from the seeds' spread."""
    n = max(float(o.loc["fedavg", "seeds"]), 1.0)
    sd = np.hypot(o.loc["fellrec", "R@10_std"], o.loc["fedavg", "R@10_std"]) / o.loc["fedavg", "R@10"]
    return float(2 * sd / np.sqrt(n))


def _table1_verdicts(o, p, backend: str) -> list[dict]:
    """Table 1's two checked rows, alike on both backends: FELLRec's R@10 above FedAvg's, FedProx's and Ditto's
    (the claim, as stated), and its gain over FedAvg within two standard errors of our seeds of the paper's gain
    with `backend`. o: ours by method (mean over seeds, with R@10_std and seeds); p: the paper's `backend` rows
    by method."""
    rivals = [m for m in ("fedavg", "fedprox", "ditto") if m in o.index]
    gain = o.loc["fellrec", "R@10"] / o.loc["fedavg", "R@10"] - 1
    paper_gain = p.loc["fellrec", "R@10"] / p.loc["fedavg", "R@10"] - 1
    tol = _gain_tolerance(o)
    return [
        _row("FELLRec R@10 above FedAvg, FedProx and Ditto",
             f"{p.loc['fellrec', 'R@10']:.4f} > " + " / ".join(f"{p.loc[m, 'R@10']:.4f}" for m in rivals),
             f"{o.loc['fellrec', 'R@10']:.4f} vs " + " / ".join(f"{o.loc[m, 'R@10']:.4f}" for m in rivals),
             _above_all(o.loc["fellrec", "R@10"], [o.loc[m, "R@10"] for m in rivals]), CLAIM,
             "the paper: FELLRec outperforms the other privacy-preserving methods (mean of seeds)"),
        _row("FELLRec R@10 / FedAvg R@10 - 1", paper_gain, gain, bool(abs(gain - paper_gain) <= tol), NUMBER,
             f"within ±{tol:.3f} (two standard errors of our seeds) of the paper's {backend} gain"),
    ]


def _cmp_table6(ours, paper):
    """The paper's two findings, as stated: FELLRec above FedAvg at every c; FedAvg falls as heterogeneity grows
    (c falls)."""
    piv = ours.pivot_table(index="c", columns="method", values="R@10").sort_index()  # the mean over seeds
    seeds = ours["seed"].nunique() if "seed" in ours else 1
    per_point = "one seed per point" if seeds == 1 else f"means of {seeds} seeds"
    pc = paper.set_index("c")
    rows = [_row(f"c={c:g} FELLRec - FedAvg R@10", float(pc.loc[c, "fellrec"] - pc.loc[c, "fedavg"])
                 if c in pc.index else np.nan, float(piv.loc[c, "fellrec"] - piv.loc[c, "fedavg"]), None, SHOWN,
                 "different data and model") for c in piv.index]
    wins = int((piv["fellrec"] > piv["fedavg"]).sum())
    rows.append(_row("c values where FELLRec R@10 > FedAvg's", f"{len(paper)}/{len(paper)}", f"{wins}/{len(piv)}",
                     bool(wins == len(piv)), CLAIM, f"as stated: every c ({per_point})"))
    fedavg = piv["fedavg"].to_numpy()
    rows.append(_row(f"FedAvg R@10 rises with c = {', '.join(f'{c:g}' for c in piv.index)}",
                     ", ".join(f"{pc.loc[c, 'fedavg']:.4f}" if c in pc.index else "n/a" for c in piv.index),
                     ", ".join(f"{x:.4f}" for x in fedavg),
                     bool(np.all(np.diff(fedavg) > 0)), CLAIM, "as stated: heterogeneity lowers FedAvg's R@10"))
    return pd.DataFrame(rows)


def _cmp_fig4(ours, paper):
    off = ours[ours["offload"]].sort_values("k")
    steps = np.diff(off["device_param_MiB"].to_numpy())
    # one layer's worth per k, the same every k (the stored CSV keeps 6 significant digits)
    linear = bool(steps[0] > 0 and np.allclose(steps, steps[0], rtol=1e-4))
    exact = bool((off["upload_bytes"] == off["table3_upload_bytes"]).all())
    fed = ours[~ours["offload"]]
    # Table 3: offloading uploads less than FedAvg's n b exactly when c < (n - k - 1) b / 2
    n, fed_up = int(fed["k"].iloc[0]), float(fed["upload_bytes"].iloc[0])
    cheaper = off["upload_bytes"] < fed_up
    predicted = off["c_bytes"] < (n - off["k"] - 1) * off["b_bytes"] / 2
    return pd.DataFrame([
        _row("device parameters grow by one layer per k (O(k+1))", "O(k+1)", f"{steps[0] * 2**20:.0f} B per k", linear,
             CLAIM, "form of Table 3's storage cost"),
        _row("measured upload = (k+1) b + 2c", "O((k+1) b + 2c)", "equal for every k" if exact else "differs", exact,
             CLAIM, "form of Table 3's communication cost, exact with measured b and c"),
        _row("device memory at k=1 vs no offloading", "O(k+1) vs O(N)",
             f"{off['device_memory_MiB'].iloc[0]:.2f} vs {fed['device_memory_MiB'].iloc[0]:.2f} MiB",
             bool(off["device_memory_MiB"].iloc[0] < fed["device_memory_MiB"].iloc[0]), CLAIM,
             "the paper: FELLRec outperforms FedAvg in storage"),
        _row("offloading uploads less than FedAvg exactly when c < (n-k-1) b / 2", "c < (n-k-1) b / 2",
             f"{int(cheaper.sum())} of {len(off)} k upload less; the condition holds for {int(predicted.sum())}",
             bool((cheaper == predicted).all()), CLAIM, "section 4.3's condition, on every k"),
    ])


def _cmp_fig3(ours, paper):
    """The probes' similarity falls with depth and rises again at the last layer (the paper's findings 1 and 2):
    the linear probe's is checked, the MLP probe's shown (it underfits)."""
    rows = []
    for kind, g in ours.groupby("probe"):
        sim = g.sort_values("layer")["similarity"].to_numpy(dtype=float)
        first, before_last, last = sim[0], sim[-2], sim[-1]
        checked = kind == "linear"
        rows.append(_row(f"{kind} probe: layer 1 vs layer N-1", "falls with depth", f"{first:.4f} -> {before_last:.4f}",
                         bool(before_last < first) if checked else None, CLAIM if checked else SHOWN,
                         "finding 1, as stated" if checked else "the MLP probe underfits"))
        rows.append(_row(f"{kind} probe: layer N vs layer N-1", "rises at the last layer",
                         f"{before_last:.4f} -> {last:.4f}", bool(last > before_last) if checked else None,
                         CLAIM if checked else SHOWN, "finding 2, as stated" if checked else "the MLP probe underfits"))
    return pd.DataFrame(rows)
