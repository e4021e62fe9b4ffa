"""Checks for the FELLRec notebook (labs/13_fellrec.ipynb) and its base config.

Every expected answer is computed with labcore itself."""
from __future__ import annotations

import numpy as np

from ..labs_support import Feedback, close, missing, paper_size, todo
from .config import FellrecConfig

SAFE_SIMILARITY = 0.8  # exercise 4's threshold: the notebook's question quotes this number
BACKBONE = "minilm"  # the notebook's default backbone ("tiny": the small transformer pre-trained here)


def lab_config(paper: bool | None = None, backbone: str = BACKBONE, **overrides) -> FellrecConfig:
    """The notebook's config: the smoke set by default, ML-100K at the cards' full size with paper=True."""
    from .experiments import base

    return base("full" if (paper if paper is not None else paper_size()) else "smoke", backbone, **overrides)


def check_warmup(answer, losses=(0.5, 1.0, 2.0), t: int = 2, alpha: float = 0.1, beta: float = 3.0) -> Feedback:
    """w_c of the lowest-loss client at epoch t (eq. 4)."""
    if missing(answer):
        return todo("a number between 0 and 1: w_c of the first client (eq. 4)")
    from .aggregate import warmup

    expected = float(warmup(list(losses), t, alpha, beta)[0])
    ok = close(answer, expected, abs_=1e-3)
    return Feedback(ok, f"w = tanh({alpha} / p^({t}/{beta})) = {expected:.4f} with p = softmax(losses)[0]" if ok else
                    f"{answer} is not it: p = exp(L_1) / sum exp(L_i), then tanh(alpha / p ** (t / beta))")


def check_upload_bytes(answer, k: int, cfg: FellrecConfig | None = None) -> Feedback:
    """Bytes of one client's LoRA upload when it keeps layers 1..k and N (serialized parts)."""
    if missing(answer):
        return todo("a number of bytes: the LoRA adapters of the layers the device holds")
    from .federated import dataset, lora_bytes
    from .model import get_lora, make_model
    from .recformer import make_textrec

    cfg = cfg or lab_config(paper=False)
    build = make_textrec if cfg.backbone == "minilm" else make_model
    state = get_lora(build(cfg, dataset(cfg)))
    expected = lora_bytes(state, list(range(1, k + 1)) + [cfg.depth()])
    ok = close(answer, expected, rel=0.001)
    proj = "4 projections (q, k, v, output)" if cfg.backbone == "minilm" else "2 projections"
    return Feedback(ok, f"{expected:,} bytes: (k + 1) = {k + 1} layers' A and B of {proj}, with framing"
                    if ok else f"{answer} is not it: (k + 1) layers x {proj} x (A and B) as float32 + framing; "
                               f"the cost table's lora_up_bytes column")


def check_safe_k(answer, probes, threshold: float = SAFE_SIMILARITY) -> Feedback:
    """The smallest k whose layer-k output a linear probe reconstructs below `threshold` similarity."""
    if missing(answer):
        return todo("an integer k (the server sees the output of layer k)")
    lin = probes[probes["probe"] == "linear"].sort_values("layer")
    below = lin[lin["similarity"] < threshold]["layer"]
    if not len(below):
        ok = str(answer).strip().lower() == "none"
        return Feedback(ok, f"no layer's output gets below {threshold}: answer 'none' (every k exposes more)" if ok
                        else f"no layer gets below {threshold} here; answer 'none'")
    expected = int(below.iloc[0])
    ok = str(answer).strip().isdigit() and int(answer) == expected
    return Feedback(ok, f"k = {expected}: the first layer whose output the linear probe reads back with "
                        f"similarity below {threshold}" if ok else
                    f"k = {answer} is not it: look for the first layer under {threshold} in the linear curve")


def check_imbalance(answer, per_client) -> Feedback:
    """(best - worst) / worst of a list of client Recall@10 values."""
    if missing(answer):
        return todo("a number: (best - worst) / worst")
    from .metrics import imbalance

    expected = imbalance(np.asarray(per_client, dtype=float))
    ok = close(answer, expected, rel=0.01)
    return Feedback(ok, f"{expected:.3f}" if ok else f"{answer} is not it: (max - min) / min of the values")
