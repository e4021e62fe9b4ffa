"""One folder per topic: a topic is found through `labcore.topics` by the card list, the app's navigation and
`labcore topics`, and the generic machinery holds no topic's code."""
from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT

TOPIC_PY = '''
from pathlib import Path
from labcore.topics import Page, Topic

HERE = Path(__file__).resolve().parent
TOPIC = Topic(name="toytopic", title="Toy topic: the smallest topic there is", paper="none (a test)",
              section="Course reports", order=999, cards=".cards",
              pages=(Page("toytopic", "Toy topic", ":material/star:", HERE / "page.py"),),
              exercises=".exercises", notebook="labs/99_toy.ipynb", summary="One card, one page, one check.")
'''
CARDS_PY = '''
import pandas as pd
import plotly.graph_objects as go
from labcore.figures.registry import FigureCard, register

def _compute(size, progress):
    return pd.DataFrame({"x": [1, 2, 3], "y": [1.0, 4.0, 9.0]})

def _compare(ours, paper):
    return pd.DataFrame([{"quantity": "y at x=3", "paper": 9.0, "ours": float(ours["y"].iloc[-1]),
                          "ok": bool(ours["y"].iloc[-1] == 9.0), "note": ""}])

register(FigureCard(id="toytopic-fig1", title="Toy Fig. 1: squares", caption="Squares.", kind="figure",
                    paper=pd.DataFrame({"x": [3], "y": [9.0]}), configs=lambda size: [], compute_fn=_compute,
                    plot_fn=lambda ours, paper: go.Figure(go.Scatter(x=ours["x"], y=ours["y"])),
                    compare_fn=_compare, tolerance=None, tolerance_text="exact", expected="y = x^2",
                    columns=("x", "y")))
'''
PAGE_PY = '''
import streamlit as st

def render():
    st.title("Toy topic page")
    st.metric("squares", 3)

if __name__ == "__main__":
    render()
'''
EXERCISES_PY = '''
from labcore.labs_support import Feedback, close, missing, todo

def check_square(answer, x=3):
    if missing(answer):
        return todo("a number")
    return Feedback(close(answer, x * x, abs_=0), f"{x} squared")
'''


@pytest.fixture
def toy_topic(tmp_path, monkeypatch):
    """A minimal topic in a temporary package outside labcore, registered through LABCORE_TOPICS."""
    pkg = tmp_path / "toy_lab_topic"
    pkg.mkdir()
    for name, text in (("__init__.py", ""), ("topic.py", TOPIC_PY), ("cards.py", CARDS_PY), ("page.py", PAGE_PY),
                       ("exercises.py", EXERCISES_PY)):
        (pkg / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("LABCORE_TOPICS", "toy_lab_topic")
    _forget_toy()  # each test's package lives in its own tmp_path: no module or topic from an earlier one
    yield tmp_path
    _forget_toy()


def _forget_toy() -> None:
    from labcore import topics

    for name in [m for m in sys.modules if m == "toy_lab_topic" or m.startswith("toy_lab_topic.")]:
        if not name.endswith(".cards"):  # a card registers once per process; its module may stay
            del sys.modules[name]
    for key in [k for k in topics._CACHE if "toy_lab_topic" in k]:
        del topics._CACHE[key]


def test_a_new_topic_appears_in_the_registry_cards_exercises(toy_topic):
    from labcore import figures, labs_support, topics

    t = topics.get("toytopic")
    assert t.package == "toy_lab_topic" and t.card_prefix == "toytopic-"
    assert topics.names()[-1] == "toytopic"  # "Course reports", order 999: last
    assert figures.card_ids()[-1] == "toytopic-fig1"
    res = figures.reproduce("toytopic-fig1")
    assert res.within_tolerance is None and list(res.ours["y"]) == [1.0, 4.0, 9.0]  # smoke: no verdict
    assert figures.get("toytopic-fig1").check(res.ours)
    assert topics.card_topic("toytopic-fig1") is t
    assert t.exercise_module().check_square(9).ok and not t.exercise_module().check_square(8).ok
    row = labs_support.topic_exercises().set_index("topic").loc["toytopic"]
    assert row["checks"] == "check_square" and row["notebook"] == "labs/99_toy.ipynb"


def test_a_topic_leaves_no_trace_once_unregistered(toy_topic, monkeypatch):
    from labcore import figures, topics

    assert "toytopic-fig1" in figures.card_ids()
    monkeypatch.delenv("LABCORE_TOPICS")
    assert "toytopic" not in topics.names() and "toytopic-fig1" not in figures.card_ids()
    with pytest.raises(figures.UnknownCardError, match="toytopic-fig1"):
        figures.get("toytopic-fig1")


def test_a_new_topic_appears_in_labcore_figure_list_and_labcore_topics(toy_topic, capsys):
    from labcore.cli import main

    def cli(*args: str) -> str:  # the CLI's own entry point, in this process (the fixture registered the topic)
        capsys.readouterr()
        assert main(list(args)) == 0
        return capsys.readouterr().out

    assert "toytopic-fig1" in cli("figure", "--list")
    out = cli("topics", "--cards")
    assert "toytopic" in out and "Toy topic: the smallest topic there is" in out and "toytopic-fig1" in out
    assert "labs/99_toy.ipynb" in out
    for name in ("colr", "fair", "sttfedrec"):
        assert f"\n{name} " in "\n" + out


def test_a_new_topic_appears_in_the_app_navigation(toy_topic):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()  # the Explorer; st.navigation now knows every page
    at.switch_page(str(toy_topic / "toy_lab_topic" / "page.py"))
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Toy topic page"]
    from labcore.app.pages import sections

    assert "toytopic" in sections()["Course reports"]


def test_topics_list_colr_fair_sttfedrec_with_their_cards_and_pages():
    from labcore import figures, topics
    from labcore.app.pages import pages

    names = topics.names()
    assert names[:3] == ["colr", "fair", "sttfedrec"]
    by_topic = {n: [c for c in figures.card_ids() if c.startswith(topics.get(n).card_prefix)] for n in names}
    assert len(by_topic["colr"]) == 11 and len(by_topic["fair"]) == 10 and len(by_topic["sttfedrec"]) == 6
    assert {"fair", "split_learning"} <= set(pages())
    for t in topics.all_topics():  # every declared part exists
        for p in t.pages:
            assert Path(p.file).exists(), (t.name, p.file)
        if t.notebook:
            assert (ROOT / t.notebook).exists(), (t.name, t.notebook)


def _imports(path: Path) -> set[str]:
    """Absolute names of every module `path` imports (relative imports resolved against its package)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out |= {base} | {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_generic_modules_import_no_topic():
    """The card registry, the app shell, the CLI and the notebook helpers reach topics through labcore.topics only."""
    from labcore import topics

    names = set(topics.names())
    generic = [*(ROOT / "labcore/figures").glob("*.py"), *(ROOT / "labcore/app").glob("*.py"),
               *(ROOT / "labcore/app/pages").glob("*.py"), ROOT / "labcore/cli.py", ROOT / "labcore/labs_support.py"]
    assert _imports(ROOT / "labcore/colr/cards.py") >= {"labcore.colr.runs", "labcore.figures.registry"}
    for path in generic:
        for imp in _imports(path):
            parts = imp.split(".")
            assert not (parts[0] == "labcore" and len(parts) > 1 and parts[1] in names), \
                f"{path.relative_to(ROOT)} imports {imp}: a topic's module"


def test_a_broken_topic_name_is_a_clear_error(monkeypatch):
    from labcore import topics

    monkeypatch.setenv("LABCORE_TOPICS", "no_such_topic_package")
    with pytest.raises(ImportError, match="LABCORE_TOPICS names 'no_such_topic_package'"):
        topics.all_topics()
    with pytest.raises(topics.UnknownTopicError, match="unknown topic 'nope'"):
        monkeypatch.delenv("LABCORE_TOPICS")
        topics.get("nope")
