"""CoLR's presets: one link per figure or table, the core lab page and query that show its form live.

Presets use the paper's dataset and settings (d=64, 60 clients per round, E=2, B=256) with fewer rounds than the
paper's 1000 so that they run in class; the note says what differs. Full-size reproductions are on the Paper
figures page.
"""
from __future__ import annotations

from ..app.presets import Preset

# the authors' client schedule (users shuffled once, M a round in turn), as in the cards
_ML1M = {"dataset": "ml-1m", "client_schedule": "rotating"}

PRESETS = (
    Preset("fig2-ml1m", "Fig. 2: effective rank of FedMF updates (ML-1M)", "explorer",
           {**_ML1M, "method": "fedmf", "rounds": "200", "eval_every": "20", "rank_every": "5"},
           "N90 / N99 PCA components of the clients' item-table updates per round; paper: 1000 rounds.",
           cards=('colr-fig2-ml1m',)),
    Preset("fig2-pinterest", "Fig. 2: effective rank of FedMF updates (Pinterest)", "explorer",
           {"dataset": "pinterest", "client_schedule": "rotating", "method": "fedmf", "clients_per_round": "375", "rounds": "60", "eval_every": "20",
            "rank_every": "5"},
           "Pinterest has 37,501 users (1% per round as in the paper); paper: 1000 rounds.",
           cards=('colr-fig2-pinterest',)),
    Preset("fig3-ml1m", "Fig. 3: CoLR rank sweep vs FedMF at matching bytes (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "100", "eval_every": "20", "_mode": "rank", "_values": "2,8,32"},
           "CoLR@r at d=64 against FedMF with d=r (the same bytes per round). A short live run (100 rounds; the "
           "paper trains 1000): this early, FedMF at small d can still sit above CoLR at equal bytes, the opposite "
           "of the paper's figure. The stored 1000-round card shows the paper's shape.",
           cards=('colr-fig3-ml1m',)),
    Preset("fig4-ml1m", "Fig. 4: CoLR vs SVD vs Top-K at equal ratio (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "100", "eval_every": "20", "_mode": "ratio", "_values": "2,8"},
           "Ratio r/d for all three, both directions compressed; paper: 1000 rounds, more ratios.",
           cards=('colr-fig4-ml1m',)),
    Preset("fig5-ml1m", "Fig. 5: distribution of CoLR's B (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "100", "eval_every": "20", "_mode": "b_init", "_values": "8"},
           "normal, orthonormal and sphere B at rank 8, and (ours) the sphere scaled by sqrt(d/r); paper: 1000 rounds.",
           cards=('colr-fig5-ml1m',)),
    Preset("table2-ml1m", "Table 2: communication vs computation time (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "50", "eval_every": "25", "_mode": "rank", "_values": "1,4,16"},
           "The round-time chart under the sweep is Table 2's form (0.75 / 0.25 MB/s, R_comp=7, C_comp=10 s).",
           cards=('colr-table2-ml1m',)),
    Preset("table3-ml1m", "Table 3: CKKS overheads and sizes (ML-1M, N=3706)", "encryption",
           {**_ML1M, "dim": "64", "rank": "4", "method": "colr", "ckks_coeff_bits": "[60,40,40,60]",
            "ckks_scale_bits": "40"},
           "Ciphertext vs plaintext size of one upload; the staircase of Table 3.",
           cards=('colr-table3-ml1m',)),
    Preset("table4-ml1m", "Table 4: SCoLR under device heterogeneity (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "100", "eval_every": "20", "_mode": "scolr", "_values": "4,8,16"},
           "SCoLR with local ranks r_u uniform in 1..r against CoLR@r; paper: 1000 rounds, r up to 32.",
           cards=('colr-table4-ml1m',)),
)
