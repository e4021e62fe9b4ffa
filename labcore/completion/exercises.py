"""The matrix-completion notebook's base config and its exercise checks.

Every check computes its expected answer with labcore (the config's information limit, a harness run);
called with `...` it says what to fill in.
"""
from __future__ import annotations

import pandas as pd

from ..labs_support import Feedback, close, missing, paper_size, todo
from .config import LABELS, CompletionConfig

# The lab size runs in about a second per algorithm; the paper size is Fig. 1's problem at a 20 s budget.
LAB = dict(n=300, m=300, rank=2, share=0.4, kappa=2.0, budget_s=1.0, log_points=20)
PAPER = dict(n=1000, m=1000, rank=2, share=0.05, kappa=200.0, budget_s=20.0, log_points=40)


def lab_config(paper: bool | None = None, **overrides) -> CompletionConfig:
    """The notebook's base run; LABCORE_PAPER_SIZE=1 (or paper=True) gives the report's Fig. 1 problem."""
    paper = paper_size() if paper is None else paper
    return CompletionConfig(**{**(PAPER if paper else LAB), **overrides})


def check_degrees_of_freedom(answer, m: int, n: int, rank: int) -> Feedback:
    """How many numbers determine a rank-r m x n matrix?"""
    if missing(answer):
        return todo(f"the degrees of freedom of a rank-{rank} {m} x {n} matrix (a whole number)")
    expected = CompletionConfig(m=m, n=n, rank=rank).degrees_of_freedom()
    ok = close(answer, expected, rel=0.0, abs_=0.5)
    return Feedback(ok, f"r(m + n - r) = {expected:,}: m r numbers for the column space, n r for the row space, "
                        f"minus r^2 for the r x r matrices that mix them without changing the product" if ok else
                    f"{answer} is not it: count U (m x r) and V (n x r), then subtract what U V^T cannot tell "
                    f"apart (U G, V G^-T for any invertible r x r G)")


def check_min_share(answer, n: int, rank: int) -> Feedback:
    """The smallest share of an n x n rank-r matrix that must be seen before recovery is possible at all."""
    if missing(answer):
        return todo("the smallest share seen (a number between 0 and 1) at the information limit")
    cfg = CompletionConfig(m=n, n=n, rank=rank)
    expected = cfg.degrees_of_freedom() / (n * n)
    ok = close(answer, expected, rel=0.02)
    return Feedback(ok, f"share = r(2n - r) / n^2 = {expected:.4f}; below it `CompletionConfig(...)` warns that no "
                        "algorithm can recover M*" if ok else
                    f"{answer} is off: set share * n^2 equal to the degrees of freedom and solve for share")


def check_fastest(answer, race: pd.DataFrame, level: float = 1e-8) -> Feedback:
    """Which algorithm of a race reached `level` first? (answer: its name, e.g. 'asd')."""
    if missing(answer):
        return todo(f"the name of the algorithm that first logged an error below {level:g} (e.g. 'asd')")
    from .cards import time_to

    times = time_to(race, level)
    first = times.index[0]
    ok = str(answer).strip().lower() in (first, LABELS[first].lower())
    return Feedback(ok, f"{LABELS[first]} first reached {level:g} after {times[first]:.2f} s" if ok else
                    f"not {answer}: look for the first time each line crosses {level:g} (cards.time_to does it)")
