"""FAIR's presets: the FAIR page with a capacity scheme and the stored card that goes with it.

The page reads its own parameters (`_fair_data`, `_fair_tiers`, `_fair_rounds`, `_fair_card`).
"""
from __future__ import annotations

from ..app.lesson import Step
from ..app.presets import Preset

# FAIR: the live trade-off runs on ML-1M-100 for 30 rounds (10-20 s; Goodreads-100 takes about a minute per 10
# rounds here); the stored card beside it is the full-size table.
_FAIR_LIVE = {"_fair_data": "ml-1m-100", "_fair_rounds": "30"}
_FAIR_NOTE = (" Live part: ML-1M-100, 30 rounds (press 'Run the trade-off', 10-20 s); the paper trains up to 1000 "
              "rounds with early stopping. The card below is the stored full-size result.")
PRESETS = (
    Preset("fair-table2-1x2x", "FAIR Table 2: capacity scheme 1x-2x", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-2x", "_fair_card": "fair-table2-goodreads"},
           "Half the devices hold the full model, half a 2x smaller one; card: Goodreads-100, the paper's "
           "dataset." + _FAIR_NOTE,
           cards=('fair-table2-goodreads',)),
    Preset("fair-table2-1x4x", "FAIR Table 2: capacity scheme 1x-4x", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-4x", "_fair_card": "fair-table2-ml1m"},
           "The smaller half stores a 4x smaller item table; card: ML-1M-100 (the paper's second column is "
           "AmazonProduct-100)." + _FAIR_NOTE,
           cards=('fair-table2-ml1m',)),
    Preset("fair-table2-1x8x", "FAIR Table 2: capacity scheme 1x-8x", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-8x", "_fair_card": "fair-table2-ml1m"},
           "8x smaller devices: FAIR-HOM shrinks everybody's model, FedHM has no entry (N/A in the paper)."
           + _FAIR_NOTE),
    Preset("fair-table3-1x2x", "FAIR Table 3: data loss when few devices hold the full model", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-2x", "_fair_card": "fair-table3-ml1m"},
           "FULL-TRN (only 1x devices train) against FAIR-HET. The live tiers split the users in halves; the "
           "paper and the card vary the share of 1x devices (1% to 50%), which this page has no control for."
           + _FAIR_NOTE,
           cards=('fair-table3-goodreads', 'fair-table3-ml1m')),
    Preset("fair-fig1-tradeoff", "FAIR Fig. 1: model loss or data loss (1x-2x-4x-8x)", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-2x-4x-8x", "_fair_card": "fair-fig1-tradeoff"},
           "One model size for all who can hold it (1x..8x) against FAIR-HET; the paper's Fig. 1 is a sketch, the "
           "card is our 60-round run." + _FAIR_NOTE,
           cards=('fair-fig1-tradeoff',)),
)

LESSON = (
    Step("Devices of different sizes: FAIR", 4, "fair", next(p for p in PRESETS if p.id == "fair-table2-1x4x").query,
         move="the capacity tiers from 1x-4x to 1x-8x, then 1x-2x.",
         watch="FAIR-HET (each device trains a subspace of the table it can hold) beside the full model and a model "
               "shrunk for everybody.",
         ask="What does a small device give up when it trains a random subspace instead of a smaller model?",
         notebook="labs/06_fair.ipynb"),
)
