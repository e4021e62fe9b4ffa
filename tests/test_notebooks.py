"""The lab notebooks (labs/): stored clean, shaped like a lesson, naming only what labcore has, and running
top to bottom at smoke size (so none can silently rot).

The static test parses every code cell and resolves each `labcore` name, import, RunConfig field and
result-table column it uses, so a renamed or removed attribute fails in a second with its name, the notebook
and the cell. The execution test runs every notebook headless with plain `jupyter nbconvert --execute`, in
order, sharing one run cache as a class does (each also runs on its own, only slower); `--durations=0` shows
the time of each.
"""
from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "labs").glob("*.ipynb"))
IDS = [p.name for p in NOTEBOOKS]
CELL_TIMEOUT = 300  # s; a smoke-size notebook takes well under a minute


def _code_cells(path: Path) -> list[tuple[str, str]]:
    nb = nbformat.read(path, as_version=4)
    # IPython magics and shell escapes are not Python; the lab notebooks use none, but keep the parser robust
    return [(c.get("id", str(i)), "\n".join(line for line in c.source.splitlines() if not line.lstrip().startswith(("%", "!"))))
            for i, c in enumerate(nb.cells) if c.cell_type == "code"]


# --- stored clean, shaped like a lesson -------------------------------------------------------------------
def test_there_are_lab_notebooks():
    numbers = [p.name[:2] for p in NOTEBOOKS]
    assert numbers[:6] == ["00", "01", "02", "03", "04", "05"], numbers
    assert all(n.isdigit() for n in numbers) and len(set(numbers)) == len(numbers), "labs are numbered NN_name.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_is_stored_clean(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for c in nb.cells:
        if c.cell_type == "code":
            assert not c.get("outputs") and c.get("execution_count") is None, f"cell {c.id}: store notebooks without outputs"
    ids = [c.id for c in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_is_a_lesson(path: Path):
    """Learning goals, the paper-size flag, a live control, an exercise check and the shared plots."""
    nb = nbformat.read(path, as_version=4)
    first_md = next(c.source for c in nb.cells if c.cell_type == "markdown")
    code = "\n".join(src for _, src in _code_cells(path))
    assert "Learning goals" in first_md
    assert "PAPER_SIZE = labs.paper_size()" in code, "one flag switches the notebook to the paper size"
    assert "labs.live(" in code, "at least one ipywidgets control that reruns or redraws"
    assert re.search(r"\bcheck_\w+\(", code), "at least one exercise with a check function"
    assert "plots." in code, "plots come from labcore.plots"


SUMMARY_HEADINGS = ("What you learned", "Where this leaves us", "Take-aways", "What to take away")
APP_LINK = re.compile(r"\(http://localhost:8501/([a-z_]*)\)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_ends_with_a_summary_and_its_app_page(path: Path):
    """The last markdown cells say what was learned and link the app page(s) where the same controls are live."""
    from labcore.app.pages import pages

    nb = nbformat.read(path, as_version=4)
    tail = "\n".join(c.source for c in [c for c in nb.cells if c.cell_type == "markdown"][-2:])
    assert any(h in tail for h in SUMMARY_HEADINGS), f"{path.name} ends without a summary ({SUMMARY_HEADINGS})"
    linked = APP_LINK.findall(tail)
    assert linked, f"{path.name} ends without a link to its app page"
    assert all(name == "" or name in pages() for name in linked), f"{path.name} links {linked}; pages: {list(pages())}"


# --- every labcore name a notebook uses exists ------------------------------------------------------------
def _resolve(dotted: str, allow_import: bool):
    """The object a dotted labcore name refers to; raises AttributeError / ImportError naming the missing part."""
    parts = dotted.split(".")
    obj = importlib.import_module(parts[0])
    for i, name in enumerate(parts[1:], start=1):
        if hasattr(obj, name):
            obj = getattr(obj, name)
        elif allow_import:
            obj = importlib.import_module(".".join(parts[: i + 1]))
        else:
            raise AttributeError(f"{'.'.join(parts[:i])} has no attribute {name!r}")
    return obj


def _chain(node: ast.AST) -> list[str] | None:
    """a.b.c -> ["a", "b", "c"] for pure attribute chains on a name."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + names[::-1]
    return None


def _final_keys() -> set[str]:
    from labcore import RunConfig
    from labcore.results import ROUND_COLUMNS, Result

    table = pd.DataFrame([{c: 0.0 for c in ROUND_COLUMNS}])
    return set(Result(RunConfig(), table, pd.DataFrame()).final)


def labcore_problems(path: Path) -> list[str]:
    """Every labcore import, attribute, RunConfig field, table column and `final` key the notebook uses
    that labcore does not have, as readable messages."""
    from labcore.config import FIELD_NAMES
    from labcore.results import ROUND_COLUMNS

    final_keys = _final_keys()
    frame_attrs = set(dir(pd.DataFrame))
    aliases: dict[str, str] = {}  # local name -> dotted labcore name
    problems: list[str] = []
    cells = [(cid, _parse(src, f"{path.name}:{cid}")) for cid, src in _code_cells(path)]

    def bad(cid, msg):
        problems.append(f"{path.name}, cell {cid}: {msg}")

    for cid, tree in cells:  # imports first: names bound in one cell are used in later ones
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "labcore":
                        try:
                            importlib.import_module(a.name)
                        except ImportError as e:
                            bad(cid, f"import {a.name}: {e}")
                        aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else "labcore"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "labcore":
                for a in node.names:
                    dotted = f"{node.module}.{a.name}"
                    try:
                        _resolve(dotted, allow_import=True)
                    except (AttributeError, ImportError) as e:
                        bad(cid, f"from {node.module} import {a.name}: {e}")
                    aliases[a.asname or a.name] = dotted

    def dotted_of(node) -> str | None:
        ch = _chain(node)
        if ch and ch[0] in aliases:
            return ".".join([aliases[ch[0]]] + ch[1:])
        return None

    config_builders = {"labcore.RunConfig", "labcore.config.RunConfig", "labcore.paper_ml1m",
                       "labcore.config.paper_ml1m", "labcore.colr.exercises.lab_config"}
    configs: set[str] = set()  # names bound to a RunConfig (built by labcore, or .replace of one)

    def is_config(node) -> bool:
        if isinstance(node, ast.Name):
            return node.id in configs
        if isinstance(node, ast.Call):
            f = node.func
            return dotted_of(f) in config_builders or (isinstance(f, ast.Attribute) and f.attr == "replace"
                                                        and is_config(f.value))
        return False

    for _ in range(3):  # a few passes: b = a.replace(...) after a = lab_config(...)
        for cid, tree in cells:
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and is_config(node.value):
                    configs.update(t.id for t in node.targets if isinstance(t, ast.Name))

    for cid, tree in cells:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                dotted = dotted_of(node) if not isinstance(node.parent, ast.Attribute) else None  # whole chains
                if dotted:
                    try:
                        _resolve(dotted, allow_import=False)
                    except (AttributeError, ImportError) as e:
                        bad(cid, f"{dotted}: {e}")
                # result tables: r.table.<column> (anything that is not a DataFrame attribute is a column)
                if (isinstance(node.value, ast.Attribute) and node.value.attr == "table"
                        and node.attr not in frame_attrs and node.attr not in ROUND_COLUMNS):
                    bad(cid, f".table.{node.attr}: no such column in labcore.results.ROUND_COLUMNS")
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
                keys = [k.value for k in ast.walk(node.slice) if isinstance(k, ast.Constant) and isinstance(k.value, str)]
                if node.value.attr == "table":
                    for k in keys:
                        if k not in ROUND_COLUMNS:
                            bad(cid, f".table[{k!r}]: no such column in labcore.results.ROUND_COLUMNS")
                elif node.value.attr == "final":
                    for k in keys:
                        if k not in final_keys:
                            bad(cid, f".final[{k!r}]: Result.final has {sorted(final_keys)}")
            if isinstance(node, ast.Call):
                name = dotted_of(node.func)
                is_replace = (isinstance(node.func, ast.Attribute) and node.func.attr == "replace"
                              and is_config(node.func.value))
                if name in config_builders or is_replace:
                    for kw in node.keywords:
                        if kw.arg and kw.arg not in FIELD_NAMES and not (name and name.endswith("lab_config") and kw.arg == "paper"):
                            bad(cid, f"{name or '.replace'}({kw.arg}=...): RunConfig has no field {kw.arg!r}")
    return problems


def _parse(source: str, name: str) -> ast.AST:
    """Parse a cell and give every node a `parent` (the top node's is None)."""
    tree = ast.parse(source, filename=name)
    tree.parent = None
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            child.parent = parent
    return tree


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_names_exist_in_labcore(path: Path):
    problems = labcore_problems(path)
    assert not problems, "\n".join(problems)


def test_static_check_catches_a_missing_name(tmp_path):
    """The static check names what is missing (a removed function, a renamed field, a wrong column)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import labcore\nfrom labcore import plots\nfrom labcore import labs_support as labs\n"
        "from labcore.colr import exercises as ex\nfrom labcore.privacy import no_such_thing\n"
        "cfg = ex.lab_config(method='colr', rnak=4)\nother = cfg.replace(clients_per_rund=3)\n"
        "something_else.replace(framework='x')\n"
        "plots.no_such_plot([])\nres = labcore.run(cfg)\nres.table['no_such_column']\nres.table.hr\n")]
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)
    text = "\n".join(labcore_problems(path))
    assert "no_such_thing" in text and "rnak" in text and "plots.no_such_plot" in text and "no_such_column" in text
    assert "clients_per_rund" in text
    assert ".table.hr" not in text and "framework" not in text  # real columns, other objects' replace()


# --- the exercise checks answer right and wrong ----------------------------------------------------------
def test_checks_without_an_answer_say_what_to_fill_in():
    from labcore.colr import exercises as ex

    assert ex.check_random_hr(...).ok is None
    assert ex.check_colr_saving(..., 3706, 64, 4).ok is None
    assert "✏️" in repr(ex.check_one_step_rank(...))


def test_checks_without_training():
    from labcore.colr import exercises as ex
    from labcore.fair import exercises as fair_ex

    cfg = ex.lab_config(paper=False, method="colr", rank=4)
    assert ex.check_dataset_size(600, 400).ok and not ex.check_dataset_size(400, 600).ok
    assert ex.check_upload_bytes(6492, cfg).ok and not ex.check_upload_bytes(6000, cfg).ok
    assert ex.check_random_hr(0.1).ok and not ex.check_random_hr(0.01).ok
    assert ex.check_metrics_at_rank(3, 1, 1 / 2.321928).ok and not ex.check_metrics_at_rank(3, 1, 1).ok
    assert ex.check_metrics_at_rank(12, 0, 0).ok
    assert ex.check_round_traffic_factor(2, cfg).ok and not ex.check_round_traffic_factor(1, cfg).ok
    assert ex.check_one_step_rank(1).ok and not ex.check_one_step_rank(2).ok
    assert ex.check_colr_saving(16, 3706, 64, 4).ok and not ex.check_colr_saving(4, 3706, 64, 4).ok
    assert ex.check_topk_vs_colr(2.0, 400, 32, 4).ok and not ex.check_topk_vs_colr(1.0, 400, 32, 4).ok
    assert ex.check_scolr_uplink(4.5 / 8, 400, 32, 8).ok and not ex.check_scolr_uplink(0.5 / 8, 400, 32, 8).ok
    assert ex.check_comm_seconds(4.8255).ok and not ex.check_comm_seconds(5.06).ok  # 10**6-byte MB: wrong
    assert ex.check_ciphertexts(4, 4 * 3706, 8192).ok and not ex.check_ciphertexts(3, 4 * 3706, 8192).ok
    assert fair_ex.check_collapsed_bucket(1, 3, 4, 2).ok and not fair_ex.check_collapsed_bucket(3, 3, 4, 2).ok
    assert fair_ex.check_table_values(512, 300, 8, 4).ok and not fair_ex.check_table_values(600, 300, 8, 4).ok  # pow2 rows
    assert fair_ex.check_devices_share(0.5, "1x-2x-4x-8x", 2).ok
    assert not fair_ex.check_devices_share(0.25, "1x-2x-4x-8x", 2).ok
    assert fair_ex.check_collapsed_bucket(..., 3, 4, 2).ok is None


def test_checks_on_short_runs():
    import labcore
    from labcore.colr import exercises as ex
    from labcore.colr.curious_server import attack_summary, curious_server

    tiny = ex.lab_config(paper=False, method="fedmf", rounds=4, eval_every=2)
    base = labcore.run(tiny, progress=False)
    assert ex.check_uplink_share(0.75, base).ok and not ex.check_uplink_share(0.5, base).ok
    tiers = labcore.run(tiny.replace(bandwidth_tiers=((0.5, 1.0, 1.0), (0.5, 0.1, 0.1))), progress=False)
    assert ex.check_straggler_share(1.0, tiers).ok  # half the devices slow, 30 clients: every round
    assert ex.check_best_local_epochs(1, tiny, choices=(1, 2)).ok is not None
    a, b = tiny.replace(local_epochs=1, batch_size=256), tiny.replace(local_epochs=4, batch_size=16)
    assert ex.check_more_local_steps("b", a, b).ok and not ex.check_more_local_steps("a", a, b).ok
    assert ex.check_best_method(base.config.method, [base]).ok
    s = attack_summary([curious_server(tiny, rounds=1), curious_server(tiny.replace(encryption="secagg"), rounds=1,
                                                                       real_clients=2)])
    assert ex.check_leakiest_view("upload", s).ok and not ex.check_leakiest_view("aggregate", s).ok
    masked = s[(s.encryption == "secagg") & (s.view == "upload")].iloc[0]
    plain = s[(s.encryption == "none") & (s.view == "upload")].iloc[0]
    assert abs(masked.recall - masked.chance_recall) < 0.15 < plain.recall - plain.chance_recall  # lab 05's reading
    lift = float(masked.lift)
    assert ex.check_protected_lift(lift, s, "secagg").ok


def test_fair_lab_scheme_frames():
    """Lab 06's capacity control: the four strategies of a scheme and their tidy frames."""
    from labcore.fair import exercises as fair_ex
    from labcore.fair.tradeoff import scheme_configs, scheme_curves, scheme_devices, scheme_runs, scheme_summary, \
        scheme_traffic

    base = fair_ex.fair_config(paper=False, rounds=2, eval_every=1)
    assert list(scheme_configs(base, "2x-4x")) == ["FedAvg", "FAIR-HET", "FAIR-HOM"]  # no 1x tier: no FULL-TRN
    runs = scheme_runs(base, "1x-4x")  # conftest gives every test its own run cache
    assert runs["FAIR-HOM"].config.capacities == "4x" and runs["FULL-TRN"].config.method == "full-trn"
    assert len(scheme_curves(runs)) == 4 * 2
    traffic = scheme_traffic(runs).set_index(["method", "direction"])["bytes_per_device"]
    assert traffic["FAIR-HOM", "up"] < traffic["FAIR-HET", "up"] < traffic["FedAvg", "up"] == traffic["FULL-TRN", "up"]
    dev = scheme_devices(runs, "1x-4x").set_index(["method", "tier"])
    assert not dev.loc[("FULL-TRN", "4x"), "takes_part"] and dev.loc[("FAIR-HOM", "1x"), "train_ratio"] == 4
    summary = scheme_summary(runs, 12).set_index("method")
    assert summary.loc["FULL-TRN", "devices_used"] == 0.5 and summary.loc["FAIR-HET", "devices_used"] == 1.0


# --- every notebook runs top to bottom at smoke size ---------------------------------------------------------
@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("lab-runs")


# lab 13 trains the real MiniLM language model (minutes on 2 cores): marker `minilm`
EXECUTED = [pytest.param(p, marks=pytest.mark.minilm) if p.name.startswith("13_") else p for p in NOTEBOOKS]


@pytest.mark.parametrize("path", EXECUTED, ids=IDS)
def test_notebook_executes(path: Path, tmp_path, shared_cache):
    """Plain `jupyter nbconvert --to notebook --execute`, as a student or CI would run it headless."""
    env = {**os.environ, "LABCORE_CACHE": str(shared_cache)}  # one cache for the whole lab, as in class
    env.pop("LABCORE_PAPER_SIZE", None)  # smoke size
    out = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                          f"--ExecutePreprocessor.timeout={CELL_TIMEOUT}", "--output-dir", str(tmp_path), str(path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=20 * CELL_TIMEOUT)
    assert out.returncode == 0, out.stderr[-3000:]
    nb = nbformat.read(tmp_path / path.name, as_version=4)
    errors = [(c.id, o.ename, o.evalue) for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code"), "every cell ran"
    # the HTML a student hands in keeps every figure the notebook drew (the same as `--to html --execute`)
    html = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output-dir", str(tmp_path),
                           str(tmp_path / path.name)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert html.returncode == 0, html.stderr[-3000:]
    page = (tmp_path / path.with_suffix(".html").name).read_text()
    drawn = figures_drawn(nb)
    assert drawn > 0, "a lab draws at least one figure"
    assert figures_in_html(page) == drawn, f"{drawn} figures drawn, {figures_in_html(page)} in the exported HTML"
    assert re.search(r"plotly\.js v\d", page), "plotly.js is embedded, not fetched from a CDN"


def figures_drawn(nb) -> int:
    """Figures in the executed notebook's outputs: plotly figures and images."""
    return sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
               if o.output_type in ("display_data", "execute_result")
               and ("application/vnd.plotly.v1+json" in o.data or "image/png" in o.data))


def figures_in_html(page: str) -> int:
    return page.count('class="plotly-graph-div"') + page.count('<img src="data:image/png')


def test_exported_html_keeps_figures_offline(tmp_path):
    """A figure drawn in a notebook kernel is drawn again by the exported HTML in a browser with no network."""
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("needs /usr/bin/chromium (see DEVELOPERS.md)")
    from playwright.sync_api import sync_playwright

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("from labcore import labs_support as labs\nimport plotly.graph_objects as go\n"
                                          "go.Figure(go.Scatter(y=[1, 3, 2]))")]
    nbformat.write(nb, tmp_path / "one.ipynb")
    out = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--execute", "one.ipynb"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.route("http*://**", lambda route: route.abort())  # offline: nothing from a CDN
        page.goto((tmp_path / "one.html").as_uri())
        page.wait_for_selector(".plotly-graph-div .main-svg", timeout=30_000)
        drawn = page.evaluate("document.querySelectorAll('.plotly-graph-div .main-svg').length")
        browser.close()
    assert drawn > 0
