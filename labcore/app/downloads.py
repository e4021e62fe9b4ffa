"""Downloads of what a page shows: a run's per-round table (CSV) and any chart (self-contained HTML).

Files are built only when a button is clicked (Streamlit calls `data` then), so a page that streams a run
pays nothing for them per redraw; the table is whatever the run has so far (partial while it trains).
Column names are the ones a reader of the CSV needs: what, and in which unit.
"""
from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

KB, MB = 2**10, 2**20

# engine column -> (human name with unit, divisor); columns not listed keep their name
COLUMNS = {
    "round": ("round", 1), "loss": ("training loss", 1), "hr": ("HR@10", 1), "ndcg": ("NDCG@10", 1),
    "bytes_up": ("upload, all clients (KB)", KB), "bytes_down": ("download, all clients (KB)", KB),
    "bytes_up_client": ("upload per client (KB)", KB), "bytes_down_client": ("download per client (KB)", KB),
    "cum_bytes": ("cumulative traffic (MB)", MB), "t_comm": ("communication, slowest client (s)", 1),
    "t_comp": ("computation, slowest client + server (s)", 1), "t_round": ("round time (s)", 1),
    "wallclock": ("simulated wall-clock (s)", 1),
    "n90_mean": ("N90 per client, mean (components)", 1), "n90_std": ("N90 per client, std", 1),
    "n99_mean": ("N99 per client, mean (components)", 1), "n99_std": ("N99 per client, std", 1),
    "erank_mean": ("entropy rank per client, mean", 1),
    "agg_n90": ("N90 of the aggregated update (components)", 1),
    "agg_n99": ("N99 of the aggregated update (components)", 1),
    "agg_erank": ("entropy rank of the aggregated update", 1),
    "sec_local": ("local training, measured on this machine (s)", 1),
    "he_client_s": ("encryption work per client (s)", 1), "he_server_s": ("encryption work at the server (s)", 1),
    "he_extrapolated": ("encryption costs scaled from the clients encrypted for real", 1),
    "he_check_err": ("encrypted-vs-plain aggregate error", 1),
    "dp_sigma": ("noise multiplier sigma", 1), "epsilon": ("epsilon spent", 1),
}


def human_table(table: pd.DataFrame, drop_empty: bool = True) -> pd.DataFrame:
    """The per-round table with readable column names and bytes in KB / MB (all-empty columns left out)."""
    out = pd.DataFrame(index=table.index)
    for col in table.columns:
        s = table[col]
        if drop_empty and s.isna().all():
            continue
        name, div = COLUMNS.get(col, (col, 1))
        out[name] = s / div if div != 1 else s
    return out


UNIT_SUFFIXES = (("_kb", " (KB)"), ("_mb", " (MB)"), ("_gb", " (GB)"), ("_bytes", " (bytes)"), ("_min", " (min)"),
                 ("_ms", " (ms)"), ("_s", " (s)"), ("_pct", " (%)"))


def human_name(col: str) -> str:
    """A column name a reader understands: the engine's names from COLUMNS, otherwise words and a unit
    ("up_kb" -> "up (KB)", "round_best" -> "round best")."""
    if col in COLUMNS and COLUMNS[col][1] == 1:  # (values are not rescaled here: no KB label on bytes)
        return COLUMNS[col][0]
    if not isinstance(col, str) or " " in col:
        return col
    for suffix, unit in UNIT_SUFFIXES:
        if col.endswith(suffix) and len(col) > len(suffix):
            return col[: -len(suffix)].replace("_", " ") + unit
    return col.replace("_", " ")


def human_columns(table: pd.DataFrame) -> pd.DataFrame:
    """Any results table with readable column names (values untouched), e.g. a card's own numbers."""
    names = [human_name(c) for c in table.columns]
    return table.set_axis(names, axis=1) if len(set(names)) == len(names) else table


def table_csv(table: pd.DataFrame) -> bytes:
    return human_table(table).to_csv(index=False).encode()


def chart_html(fig: go.Figure, title: str = "") -> bytes:
    """A self-contained HTML file of the chart (plotly.js embedded: opens offline)."""
    return fig.to_html(include_plotlyjs=True, full_html=True, config={"displaylogo": False},
                       default_width="100%").replace("<head>", f"<head><title>{title}</title>", 1).encode()


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", text).strip("_").lower() or "run"


def table_button(table: pd.DataFrame, name: str, key: str, where=None, partial: bool = False) -> None:
    label = "Table so far (CSV)" if partial else "Per-round table (CSV)"
    (where or st).download_button(label, lambda: table_csv(table), file_name=f"{slug(name)}.csv", mime="text/csv",
                                  key=key, on_click="ignore", icon=":material/download:",
                                  help="one row per round, column names with units")


def chart_button(fig: go.Figure, name: str, key: str, where=None) -> None:
    (where or st).download_button("Chart (HTML)", lambda: chart_html(fig, name), file_name=f"{slug(name)}.html",
                                  mime="text/html", key=key, on_click="ignore", icon=":material/download:",
                                  help="a self-contained, interactive copy of this chart (opens offline); the "
                                       "camera icon on the chart saves a PNG")
