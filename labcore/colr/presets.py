"""CoLR's presets: one link per figure or table, the core lab page and query that show its form live.

Presets use the paper's dataset and settings (d=64, 60 clients per round, E=2, B=256) with fewer rounds than the
paper's 1000 so that they run in class; the note says what differs. Full-size reproductions are on the Paper
figures page.
"""
from __future__ import annotations

from ..app.lesson import Step
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

# The lesson path's first part (`labcore.app.lesson`): the federated recommender, low-rank updates, the round's
# wall-clock, equal bytes, the paper at full size, encryption. The Explorer opens on the embedded synthetic data.
LESSON = (
    Step("A federated recommender, round by round", 5, "explorer", {},
         move="Nothing yet: let the default run (CoLR@4, 100 rounds) finish.",
         watch="HR@10 rising round by round (the first chart, left), and the bytes of each part of the messages "
               "(Payload per message part).",
         ask="What does a client send the server each round, and how many bytes is it?",
         notebook="labs/01_federated_recommendation.ipynb"),
    Step("Low-rank updates: CoLR against FedMF", 5, "explorer", {"method": "fedmf"},
         move="method from FedMF to CoLR, then the rank r from 1 to 16 (Data and method).",
         watch="the payload per message part, and HR@10 against the cumulative traffic (the first chart's middle "
               "panel): FedMF's curve stretches far to the right, its rounds cost many more bytes.",
         ask="At which rank does CoLR's upload reach FedMF's, and which curve gets highest for the same traffic?",
         notebook="labs/02_low_rank_updates.ipynb"),
    Step("When does communication matter?", 5, "explorer", {"method": "fedmf"},
         move="the uplink bandwidth from 0.25 down to 0.01 MB/s (Communication), then method back to CoLR.",
         watch="Round time: communication vs computation, and the share under it: about 16 % of a FedMF round at "
               "0.25 MB/s, about 1 % of a CoLR@4 one. A new bandwidth re-times the finished run, without training.",
         ask="At what uplink bandwidth does communication take most of a FedMF round, and of a CoLR@4 round?",
         notebook="labs/04_bandwidth_and_wallclock.ipynb"),
    Step("Equal bytes: CoLR@r against FedMF with d = r", 5, "compare", {},
         move="nothing, then the values of the sweep (the ranks compared).",
         watch="at each r, CoLR@r (a rank-r update of a 32-wide model) beside FedMF whose whole model is r wide: "
               "the same bytes a round, and CoLR higher at r = 2, 4 and 8.",
         ask="Both send r numbers per item a round: why does the rank-r update of the wider model rank items "
             "better?",
         notebook="labs/03_colr_vs_compression.ipynb"),
    Step("The paper's figure at full size", 3, "figures", {"_card": "colr-fig3-ml1m"},
         move="the card (Paper figures), to CoLR's other figures.",
         watch="the stored ML-1M result over the paper's numbers, and each verdict row: within the tolerance "
               "measured from the seeds' spread, or a miss with its cause.",
         ask="Which of the paper's claims hold on ML-1M here, and which number misses by how much?",
         notebook="labs/03_colr_vs_compression.ipynb"),
    Step("Encrypting the upload: CKKS ciphertexts", 5, "encryption", {"method": "fedmf"},
         move="what is encrypted from FedMF to CoLR, then the rank r (CKKS cost explorer).",
         watch="one client's upload in plaintext bytes and in ciphertext bytes, and the staircase of its size "
               "against the rank (one ciphertext holds N / 2 values).",
         ask="How many times the plaintext is a CKKS upload, and why does CoLR's update need fewer ciphertexts?",
         notebook="labs/05_encryption.ipynb"),
    Step("What a curious server learns", 4, "encryption", {},
         move="the tab 'Attack: what a curious server learns', then the protection.",
         watch="how much of each user's item set the server recovers from what it receives, against chance.",
         ask="Which protection leaves the server at chance, and what does it still see under each?",
         notebook="labs/05_encryption.ipynb"),
)
