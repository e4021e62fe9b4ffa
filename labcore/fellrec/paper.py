"""The paper's numbers (FELLRec, Table 1, 4, 6 on Games with BIGRec / RecFormer backends)."""
from __future__ import annotations

import pandas as pd

# Table 1, Games
TABLE1 = pd.DataFrame([
    ("BIGRec", "central", 0.0194, 0.0316, 0.0127, 0.0164), ("BIGRec", "fedavg", 0.0145, 0.0257, 0.0093, 0.0126),
    ("BIGRec", "fedprox", 0.0143, 0.0255, 0.0090, 0.0123), ("BIGRec", "ditto", 0.0147, 0.0260, 0.0091, 0.0126),
    ("BIGRec", "fellrec", 0.0158, 0.0274, 0.0104, 0.0139),
    ("RecFormer", "central", 0.0193, 0.0360, 0.0117, 0.0169), ("RecFormer", "fedavg", 0.0149, 0.0262, 0.0089, 0.0124),
    ("RecFormer", "fedprox", 0.0150, 0.0266, 0.0086, 0.0121), ("RecFormer", "ditto", 0.0162, 0.0273, 0.0091, 0.0138),
    ("RecFormer", "fellrec", 0.0215, 0.0373, 0.0122, 0.0170),
], columns=["backend", "method", "R@10", "R@20", "N@10", "N@20"])

# Table 4, Games, Recall@10 per client (BIGRec backend)
TABLE4 = pd.DataFrame([
    ("central", 0.0227, 0.0338, 0.0144, 0.0163, 0.0153, 1.35),
    ("fedavg", 0.0157, 0.0208, 0.0235, 0.0085, 0.0127, 1.76),
    ("fellrec", 0.0171, 0.0211, 0.0163, 0.0136, 0.0152, 0.55),
], columns=["method", "client 1", "client 2", "client 3", "client 4", "client 5", "imbalance"])

# Table 6, Games, R@10 under Dirichlet(c) clients (BIGRec)
TABLE6 = pd.DataFrame({"c": [0.1, 0.3, 0.5, 0.7, 1.0],
                       "fedavg": [0.0134, 0.0139, 0.0141, 0.0157, 0.0162],
                       "fellrec": [0.0187, 0.0211, 0.0212, 0.0216, 0.0228]})

# Table 2, Games: the traditional baselines beside the language models with FELLRec
TABLE2 = pd.DataFrame([
    ("centralized MF", 0.0101, 0.0164, 0.0070, 0.0090), ("FedMF", 0.0065, 0.0108, 0.0044, 0.0058),
    ("BIGRec + FELLRec", 0.0158, 0.0274, 0.0104, 0.0139), ("RecFormer + FELLRec", 0.0215, 0.0373, 0.0122, 0.0170),
], columns=["model", "R@10", "R@20", "N@10", "N@20"])

SUBSTITUTION = ("Ours: ML-100K (titles, 8:1:1 by time) in place of the paper's Games / MicroLens / Book, and an "
                "8-layer, 32-wide transformer pre-trained here in place of LLaMA-7B (BIGRec) / Longformer "
                "(RecFormer). Absolute values are not comparable; the comparison is between methods.")
