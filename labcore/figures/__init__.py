"""Paper figures and tables as reproducible cards: every topic's cards (`labcore/<topic>/cards.py`), one registry.

    from labcore import figures
    [c.id for c in figures.list_cards()]
    res = figures.reproduce("colr-fig3-ml1m", size="smoke")   # seconds, synthetic data
    res.ours, res.paper, res.figure, res.verdict     # 'numbers: a of b within; claims: c of d hold; shown: e'
    figures.stored("colr-fig3-ml1m")                           # the committed full-size result, or None

Command line: `labcore figure --list`, `labcore figure <id> [--full] [--save]`, `labcore figure all --full --save`.
"""
from .registry import (COMPARE_COLUMNS, ROW_KINDS, SIZES, CardResult, Computed, FigureCard, Tally, UnknownCardError,
                       card_ids, get, list_cards, reproduce, results_dir, save, stored)

__all__ = ["FigureCard", "CardResult", "Computed", "UnknownCardError", "list_cards", "card_ids", "get", "reproduce",
           "stored", "save", "results_dir", "SIZES", "COMPARE_COLUMNS", "ROW_KINDS", "Tally"]
