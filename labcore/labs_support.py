"""What every lab notebook (labs/) shares: the size flag, figure cards at either size, live controls,
the tour, and the `Feedback` of exercise checks.

    from labcore import labs_support as labs
    from labcore.colr import exercises as ex   # each topic's base run and checks live in its folder
    PAPER_SIZE = labs.paper_size()          # LABCORE_PAPER_SIZE=1 switches every notebook to the paper size
    base = ex.lab_config(method="colr", rank=4)
    labs.live(draw, rank=ipywidgets.IntSlider(...))
    ex.check_random_hr(0.1)

A topic's checks (`labcore/<topic>/exercises.py`) compute their expected answer with labcore itself and
answer with `Feedback`; a check called with `...` (the placeholder in the notebooks) says what to fill in
(`todo`). `topic_exercises()` lists every topic's checks.
"""
from __future__ import annotations

import importlib
import os
import platform
from dataclasses import dataclass
from typing import Callable

import pandas as pd

PAPER_ENV = "LABCORE_PAPER_SIZE"
# In a notebook kernel every plotly figure carries both its interactive form (JupyterLab draws it) and an HTML
# form with plotly.js embedded once per notebook: `jupyter nbconvert --to html` keeps every figure, offline.
NOTEBOOK_RENDERER = "plotly_mimetype+notebook"


def _render_figures_for_export() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and type(shell).__name__ == "ZMQInteractiveShell":  # a Jupyter kernel, not a terminal
        import plotly.io as pio

        pio.renderers.default = NOTEBOOK_RENDERER


_render_figures_for_export()


def paper_size() -> bool:
    """True when LABCORE_PAPER_SIZE=1: every notebook then trains at its paper's size (CoLR: MovieLens-1M)."""
    return os.environ.get(PAPER_ENV, "").strip() == "1"


# --- the tour --------------------------------------------------------------------------------------------
def environment() -> pd.DataFrame:
    """What this kernel runs on and which datasets it can find (the tour's first cell)."""
    import torch

    import labcore
    from .data.locations import DATA_ENV
    from .data.registry import FILE_DATASETS, find_dataset
    from .runtime import default_cache_dir, use_threads

    use_threads()
    rows = [("python", platform.python_version()), ("labcore", f"{labcore.__version__} ({_where(labcore)})"),
            ("torch", f"{torch.__version__}, {torch.get_num_threads()} thread(s) per run"),
            ("cores", str(os.cpu_count()))]
    for mod in ("tenseal", "phe", "plotly", "ipywidgets"):
        try:
            m = importlib.import_module(mod)
            rows.append((mod, getattr(m, "__version__", "installed")))
        except ImportError as e:  # the encryption lab needs tenseal and phe
            rows.append((mod, f"MISSING: {e}"))
    rows.append((f"${DATA_ENV}", os.environ.get(DATA_ENV, "(not set)")))
    rows.append(("run cache", str(default_cache_dir())))
    rows.append(("dataset synthetic", "generated on the fly (no download)"))
    for name, spec in FILE_DATASETS.items():
        found = find_dataset(spec)
        rows.append((f"dataset {name}", f"{found[0]} ({found[1].label})" if found else
                     "not found: paper-size runs will try to download it or say where to put it"))
    return pd.DataFrame(rows, columns=["item", "value"])


def _where(module) -> str:
    return os.path.dirname(os.path.abspath(module.__file__))


MODULES = ("labcore.config", "labcore.data", "labcore.fed.sampling", "labcore.fed.local_train",
           "labcore.fed.aggregate", "labcore.fed.engine", "labcore.fed.secure", "labcore.methods.base",
           "labcore.methods.colr", "labcore.methods.svd", "labcore.methods.topk", "labcore.methods.quantize",
           "labcore.net.message", "labcore.net.ledger", "labcore.net.wallclock", "labcore.metrics.ranking",
           "labcore.metrics.effective_rank", "labcore.privacy", "labcore.figures", "labcore.results",
           "labcore.plots", "labcore.labs_support", "labcore.topics")


def module_map() -> pd.DataFrame:
    """Where everything lives: each labcore module with the first line of its docstring."""
    rows = []
    for name in MODULES:
        mod = importlib.import_module(name)
        doc = (mod.__doc__ or "").strip().splitlines()
        rows.append({"module": name, "what it does": doc[0] if doc else ""})
    return pd.DataFrame(rows)


# --- figure cards -----------------------------------------------------------------------------------------
def card(card_id: str, paper: bool | None = None):
    """A paper figure or table through its card (labcore.figures).

    By default the committed full-size result (results/<id>.csv: it loads in a second or two); a card with
    none stored runs at smoke size (synthetic data, seconds: the pipeline, titled as a smoke run, with no
    verdict on the paper). Paper size (LABCORE_PAPER_SIZE=1 or paper=True): the stored result, else the
    full reproduction is run now (training cards: up to hours on 2 cores; runs are cached, so it resumes).
    """
    from . import figures

    stored = figures.stored(card_id)
    if stored is not None:
        return stored
    if paper if paper is not None else paper_size():
        return figures.reproduce(card_id, size="full", progress=True)
    return figures.reproduce(card_id, size="smoke")


def card_notes(card_id: str) -> str:
    """The card's caption, expected shape, tolerance and deviations from the paper, as text."""
    from . import figures

    return figures.get(card_id).describe()


# --- live controls ---------------------------------------------------------------------------------------
def live(draw: Callable, **controls) -> None:
    """Show ipywidgets `controls` above what `draw(**values)` returns; redraw when a control changes.

    The first drawing is computed in the calling cell, so an error there fails the cell (and the
    notebook tests); later redraws replace the drawing in place (an IPython display handle), and an
    error there is shown in its place. Use `continuous_update=False` on sliders whose redraw runs an
    experiment.

    Why a display handle and not an `ipywidgets.Output`: when a notebook runs headless (`jupyter nbconvert
    --execute`, nbclient), nbclient mirrors every output captured by an Output widget back to the kernel
    with a message on the shell channel, sent while it waits on that same channel for the cell's reply;
    the send swallows the socket's wake-up and the reply is only read when the cell's whole timeout has
    run out. Without an Output widget nothing is sent and headless runs take seconds.
    """
    import ipywidgets as widgets
    from IPython.display import Markdown, display

    def values():
        return {k: w.value for k, w in controls.items()}

    first = draw(**values())  # outside any handler: errors propagate
    display(widgets.HBox(list(controls.values())))
    handle = display(first, display_id=True)

    def redraw(_=None):
        try:
            handle.update(draw(**values()))
        except Exception as e:  # a bad combination of controls: say so where the drawing was
            handle.update(Markdown(f"**{type(e).__name__}:** {e}"))

    for w in controls.values():
        w.observe(redraw, names="value")


# --- exercise checks ----------------------------------------------------------------------------------------
@dataclass
class Feedback:
    ok: bool | None  # None: no answer yet
    message: str

    def __bool__(self) -> bool:
        return bool(self.ok)

    def __repr__(self) -> str:
        mark = {True: "✅ right", False: "❌ not yet", None: "✏️  no answer yet"}[self.ok]
        return f"{mark}: {self.message}"

    def _repr_markdown_(self) -> str:
        mark = {True: "✅ **right**", False: "❌ **not yet**", None: "✏️ **no answer yet**"}[self.ok]
        return f"{mark}: {self.message}"


def missing(answer) -> bool:
    return answer is ... or answer is None


def todo(what: str) -> Feedback:
    return Feedback(None, f"replace `...` with {what}")


def close(answer, expected: float, rel: float = 0.02, abs_: float = 0.0) -> bool:
    try:
        a = float(answer)
    except (TypeError, ValueError):
        return False
    return abs(a - expected) <= max(abs_, rel * abs(expected))


def topic_exercises() -> pd.DataFrame:
    """Every topic's notebook and exercise checks (from `labcore.topics`)."""
    from . import topics

    rows = []
    for t in topics.all_topics():
        mod = t.exercise_module()
        checks = sorted(n for n in dir(mod) if n.startswith("check_")) if mod else []
        rows.append({"topic": t.name, "notebook": t.notebook or "", "checks": ", ".join(checks)})
    return pd.DataFrame(rows, columns=["topic", "notebook", "checks"])
