"""Goemans-Williamson hyperplane rounding: x = sign(V r) for Gaussian r, best of R trials.

For non-negative weights the expected cut is at least 0.87856 times the SDP value (Goemans & Williamson 1995),
so the best of R roundings is too; the ratio cut / SDP value is what the lab measures.
"""
from __future__ import annotations

import numpy as np

from .problem import DiagSDP, cut_value

GW_ALPHA = 0.87856  # min over theta of (theta / pi) / ((1 - cos theta) / 2)


def round_cuts(problem: DiagSDP, V: np.ndarray, trials: int = 100, seed: int = 0) -> np.ndarray:
    """The values of `trials` hyperplane roundings of V (one per Gaussian direction)."""
    if trials < 1:
        raise ValueError(f"trials={trials!r} is invalid: at least 1 rounding")
    R = np.random.default_rng(seed).normal(size=(V.shape[1], trials))
    X = np.where(V @ R >= 0, 1.0, -1.0)  # n x trials
    obj = np.einsum("it,it->t", X, problem.C @ X) + problem.const
    return np.array([problem.value(o) for o in obj])


def best_cut(problem: DiagSDP, V: np.ndarray, trials: int = 100, seed: int = 0) -> tuple[float, np.ndarray]:
    """The best rounding's value and its +-1 vector."""
    vals = round_cuts(problem, V, trials, seed)
    t = int(np.argmax(vals) if problem.sense == "max" else np.argmin(vals))
    R = np.random.default_rng(seed).normal(size=(V.shape[1], trials))
    x = np.where(V @ R[:, t] >= 0, 1.0, -1.0)
    return float(cut_value(problem, x)), x
