"""The hosted mode: a crafted link is refused (a warning names the field, the page's default is used) or bounded
(the work budget's message, nothing trained), presets and the default views still open as intended, Paillier
views survive their own link, and background work ends when its last viewer leaves."""
import functools
import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT, shared_data
from labcore.app import budget, jobs, presets, state, sweeps
from labcore.app.state import COMPARE, ENCRYPTION, EXPLORER, PAGES, encode, parse

TINY = {"synthetic_size": "tiny", "rounds": "4", "clients_per_round": "10", "dim": "8", "eval_every": "2"}
ENC = {"synthetic_size": "tiny", "dim": "8", "clients_per_round": "10", "encryption": "none"}  # the plain attack
DEEP = "[" * 3000  # a parser that recursed on each level stopped with RecursionError

# (page, query, fields the page must refuse by name, bounded by the budget)
CRAFTED = [
    # the three links
    ("encryption", {"seed": "12", "synthetic_size": "ml1m", "dim": "256", "clients_per_round": "500",
                    "method": "fedmf"}, (), True),
    ("encryption", {"seed": "11", "num_negatives": "1000", "local_epochs": "200", "batch_size": "1",
                    **ENC}, ("num_negatives", "local_epochs", "batch_size"), False),
    ("explorer", {"num_negatives": "1000", "local_epochs": "10", "clients_per_round": "50", "synthetic_size": "ml1m",
                  "rounds": "1000"}, ("num_negatives",), True),
    # fields no control of the Explorer shows
    ("explorer", {**TINY, "batch_size": "1"}, ("batch_size",), False),
    ("explorer", {**TINY, "quant_bucket": "1", "weight_decay": "1e9"}, ("quant_bucket", "weight_decay"), False),
    ("explorer", {**TINY, "top_k": "100", "checkpoint_every": "1"}, ("top_k", "checkpoint_every"), False),
    ("explorer", {**TINY, "he_real_clients": "10000000", "method": "fedmf", "encryption": "ckks"},
     ("he_real_clients",), False),
    ("explorer", {**TINY, "paillier_key_bits": "8192", "sec_per_sample": "1e9"},
     ("paillier_key_bits", "sec_per_sample"), False),
    ("explorer", {**TINY, "bandwidth_tiers": DEEP}, ("bandwidth_tiers",), False),
    ("explorer", {**TINY, "bandwidth_tiers": "[" * 900 + "]" * 900}, ("bandwidth_tiers",), False),
    ("explorer", {**TINY, "LABCORE_APP_BUDGET": "off"}, ("LABCORE_APP_BUDGET",), False),  # a setting, not a link's
    # heavy by the page's own controls: bounded
    ("explorer", {"synthetic_size": "medium", "method": "fedmf", "dim": "256", "clients_per_round": "500",
                  "rounds": "1000", "local_epochs": "10"}, (), True),
    # Compare: no method or protection of its own
    ("compare", {**TINY, "method": "fedmf", "encryption": "ckks", "_values": "2"}, ("method", "encryption"), False),
    ("compare", {**TINY, "num_negatives": "1000", "_values": "2"}, ("num_negatives",), False),
    ("compare", {"synthetic_size": "medium", "rounds": "1000", "clients_per_round": "500", "local_epochs": "10",
                 "_values": "1,2,4,8,16,32,64"}, (), True),
    # Encryption: the attack plays its own rounds
    ("encryption", {**ENC, "rounds": "1000", "eval_every": "1"}, ("rounds", "eval_every"), False),
    ("encryption", {**ENC, "qffl_q": "1", "personalization": "ditto"}, ("qffl_q", "personalization"), False),
    ("encryption", {**ENC, "ckks_coeff_bits": DEEP}, ("ckks_coeff_bits",), False),
    ("encryption", {**ENC, "ckks_coeff_bits": "[[60,40,60]]"}, ("ckks_coeff_bits",), False),
    ("encryption", {**ENC, "_attack_rounds": "500"}, ("_attack_rounds",), False),
    # pages without run controls
    ("figures", {"_card": "colr-table2-ml1m", "rounds": "100000", "num_negatives": "1000"},
     ("rounds", "num_negatives"), False),
    ("fair", {"_fair_data": "synthetic", "_fair_rounds": "100000", "lr": "1e9"}, ("_fair_rounds", "lr"), False),
]


def _open(page: str, query: dict, started: list | None = None) -> AppTest:
    """The app at `page` with the link's `query`; `started` (the fixture) then lists what that page started."""
    from labcore.app.pages import CORE_PAGES, page_file

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.query_params.update(query)
    if page != "explorer":
        if page not in CORE_PAGES:  # AppTest finds a topic page by its path only once st.navigation ran
            at.query_params.clear()
            at.run()
            if started is not None:
                started.clear()  # the Explorer's default run, on the way
            at.query_params.update(query)
        at.switch_page(str(page_file(page).relative_to(ROOT)))
    at.run()
    return at


@pytest.fixture
def started(monkeypatch):
    """Every run or task the pages start."""
    out = []
    follow, task = jobs.JobHub.follow, jobs.JobHub.task
    monkeypatch.setattr(jobs.JobHub, "follow", lambda self, cfg, *a, **k: out.append(cfg) or follow(self, cfg, *a, **k))
    monkeypatch.setattr(jobs.JobHub, "task", lambda self, key, *a, **k: out.append(key) or task(self, key, *a, **k))
    return out


@pytest.mark.parametrize("page, query, refused, bounded", CRAFTED,
                         ids=[f"{i}-{c[0]}" for i, c in enumerate(CRAFTED)])
def test_a_crafted_link_is_refused_or_bounded(page, query, refused, bounded, started, tmp_path, monkeypatch):
    monkeypatch.setenv("LABCORE_CACHE", str(tmp_path))
    monkeypatch.delenv(budget.WORK_ENV, raising=False)
    monkeypatch.delenv(budget.MEMORY_ENV, raising=False)
    monkeypatch.delenv(budget.ENCRYPTIONS_ENV, raising=False)
    at = _open(page, query, started)
    assert not at.exception, at.exception
    text = [w.value for w in at.warning]
    for name in refused:
        assert any(name in w for w in text), (name, text)  # named ...
        if page in PAGES and not name.startswith("_"):  # ... and not used: the view keeps the page's default
            assert name not in at.query_params, (name, dict(at.query_params))
    refusals = [w for w in text if "work budget" in w]
    if bounded:
        assert len(refusals) == 1 and "times the budget" in refusals[0], text
        # nothing was queued but the cost explorer's measurement of the link's CKKS parameters (keys and one
        # ciphertext per parameter set, whatever the upload's size)
        assert [s for s in started if not str(s).startswith("encryption.ckks:")] == [], started
        assert not at.get("progress")
    else:
        assert not refusals, refusals
    assert len(" ".join(text)) < 20_000  # a 3,000-character value is not echoed back whole


def test_the_crafted_links_are_refused_at_the_link_layer_without_recursion():
    for spec, name in ((EXPLORER, "bandwidth_tiers"), (ENCRYPTION, "ckks_coeff_bits")):
        for raw in (DEEP, "[" * 999 + "]" * 999, "[" * 200_000):
            p = parse({name: raw}, spec)
            assert p.cfg == spec.base and len(p.warnings) == 1 and name in p.warnings[0], p.warnings


@pytest.mark.parametrize("spec", [EXPLORER, ENCRYPTION], ids=lambda s: s.name)
@pytest.mark.parametrize("encryption", ["none", "ckks", "secagg", "paillier"])
def test_every_encryption_mode_survives_its_own_link(spec, encryption):
    """`parse(encode(cfg)) == cfg` for every protection, on each page that has the control (Paillier came back
    as none on the Explorer and as CoLR + CKKS on the Encryption page)."""
    if encryption == "paillier":
        cfg = spec.base.replace(method="topk", encryption="paillier", aggregation="weighted", compress_down=False)
    else:
        cfg = spec.base.replace(method="fedmf", encryption=encryption)
    p = parse(encode(cfg, spec), spec)
    assert p.warnings == [] and p.cfg == cfg, p.warnings
    if spec is ENCRYPTION:  # the page's own controls reach it too: Paillier sets what it needs
        p = parse({"method": "topk", "encryption": encryption if encryption == "paillier" else "none"}, spec)
        assert p.warnings == [] and p.cfg.encryption in ("paillier", "none")


def test_a_paillier_view_opens_from_its_link_on_the_explorer():
    cfg = EXPLORER.base.replace(method="topk", encryption="paillier", aggregation="weighted", compress_down=False,
                                synthetic_size="tiny", rounds=1, clients_per_round=4, dim=8, eval_every=1,
                                rank_every=0)
    at = _open("explorer", encode(cfg, EXPLORER))
    assert not at.exception and [w.value for w in at.warning] == []
    assert at.selectbox(key="explorer.encryption").value == "paillier"
    assert at.query_params["encryption"] == "paillier" and "finished" in at.get("progress")[0].proto.text


def _data(name: str, size: str = "small"):
    from labcore.data import load_dataset

    return load_dataset(name, size=size)


@functools.cache
def _dataset(cfg_dataset: str, size: str):
    return _data(cfg_dataset, size if cfg_dataset == "synthetic" else "small")


def _preset_costs(p) -> list:
    spec = PAGES[p.page]
    parsed = parse(p.query, spec)
    cfgs = [parsed.cfg]
    if p.page == "compare":
        cfgs = [x.cfg for x in sweeps.sweep(parsed.cfg, parsed.options["mode"], parsed.options["values"],
                                            parsed.options["base"])[0]]
    if p.page == "encryption":
        from labcore.colr.curious_server import played_config

        cfgs = [played_config(parsed.cfg, parsed.options["attack_rounds"], 4)]
    return [budget.cost(c, _dataset(c.dataset, c.synthetic_size)) for c in cfgs]


@pytest.mark.parametrize("preset", [p for p in presets.PRESETS if p.page in PAGES], ids=lambda p: p.id)
def test_every_preset_link_opens_as_intended_and_fits_the_default_budget(preset, monkeypatch):
    monkeypatch.delenv(budget.WORK_ENV, raising=False)
    monkeypatch.delenv(budget.MEMORY_ENV, raising=False)
    monkeypatch.delenv(budget.ENCRYPTIONS_ENV, raising=False)
    spec = PAGES[preset.page]
    p = parse(preset.query, spec)
    assert p.warnings == [], p.warnings
    for name, raw in preset.query.items():  # every value of the preset is in the view it opens
        if name.startswith("_"):
            assert spec.options and p.options[name[1:]] == next(o for o in spec.options
                                                                if o.name == name[1:]).parse_value(raw)
        else:
            assert getattr(p.cfg, name) == state.coerce_field(name, raw), name
    assert parse(encode(p.cfg, spec, p.options), spec).cfg == p.cfg  # and its own link gives it back
    if p.cfg.dataset != "synthetic" and shared_data() is None:
        pytest.skip(f"needs $LABCORE_DATA with {p.cfg.dataset}")
    assert budget.over(_preset_costs(preset)) is None


def test_every_pages_default_view_fits_the_default_budget(monkeypatch):
    monkeypatch.delenv(budget.WORK_ENV, raising=False)
    monkeypatch.delenv(budget.MEMORY_ENV, raising=False)
    monkeypatch.delenv(budget.ENCRYPTIONS_ENV, raising=False)
    for spec in (EXPLORER, COMPARE, ENCRYPTION):
        cfgs = [spec.base]
        if spec is COMPARE:
            o = spec.option_defaults()
            cfgs = [x.cfg for x in sweeps.sweep(spec.base, o["mode"], o["values"], o["base"])[0]]
        assert budget.over([budget.cost(c, _dataset(c.dataset, c.synthetic_size)) for c in cfgs]) is None, spec.name


def ckks_values(cost) -> int:
    data = _dataset("synthetic", "tiny")
    return data.n_items * EXPLORER.base.dim


def test_the_budget_is_the_servers_setting(monkeypatch):
    c = budget.cost(EXPLORER.base.replace(synthetic_size="tiny"), _dataset("synthetic", "tiny"))
    monkeypatch.setenv(budget.WORK_ENV, str(c.work / 2e6))  # half of this run, in million sample-steps
    msg = budget.over([c])
    assert msg and "2.0 times the budget" in msg and "LABCORE_APP_BUDGET" in msg
    monkeypatch.setenv(budget.WORK_ENV, str(c.work / 1e6))
    assert budget.over([c]) is None
    monkeypatch.setenv(budget.MEMORY_ENV, str(c.memory / 3 / 2**30))
    assert "3.0 times the budget" in budget.over([c])
    monkeypatch.setenv(budget.WORK_ENV, "off")
    assert budget.over([c]) is None
    monkeypatch.delenv(budget.WORK_ENV)
    monkeypatch.delenv(budget.MEMORY_ENV)
    ckks = budget.cost(EXPLORER.base.replace(synthetic_size="tiny", method="fedmf", encryption="ckks"),
                       _dataset("synthetic", "tiny"))
    # 2 real clients, 4096 slots, one round in every he_real_every
    assert ckks.encryptions == ckks.rounds * 2 * -(-ckks_values(ckks) // 4096) // EXPLORER.base.he_real_every
    monkeypatch.setenv(budget.ENCRYPTIONS_ENV, str(ckks.encryptions / 4))
    assert "4.0 times the budget" in budget.over([ckks]) and budget.over([c]) is None
    for bad in ("-1", "lots", "nan", "0"):
        monkeypatch.setenv(budget.WORK_ENV, bad)
        with pytest.raises(budget.BudgetSettingError, match="LABCORE_APP_BUDGET"):
            budget.limits()


def test_a_task_nobody_watches_any_more_is_cancelled_between_its_steps(monkeypatch):
    """The Encryption page's attack runs as a task of the hub: the session that asked for it goes away (its
    browser closed), and the task stops at its next round instead of training on."""
    connected = {"tab"}
    monkeypatch.setattr(jobs, "_session_alive", lambda s: s in connected)
    monkeypatch.setattr(jobs, "LAST_GONE_S", 0.0)
    steps = []
    release = threading.Event()

    def work(task):
        while not task.should_stop():
            steps.append(time.monotonic())
            release.wait(0.02)
            if len(steps) > 50_000:
                return "never stopped"
        raise jobs.Stopped

    hub = jobs.JobHub(training=1)
    task = hub.task("attack:test", work, "tab")
    assert hub.task("attack:test", work, "other") is task  # a second session shares it
    task.release("other")
    while len(steps) < 3:
        time.sleep(0.01)
    assert not task.done
    connected.clear()  # the last viewer's tab is closed
    task.wait(task.version, 30)
    t0 = time.monotonic()
    while not task.done and time.monotonic() - t0 < 30:
        task.wait(task.version, 0.1)
    assert task.done and task.stopped and task.result is None and task.error is None
    n = len(steps)
    time.sleep(0.2)
    assert len(steps) == n  # nothing runs after it stopped


def test_the_attack_stops_between_rounds_when_nobody_watches():
    from labcore.config import RunConfig
    from labcore.colr.curious_server import curious_server

    cfg = RunConfig(synthetic_size="tiny", dim=8, clients_per_round=10)
    calls = []
    assert curious_server(cfg, rounds=3, should_stop=lambda: calls.append(1) or len(calls) > 1) is None
    assert len(calls) == 2  # one round played, stopped before the second


def test_a_run_whose_last_viewer_left_is_cancelled(monkeypatch, tmp_path):
    from labcore.config import RunConfig

    connected = {"tab"}
    monkeypatch.setattr(jobs, "_session_alive", lambda s: s in connected)
    monkeypatch.setattr(jobs, "LAST_GONE_S", 0.0)
    hub = jobs.JobHub()
    cfg = RunConfig(synthetic_size="tiny", dim=8, rank=2, rounds=100_000, clients_per_round=40, eval_every=10**6,
                    rank_every=0, checkpoint_every=10**6)
    job = hub.follow(cfg, _data("synthetic", "tiny"), "tab", tmp_path)
    while job.round < 2:
        job.wait(job.version, 0.5)
    connected.clear()
    t0 = time.monotonic()
    while not job.done and time.monotonic() - t0 < 60:
        job.wait(job.version, 0.2)
    assert job.done and job.stopped and job.round < cfg.rounds


# The real-browser check of the crafted Explorer link is in tests/core/app/test_browser.py (it shares that file's server).

