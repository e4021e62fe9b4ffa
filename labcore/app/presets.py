"""One link per paper figure or table: the page and query that show its form live.

Presets use the paper's dataset and settings (CoLR: d=64, 60 clients per
round, E=2, B=256) with fewer rounds than the paper's 1000 so that they run
in class; the note says what differs. Full-size reproductions are on the
Paper figures page. The FAIR and STTFedRec pages read their own page
parameters (`_fair_*`; `rho`, `T`, `factor`, `negatives`, `card`) and show the
matching stored card next to the live part.
"""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st


@dataclass(frozen=True)
class Preset:
    id: str
    label: str
    page: str
    query: dict
    note: str

    @property
    def paper(self) -> str:
        return {"fair": "FAIR", "split_learning": "STTFedRec"}.get(self.page, "CoLR")


_ML1M = {"dataset": "ml-1m"}

# FAIR: the live trade-off runs on ML-1M-100 for 30 rounds (10-20 s; Goodreads-100 takes about a minute per 10
# rounds here); the stored card beside it is the full-size table.
_FAIR_LIVE = {"_fair_data": "ml-1m-100", "_fair_rounds": "30"}
_FAIR_NOTE = (" Live part: ML-1M-100, 30 rounds (press 'Run the trade-off', 10-20 s); the paper trains up to 1000 "
              "rounds with early stopping. The card below is the stored full-size result.")
FAIR_PRESETS = (
    Preset("fair-table2-1x2x", "FAIR Table 2: capacity scheme 1x-2x", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-2x", "_fair_card": "fair-table2-goodreads"},
           "Half the devices hold the full model, half a 2x smaller one; card: Goodreads-100, the paper's "
           "dataset." + _FAIR_NOTE),
    Preset("fair-table2-1x4x", "FAIR Table 2: capacity scheme 1x-4x", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-4x", "_fair_card": "fair-table2-ml1m"},
           "The smaller half stores a 4x smaller item table; card: ML-1M-100 (the paper's second column is "
           "AmazonProduct-100)." + _FAIR_NOTE),
    Preset("fair-table2-1x8x", "FAIR Table 2: capacity scheme 1x-8x", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-8x", "_fair_card": "fair-table2-ml1m"},
           "8x smaller devices: FAIR-HOM shrinks everybody's model, FedHM has no entry (N/A in the paper)."
           + _FAIR_NOTE),
    Preset("fair-table3-1x2x", "FAIR Table 3: data loss when few devices hold the full model", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-2x", "_fair_card": "fair-table3-ml1m"},
           "FULL-TRN (only 1x devices train) against FAIR-HET. The live tiers split the users in halves; the "
           "paper and the card vary the share of 1x devices (1% to 50%), which this page has no control for."
           + _FAIR_NOTE),
    Preset("fair-fig1-tradeoff", "FAIR Fig. 1: model loss or data loss (1x-2x-4x-8x)", "fair",
           {**_FAIR_LIVE, "_fair_tiers": "1x-2x-4x-8x", "_fair_card": "fair-fig1-tradeoff"},
           "One model size for all who can hold it (1x..8x) against FAIR-HET; the paper's Fig. 1 is a sketch, the "
           "card is our 60-round run." + _FAIR_NOTE),
)

# STTFedRec: the live part (one request's composition, the server's guesses) takes seconds; training the rho
# and K sweeps takes hundreds of rounds, so they come from the stored cards.
_STT_NOTE = " The paper's figures are on Adressa (images only); the stored cards are ML-1M."
STTFEDREC_PRESETS = (
    Preset("stt-fig4-rho", "STTFedRec Fig. 4: the share of non-clicked items rho", "split_learning",
           {"rho": "0.5", "T": "10", "negatives": "uniform", "card": "sttfedrec-fig4-ml1m"},
           "Starts at rho = 0.5 (5 clicks in a request of 10): move rho to 0.9 and watch the server's guesses; "
           "the card has the trained AUC by rho (200 rounds per point)." + _STT_NOTE),
    Preset("stt-fig5-k", "STTFedRec Fig. 5: clients per round K (DSSM)", "split_learning",
           {"rho": "0.9", "T": "10", "card": "sttfedrec-fig5-ml1m"},
           "Convergence and secure-aggregation time by K from the stored card (150 rounds per K); K has no live "
           "control here." + _STT_NOTE),
    Preset("stt-fig6-k", "STTFedRec Fig. 6: clients per round K (CLSM)", "split_learning",
           {"rho": "0.9", "T": "10", "card": "sttfedrec-fig6-ml1m"},
           "As Fig. 5 with the CLSM tower." + _STT_NOTE),
    Preset("stt-table3-phone", "STTFedRec Table 3: one device's payload and time (phone)", "split_learning",
           {"factor": "10", "card": "sttfedrec-table3-ml1m"},
           "Naive FL against STTFedRec per device; the times measured on this CPU, scaled for a 10x slower phone "
           "(an assumed factor, not the paper's device)."),
    Preset("stt-privacy-popular", "STTFedRec privacy: popularity-matched non-clicks", "split_learning",
           {"rho": "0.9", "T": "10", "negatives": "popular", "card": "sttfedrec-privacy-ml1m"},
           "Non-clicks drawn by popularity hide the clicks from a popularity attack better than uniform ones; "
           "200 devices, 10 requests each (the card: 1,000 devices)."),
)

PRESETS = (
    Preset("fig2-ml1m", "Fig. 2: effective rank of FedMF updates (ML-1M)", "explorer",
           {**_ML1M, "method": "fedmf", "rounds": "200", "eval_every": "20", "rank_every": "5"},
           "N90 / N99 PCA components of the clients' item-table updates per round; paper: 1000 rounds."),
    Preset("fig2-pinterest", "Fig. 2: effective rank of FedMF updates (Pinterest)", "explorer",
           {"dataset": "pinterest", "method": "fedmf", "clients_per_round": "375", "rounds": "60", "eval_every": "20",
            "rank_every": "5"},
           "Pinterest has 37,501 users (1% per round as in the paper); paper: 1000 rounds."),
    Preset("fig3-ml1m", "Fig. 3: CoLR rank sweep vs FedMF at matching bytes (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "100", "eval_every": "20", "_mode": "rank", "_values": "2,8,32"},
           "CoLR@r at d=64 against FedMF with d=r (the same bytes per round); paper: 1000 rounds, r in 1..32."),
    Preset("fig4-ml1m", "Fig. 4: CoLR vs SVD vs Top-K at equal ratio (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "100", "eval_every": "20", "_mode": "ratio", "_values": "2,8"},
           "Ratio r/d for all three, both directions compressed; paper: 1000 rounds, more ratios."),
    Preset("fig5-ml1m", "Fig. 5: distribution of CoLR's B (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "100", "eval_every": "20", "_mode": "b_init", "_values": "8"},
           "normal, orthonormal and sphere B at rank 8, and (ours) the sphere scaled by sqrt(d/r); paper: 1000 rounds."),
    Preset("table2-ml1m", "Table 2: communication vs computation time (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "50", "eval_every": "25", "_mode": "rank", "_values": "1,4,16"},
           "The round-time chart under the sweep is Table 2's form (0.75 / 0.25 MB/s, R_comp=7, C_comp=10 s)."),
    Preset("table3-ml1m", "Table 3: CKKS overheads and sizes (ML-1M, N=3706)", "encryption",
           {**_ML1M, "dim": "64", "rank": "4", "method": "colr", "ckks_coeff_bits": "[60,40,40,60]",
            "ckks_scale_bits": "40"},
           "Ciphertext vs plaintext size of one upload; the staircase of Table 3."),
    Preset("table4-ml1m", "Table 4: SCoLR under device heterogeneity (ML-1M)", "compare",
           {**_ML1M, "dim": "64", "rounds": "100", "eval_every": "20", "_mode": "scolr", "_values": "4,8,16"},
           "SCoLR with local ranks r_u uniform in 1..r against CoLR@r; paper: 1000 rounds, r up to 32."),
) + FAIR_PRESETS + STTFEDREC_PRESETS


def by_id(pid: str) -> Preset | None:
    return next((p for p in PRESETS if p.id == pid), None)


def sidebar(page_name: str) -> None:
    from .pages import page_object

    with st.sidebar.expander("Paper presets"):
        for paper in dict.fromkeys(p.paper for p in PRESETS):
            st.caption(paper)
            for p in PRESETS:
                if p.paper == paper:
                    st.page_link(page_object(p.page), label=p.label, query_params=p.query, help=p.note)
