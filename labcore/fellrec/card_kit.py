"""What both backbones' FELLRec cards share: the topic's card dict, the registration, the row shape of a
comparison, and the checks of Figs. 3 and 4 (the probes and the offloading costs, the same on either backbone)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..figures.registry import FigureCard
from ..figures.registry import register as _register


CARDS: dict[str, FigureCard] = {}  # this topic's cards by id (read without loading every topic's cards)


def register(card: FigureCard) -> FigureCard:
    CARDS[card.id] = card
    return _register(card)


def _smoke(ours) -> bool:
    return "size" in ours and len(ours) and ours["size"].iloc[0] == "smoke"


def _with_size(fn):
    def compute(size, progress):
        out = fn(size, progress) if fn.__code__.co_argcount == 2 else fn(size)
        return out.assign(size=size)
    return compute


def _row(q, paper, ours, ok, note=""):
    return {"quantity": q, "paper": paper, "ours": ours, "ok": ok, "note": note}


def _cmp_fig4(ours, paper):
    off = ours[ours["offload"]].sort_values("k")
    steps = np.diff(off["device_param_MiB"].to_numpy())
    linear = bool(np.allclose(steps, steps[0], rtol=1e-4))  # the stored CSV keeps 6 significant digits
    exact = bool((off["upload_bytes"] == off["table3_upload_bytes"]).all())
    fed = ours[~ours["offload"]]
    return pd.DataFrame([
        _row("device parameters grow by one layer per k (O(k+1))", "O(k+1)", f"{steps[0] * 2**20:.0f} B per k", linear),
        _row("measured upload = (k+1) b + 2c", "O((k+1) b + 2c)", "equal for every k" if exact else "differs", exact),
        _row("device memory at k=1 vs no offloading", "O(k+1) vs O(N)",
             f"{off['device_memory_MiB'].iloc[0]:.2f} vs {fed['device_memory_MiB'].iloc[0]:.2f} MiB",
             bool(off["device_memory_MiB"].iloc[0] < fed["device_memory_MiB"].iloc[0])),
    ])


def _cmp_fig3(ours, paper):
    """The probes' similarity falls with depth: the linear probe's is checked (the claim), the MLP probe's shown."""
    rows = []
    for kind, g in ours.groupby("probe"):
        g = g.sort_values("layer")
        first, deep = float(g["similarity"].iloc[0]), float(g["similarity"].iloc[-2])
        rows.append(_row(f"{kind} probe: layer 1 vs layer N-1", "falls with depth", f"{first:.3f} -> {deep:.3f}",
                         bool(deep < first) if kind == "linear" else None,
                         "claim, as stated (linear probe)" if kind == "linear" else "shown"))
    return pd.DataFrame(rows)
