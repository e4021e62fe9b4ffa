"""The numbers of the FAIR paper (Desai et al., "Heterogeneous federated collaborative filtering using
FAIR"), Tables 2-6, as printed. NaN = N/A in the paper (the scheme cannot be run)."""
from __future__ import annotations

import math

import pandas as pd

NA = math.nan

# Table 2: NDCG@20; std < 0.005 (Goodreads-100), < 0.009 (AmazonProducts-100).
TABLE2 = pd.DataFrame(
    [("goodreads-100", "central", "Central", 0.28), ("goodreads-100", "-", "FedAvg", 0.278),
     ("amazon-100", "central", "Central", 0.20), ("amazon-100", "-", "FedAvg", 0.178)]
    + [("goodreads-100", cap, m, v) for cap, vals in
       (("1x-2x", (0.276, 0.269, 0.274)), ("1x-4x", (0.276, 0.254, 0.275)), ("1x-8x", (0.274, 0.246, NA)),
        ("1x-16x", (0.276, 0.208, NA)))
       for m, v in zip(("FAIR-HET", "FAIR-HOM", "FedHM"), vals)]
    + [("amazon-100", cap, m, v) for cap, vals in
       (("1x-2x", (0.13, 0.10, 0.078)), ("1x-4x", (0.14, 0.098, 0.041)), ("1x-8x", (0.087, 0.07, NA)),
        ("1x-16x", (0.056, 0.06, NA)))
       for m, v in zip(("FAIR-HET", "FAIR-HOM", "FedHM"), vals)],
    columns=["dataset", "capacity", "method", "ndcg"])

# Table 3: NDCG@20 with x% of the users (seed 101) at 1x and the rest at 2x.
TABLE3 = pd.DataFrame(
    [("goodreads-100", s, m, v) for m, vals in (("FULL-TRN", (0.037, 0.247, 0.238, 0.261)),
                                                 ("FAIR-HET", (0.271, 0.258, 0.27, 0.258)))
     for s, v in zip((0.01, 0.2, 0.3, 0.5), vals)]
    + [("amazon-100", s, m, v) for m, vals in (("FULL-TRN", (0.003, 0.006, 0.05, 0.09)),
                                                ("FAIR-HET", (0.107, 0.109, 0.110, 0.121)))
       for s, v in zip((0.01, 0.2, 0.3, 0.5), vals)],
    columns=["dataset", "share_1x", "method", "ndcg"])

# Table 4: explicit ratings on Goodreads-100, test MSE after 1000 rounds (lower is better).
TABLE4 = pd.DataFrame(
    [(cap, m, v) for cap, vals in
     (("8x-16x", (0.6735, 0.6891, 0.7243)), ("16x-32x", (0.6716, 0.6907, NA)), ("32x-64x", (0.6726, 0.6916, NA)),
      ("4x-8x-16x", (0.6618, 0.6891, 0.7206)), ("8x-16x-32x", (0.6607, 0.6907, NA)),
      ("16x-32x-64x", (0.6618, 0.6916, NA)))
     for m, v in zip(("FAIR-HET", "FAIR-HOM", "FedHM"), vals)],
    columns=["capacity", "method", "mse"])

# Appendix E, Goodreads-S (E=1, T=1000, K=10): Table 8, FedAvg's test MSE by embedding dimension; Table 9, FAIR
# with every device at one compression ratio, and LowRank (FedHM) where it runs
TABLE8_9 = pd.DataFrame(
    [("8", f"d = {d}", "FedAvg", v) for d, v in ((2, 0.8201), (4, 0.7464), (8, 0.7277), (16, 0.6494), (32, 0.6527))]
    + [("9", cap, "FAIR", v) for cap, v in (("2x", 0.6637), ("4x", 0.6701), ("8x", 0.6832), ("16x", 0.6891),
                                           ("32x", 0.6907), ("64x", 0.6916))]
    + [("9", "16x", "LowRank", 0.7092), ("9", "32x", "LowRank", NA)],
    columns=["table", "setting", "method", "mse"])

# Table 5: test accuracy, MLP 784-512-10 on MNIST (and LeNet on FEMNIST), E=20, T=200, K=10, 30 devices.
TABLE5 = pd.DataFrame(
    [("mnist", "-", "FedAvg", 0.9841), ("femnist", "-", "FedAvg", 0.7491)]
    + [("mnist", cap, m, v) for cap, vals in
       (("2x-4x", (0.9822, 0.9829, 0.9838)), ("2x-4x-8x", (0.9823, 0.9779, 0.984)),
        ("2x-4x-8x-16x-32x-64x", (0.9636, 0.962, 0.9839)))
       for m, v in zip(("FAIR-HET", "FAIR-HOM", "FedHM"), vals)]
    + [("femnist", cap, m, v) for cap, vals in
       (("2x-4x", (0.7842, 0.7847, 0.7804)), ("2x-4x-8x", (0.7691, 0.779, 0.7689)),
        ("2x-4x-8x-16x-32x-64x", (0.7409, 0.7114, NA)))
       for m, v in zip(("FAIR-HET", "FAIR-HOM", "FedHM"), vals)],
    columns=["dataset", "capacity", "method", "accuracy"])

# Table 6: MNIST (E=20, K=10), best test accuracy and the round of the best.
TABLE6 = pd.DataFrame(
    [("consistent", "4x", 0.9833, 472), ("consistent", "8x", 0.981, 298), ("consistent", "64x", 0.9625, 234),
     ("consistent", "2x-4x", 0.9833, 461), ("consistent", "2x-4x-8x", 0.9815, 486),
     ("consistent", "2x-4x-8x-16x-32x-64x", 0.9657, 192),
     ("inconsistent", "4x", 0.8823, 154), ("inconsistent", "8x", 0.8733, 154), ("inconsistent", "64x", 0.7465, 148),
     ("inconsistent", "2x-4x", 0.8965, 154), ("inconsistent", "2x-4x-8x", 0.8846, 154),
     ("inconsistent", "2x-4x-8x-16x-32x-64x", 0.8712, 196)],
    columns=["subspaces", "capacity", "accuracy", "round_best"])

# Table 7 / the authors' README: the reference run's NDCG@20 at rounds 10..230 (FAIR 1x-2x, Goodreads-100).
REFERENCE_LOG_1X2X = [0.2619, 0.2629, 0.2654, 0.2683, 0.2670, 0.2656, 0.2587, 0.2651, 0.2668, 0.2705, 0.2650,
                      0.2714, 0.2709, 0.2745, 0.2734, 0.2743, 0.2768, 0.2748, 0.2739, 0.2762, 0.2741, 0.2740, 0.2751]
