"""Every page of the Streamlit lab renders, streams and reacts the right way (AppTest, no browser).

Runs use the tiny synthetic dataset and a few rounds, passed through the URL as a student's link would.
"""
import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, mount_mismatches, shared_data

TINY = {"synthetic_size": "tiny", "rounds": "4", "clients_per_round": "10", "dim": "8", "eval_every": "2",
        "rank_every": "2"}


def page_path(name: str) -> str:
    """A page's script relative to app.py (core pages in labcore/app/pages, topic pages in their folders)."""
    from labcore.app.pages import page_file

    return str(page_file(name).relative_to(ROOT))


def tiny(page: str | None = None) -> dict:
    """TINY with only the fields the page has controls for (a link sets nothing else: the hosted mode)."""
    from labcore.app.state import PAGES

    spec = PAGES.get(page or "explorer")
    return dict(TINY) if spec is None else {k: v for k, v in TINY.items() if spec.accepts(k)}


def app(query: dict | None = None, page: str | None = None) -> AppTest:
    query = tiny(page) if query is None else query
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(query)
    if page:  # opened directly, as a link to /<page> would
        from labcore.app.pages import CORE_PAGES

        if page not in CORE_PAGES:  # AppTest finds a page named page.py by its path only once st.navigation ran
            at.run()
            at.query_params.clear()  # the Explorer's run rewrote the link; open the page with the one asked for
            at.query_params.update(query)
        at.switch_page(page_path(page))
    at.run()
    assert not at.exception, at.exception
    return at


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def nbytes(text: str) -> float:
    num, unit = text.replace(",", "").split()
    return float(num) * {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}[unit]


def charts(at) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def values(arr) -> np.ndarray:
    """A plotly JSON array: a list, or a base64 typed array {dtype, bdata}."""
    if isinstance(arr, dict) and "bdata" in arr:
        return np.frombuffer(base64.b64decode(arr["bdata"]), dtype=np.dtype(arr["dtype"])).astype(float)
    return np.asarray(arr, dtype=float)


def panel_x(at, col: int) -> np.ndarray:
    """x values of the Explorer's metric panel in column col (1 rounds, 2 bytes, 3 wall-clock)."""
    spec = charts(at)[0]
    axis = "x" if col == 1 else f"x{col}"
    return np.concatenate([values(t["x"]) for t in spec["data"] if t.get("xaxis", "x") == axis])


# --------------------------------------------------------------------------- Explorer

def test_explorer_renders_every_chart_and_finishes_the_run():
    at = app()
    assert [w.value for w in at.warning] == []
    assert len(at.get("plotly_chart")) == 4  # metric panel, effective rank, payload parts, round time
    assert "round 4 / 4: finished" in at.get("progress")[0].proto.text
    assert 0 <= float(metric(at, "HR@10")) <= 1
    assert nbytes(metric(at, "upload / client / round")) > 0
    assert at.query_params["rounds"] == "4"  # the view is in the URL
    assert at.get("expander")[0].label.startswith("Payload per message")


def test_higher_rank_means_more_bytes_per_round():
    at = app({**TINY, "rank": "2"})
    low_up = nbytes(metric(at, "upload / client / round"))
    low_round = nbytes(metric(at, "bytes per round"))
    low_cum = panel_x(at, 2).max()
    at.slider(key="explorer.rank").set_value(6).run()
    assert not at.exception
    assert at.query_params["rank"] == "6"
    assert nbytes(metric(at, "upload / client / round")) > 2 * low_up
    assert nbytes(metric(at, "bytes per round")) > 2 * low_round
    assert panel_x(at, 2).max() > 2 * low_cum  # the plotted cumulative bytes moved too


def test_more_uplink_bits_mean_more_bytes_and_quantization_less_than_float32():
    at = app({**TINY, "up_bits": "2"})
    two = nbytes(metric(at, "upload / client / round"))
    at.slider(key="explorer.up_bits").set_value(8).run()
    eight = nbytes(metric(at, "upload / client / round"))
    at.slider(key="explorer.up_bits").set_value(0).run()
    full = nbytes(metric(at, "upload / client / round"))
    assert not at.exception
    assert two < eight < full


def test_slower_links_and_stragglers_lengthen_the_simulated_wall_clock():
    at = app({**TINY, "method": "fedmf", "dim": "32"})
    base = panel_x(at, 3).max()
    at.number_input(key="explorer.bw_up").set_value(0.02).run()
    slow = panel_x(at, 3).max()
    at.selectbox(key="explorer.bandwidth_tiers").set_value(
        "straggler: 10% of the clients at 1/20 bandwidth").run()
    straggler = panel_x(at, 3).max()
    assert not at.exception
    assert base < slow < straggler
    assert "bandwidth_tiers" in at.query_params


def test_method_switch_keeps_hidden_settings_and_shows_the_right_knobs():
    at = app({**TINY, "rank": "3"})
    at.selectbox(key="explorer.method").set_value("topk").run()
    keys = {w.key for w in at.sidebar.select_slider}
    assert "explorer.topk_ratio" in keys and not any(s.key == "explorer.rank" for s in at.sidebar.slider)
    at.selectbox(key="explorer.method").set_value("colr").run()
    assert at.slider(key="explorer.rank").value == 3  # kept while its control was not shown
    assert not at.exception


def test_a_bad_link_shows_messages_and_falls_back_to_defaults():
    at = app({**TINY, "rank": "999", "method": "lora", "bandwidth_tiers": "[[2,1,1]]", "colr_rank": "4",
              "_hide": "nonsense", "seed": "-1"})
    text = " ".join(w.value for w in at.warning)
    for name in ("rank", "method", "bandwidth_tiers", "colr_rank", "nonsense", "seed"):
        assert name in text
    assert at.slider(key="explorer.rank").value == 4 and at.selectbox(key="explorer.method").value == "colr"
    assert len(at.get("plotly_chart")) == 4  # and it still runs
    at.slider(key="explorer.rank").set_value(5).run()  # the view is rewritten and retrains: the messages stay
    assert "colr_rank" in " ".join(w.value for w in at.warning) and "colr_rank" not in at.query_params
    at.button(key="explorer._dismiss_link_warnings").click().run()  # until they are dismissed
    assert [w.value for w in at.warning] == []


def test_settings_that_do_not_fit_together_warn_instead_of_running():
    at = app()
    at.selectbox(key="explorer.method").set_value("svd").run()
    at.selectbox(key="explorer.encryption").set_value("ckks").run()
    assert not at.exception
    assert any("encryption" in w.value and "svd" in w.value for w in at.warning)
    assert at.get("plotly_chart") == [] or len(at.get("plotly_chart")) == 0


def test_lesson_mode_hides_the_named_controls_and_keeps_their_values():
    at = app({**TINY, "up_bits": "4", "_hide": "encryption,bits"})
    keys = {w.key for w in at.sidebar.slider} | {w.key for w in at.sidebar.selectbox}
    assert not keys & {"explorer.encryption", "explorer.up_bits", "explorer.down_bits"}
    assert "explorer.rank" in keys
    assert "q4/32b" in at.markdown[0].value  # the hidden value still applies
    at.slider(key="explorer.rank").set_value(2).run()
    assert at.query_params["_hide"] == "encryption,bits" and at.query_params["up_bits"] == "4"
    at.sidebar.button(key="explorer.unhide").click().run()
    assert "explorer.up_bits" in {w.key for w in at.sidebar.slider}
    assert "_hide" not in at.query_params


def test_a_stopped_run_is_shown_as_it_stands_and_resumes_on_request():
    from labcore.app.state import EXPLORER, parse

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(TINY)
    at.session_state["_lab_stopped"] = {parse(TINY, EXPLORER).cfg.key()}
    at.run()
    assert not at.exception
    assert at.button(key="explorer.resume").label == "Resume"
    assert at.get("plotly_chart") == [] or len(at.get("plotly_chart")) == 0  # nothing trained yet
    at.button(key="explorer.resume").click().run()
    assert not at.exception and "finished" in at.get("progress")[0].proto.text


def test_data_skew_slider_moves_the_measured_gini_of_the_clients_data():
    at = app({**TINY, "synthetic_size": "small", "rounds": "2", "eval_every": "1", "rank_every": "0"})
    ginis = {}
    for skew in (0.0, 1.0, 2.0):
        at.slider(key="explorer.data_skew").set_value(skew).run()
        assert not at.exception and [w.value for w in at.warning] == []
        ginis[skew] = float(metric(at, "data-size Gini"))
    assert ginis[0.0] < 0.01 < ginis[1.0] < ginis[2.0]
    assert at.query_params["data_skew"] == "2.0"
    assert "finished" in at.get("progress")[0].proto.text  # and the skewed dataset trains


def test_data_skew_is_fixed_by_a_real_dataset_and_kept_for_synthetic():
    if shared_data() is None:
        pytest.skip("needs $LABCORE_DATA with ml-100k")
    at = app({**TINY, "data_skew": "2.0"})
    at.selectbox(key="explorer.dataset").set_value("ml-100k").run()
    assert not at.exception and [w.value for w in at.warning] == []
    assert not any(s.key == "explorer.data_skew" for s in at.sidebar.slider)
    assert any("own, fixed data sizes" in c.value for c in at.sidebar.caption)
    assert float(metric(at, "data-size Gini")) > 0.3  # MovieLens users are far from equal
    assert "data_skew" not in at.query_params
    at.selectbox(key="explorer.dataset").set_value("synthetic").run()
    assert at.slider(key="explorer.data_skew").value == 2.0 and at.query_params["data_skew"] == "2.0"


# --------------------------------------------------------------------------- Compare

def test_compare_draws_the_rank_sweep_against_fedmf_and_reacts_to_the_values():
    at = app(page="compare")
    assert [w.value for w in at.warning] == []
    specs = charts(at)
    assert len(specs) == 3  # trade-off, metric panel, round time
    names = {t["name"] for t in specs[0]["data"]}
    assert names == {"CoLR (d=8)", "FedMF (d = r)"}
    assert "runs finished" in at.get("progress")[0].proto.text
    n_runs = len(at.dataframe[0].value)
    at.multiselect(key="compare._values").set_value([1, 2, 4, 8]).run()
    assert not at.exception and len(at.dataframe[0].value) > n_runs
    assert at.query_params["_values"] == "1,2,4,8"


@pytest.mark.parametrize("page", ["explorer", "compare"])
def test_a_cleared_metric_chip_shows_hr_and_keeps_the_link_valid(page):
    at = app(page=None if page == "explorer" else page)
    at.query_params["_y"] = "ndcg"
    at.run()
    at.get("button_group")[0].set_value(None).run()  # clicking the chosen chip again clears it
    assert not at.exception
    assert "_y" not in at.query_params  # HR@10, the default, is not written; "_y=None" was (a link that warned)


def test_compare_equal_ratio_puts_colr_svd_and_topk_on_the_same_axes():
    at = app(page="compare")
    at.selectbox(key="compare._mode").set_value("ratio").run()
    assert not at.exception
    names = {t["name"] for t in charts(at)[0]["data"]}
    assert {"CoLR", "SVD", "Top-K"} <= names
    t = at.dataframe[0].value
    mb = dict(zip(t["run"], t["traffic per client per round (MB)"]))
    assert mb["CoLR@2"] < mb["FedMF d=8"] if "FedMF d=8" in mb else mb["CoLR@2"] < mb["CoLR@4"]


# --------------------------------------------------------------------------- Encryption

def test_encryption_cost_explorer_answers_and_reacts_to_degree_and_rank():
    at = app(page="encryption")
    assert [w.value for w in at.warning] == []
    assert metric(at, "security") == "128 bits"
    n_ct = int(metric(at, "ciphertexts"))
    pt = float(metric(at, "plaintext (float32)").split()[0])
    at.slider(key="encryption.rank").set_value(8).run()
    assert float(metric(at, "plaintext (float32)").split()[0]) > pt  # more values
    at.selectbox(key="encryption.method").set_value("fedmf").run()
    many = int(metric(at, "ciphertexts"))
    at.selectbox(key="encryption.ckks_degree").set_value(16384).run()
    assert not at.exception
    assert int(metric(at, "ciphertexts")) <= many and n_ct >= 1
    assert at.query_params["ckks_degree"] == "16384"


def test_the_encryption_page_ignores_settings_of_other_pages_by_name():
    # q-FFL is an Explorer knob: a link cannot carry it into the attack's runs here (the hosted mode)
    at = app({"dim": "8", "clients_per_round": "10", "method": "fedmf", "qffl_q": "1", "encryption": "none"},
             page="encryption")
    assert [w.value for w in at.warning if "qffl_q" in w.value] and "qffl_q" not in at.query_params
    assert at.dataframe[-1].value["encryption"].tolist()[0] == "none"  # the attack ran without it


def test_encryption_attack_leaks_in_clear_and_not_under_ckks():
    at = app({"dim": "8", "clients_per_round": "10"}, page="encryption")  # small: tiny's base rate is ~0.5
    table = at.dataframe[-1].value
    up = table[table["what the server attacks"] == "upload"].set_index("encryption")
    assert up.loc["none", "attack precision"] > 0.5
    assert up.loc["ckks", "attack precision"] < up.loc["none", "attack precision"]
    assert up.loc["none", "clients attacked"] == up.loc["ckks", "clients attacked"]  # like with like
    assert any("same 4 clients" in c.value for c in at.caption)
    at.selectbox(key="encryption.ckks_coeff_bits").set_value((60, 40, 40, 60)).run()
    assert not at.exception
    # the attack tab's slider is drawn after the sidebar: its value still reaches the link in the same run
    at.slider(key="encryption._attack_rounds").set_value(2).run()
    assert at.query_params["_attack_rounds"] == "2"


def test_encryption_page_reports_invalid_ckks_parameters_from_a_link():
    at = app({"ckks_coeff_bits": "[60,60,60,60,60]", "ckks_degree": "4096"}, page="encryption")
    text = " ".join(w.value for w in at.warning)
    assert "ckks_coeff_bits" in text and "ckks_degree" in text
    assert metric(at, "security") == "128 bits"


# --------------------------------------------------------------------------- Paper figures

def test_figures_page_shows_a_card_with_the_paper_alongside():
    at = app({"_card": "colr-table2-ml1m"}, page="figures")
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1
    assert "Table 2" in at.subheader[0].value
    assert any("paper" in str(c).lower() for c in at.dataframe[0].value.columns)


def test_figures_page_warns_about_an_unknown_card():
    at = app({"_card": "fig-99"}, page="figures")
    assert any("fig-99" in w.value for w in at.warning)
    assert not at.exception


def test_figures_page_renders_a_stored_reproduction_of_every_topic():
    """One stored card a topic through the page (every stored result loads and plots: tests/core/test_figures.py)."""
    from labcore import topics
    from labcore.figures import list_cards, stored

    ids = {}
    for c in list_cards():
        topic = topics.card_topic(c.id)
        if topic is not None and topic.name not in ids and stored(c.id) is not None:
            ids[topic.name] = c.id
    assert len(ids) >= 8, ids
    for card_id in ids.values():
        at = app({"_card": card_id}, page="figures")
        assert at.selectbox(key="figures._card").value == card_id
        assert "full size" in at.markdown[0].value or any("full size" in m.value for m in at.markdown)
        assert not at.error, (card_id, [e.value for e in at.error])


# each topic page's heavy call: it must run in the server's job queue, never in the page's script thread
HEAVY = {"flalgos": ("labcore.flalgos.simulation", "run"), "wireless": ("labcore.wireless.fedavg", "simulate"),
         "sdp": ("labcore.sdp.run", "run"), "gist": ("labcore.gist.simulate", "run"),
         "completion": ("labcore.completion.harness", "run"), "privacy": ("labcore.fed.engine", "run"),
         "split_learning": ("labcore.sttfedrec.plots", "rho_explorer")}


def test_the_other_papers_pages_render_from_the_navigation(monkeypatch):
    """Every topic page's default view renders; its work ran on a task thread of the job queue."""
    import functools
    import importlib
    import threading

    from labcore.app.pages import CORE_SECTION, page_file, pages, sections

    threads: dict[str, list[str]] = {}
    for page, (module, name) in HEAVY.items():
        mod = importlib.import_module(module)

        def recorded(*a, _real=getattr(mod, name), _page=page, **k):
            threads.setdefault(_page, []).append(threading.current_thread().name)
            return _real(*a, **k)

        monkeypatch.setattr(mod, name, functools.wraps(getattr(mod, name))(recorded))
    for section, names in sections().items():
        if section == CORE_SECTION:
            continue
        for name in (n for n in names if page_file(n).exists()):
            at = AppTest.from_file(str(page_file(name)), default_timeout=120)
            at.run()
            assert at.title and not at.exception, name  # (without $LABCORE_DATA a page may explain what it needs)
            assert not mount_mismatches(at, least=0), name
    assert set(pages()) == {n for names in sections().values() for n in names}
    ran = {p: t for p, t in threads.items() if t}
    if shared_data() is not None:
        assert set(ran) == set(HEAVY), set(HEAVY) - set(ran)
    assert all(t.startswith("labcore-task-") for ts in ran.values() for t in ts), ran


def _same_value(a, b) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return str(a) == str(b)


def test_every_fair_and_split_learning_preset_opens_its_page_with_its_values():
    from labcore.app import presets

    fair_widgets = {"_fair_data": "data", "_fair_tiers": "capacity tiers", "_fair_rounds": "rounds",
                    "_fair_card": "card"}
    split_widgets = {"rho": "rho", "T": "items per request", "negatives": "non-clicked", "factor": "device slowdown",
                     "card": "card"}
    for p in presets.PRESETS:
        if p.page not in ("fair", "split_learning"):
            continue
        at = app(p.query, page=p.page)
        assert not at.warning and not at.error, (p.id, [w.value for w in at.warning], [e.value for e in at.error])
        shown = {w.label: w.value for kind in ("selectbox", "slider", "select_slider", "radio", "number_input")
                 for w in getattr(at, kind)}
        labels = fair_widgets if p.page == "fair" else split_widgets
        for name, raw in p.query.items():
            value = next(v for label, v in shown.items() if label.startswith(labels[name]))
            assert _same_value(value, raw), (p.id, name, raw, value)
            # and the link keeps it (a value equal to the page's default is left out of the link)
            assert name not in at.query_params or _same_value(at.query_params[name], raw)
        assert at.get("plotly_chart"), p.id  # the stored card (and the page's own charts) are drawn


def test_the_fair_pages_tables_say_what_their_columns_are(tmp_path, monkeypatch):
    """What a device stores, and the trade-off a click trains (synthetic data, 4 rounds): readable headers."""
    monkeypatch.setenv("LABCORE_CACHE", str(tmp_path))
    at = app({"_fair_data": "synthetic", "_fair_tiers": "1x-2x", "_fair_rounds": "4"}, page="fair")
    devices = at.dataframe[0].value
    assert list(devices.columns[:2]) == ["capacity tier", "trains"] and "bytes on the device" in devices.columns
    assert not [c for c in devices.columns if "_" in c]
    next(b for b in at.button if b.label == "Run the trade-off").click().run()
    assert not at.exception
    tradeoff = at.dataframe[1].value
    assert {"strategy", "model size (times smaller)", "share of devices training", "at round"} <= set(tradeoff.columns)
    assert any(c.startswith("best ") for c in tradeoff.columns) and not [c for c in tradeoff.columns if "_" in c]
    assert len(tradeoff) >= 2


def test_changing_only_the_bandwidth_of_a_finished_run_re_times_it_without_training(monkeypatch):
    from labcore import RunConfig
    from labcore.app import jobs

    at = app({**TINY, "method": "fedmf", "dim": "32"})
    hr, base = metric(at, "HR@10"), panel_x(at, 3).max()
    started = []
    follow = jobs.JobHub.follow
    monkeypatch.setattr(jobs.JobHub, "follow",
                        lambda self, cfg, *a, **k: started.append(cfg) or follow(self, cfg, *a, **k))
    at.number_input(key="explorer.bw_up").set_value(0.02).run()
    at.selectbox(key="explorer.bandwidth_tiers").set_value("straggler: 10% of the clients at 1/20 bandwidth").run()
    assert not at.exception and started == []  # no job: the stored run is re-timed
    assert metric(at, "HR@10") == hr and panel_x(at, 3).max() > base
    assert at.query_params["bw_up"] == "0.02" and "bandwidth_tiers" in at.query_params
    at.slider(key="explorer.rounds").set_value(3).run()  # a knob that changes training does start one
    assert len(started) == 1 and started[0].bw_up == RunConfig().bw_up and started[0].bandwidth_tiers == ()


def test_reset_to_defaults_and_the_downloads_of_the_explorer():
    at = app({**TINY, "rank": "3"})
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels[0] == "Per-round table (CSV)" and labels.count("Chart (HTML)") == 4
    erank = charts(at)[1]
    assert erank["layout"]["yaxis"]["range"][0] == 0 and erank["layout"]["yaxis"]["range"][1] >= 3
    from labcore.app.state import EXPLORER_BASE

    at.session_state["_lab_stopped"] = {EXPLORER_BASE.key()}  # the default run is not trained here (20 s)
    at.button(key="explorer.reset").click().run()
    assert not at.exception
    assert at.slider(key="explorer.rank").value == 4 and at.select_slider(key="explorer.dim").value == 64
    assert "rank" not in at.query_params and "rounds" not in at.query_params
    assert at.button(key="explorer.resume")  # the defaults' run, shown as stopped


def test_downloaded_tables_have_human_column_names_with_units():
    import pandas as pd

    from labcore.app.downloads import chart_html, human_table, table_csv
    from labcore.plots import round_breakdown
    from labcore.results import Result
    from labcore import RunConfig

    t = pd.DataFrame({"round": [0, 1], "hr": [float("nan"), 0.5], "bytes_up_client": [2048.0, 2048.0],
                      "t_comm": [0.1, 0.2], "t_comp": [1.0, 1.0], "t_round": [1.1, 1.2], "n90_mean": [None, None]})
    h = human_table(t)
    assert list(h.columns) == ["round", "HR@10", "upload per client (KB)", "communication, slowest client (s)",
                               "computation, slowest client + server (s)", "round time (s)"]
    assert h["upload per client (KB)"].tolist() == [2.0, 2.0]
    assert table_csv(t).decode().splitlines()[0].startswith("round,HR@10,upload per client (KB)")
    html = chart_html(round_breakdown(Result(RunConfig(), t, pd.DataFrame())), "x").decode()
    assert '<script src="http' not in html and "Plotly.newPlot" in html and len(html) > 1_000_000  # plotly.js inside


# --------------------------------------------------------------------------- missing data, Stop


def _without_pinterest(tmp_path, monkeypatch):
    """Every folder the loader searches is empty (Pinterest has no download: nothing touches the network)."""
    monkeypatch.setenv("LABCORE_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("labcore.data.locations.data_home", lambda: tmp_path / "nowhere")


@pytest.mark.parametrize("page", ["explorer", "compare", "encryption"])
def test_a_missing_dataset_is_reported_once_and_nothing_runs(tmp_path, monkeypatch, page):
    _without_pinterest(tmp_path, monkeypatch)
    at = app({**TINY, "dataset": "pinterest", "_values": "2,4,8"}, page=None if page == "explorer" else page)
    assert len(at.error) == 1, [e.value for e in at.error]  # not once per run, nor again in the run's status
    assert at.error[0].value.startswith("**pinterest**: no data files found.")
    assert not at.get("progress") and not at.get("plotly_chart")  # no run started
    assert not [b.key for b in at.button if b.key.startswith(("explorer.stop", "explorer.resume"))]


def test_stop_is_drawn_only_while_the_run_trains(monkeypatch):
    at = app({**TINY, "rounds": "2"})  # finished: nothing to stop
    assert "finished" in at.get("progress")[0].proto.text
    assert not [b.key for b in at.button if b.key.startswith("explorer.stop")]
    monkeypatch.setenv("LABCORE_APP_STREAM", "fragment")  # as with a browser: the page does not wait for the run
    # several seconds of training (600 users, 200 a round, d=64): still running when Stop is clicked
    at = app({**TINY, "synthetic_size": "small", "rounds": "1000", "clients_per_round": "200", "dim": "64",
              "eval_every": "1000", "rank_every": "0", "seed": "7"})
    assert "training" in at.get("progress")[0].proto.text
    at.button(key="explorer.stop").click().run()
    assert not at.exception
    assert "stopped" in at.get("progress")[0].proto.text and at.button(key="explorer.resume")
    assert not [b.key for b in at.button if b.key.startswith("explorer.stop")]


def test_compare_shows_the_same_error_of_every_run_once():
    at = app({**TINY, "clients_per_round": "60", "_values": "2,4,8"}, page="compare")  # tiny has 50 users
    assert len(at.error) == 1, [e.value for e in at.error]
    n = int(next(c.value for c in at.caption if " runs on synthetic" in c.value).split()[0])
    assert n > 3 and at.error[0].value.startswith(f"**All {n} runs:** **clients_per_round=60 is invalid**")



def _returns_before_its_card_selector(declared: bool):
    """A page that returns (its work still running) before it draws the widget a link names."""
    from labcore.app.url_widgets import UrlWidgets

    ui = UrlWidgets("early")
    ui.slider("rho", "rho", 0.5, 0.95, 0.9, 0.05)
    if declared:
        ui.later("card")
    ui.warnings()


@pytest.mark.parametrize("declared", [True, False])
def test_a_link_to_a_widget_drawn_after_background_work_is_not_reported_meanwhile(declared):
    """The split-learning page returns while its attack trains, before it draws the cards' selector (in the browser
    the warning stood until the attack ended): a widget declared `later` is not 'not used' meanwhile."""
    at = AppTest.from_function(_returns_before_its_card_selector, args=(declared,))
    at.query_params.update({"card": "sttfedrec-fig5-ml1m", "bogus": "1"})
    at.run()
    shown = " ".join(w.value for w in at.warning)
    assert ("card=" in shown) != declared, shown
    assert "bogus=" in shown  # a name the page has no widget for is still reported
