import os
import sys
from pathlib import Path

import numpy as np
import pytest

from labcore.data.base import InteractionData

ROOT = Path(__file__).resolve().parents[1]


def make_tiny(n_users=30, n_items=50, seed=0, max_items=20) -> InteractionData:
    """A hand-sized dataset for exact engine tests (no loader involved)."""
    rng = np.random.default_rng(seed)
    rows = [np.sort(rng.choice(n_items, size=rng.integers(3, max_items), replace=False)) for _ in range(n_users)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    test = np.array([rng.choice(np.setdiff1d(np.arange(n_items), r)) for r in rows], dtype=np.int64)
    negs = np.stack([rng.choice(np.setdiff1d(np.arange(n_items), np.append(r, t)), 9, replace=False)
                     for r, t in zip(rows, test)]).astype(np.int64)
    return InteractionData("tiny-test", n_users, n_items, indptr, np.concatenate(rows).astype(np.int64), test, negs)


@pytest.fixture
def tiny():
    return make_tiny()


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own result cache."""
    monkeypatch.setenv("LABCORE_CACHE", str(tmp_path / "runs"))


@pytest.fixture(autouse=True)
def _main_module_kept(monkeypatch):
    """AppTest runs a page script as this process's __main__ and leaves it there: a process a later test spawns
    would run that script first (a function's AppTest script: NameError, and the test waited for a child that was
    gone). The real __main__ is put back after each test."""
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])


def shared_data() -> Path | None:
    p = os.environ.get("LABCORE_DATA")
    return Path(p) if p and Path(p).is_dir() else None


def assert_a_stopped_run_resumes(cfg, data, folder, stop_after: int = 7):
    """Stop a run after `stop_after` rounds (a checkpoint is left), run it again: the same numbers as one run
    straight through (the state a run keeps across rounds must all be in its checkpoint)."""
    from labcore.fed.engine import run
    from labcore.runner.checkpoint import CHECKPOINT

    full = run(cfg, data=data, use_cache=False, progress=False)
    stops = iter([False] * stop_after + [True])
    part = run(cfg, data=data, cache_dir=folder, progress=False, should_stop=lambda: next(stops))
    assert not part.complete and (folder / cfg.key() / CHECKPOINT).exists()
    resumed = run(cfg, data=data, cache_dir=folder, progress=False)
    assert resumed.table["loss"].tolist() == full.table["loss"].tolist()
    for col in ("hr", "hr_personal", "backdoor_success"):  # the personal models and attackers are state too
        if col in full.table:
            assert resumed.table[col].dropna().tolist() == full.table[col].dropna().tolist()


# --- what a browser that lost a widget's value would mount (tests/core/app/test_app_mount.py) ---------------------------
_VALUED = ("Selectbox", "Radio", "SelectSlider", "Multiselect", "ButtonGroup", "Slider", "NumberInput", "Toggle",
           "Checkbox")


def _widgets(node):
    """Every keyed widget that holds a value (buttons hold none)."""
    for child in getattr(node, "children", {}).values():
        if getattr(child, "key", None) and type(child).__name__ in _VALUED:
            yield child
        yield from _widgets(child)


def _mounted(el) -> list:
    """The value a browser without the widget's state shows: the proto's default, as the widget state spells it."""
    p, kind = el.proto, type(el).__name__
    if kind in ("Selectbox", "Radio"):
        return [el.options[p.default]] if p.HasField("default") else []
    if kind in ("SelectSlider", "Multiselect"):
        return [el.options[int(i)] for i in p.default]
    if kind == "ButtonGroup":
        return [p.options[int(i)].content for i in p.default]
    if kind == "Slider":
        return [float(x) for x in p.default]
    if kind == "NumberInput":
        return [float(p.default)] if p.HasField("default") else []
    if kind in ("Toggle", "Checkbox"):
        return [bool(p.default)]
    raise AssertionError(f"no rule for {kind}")


def _current(el) -> list:
    """The widget's value now, as the browser would send it."""
    ws = el._widget_state
    field = ws.WhichOneof("value")
    value = getattr(ws, field) if field else None
    if field in ("string_array_value", "double_array_value", "int_array_value"):
        return [float(x) if field == "double_array_value" else x for x in value.data]
    if field == "double_value" or field == "int_value":
        return [float(value)]
    return [] if value is None else [value]


def mount_mismatches(at, least: int = 5) -> list:
    """(key, value a browser without the widget's state would mount, value now) of every keyed widget where the
    two differ (tests/core/app/test_app_mount.py says why it matters)."""
    widgets = list(_widgets(at.sidebar)) + list(_widgets(at.main))
    assert len(widgets) >= least, f"the page drew {len(widgets)} keyed widgets, fewer than {least}"
    return [(el.key, _mounted(el), _current(el)) for el in widgets if _mounted(el) != _current(el)]

