"""The command line's refusals, one test each: an empty --html, a Ray address that does not answer or comes without
--backend ray, a --report prefix that matches no card, an infinite option; and `labcore flower app` prints the TLS
caveat beside --insecure. All run in this process through `labcore.cli.main`."""
from __future__ import annotations

import contextlib
import io


def cli(argv: list[str]) -> tuple[int, str, str]:
    from labcore.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def test_an_empty_html_path_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for html in ("", " "):
        code, _, err = cli(["figure", "colr-fig3-ml1m", "--html", html])
        assert code == 2 and err.startswith("labcore: --html='") and "'none' for no plot" in err
    assert list(tmp_path.iterdir()) == []


def test_a_ray_address_that_does_not_answer_fails_at_once_naming_it():
    code, _, err = cli(["figure", "colr-fig3-ml1m", "--full", "--backend", "ray", "--address", "127.0.0.1:1"])
    assert code == 2 and "--address='127.0.0.1:1': no Ray cluster answers at 127.0.0.1:1 within 5 s" in err
    code, _, err = cli(["sweep", "--backend", "ray", "--address", "ray://127.0.0.1:1"])
    assert code == 2 and "no Ray cluster answers at 127.0.0.1:1" in err
    code, _, err = cli(["sweep", "--backend", "ray", "--address", "host:port"])
    assert code == 2 and "expected auto, host:port (1..65535) or ray://host:port" in err


def test_an_address_without_the_ray_backend_is_refused():
    for argv in (["figure", "colr-fig3-ml1m", "--address", "auto"], ["sweep", "--address", "auto"]):
        code, _, err = cli(argv)
        assert code == 2 and "--address='auto' is invalid without --backend ray" in err, err


def test_a_report_of_no_card_fails_and_says_how_to_list_them():
    code, out, err = cli(["figure", "--report", "zzz"])
    assert code == 2 and out == ""
    assert err == "labcore: --report 'zzz': no card id starts with 'zzz'; `labcore figure --list` lists the card ids\n"
    code, out, _ = cli(["figure", "--report", "colr-"])
    assert code == 0 and "| card | numbers within | claims hold | shown |" in out
    code, out, err = cli(["figure", "colr-", "--report", "--doc", "docs/reproduction.md"])
    assert code == 2 and out == "" and err == ("labcore: --doc='docs/reproduction.md' is invalid without --report all: "
                                               "the doc's block holds every card\n")


def test_an_infinite_option_is_refused_in_one_line():
    for option in ("--sec-per-sample", "--lr", "--weight-decay"):
        code, _, err = cli(["run", option, "inf"])
        field = option[2:].replace("-", "_")
        assert code == 2 and err == f"labcore: {field}=inf is invalid: expected a finite number\n"


def test_flower_app_prints_the_tls_caveat_with_insecure():
    code, out, _ = cli(["flower", "app"])
    assert code == 0 and "--insecure" in out
    assert "TLS:      --insecure sends every update in the clear: use it on a closed network only" in out
    assert "drop --insecure, pass certificates" in out
