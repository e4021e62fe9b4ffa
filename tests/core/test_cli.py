"""The command line on the embedded default data: run, cache, errors."""
import re
import subprocess
import sys

from labcore.cli import main


def test_run_prints_metrics_writes_the_table_and_is_cached(tmp_path, capsys):
    args = ["run", "--synthetic-size", "tiny", "--rounds", "6", "--clients-per-round", "10", "--dim", "8",
            "--rank", "2", "--eval-every", "3", "--batch-size", "32", "--cache-dir", str(tmp_path), "--quiet",
            "--plot", str(tmp_path / "hr.html")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "CoLR@2 on synthetic: 6 rounds" in out and "HR@10" in out and "(cached)" not in out
    # the ledger's byte counts in readable units, the exact count beside them
    assert re.search(r"bytes up [\d.]+ (KB|MB|GB) \([\d,]+\)   bytes down [\d.]+ (KB|MB|GB) \([\d,]+\)", out), out
    tables = list(tmp_path.glob("*/table.csv"))
    assert len(tables) == 1 and len(tables[0].read_text().splitlines()) == 7
    assert (tmp_path / "hr.html").stat().st_size > 1000
    assert main(args) == 0
    assert "(cached)" in capsys.readouterr().out


def test_bad_values_exit_2_with_a_message(capsys):
    assert main(["run", "--rank", "128", "--quiet"]) == 2
    assert "rank=128 is invalid" in capsys.readouterr().err
    assert main(["run", "--method", "lora", "--quiet"]) == 2
    assert "fedmf, colr, scolr, svd, topk" in capsys.readouterr().err


def test_console_script_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "labcore.cli", "datasets"], capture_output=True, text=True, check=True)
    assert "synthetic" in out.stdout


def test_the_topics_older_entry_points_are_labcore_figure(monkeypatch):
    """`python -m labcore.gist.reproduce ...` and the others call `labcore figure` for each card."""
    from labcore import cli

    calls = []
    monkeypatch.setattr(cli, "main", lambda argv: calls.append(argv) or 0)
    assert cli.reproduce_cards(["gist-fig4", "--jobs", "2"], "gist-") == 0
    assert calls == [["figure", "gist-fig4", "--full", "--save", "--jobs", "2", "--html", "none"]]
    calls.clear()
    cli.reproduce_cards(["--size", "smoke"], "sdp-")
    assert calls and all(c[1].startswith("sdp-") and "--full" not in c for c in calls)


def test_labcore_figure_jobs_hands_a_topics_own_configs_to_its_prefetch(monkeypatch):
    from labcore import cli, figures, topics

    got = []
    gist = topics.get("gist")
    monkeypatch.setattr(type(gist), "function", lambda self, ref: (lambda by_card, jobs: got.append((self.name, sorted(by_card), jobs))))
    cli._train_cards_in_parallel(figures, ["gist-fig4", "gist-bytes", "completion-fig1-irls"], 2)
    assert sorted(got) == [("completion", ["completion-fig1-irls"], 2), ("gist", ["gist-bytes", "gist-fig4"], 2)]
