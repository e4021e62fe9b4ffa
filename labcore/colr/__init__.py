"""CoLR (Nguyen et al.): low-rank updates for federated recommendation, as a topic of the lab.

The method itself is the shared core's: the engine (`labcore.fed`), the CoLR / SCoLR / SVD / Top-K methods
(`labcore.methods`), the payload ledger and round-time model (`labcore.net`), encryption (`labcore.privacy`).
This folder holds what is CoLR's paper and lesson only:

    topic.py      the topic's declaration (navigation, cards, presets, exercises)
    paper.py      the numbers the paper's text gives (Tables 2 and 4, quoted points)
    runs.py       the paper's config grids (full size and their synthetic smoke stand-in), one row per run
    cards.py      Fig. 2 to 5 and Tables 2 to 4 as figure cards
    presets.py    one link per figure or table to the core page that shows its form live
    exercises.py  the lab base run and the exercise checks of notebooks 00 to 05
"""
