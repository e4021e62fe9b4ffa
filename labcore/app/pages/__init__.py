"""The lab's pages: one file each, run by `st.navigation` as a page script (its `render()`).

Pages are files (not callables) so that `AppTest.switch_page("labcore/app/pages/<name>.py")`
reaches each of them in the tests.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent

# name -> (title, icon); the order is the navigation's
PAGES = {
    "explorer": ("Explorer", ":material/tune:"),
    "compare": ("Compare", ":material/compare_arrows:"),
    "encryption": ("Encryption", ":material/lock:"),
    "figures": ("Paper figures", ":material/insert_chart:"),
    "fair": ("FAIR: random subspaces", ":material/memory:"),
    "split_learning": ("STTFedRec: split learning", ":material/call_split:"),
}
SECTIONS = {"CoLR lab": ("explorer", "compare", "encryption", "figures"), "More papers": ("fair", "split_learning")}


def page_file(name: str) -> Path:
    return HERE / f"{name}.py"


def page_object(name: str) -> st.Page:
    title, icon = PAGES[name]
    default = name == "explorer"  # served at the root URL
    return st.Page(page_file(name), title=title, icon=icon, url_path=None if default else name, default=default)


def navigation():
    pages = [n for n in PAGES if page_file(n).exists()]
    return st.navigation({title: [page_object(n) for n in names if n in pages]
                          for title, names in SECTIONS.items() if any(n in pages for n in names)})
