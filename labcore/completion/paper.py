"""The report's numbers and claims (report 2 of rice-course-reports-gist-mc-wireless-sdp-fl.txt)."""
from __future__ import annotations

import pandas as pd

REF = "Report 2 of rice-course-reports-gist-mc-wireless-sdp-fl.txt (Benchmarking low-rank matrix completion)"

# Table 1: d = log10 of the closest distance any algorithm got on a matrix, over 63 synthetic matrices
TABLE1 = pd.DataFrame({
    "range": ["-17 < d < -10", "-10 <= d <= 0", "0 < d < 4"],
    "count": [36, 7, 20],
    "percent": [57.0, 11.0, 32.0],
})

# The report's synthetic grid (section 3.2) and budget (section 3.3)
GRID = {"n": (1000, 10000), "rank": (2, 20, 200), "share": (0.05, 0.10, 0.20, 0.40), "kappa": (2.0, 200.0, 20000.0)}
BUDGET_S = 60.0

FIG1 = pd.DataFrame({"quantity": ["algorithms that converge", "MatrixIRLS"],
                     "paper": ["only MatrixIRLS", "converges; clearly outperforms every other algorithm"]})
FIG2 = pd.DataFrame({"quantity": ["best", "converged"],
                     "paper": ["alternating descent and Riemannian methods",
                               "nearly every algorithm converges almost exactly"]})
FIG3 = pd.DataFrame({"quantity": ["progress"], "paper": ["no algorithm makes any real progress"]})
FIG4 = pd.DataFrame({"quantity": ["minimum held-out error", "overfitting"],
                     "paper": ["all algorithms reach about the same minimum",
                               "held-out error rises again for some algorithms"]})

CAPTIONS = {
    "fig1": ("Benchmark of performance on a high condition number low rank matrix (size 1000, rank 2, the algorithm "
             "\"sees\" 5% of the matrix, condition number 200). MatrixIRLS clearly outperforms every other "
             "algorithm in these conditions."),
    "fig2": ("Benchmark of performance on a low condition number low rank matrix (size 10000, rank 2, the algorithm "
             "\"sees\" 40% of the matrix, condition number 2). Alternating descent and Riemanian methods perform "
             "the best."),
    "fig3": ("Benchmark of performance on a high condition number medium-low rank matrix (size 10000, rank 20, "
             "the algorithm \"sees\" 10% of the matrix, condition number 20000). No algorithm makes any real "
             "progress."),
    "table1": ("Let d be the log base 10 of the closest distance any algorithm got on a matrix M. This table "
               "reports counts and percents of how many of our 63 synthetic testing matrices had d within a "
               "certain range."),
    "fig4": ("Benchmark of performance on the MovieLens 1M dataset. The algorithms are shown 30% of the known "
             "entries (around 2% of the entire matrix), and asked to predict the other known entries (error is "
             "the Frobenius distance of the predictions)."),
}


def bucket(d: float) -> str:
    """Table 1's range of a log10 distance d."""
    if d < -10:
        return TABLE1["range"][0]
    if d <= 0:
        return TABLE1["range"][1]
    return TABLE1["range"][2]
