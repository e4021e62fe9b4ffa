"""Figure cards: registry, smoke reproductions of every card, Table 2's exact column, stored results."""
import json
import math

import pandas as pd
import plotly.graph_objects as go
import pytest

from labcore import figures, topics
from labcore.cli import main
from labcore.config import RunConfig
from labcore.colr import cards, paper, runs
from labcore.figures import runs as card_runs

EXPECTED_IDS = {"colr-fig2-ml1m", "colr-fig2-pinterest", "colr-fig3-ml1m", "colr-fig3-pinterest", "colr-fig4-ml1m",
                "colr-fig4-pinterest",
                "colr-fig5-ml1m", "colr-table2-ml1m", "colr-table3-ml1m", "colr-table4-ml1m",
                "colr-schedule-ml1m"}
ALL_IDS = sorted(EXPECTED_IDS)


@pytest.fixture
def results(tmp_path, monkeypatch):
    folder = tmp_path / "results"
    monkeypatch.setenv(figures.registry.RESULTS_ENV, str(folder))
    return folder


def test_registry_lists_every_card_with_its_metadata():
    listed = [c for c in figures.list_cards() if c.id.startswith("colr-")]  # other papers' cards may be registered
    assert {c.id for c in listed} == EXPECTED_IDS
    assert len(listed) == len(EXPECTED_IDS)
    assert len(set(figures.card_ids())) == len(figures.card_ids())
    for c in listed:
        assert c.kind in ("figure", "table")
        assert c.caption.startswith(("Figure", "Table")) and c.title and c.expected and c.tolerance_text
        assert isinstance(c.paper, pd.DataFrame) and c.columns
        assert figures.get(c.id) is c
        for size in figures.SIZES:
            assert all(isinstance(cfg, RunConfig) for cfg in c.configs(size))


def test_unknown_card_lists_the_valid_ids(capsys):
    with pytest.raises(KeyError) as e:
        figures.get("colr-fig9")
    msg = str(e.value)
    assert "unknown figure card 'colr-fig9'" in msg and all(i in msg for i in EXPECTED_IDS)
    with pytest.raises(ValueError, match="size="):
        figures.reproduce("colr-fig3-ml1m", size="huge")
    assert main(["figure", "colr-fig9"]) == 2
    assert "valid ids: colr-fig2-ml1m" in capsys.readouterr().err


# Threads of one fresh process look up cards of topics not loaded yet, all at once, as the app's sessions do when a
# class opens the same link; the topic marked loaded before its cards were registered made some of them fail.
CONCURRENT_LOOKUPS = """
import sys, threading
from labcore.figures import registry
ids = sys.argv[1:]
start, failed = threading.Barrier(len(ids)), []
def look(cid):
    start.wait()
    try:
        registry.get(cid)
    except Exception as e:
        failed.append(f"{cid}: {type(e).__name__}")
threads = [threading.Thread(target=look, args=(c,)) for c in ids]
[t.start() for t in threads]
[t.join() for t in threads]
print("; ".join(failed))
"""


def test_sessions_looking_up_cards_at_once_all_find_them():
    import subprocess
    import sys

    ids = ["sttfedrec-fig4-ml1m", "sttfedrec-fig5-ml1m", "sttfedrec-table3-ml1m", "fair-fig4", "fair-table2-ml1m"]
    out = subprocess.run([sys.executable, "-c", CONCURRENT_LOOKUPS, *ids], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", out.stdout


def test_smoke_configs_are_synthetic_and_full_configs_are_the_papers():
    for c in map(figures.get, ALL_IDS):
        assert all(cfg.dataset == "synthetic" and cfg.rounds <= 10 for cfg in c.configs("smoke"))
        for cfg in c.configs("full"):
            assert cfg.dataset == c.dataset and cfg.lr == runs.LR
            if cfg.dataset == "ml-1m":
                assert (cfg.clients_per_round, cfg.local_epochs, cfg.batch_size, cfg.rounds) == (60, 2, 256, 1000)
            else:
                assert cfg.clients_per_round == 375 and cfg.dim <= 16
    fig3 = figures.get("colr-fig3-ml1m").configs("full")
    assert sorted(c.dim for c in fig3 if c.method == "fedmf" and c.seed == 0) == [1, 2, 4, 8, 16, 32, 64]
    assert sorted(c.rank for c in fig3 if c.method == "colr" and c.seed == 0) == [1, 2, 4, 8, 16, 32]
    assert {c.dim for c in fig3 if c.method == "colr"} == {64}
    # the checked ratio's two runs, again with seeds 1 and 2 for its spread
    assert sorted((c.seed, c.method, c.dim, c.rank) for c in fig3 if c.seed) == [
        (1, "colr", 64, 4), (1, "fedmf", 64, 4), (2, "colr", 64, 4), (2, "fedmf", 64, 4)]
    pin = figures.get("colr-fig3-pinterest").configs("full")
    assert sorted(c.dim for c in pin if c.method == "fedmf" and c.seed == 0) == [1, 2, 4, 8, 16]
    assert sorted(c.rank for c in pin if c.method == "colr" and c.seed == 0) == [1, 2, 4, 8]
    assert sorted((c.seed, c.method) for c in pin if c.seed) == [(1, "colr"), (1, "fedmf"), (2, "colr"), (2, "fedmf")]


def test_cards_share_runs_through_the_cache():
    keys = lambda cid: {c.key() for c in figures.get(cid).configs("full")}  # noqa: E731
    colr = {c.key() for c in runs.colr_grid("full")}
    assert colr <= keys("colr-fig3-ml1m") and colr <= keys("colr-fig4-ml1m")
    assert colr <= keys("colr-table2-ml1m")
    assert {c.key() for c in runs.colr_grid("full", ranks=runs.FIG5_RANKS)} <= keys("colr-fig5-ml1m") & colr
    assert keys("colr-fig2-ml1m") <= keys("colr-fig3-ml1m")
    assert keys("colr-fig2-pinterest") <= keys("colr-fig3-pinterest")
    assert {c.key() for c in runs.svd_grid("full")} <= keys("colr-table2-ml1m") & keys("colr-fig4-ml1m")


@pytest.mark.parametrize("card_id", ALL_IDS)
def test_every_card_runs_at_smoke_size_with_the_columns_its_plot_needs(card_id):
    card = figures.get(card_id)
    res = figures.reproduce(card_id, size="smoke")
    assert res.card_id == card_id and res.size == "smoke" and res.runtime_s >= 0
    assert len(res.ours) > 0 and set(card.columns) <= set(res.ours.columns)
    assert isinstance(res.figure, go.Figure) and len(res.figure.data) > 0
    assert res.within_tolerance is None  # a smoke run gives no verdict on the paper
    cmp = card.compare(res.ours)
    assert tuple(cmp.columns) == figures.COMPARE_COLUMNS and len(cmp) > 0
    assert res.paper.equals(card.paper)


# the MiniLM cards train the real language model even at smoke size (minutes on 2 cores): marker `minilm`
@pytest.mark.parametrize("card_id", [pytest.param(c, marks=pytest.mark.minilm) if c.startswith("fellrec-minilm")
                                     else c for c in figures.card_ids()])
def test_no_smoke_result_of_any_topic_gives_a_paper_verdict(card_id):
    """Every card of every topic (the one place each runs at smoke size): it computes the columns its plot needs,
    is titled as a smoke run, and its comparison has no 'ok' in it."""
    card = figures.get(card_id)
    res = figures.reproduce(card_id, size="smoke")
    assert len(res.ours) and set(card.columns) <= set(res.ours.columns)
    assert card.describe().startswith(card_id)
    assert res.within_tolerance is None and "smoke" in res.verdict and "within tolerance" not in res.verdict
    if isinstance(res.figure, go.Figure):
        assert "SMOKE RUN" in (res.figure.layout.title.text or "")
    cmp = res.comparison()
    assert cmp["ok"].isna().all() and (cmp["note"].str.contains("smoke")).all()
    with pytest.raises(ValueError, match="only full-size reproductions are stored"):
        figures.save(res, command="-", folder="/nonexistent")


def test_all_smoke_sizes_run_from_an_empty_cache():
    """Every card's smoke size, from an empty run cache (its CPU time is printed by --durations, not asserted)."""
    for cid in ALL_IDS:
        assert len(figures.reproduce(cid, size="smoke").ours)


def test_table2_paper_accounting_equals_the_papers_communication_column_exactly():
    ours = cards.table2_paper_accounting()  # ML-1M: 3706 items, d=64, 1000 rounds, MB = 2**20
    m = ours.merge(paper.TABLE2, on="method")
    assert len(m) == len(paper.TABLE2) == 18
    assert (m["comm_min_paper_accounting"].round(2) == m["comm_min"]).all(), m
    mf = m.set_index("method").loc["MF-64"]
    assert mf["values_per_round"] == 3706 * 64
    assert math.isclose(mf["comm_min_paper_accounting"], 1000 * (3706 * 64 * 4 / 2**20) * (1 / 0.75 + 1 / 0.25) / 60)
    # with MB = 10**6 the first row would not match: the paper's MB is 2**20 bytes
    assert round(1000 * (3706 * 64 * 4 / 1e6) * (1 / 0.75 + 1 / 0.25) / 60, 2) != 80.43


def test_table2_card_checks_the_exact_column():
    card = figures.get("colr-table2-ml1m")
    acc = cards.table2_paper_accounting()
    ours = acc.assign(comm_min_measured=acc["comm_min_paper_accounting"] * 1.01, comp_min=169.0, total_min=250.0)
    assert card.check(ours)
    broken = ours.copy()
    broken.loc[0, "comm_min_paper_accounting"] += 0.02
    assert not card.check(broken)


def test_paper_values_follow_the_papers_accounting():
    n = 3706
    assert runs.paper_values(runs.ml1m("full", method="fedmf"), n) == n * 64
    assert runs.paper_values(runs.ml1m("full", method="colr", rank=4), n) == n * 4
    assert runs.paper_values(runs.ml1m("full", method="svd", rank=4), n) == n * 4
    assert runs.paper_values(runs.ml1m("full", method="topk", topk_ratio=4 / 64), n) == 2 * n * 4
    assert runs.table2_label(runs.ml1m("full", method="topk", topk_ratio=4 / 64)) == "TopK@4"


def test_table4_check_is_five_hr_points():
    card = figures.get("colr-table4-ml1m")
    ours = paper.TABLE4.copy()
    assert card.check(ours)
    ours.loc[2, "hr"] += 0.049
    assert card.check(ours)
    ours.loc[2, "hr"] += 0.002
    assert not card.check(ours)


def test_table4_check_with_seeds_is_two_standard_deviations_of_the_difference():
    """sd 0.5 points over 3 seeds (ddof 0): 2 x 0.5 sqrt(3/2) sqrt(1 + 1/3) = 1.41 points each way."""
    card = figures.get("colr-table4-ml1m")
    ours = paper.TABLE4.copy().assign(hr_std=0.005, ndcg_std=0.005, seeds=3)
    assert card.check(ours)
    ours.loc[2, "hr"] += 0.0140
    assert card.check(ours)
    ours.loc[2, "hr"] += 0.0003
    assert not card.check(ours)


def test_save_and_stored_round_trip(results):
    assert figures.stored("colr-table4-ml1m") is None
    res = figures.reproduce("colr-table4-ml1m", size="smoke")
    res.size = "full"  # stand-in for a full reproduction: the file format is the same
    res.within_tolerance = figures.get("colr-table4-ml1m").check(res.ours)
    path = figures.save(res, command="labcore figure colr-table4-ml1m --full --save")
    assert path == results / "colr-table4-ml1m.csv"
    meta = json.loads((results / "colr-table4-ml1m.json").read_text())
    assert meta["command"].startswith("labcore figure") and meta["configs"] and "date" in meta
    back = figures.stored("colr-table4-ml1m")
    assert back is not None and back.size == "full" and isinstance(back.figure, go.Figure)
    pd.testing.assert_frame_equal(back.ours[["global_rank", "local_rank"]], res.ours[["global_rank", "local_rank"]])
    assert back.within_tolerance == res.within_tolerance


@pytest.mark.parametrize("card_id", ALL_IDS)
def test_committed_results_load_if_present(card_id, monkeypatch):
    monkeypatch.delenv(figures.registry.RESULTS_ENV, raising=False)
    folder = figures.results_dir()
    if not (folder / f"{card_id}.csv").exists():
        pytest.skip(f"no committed result for {card_id}")
    res = figures.stored(card_id)
    card = figures.get(card_id)
    assert res.size == "full" and set(card.columns) <= set(res.ours.columns)
    assert isinstance(res.figure, go.Figure)
    meta = json.loads((folder / f"{card_id}.json").read_text())
    assert meta["command"].startswith("labcore figure") and meta["size"] == "full"
    if card_id == "colr-table2-ml1m":
        assert res.within_tolerance  # the communication column is exact


NOT_STORED = ("dp-",)  # cards with no committed full-size result (their topic's doc says why)
SHOWN_ONLY = {"fellrec-fig7-alpha-beta", "fellrec-minilm-fig7"}  # the paper gives a figure only: every row is shown
NO_NUMBERS = ("sdp-",)  # the report has no experiments: no row is a number


@pytest.mark.parametrize("card_id", figures.card_ids())
def test_every_committed_comparison_states_its_kinds_in_one_type_a_column(card_id, monkeypatch):
    """Every card's stored comparison: each row's kind stated by the card itself (not derived by the registry),
    shown exactly where unchecked, at least one row checked; and it converts to an Arrow table as the app's table
    widget does it, strictly: a column mixing text ("0.55 < 1.76") and numbers made Streamlit print a traceback
    on each view of the page."""
    import pyarrow as pa

    monkeypatch.delenv(figures.registry.RESULTS_ENV, raising=False)
    res = figures.stored(card_id)  # its plot drawn too, as the figures page draws it
    if res is None:
        assert card_id.startswith(NOT_STORED), f"no committed result for {card_id}"
        pytest.skip(f"no committed result for {card_id}")
    assert res.figure is None or isinstance(res.figure, go.Figure)
    card = figures.get(card_id)
    own = card.compare_fn(res.ours, res.paper)
    assert "kind" in own.columns and own["kind"].notna().all()  # stated by the card, not filled in by the registry
    cmp = res.comparison()
    pa.Table.from_pandas(cmp, preserve_index=False)
    assert len(cmp) and cmp["quantity"].notna().all()
    assert set(cmp["kind"]) <= set(figures.ROW_KINDS)
    assert all((k == "shown") == (ok is None or ok != ok) for k, ok in zip(cmp["kind"], cmp["ok"]))
    assert (cmp["kind"] != "shown").any() or card_id in SHOWN_ONLY, f"{card_id} checks nothing"
    if card_id.startswith(NO_NUMBERS):
        assert "number" not in set(cmp["kind"])


@pytest.mark.parametrize("card_id", figures.card_ids())
def test_every_stored_result_names_a_command_that_regenerates_it(card_id, monkeypatch):
    """The command in results/<id>.json runs as written, and it is the one way to reproduce a card: `labcore figure`
    with this card (or a pattern it matches) and options the CLI has."""
    import fnmatch
    import shlex

    monkeypatch.delenv(figures.registry.RESULTS_ENV, raising=False)
    meta_path = figures.results_dir() / f"{card_id}.json"
    if not meta_path.exists():
        pytest.skip(f"no committed result for {card_id}")
    words = shlex.split(json.loads(meta_path.read_text())["command"])
    assert words[:2] == ["labcore", "figure"] and "..." not in words, words
    assert fnmatch.fnmatch(card_id, words[2]), words
    parsed = []  # the CLI parses every option of the command (an unknown one exits 2), and runs nothing here
    monkeypatch.setattr("labcore.cli.cmd_figure", lambda ns: parsed.append(ns) or 0)
    assert main(words[1:]) == 0 and parsed[0].card == words[2:3]


def test_a_headline_counts_numbers_claims_and_shown_rows_apart():
    table = pd.DataFrame({"kind": ["number", "number", "claim", "claim", "claim", "shown"],
                          "ok": [True, False, True, True, False, None]})
    tally = figures.Tally.of(table)
    assert tally.counts() == (1, 2, 2, 3, 1)
    assert tally.headline == "numbers: 1 of 2 within; claims: 2 of 3 hold; shown: 1"
    assert (tally + tally).counts() == (2, 4, 4, 6, 2)


def test_a_numbers_tolerance_is_two_standard_deviations_of_the_difference_from_our_seeds():
    from labcore.figures.registry import seed_tolerance
    # std 0.5 over 3 seeds (ddof 0) is a sample std of 0.5 sqrt(3/2); the paper's one run spreads as ours
    assert seed_tolerance(0.5, 3, 1, stated=5.0) == pytest.approx(2 * 0.5 * 1.5 ** 0.5 * (1 + 1 / 3) ** 0.5)
    assert seed_tolerance(0.5, 1, 1, stated=5.0) == 5.0  # no spread: the card's stated figure
    assert seed_tolerance(float("nan"), 3, 1, stated=5.0) == 5.0


def test_a_row_whose_kind_contradicts_its_check_is_the_cards_error():
    kind = figures.registry._row_kind
    assert kind("c", float("nan"), None, 0.5) == "shown"  # a card that states no kind: derived from the row
    assert kind("c", float("nan"), True, 0.5) == "number" and kind("c", float("nan"), False, "all") == "claim"
    with pytest.raises(ValueError, match="card c: a row of kind 'shown' has ok=True"):
        kind("c", "shown", True, 0.5)
    with pytest.raises(ValueError, match="card c: a row of kind 'claim' has ok=None"):
        kind("c", "claim", None, "all")
    with pytest.raises(ValueError, match="kind='verdict' is invalid: allowed values are number, claim, shown"):
        kind("c", "verdict", True, 1.0)


def test_the_reproduction_doc_holds_the_tables_the_stored_results_give(monkeypatch, tmp_path):
    """docs/reproduction.md's generated block is `labcore figure --report all`'s output; a number edited by hand
    in the doc (or a result regenerated without regenerating the doc) fails here."""
    from pathlib import Path

    from labcore.figures import report

    monkeypatch.delenv(figures.registry.RESULTS_ENV, raising=False)
    doc = Path(__file__).resolve().parents[2] / "docs" / "reproduction.md"
    generated = report.markdown()
    assert report.doc_block(doc.read_text()) == generated, (
        "docs/reproduction.md is stale: labcore figure --report all --doc docs/reproduction.md")
    copy = tmp_path / "reproduction.md"  # the command writes the block, and only the block
    copy.write_text("intro\n" + report.DOC_BEGIN + "\nold\n" + report.DOC_END + "\nrest\n")
    assert main(["figure", "--report", "all", "--doc", str(copy)]) == 0
    text = copy.read_text()
    assert report.doc_block(text) == generated and text.startswith("intro\n") and text.endswith("rest\n")


@pytest.mark.parametrize("topic", [t.name for t in topics.all_topics()
                                   if any(cid.startswith(t.card_prefix) for cid in figures.card_ids())])
def test_every_topic_doc_holds_the_tables_of_its_stored_results(topic, monkeypatch):
    """docs/topics/<topic>.md's generated block is `labcore figure --report <its card prefix>`'s output."""
    from labcore.figures import report

    monkeypatch.delenv(figures.registry.RESULTS_ENV, raising=False)
    t = topics.get(topic)
    doc = report.topic_doc(t)
    command = report.doc_command(doc, t.card_prefix)
    assert doc.exists(), f"{doc} is missing: write it with the lines report.markers({t.card_prefix!r}), then {command}"
    assert report.doc_block(doc.read_text(), t.card_prefix) == report.markdown(prefix=t.card_prefix), (
        f"{doc.relative_to(doc.parents[2])} is stale: {command}")


def test_a_doc_takes_the_tables_of_the_report_its_block_names(tmp_path, capsys):
    """A topic's block is written by its prefix, and only the block; a doc whose block names another report is
    refused and left as it was."""
    from labcore.figures import report

    begin, end = report.markers("colr-")
    doc = tmp_path / "colr.md"
    doc.write_text(f"intro\n{begin}\nold\n{end}\nrest\n")
    assert main(["figure", "--report", "colr-", "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert report.doc_block(text, "colr-") == report.markdown(prefix="colr-")
    assert text.startswith(f"intro\n{begin}\n") and text.endswith(f"{end}\nrest\n")
    capsys.readouterr()
    for argv in (["figure", "--report", "all", "--doc", str(doc)], ["figure", "--report", "fair-", "--doc", str(doc)]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == (f"labcore: --doc={str(doc)!r} is invalid without --report colr-: the doc's block "
                                     "holds the cards whose id starts with 'colr-'\n")
    assert doc.read_text() == text


def test_a_comparison_column_mixing_text_and_numbers_becomes_text_as_printed():
    mixed = pd.DataFrame({"quantity": ["a", "b", "c"], "paper": ["4/5", 0.25, None], "ours": [1.5, 2, float("nan")],
                          "ok": [True, None, False], "note": ["", "", ""]})
    out = figures.registry._one_type_a_column(mixed.copy())
    assert list(out["paper"][:2]) == ["4/5", "0.25"] and pd.isna(out["paper"][2])
    assert out["ours"].tolist()[:2] == [1.5, 2]  # numbers alone stay numbers
    assert list(out["ok"]) == [True, None, False]


def test_cli_lists_runs_a_smoke_card_and_refuses_to_save_smoke(tmp_path, capsys, results):
    assert main(["figure", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(i in out for i in EXPECTED_IDS)
    html = tmp_path / "t4.html"
    assert main(["figure", "colr-table4-ml1m", "--quiet", "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "SCoLR r_g=32" in out and "64.59" in out and "[smoke]" in out
    assert html.stat().st_size > 1000
    assert main(["figure", "colr-table4-ml1m", "--save", "--html", "none"]) == 2
    assert "--full" in capsys.readouterr().err
    assert main(["figure", "colr-table4-ml1m", "--stored", "--html", "none"]) == 0
    assert "no stored result" in capsys.readouterr().out
    assert main(["figure", "colr-table4*", "--quiet", "--html", "none"]) == 0  # a pattern selects cards
    assert "colr-table4-ml1m [smoke]" in capsys.readouterr().out
    assert main(["figure", "nothing-*", "--html", "none"]) == 2
    assert "no figure card matches" in capsys.readouterr().err


def test_cli_takes_several_cards_and_patterns_each_card_once(capsys, results):
    assert main(["figure", "colr-table4-ml1m", "colr-table*", "colr-fig2-ml1m", "--stored", "--html", "none"]) == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines() if "no stored result" in line] == [
        "colr-table4-ml1m", "colr-table2-ml1m", "colr-table3-ml1m", "colr-fig2-ml1m"]
    assert main(["figure", "colr-", "fair-", "--report"]) == 2
    assert "--report takes one card id prefix" in capsys.readouterr().err


def test_a_card_stores_the_meta_and_side_tables_its_compute_returns(results):
    """A topic whose runs are not the engine's times them itself; a side table a page reads is stored beside."""
    card = figures.get("colr-table4-ml1m")
    side = pd.DataFrame({"part": ["a", "b"], "ms": [1.5, 2.0]})

    def compute(size, progress):
        return figures.Computed(card.compute(size), {"standalone_runtime_s": 12.5, "grid": "own"},
                                {"colr-table4-parts": side})
    import dataclasses

    own = dataclasses.replace(card, compute_fn=compute)
    figures.registry._CARDS[card.id] = own
    try:
        res = figures.reproduce(card.id, size="smoke")
        assert res.meta["grid"] == "own" and list(res.tables) == ["colr-table4-parts"]
        res.size = "full"
        figures.save(res, command="labcore figure colr-table4-ml1m --full --save")
    finally:
        figures.registry._CARDS[card.id] = card
    meta = json.loads((results / "colr-table4-ml1m.json").read_text())
    assert meta["standalone_runtime_s"] == 12.5 and meta["grid"] == "own"
    pd.testing.assert_frame_equal(pd.read_csv(results / "colr-table4-parts.csv"), side)
    assert json.loads((results / "colr-table4-parts.json").read_text())["card"] == "colr-table4-ml1m"


@pytest.mark.slow
@pytest.mark.parametrize("card_id", ALL_IDS)
def test_full_reproduction_matches_the_stored_result(card_id):
    """The real reproduction (minutes to an hour, real data in $LABCORE_DATA): same numbers as results/."""
    from conftest import shared_data

    if shared_data() is None:
        pytest.skip("LABCORE_DATA is not set")
    res = figures.reproduce(card_id, size="full")
    stored = figures.stored(card_id)
    if card_id == "colr-table2-ml1m":
        assert res.within_tolerance
    if stored is not None and card_id != "colr-table3-ml1m":  # Table 3 times are this machine's
        for col in ("hr", "ndcg", "n90_mean", "comm_min_paper_accounting"):
            if col in res.ours:
                assert res.ours[col].to_numpy() == pytest.approx(stored.ours[col].to_numpy(), abs=1e-4)


def test_parallel_training_gives_the_serial_numbers(monkeypatch, tmp_path):
    """`labcore figure ... --jobs 2` trains in worker processes; the cached results equal a serial run's."""
    from labcore.fed.engine import run

    cfgs = [RunConfig(dataset="synthetic", synthetic_size="tiny", method=m, rounds=4, eval_every=2, dim=8, rank=2,
                      clients_per_round=10)
            for m in ("colr", "fedmf")]
    assert card_runs.train_parallel(cfgs, jobs=2, progress=False) == 2
    assert card_runs.train_parallel(cfgs, jobs=2, progress=False) == 0  # all cached now
    for cfg in cfgs:
        parallel = run(cfg, progress=False).table
        serial = run(cfg, progress=False, cache_dir=tmp_path / "serial").table
        pd.testing.assert_frame_equal(parallel.drop(columns=["sec_local"]), serial.drop(columns=["sec_local"]))
    with pytest.raises(SystemExit):
        main(["figure", "colr-fig3-ml1m", "--jobs", "0"])


def test_committed_results_configs_rebuild_to_their_cache_keys():
    """Every config a committed result lists parses back (URL/JSON form) to the same cache key, for every topic
    (each topic names the function that builds its config: `Topic.config`)."""
    from labcore import topics

    checked = 0
    for path in sorted(figures.results_dir().glob("*.json")):
        topic = topics.card_topic(path.stem)
        assert topic is not None, f"{path.name}: no topic's card prefix matches"
        for c in json.loads(path.read_text()).get("configs", []):
            if isinstance(c, dict) and c.get("key"):
                make = topic.config_from_dict()
                assert make is not None, f"{path.name} lists configs with keys, but topic {topic.name} names no config"
                fields_only = {k: v for k, v in c.items() if k not in ("key", "label", "train_seconds", "train_cpu_seconds")}
                assert make(fields_only).key() == c["key"], path.name
                checked += 1
    assert checked > 100


def test_every_stored_tables_keys_are_the_cache_keys_of_its_cards_configs():
    """A stored table's `key` column names the runs it was made from: each must be a config the card runs now, so
    that a store version change that relabels the runs cannot leave a table pointing at keys that no longer exist."""
    checked = 0
    for card in figures.list_cards():
        path = figures.results_dir() / f"{card.id}.csv"
        if not path.exists():
            continue
        table = pd.read_csv(path)
        if "key" not in table.columns:
            continue
        keys = {c.key() for c in card.configs("full") if hasattr(c, "key")}
        assert set(table["key"].dropna().astype(str)) <= keys, card.id
        checked += 1
    assert checked >= 10


def test_no_stored_result_keeps_a_copy_of_its_cards_notes():
    """The notes are the card's text; a copy in results/ went stale whenever a note was corrected."""
    copies = [p.name for p in figures.results_dir().glob("*.json") if "notes" in json.loads(p.read_text())]
    assert not copies, copies


def test_every_stored_row_that_misses_says_why():
    """A student reading a card sees the reason beside each row marked False, not a bare 'no'."""
    bare = []
    for card in figures.list_cards():
        result = figures.stored(card.id, figure=False)
        if result is None:
            continue
        rows = result.comparison()
        if "ok" not in rows:
            continue
        missed = rows[rows["ok"].map(lambda ok: ok is False or (ok is not None and ok == False))]  # noqa: E712
        notes = missed.get("note", pd.Series("", index=missed.index)).fillna("").astype(str).str.strip()
        bare += [(card.id, q) for q, n in zip(missed["quantity"], notes) if not n]
    assert not bare, bare


def test_the_report_sums_each_topics_cpu_time_once_a_run_and_counts_untimed_runs_apart(results):
    from labcore.figures.report import by_topic

    res = figures.reproduce("colr-table4-ml1m", size="smoke")
    res.size = "full"
    figures.save(res, command="labcore figure colr-table4-ml1m --full --save")
    path = results / "colr-table4-ml1m.json"
    meta = json.loads(path.read_text())
    path.write_text(json.dumps({**meta, "run_cpu_s": {"a": 60.0, "b": 60.0, "c": None}}))
    row = by_topic(results, "colr-").set_index("topic").loc["colr"]
    assert row["CPU time of its runs"] == "2.0 min (+1 runs not timed)" and row["cards not run"] == 10
    del meta["run_cpu_s"]  # stored before each run's time was kept: the card's own sum
    path.write_text(json.dumps({**meta, "standalone_cpu_s": 30.0, "runs_without_cpu_time": 2}))
    row = by_topic(results, "colr-").set_index("topic").loc["colr"]
    assert row["CPU time of its runs"] == "30 s (+2 runs not timed)"
