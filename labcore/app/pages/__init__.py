"""The lab's navigation: the core pages here, then every topic's pages (`labcore.topics`).

The core pages (Explorer, Lesson, Compare, Paper figures) are generic over the engine's methods and every
topic's cards; a topic's own pages live in its folder (`labcore/<topic>/page.py`) and are declared in
its `topic.py`. Pages are files (not callables) run by `st.navigation` as a page script (their `render()`),
so that `AppTest.switch_page(<file>)` reaches each of them in the tests.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
CORE_SECTION = "Lab"

# name -> (title, icon); the order is the navigation's
CORE_PAGES = {
    "explorer": ("Explorer", ":material/tune:"),
    "lesson": ("Lesson", ":material/school:"),
    "compare": ("Compare", ":material/compare_arrows:"),
    "figures": ("Paper figures", ":material/insert_chart:"),
}


def pages() -> dict[str, tuple[str, str, Path, str]]:
    """name -> (title, icon, file, section) for every page, core pages first, then the topics' in order."""
    from labcore import topics

    out = {n: (title, icon, HERE / f"{n}.py", CORE_SECTION) for n, (title, icon) in CORE_PAGES.items()}
    for t, p in topics.all_pages():
        if p.name in out:
            raise ValueError(f"page name {p.name!r} of topic {t.name} is already taken by another page")
        out[p.name] = (p.title, p.icon, Path(p.file), t.section)
    return out


def sections() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, (_, _, _, section) in pages().items():
        out.setdefault(section, []).append(name)
    return out


def page_file(name: str) -> Path:
    return pages()[name][2]


def page_object(name: str):
    import streamlit as st

    title, icon, file, _ = pages()[name]
    default = name == "explorer"  # served at the root URL
    return st.Page(file, title=title, icon=icon, url_path=None if default else name, default=default)


def navigation():
    import streamlit as st

    # at the top, in one menu per section: the sidebar keeps its height for the page's controls (a projector's 720 px)
    return st.navigation({section: [page_object(n) for n in names if page_file(n).exists()]
                          for section, names in sections().items() if any(page_file(n).exists() for n in names)},
                         position="top")
