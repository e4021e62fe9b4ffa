"""A seeded random walk of widget changes across every page: no exception, ever.

Widgets take values from their own domain, except the few that set how much training a run does
(dataset, size, rounds, clients, d, ...), which stay small so the walk takes about a minute. Now and
then the walk switches page or opens a stale, hand-edited link instead.
"""
import random
import re
import time

import pytest

from streamlit.testing.v1 import AppTest

from conftest import ROOT
from labcore.app.pages import CORE_PAGES, page_file
from labcore.app.state import PAGES as PAGE_SPECS

STEPS = 200
PAGES = ("explorer", "compare", "encryption", "figures")
START = {"synthetic_size": "tiny", "rounds": "3", "clients_per_round": "8", "dim": "8", "eval_every": "2"}
# widget (without the page prefix) -> the values the walk may pick
SMALL = {
    "dataset": ["synthetic"], "synthetic_size": ["tiny"], "rounds": [1, 2, 3, 4], "clients_per_round": [1, 2, 5, 12],
    "dim": [2, 4, 8, 16], "rank": [1, 2, 3, 4, 8, 16], "scolr_min_rank": [1, 2, 3, 8], "local_epochs": [1, 2],
    "eval_every": [1, 2, 5], "rank_every": [0, 1, 3], "ckks_degree": [8192, 16384], "_attack_rounds": [1, 2],
    "_card": ["colr-fig2-ml1m", "colr-fig2-pinterest", "colr-table2-ml1m", "colr-table4-ml1m"],
    "_values": [[1], [2, 4], [1, 8], [4], [2, 16]], "seed": [0, 1, 2, 3], "data_seed": [0, 1],
    "data_skew": [0.0, 0.5, 1.0, 2.0],
}
STALE_LINKS = [
    {"rank": "999", "colr_rank": "2", "_hide": "nope,bits", **START},
    {"method": "svd", "encryption": "ckks", **START},
    {"bandwidth_tiers": "[[0.3,1,1]]", "up_bits": "x", **START},
    {"_mode": "fig7", "_values": "0,1000", "dim": "-4", **START},
    {"ckks_coeff_bits": "[61,61,61]", "ckks_degree": "1000", "_card": "nope", **START},
    {"dim": "2", "rank": "8", "topk_ratio": "2", **START},
]


def _domain(page, name):
    """Raw values of a widget whose labels are formatted (AppTest sets raw values)."""
    if name.startswith("_"):
        opt = next((o for o in PAGE_SPECS[page].options if o.name == name[1:]), None)
        return list(opt.choices) if opt is not None and opt.choices else None
    c = PAGE_SPECS[page].control(name)
    if c is not None and c.kind in ("select", "select_slider", "chain"):
        return list(c.options)
    return None


def _choose(w, rng):
    page, name = w.key.split(".", 1)
    if name in SMALL:
        return rng.choice(SMALL[name])
    dom = _domain(page, name)
    if dom:
        return rng.choice(dom)
    kind = type(w).__name__
    if kind in ("Selectbox", "Radio", "SelectSlider"):
        return rng.choice(list(w.options))
    if kind == "ButtonGroup":
        return rng.choice(["hr", "ndcg", "loss"])
    if kind == "Toggle":
        return not w.value
    if kind == "Slider":
        return rng.randint(int(w.min), int(w.max))
    if kind == "NumberInput":
        if isinstance(w.value, float):
            return round(rng.uniform(float(w.min), min(float(w.max), 5.0)), 3)
        return rng.randint(int(w.min), min(int(w.max), 50))
    if kind == "Multiselect":
        return rng.sample(list(w.options), rng.randint(1, 3))
    raise AssertionError(f"no rule for {kind} {w.key}")


def _widgets(at):
    out = []
    for kind in ("selectbox", "radio", "select_slider", "button_group", "toggle", "slider", "number_input",
                 "multiselect"):
        out += [w for w in getattr(at, kind) if w.key and not w.disabled]
    return out


def _path(page: str) -> str:
    return str(page_file(page).relative_to(ROOT))


def _fresh(query, page):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if page not in CORE_PAGES:  # AppTest finds a topic's page (Encryption is CoLR's) only once st.navigation ran
        at.run()
    at.query_params.update(query)
    if page != "explorer":
        at.switch_page(_path(page))
    return at


@pytest.mark.classroom  # about 3 min: CI runs it after the default suite, with the browser sweeps
def test_random_walk_of_200_widget_changes_across_pages():
    rng = random.Random(20261122)
    at = _fresh(START, "explorer")
    at.run()
    assert not at.exception, at.exception
    changes, switches, links, seen, errors = 0, 0, 0, set(), set()
    t0 = time.monotonic()
    while changes < STEPS:
        r = rng.random()
        if r < 0.10:
            at.switch_page(_path(rng.choice(PAGES)))
            switches += 1
        elif r < 0.13:
            at = _fresh(rng.choice(STALE_LINKS), rng.choice(PAGES))
            links += 1
        else:
            ws = _widgets(at)
            buttons = [b for b in at.button if b.key in ("explorer.unhide", "compare.unhide", "explorer.resume")]
            if buttons and rng.random() < 0.1:
                rng.choice(buttons).click()
            else:
                w = rng.choice(ws)
                value = _choose(w, rng)
                w.set_value(value)
                seen.add(w.key)
            changes += 1
        at.run()
        assert not at.exception, (changes, at.exception)
        errors.update(e.value for e in at.error)
    # error boxes may explain a setting (a ConfigError message); a crash inside a run would show its type
    crashes = [e for e in errors if re.match(r"^[A-Z]\w*(Error|Exception): ", e) and not e.startswith("ConfigError")]
    assert not crashes, crashes
    pages = {k.split(".")[0] for k in seen}
    assert pages == set(PAGES) and len(seen) > 30, sorted(seen)
    print(f"{changes} changes over {len(seen)} widgets, {switches} page switches, {links} stale links, "
          f"{time.monotonic() - t0:.0f} s")
