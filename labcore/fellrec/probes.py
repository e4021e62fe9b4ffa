"""Fig. 3: how much of a user's input a curious server could read from a layer's output.

A probe (linear: ridge regression; MLP: one hidden layer, both scikit-learn) is trained to map layer l's
output h_l at a position back to that position's input embedding (the item the user interacted with; on
MiniLM, the word embedding of the title token at that position),
on some users, and scored on others by the mean cosine similarity between the reconstructed and the true
input embedding. The server sees h_k, so the layer where the similarity has dropped tells how many layers
k the device should keep.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.linalg import LinAlgWarning
import torch

from .data import SeqData, eval_inputs
from .model import GPTRec
from .recformer import TextRec


@torch.no_grad()
def text_layer_features(model, x: torch.Tensor):
    """MiniLM: the input token embeddings (word-embedding rows) and [h_1 .. h_6] at every real token."""
    ids, mask = model.user_inputs(x)
    hs = model.hidden_states(ids, mask)
    real = mask.reshape(-1).bool()
    target = model.word.weight[ids].reshape(-1, model.word.weight.shape[1])[real]
    return target, [h.reshape(-1, h.shape[-1])[real] for h in hs[1:]]


@torch.no_grad()
def layer_features(model: GPTRec, data: SeqData, users: np.ndarray, history: int, max_rows: int, seed: int = 0):
    """(targets (n, d), [h_1 .. h_N] each (n, d)) at real (non-padding) positions, at most max_rows rows."""
    x, _, _, _ = eval_inputs(data, users, history, "test")
    xt = torch.as_tensor(x)
    if isinstance(model, TextRec):
        target, feats = text_layer_features(model, xt)
        pick = np.random.default_rng(seed).permutation(len(target))[:max_rows]
        return target[pick].numpy(), [f[pick].numpy() for f in feats]
    hs = model.hidden_states(xt)
    items = model.item_embeddings()
    mask = (xt >= 0).reshape(-1)
    target = torch.nn.functional.pad(items, (0, 0, 0, 1))[xt.clamp(min=-1)].reshape(-1, items.shape[1])[mask]
    feats = [h.reshape(-1, h.shape[-1])[mask] for h in hs[1:]]
    rng = np.random.default_rng(seed)
    pick = rng.permutation(int(mask.sum()))[:max_rows]
    return target[pick].numpy(), [f[pick].numpy() for f in feats]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float(np.mean(num / np.clip(den, 1e-12, None)))


def probe_similarity(model: GPTRec, data: SeqData, history: int, max_rows: int = 3000, seed: int = 0,
                     kinds=("linear", "mlp")) -> pd.DataFrame:
    """One row per (probe, layer 1..N): cosine similarity of the reconstruction on held-out users."""
    from sklearn.linear_model import Ridge
    from sklearn.neural_network import MLPRegressor

    users = data.client_users
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(users))
    cut = int(0.7 * len(users))
    y_tr, f_tr = layer_features(model, data, users[perm[:cut]], history, max_rows, seed)
    y_te, f_te = layer_features(model, data, users[perm[cut:]], history, max_rows, seed)
    scale = float(y_tr.std()) or 1.0  # cosine ignores scale; unit-scale targets let the MLP's Adam fit them
    y_tr = y_tr / scale
    rows = []
    for kind in kinds:
        for layer, (a, b) in enumerate(zip(f_tr, f_te), start=1):
            probe = Ridge(alpha=1e-3) if kind == "linear" else MLPRegressor(
                hidden_layer_sizes=(64,), max_iter=300, random_state=seed, early_stopping=False)
            with warnings.catch_warnings():  # a near-singular X^T X at small alpha is expected for 384-wide layers
                warnings.simplefilter("ignore", LinAlgWarning)
                probe.fit(a, y_tr)
            rows.append({"probe": kind, "layer": layer, "similarity": cosine(probe.predict(b), y_te)})
    return pd.DataFrame(rows)
