"""STTFedRec's presets: the split-learning page at a figure's setting and the stored card beside it.

The page reads its own parameters (`rho`, `T`, `factor`, `negatives`, `card`).
"""
from __future__ import annotations

from ..app.lesson import Step
from ..app.presets import Preset
# STTFedRec: the live part (one request's composition, the server's guesses) takes seconds; training the rho
# and K sweeps takes hundreds of rounds, so they come from the stored cards.
_STT_NOTE = " The paper's figures are on Adressa (images only); the stored cards are ML-1M."
PRESETS = (
    Preset("stt-fig4-rho", "STTFedRec Fig. 4: the share of non-clicked items rho", "split_learning",
           {"rho": "0.5", "T": "10", "negatives": "uniform", "card": "sttfedrec-fig4-ml1m"},
           "Starts at rho = 0.5 (5 clicks in a request of 10): move rho to 0.9 and watch the server's guesses; "
           "the card has the trained AUC by rho (200 rounds per point)." + _STT_NOTE,
           cards=('sttfedrec-fig4-ml1m',)),
    Preset("stt-fig5-k", "STTFedRec Fig. 5: clients per round K (DSSM)", "split_learning",
           {"rho": "0.9", "T": "10", "card": "sttfedrec-fig5-ml1m"},
           "Convergence and secure-aggregation time by K from the stored card (150 rounds per K); K has no live "
           "control here." + _STT_NOTE,
           cards=('sttfedrec-fig5-ml1m',)),
    Preset("stt-fig6-k", "STTFedRec Fig. 6: clients per round K (CLSM)", "split_learning",
           {"rho": "0.9", "T": "10", "card": "sttfedrec-fig6-ml1m"},
           "As Fig. 5 with the CLSM tower." + _STT_NOTE,
           cards=('sttfedrec-fig6-ml1m',)),
    Preset("stt-table3-phone", "STTFedRec Table 3: one device's payload and time (phone)", "split_learning",
           {"factor": "10", "card": "sttfedrec-table3-ml1m"},
           "Naive FL against STTFedRec per device; the times measured on this CPU, scaled for a 10x slower phone "
           "(an assumed factor, not the paper's device).",
           cards=('sttfedrec-table3-ml1m',)),
    Preset("stt-privacy-popular", "STTFedRec privacy: popularity-matched non-clicks", "split_learning",
           {"rho": "0.9", "T": "10", "negatives": "popular", "card": "sttfedrec-privacy-ml1m"},
           "Non-clicks drawn by popularity hide the clicks from a popularity attack better than uniform ones; "
           "200 devices, 10 requests each (the card: 1,000 devices).",
           cards=('sttfedrec-privacy-ml1m',)),
)

LESSON = (
    Step("Split the model: STTFedRec", 4, "split_learning", next(p for p in PRESETS if p.id == "stt-fig4-rho").query,
         move="rho (the share of non-clicked items in a request) from 0.5 to 0.9.",
         watch="how many of a user's clicks the server's guesses find among the items of a request.",
         ask="Why does mixing non-clicked items into the request hide the clicks, and what does it cost?",
         notebook="labs/07_split_learning.ipynb"),
)
