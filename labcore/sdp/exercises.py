"""Exercise checks of the low-rank SDP notebook (labs/12_low_rank_sdp.ipynb) and its base config.

Every expected answer is computed with labcore itself; called with `...` a check says what to fill in.
"""
from __future__ import annotations

import numpy as np

from ..labs_support import Feedback, close, missing, paper_size, todo
from .config import SdpConfig

LAB_BASE = dict(graph="random", n=100, avg_degree=4.0, tol=1e-6, max_iters=500, cert_every=1)


def lab_config(paper: bool | None = None, **overrides) -> SdpConfig:
    """Smoke size: a random 100-node graph, certified every sweep. Paper size: Cora (certificates log-spaced)."""
    base = dict(LAB_BASE)
    if paper if paper is not None else paper_size():
        base.update(graph="cora", cert_every=0, max_iters=3000, tol=1e-4)
    return SdpConfig(**{**base, **overrides})


def check_triangle_value(answer) -> Feedback:
    """The MaxCut SDP value of a triangle with unit weights (the best cut is 2)."""
    if missing(answer):
        return todo("a number: the SDP value of the unit triangle")
    from .problem import maxcut
    from .run import solve

    p = maxcut(np.ones((3, 3)) - np.eye(3), "triangle")
    expected = solve(p, SdpConfig(n=3, k=2, method="mixing", tol=1e-10, max_iters=200)).final["primal"]
    ok = close(answer, expected, rel=1e-3)
    return Feedback(ok, f"{expected:.4f}: three unit vectors 120 degrees apart, (1/4) * 6 * (1 - cos 120) = 9/4, "
                        "above the best cut 2 (the relaxation is not tight)" if ok else
                    f"{answer} is not it: the optimal vectors are as far apart as three unit vectors can be; "
                    "add (1 - cos angle)/2 over the 3 edges")


def check_rank_threshold(answer, n: int) -> Feedback:
    """The smallest rank k for which the mixing method has no stable spurious critical point (k > sqrt(2n))."""
    if missing(answer):
        return todo(f"an integer: the smallest k > sqrt(2 * {n})")
    from .problem import rank_threshold

    expected = rank_threshold(n)
    ok = close(answer, expected, abs_=0)
    return Feedback(ok, f"{expected} > sqrt(2 * {n}) = {np.sqrt(2 * n):.2f}: far below n = {n}, so V stores "
                        f"{expected} numbers a node instead of {n}" if ok else
                    f"{answer} is not it: compute sqrt(2 * {n}) and take the next integer above it")


def check_best_rule(answer, table) -> Feedback:
    """Which row of the rules table reached the target gap in the fewest sweeps (its `label`)."""
    if missing(answer):
        return todo("the label (a string) of the fastest row, in sweeps")
    expected = str(table.sort_values("sweeps").iloc[0]["label"])
    ok = str(answer).strip().lower() == expected.lower()
    return Feedback(ok, f"{expected}: momentum carries each block past the plain update's fixed point" if ok else
                    f"{answer!r} is not it: sort the table by `sweeps`")
