"""FELLRec end to end: a federated run, the app page, the exercises (every card at smoke size: tests/test_figures.py)."""
from pathlib import Path

import pytest

from labcore.fed.engine import use_threads

from labcore.fellrec import exercises as ex
from labcore.fellrec.experiments import base, heating
from labcore.fellrec.federated import run

use_threads()  # one intra-op thread, as the lab's runs (two spin-wait on a loaded 2-core machine)
ROOT = Path(__file__).resolve().parents[1]


def test_fellrec_run_heats_and_is_deterministic():
    cfg = base("smoke", rounds=3)
    a = run(cfg)  # trains and caches
    b = run(cfg, use_cache=False)  # trains again from the same config and seed
    assert a.clients[["R@10", "N@10"]].round(12).equals(b.clients[["R@10", "N@10"]].round(12))
    h = heating(cfg)  # read from the cache
    w = h.pivot(index="round", columns="client", values="w")
    assert (w.diff().dropna() >= -1e-12).all().all()  # every client's w_c rises
    led = a.ledger.groupby(["direction", "part"])["bytes"].sum()
    assert led[("up", "hidden_k")] > 0 and led[("up", "lora")] > 0  # offloading ran: embeddings crossed


def test_exercises_say_what_to_fill_and_accept_right_answers():
    assert ex.check_warmup(...).ok is None
    from labcore.fellrec.aggregate import warmup

    assert ex.check_warmup(float(warmup([0.5, 1.0, 2.0], 2, 0.1, 3.0)[0])).ok
    assert not ex.check_warmup(0.5).ok
    assert ex.check_imbalance(1.0, [0.1, 0.2, 0.15]).ok
    assert ex.check_upload_bytes(..., 2).ok is None


@pytest.mark.minilm
def test_page_renders_and_k_moves_memory():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "labcore/fellrec/page.py"), default_timeout=600)  # MiniLM smoke probes and costs, live
    at.run()
    assert not at.exception
    mem = lambda: float(at.metric[0].value.split()[0]) if False else float(
        [m for m in at.metric if m.label == "device memory"][0].value.split()[0])
    before = mem()
    at.slider(key="fellrec.k").set_value(4).run()  # MiniLM, the default backbone: k = 1..4
    assert not at.exception
    assert mem() > before
    w_before = float([m for m in at.metric if m.label.startswith("w_c")][0].value)
    at.slider(key="fellrec.alpha").set_value(0.9).run()
    assert float([m for m in at.metric if m.label.startswith("w_c")][0].value) > w_before


def test_safe_k_check_reads_the_probe_curve():
    import pandas as pd

    probes = pd.DataFrame({"probe": ["linear"] * 4, "layer": [1, 2, 3, 4], "similarity": [0.95, 0.9, 0.84, 0.79]})
    assert ex.check_safe_k(4, probes).ok and not ex.check_safe_k(3, probes).ok
    assert ex.check_safe_k(3, probes, threshold=0.85).ok
    assert ex.check_safe_k("none", probes, threshold=0.5).ok


def test_the_notebook_asks_what_its_checkers_check():
    import nbformat

    nb = nbformat.read(ROOT / "labs/13_fellrec.ipynb", 4)
    text = "\n".join(c.source for c in nb.cells)
    assert f"similarity below {ex.SAFE_SIMILARITY}" in text.replace("\n", " ")
    assert '"lora_up_bytes"' in text  # exercise 3's answer is a column the notebook displays
    assert f'BACKBONE = "{ex.BACKBONE}"' in text
