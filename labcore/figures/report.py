"""The reproduction tables of docs/reproduction.md and docs/topics/<topic>.md, built from the stored results
(results/<id>.csv/.json).

`labcore figure --report all` prints them: per topic, the paper numbers within tolerance, the claims that hold
and the rows only shown; per card the same with the time of its runs; then every checked row with its kind.
`labcore figure --report <prefix>` prints the same for the cards whose id starts with the prefix (a topic's:
`colr-`). A doc holds one such output between two markers that name the report (`markers`), written by
`labcore figure --report <prefix or all> --doc <doc>`: docs/reproduction.md every card's, each
docs/topics/<topic>.md its topic's (`topic_doc`); a test fails when a doc and the stored results differ.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .registry import Tally, list_cards, results_dir, stored

DOCS = Path(__file__).resolve().parents[2] / "docs"  # the checkout's docs/


def markers(prefix: str = "") -> tuple[str, str]:
    """The lines around a doc's block of `labcore figure --report <prefix>` ('' or 'all': every card)."""
    which = prefix if prefix and prefix != "all" else "all"
    return (f"<!-- begin: labcore figure --report {which} (generated from results/; do not edit by hand) -->",
            f"<!-- end: labcore figure --report {which} -->")


DOC_BEGIN, DOC_END = markers()
_BEGIN = re.compile(r"<!-- begin: labcore figure --report (\S+) \(generated from results/; do not edit by hand\) -->")


def topic_doc(topic) -> Path:
    """The doc of a topic (a `labcore.topics.Topic`), whose block holds `--report <its card prefix>`."""
    return DOCS / "topics" / f"{topic.name}.md"


def doc_command(path: Path | str, prefix: str = "") -> str:
    """The command that writes the block of `--report <prefix>` into `path` (relative to the checkout if inside)."""
    path = Path(path).resolve()
    shown = path.relative_to(DOCS.parent) if path.is_relative_to(DOCS.parent) else path
    return f"labcore figure --report {prefix or 'all'} --doc {shown}"


def _fmt_s(s) -> str:
    if s is None or s != s:
        return "-"
    return f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"


def _cards(prefix: str):
    return [c for c in list_cards() if c.id.startswith(prefix)]


def _of(t: Tally) -> tuple[str, str, str]:
    return f"{t.numbers_within} / {t.numbers}", f"{t.claims_hold} / {t.claims}", str(t.shown)


def card_rows(folder: Path | str | None = None, prefix: str = "") -> pd.DataFrame:
    """One row per checked quantity of every stored card: card, quantity, kind, paper, ours, ok."""
    rows = []
    for card in _cards(prefix):
        res = stored(card.id, folder, figure=False)
        if res is None:
            rows.append({"card": card.id, "quantity": "(no stored result)", "kind": "", "paper": "", "ours": "",
                         "ok": None})
            continue
        for _, r in card.compare(res.ours, res.paper).iterrows():
            if r["kind"] != "shown":
                rows.append({"card": card.id, "quantity": r["quantity"], "kind": r["kind"], "paper": r["paper"],
                             "ours": r["ours"], "ok": bool(r["ok"])})
    return pd.DataFrame(rows)


def by_topic(folder: Path | str | None = None, prefix: str = "") -> pd.DataFrame:
    """Per topic: numbers within / checked, claims holding / checked, rows shown, cards without a stored result,
    and the CPU time of the stored cards' runs as each was trained: what regenerating the topic costs from an
    empty run cache on one core. A run two cards share counts once; runs stored without a timing are counted
    apart; an analytic card (no runs) counts the time it took."""
    from .. import topics

    rows: dict[str, dict] = {}
    for card in _cards(prefix):
        res = stored(card.id, folder, figure=False)
        r = rows.setdefault(topics.card_topic(card.id).name,
                            {"tally": Tally(), "missing": 0, "runs": {}, "cpu": 0.0, "untimed": 0})
        if res is None:
            r["missing"] += 1
            continue
        r["tally"] = r["tally"] + card.tally(res.ours, res.paper)
        m = res.meta
        n = len(m.get("configs", []))
        if m.get("run_cpu_s"):
            r["runs"].update(m["run_cpu_s"])
        elif n:  # stored before each run's time was kept: the card's sum, shared runs counted again
            cpu = m.get("standalone_cpu_s") or 0.0
            r["cpu"] += cpu
            r["untimed"] += min(m.get("runs_without_cpu_time", 0 if cpu else n) or 0, n)
        else:  # trains nothing: the time it took to measure
            r["cpu"] += m.get("runtime_s") or 0.0
    out = []
    for name, r in rows.items():
        cpu = r["cpu"] + sum(v for v in r["runs"].values() if v is not None)
        untimed = r["untimed"] + sum(v is None for v in r["runs"].values())
        t = r["tally"]
        out.append({"topic": name, "numbers within": _of(t)[0], "claims hold": _of(t)[1], "shown": t.shown,
                    "cards not run": r["missing"],
                    "CPU time of its runs": _fmt_s(cpu) + (f" (+{untimed} runs not timed)" if untimed else "")})
    return pd.DataFrame(out)


def _table(frame: pd.DataFrame) -> list[str]:
    cols = list(frame.columns)
    return (["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            + ["| " + " | ".join(str(v) for v in r) + " |" for r in frame.itertuples(index=False)])


def markdown(folder: Path | str | None = None, prefix: str = "") -> str:
    """Markdown: per topic and per card, numbers within, claims holding and rows shown (and the time of a card's
    runs); then every checked row."""
    folder = Path(folder) if folder else results_dir()
    topic_lines = _table(by_topic(folder, prefix))
    head = ["| card | numbers within | claims hold | shown | runs | wall-clock of its runs | CPU time of its runs "
            "| stored |", "|---|---|---|---|---|---|---|---|"]
    for card in _cards(prefix):
        res = stored(card.id, folder, figure=False)
        if res is None:
            head.append(f"| `{card.id}` | not run | - | - | - | - | - | - |")
            continue
        m = res.meta
        n = len(m.get("configs", []))
        untimed, no_cpu = m.get("runs_without_time", 0) or 0, m.get("runs_without_cpu_time", 0) or 0
        wall = "-" if untimed >= n else _fmt_s(m.get("standalone_runtime_s")) + (
            f" (+{untimed} not timed)" if untimed else "")
        cpu = "-" if no_cpu >= n else _fmt_s(m.get("standalone_cpu_s")) + (f" (+{no_cpu} not timed)" if no_cpu else "")
        if not n:
            wall, cpu = _fmt_s(m.get("runtime_s")), "-"
        numbers, claims, shown = _of(card.tally(res.ours, res.paper))
        head.append(f"| `{card.id}` | {numbers} | {claims} | {shown} | {n} | {wall} | {cpu} | "
                    f"{m.get('date', '-')[:10]} |")
    rows = card_rows(folder, prefix)
    body = ["| card | quantity | kind | paper | ours | ok |", "|---|---|---|---|---|---|"]
    for _, r in rows.iterrows():
        ok = "" if pd.isna(r["ok"]) else ("yes" if r["ok"] else "**no**")
        body.append(f"| `{r['card']}` | {r['quantity']} | {r['kind']} | {r['paper']} | {r['ours']} | {ok} |")
    return "\n".join(topic_lines) + "\n\n" + "\n".join(head) + "\n\n" + "\n".join(body) + "\n"


def doc_report(text: str) -> str | None:
    """Which report a doc's generated block holds: 'all', a card id prefix, or None (the doc has no block)."""
    found = _BEGIN.search(text)
    return found.group(1) if found else None


def doc_block(text: str, prefix: str = "") -> str:
    """The generated part of a doc (between the markers of `--report <prefix>`), as it stands."""
    begin, end = markers(prefix)
    if begin not in text or end not in text:
        raise ValueError(f"the doc has no generated block of --report {prefix or 'all'}: it needs the lines "
                         f"{begin!r} and {end!r}")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n") + "\n"


def write_doc(path: Path | str, folder: Path | str | None = None, prefix: str = "") -> None:
    """Replace the generated block of `path` with `markdown()` of the cards whose id starts with `prefix` ('' or
    'all': every card). A doc whose block holds another report is refused, and left as it was."""
    text = Path(path).read_text()
    which, held = prefix if prefix and prefix != "all" else "all", doc_report(text)
    if held is not None and held != which:
        holds = "every card" if held == "all" else f"the cards whose id starts with {held!r}"
        raise ValueError(f"--doc={str(path)!r} is invalid without --report {held}: the doc's block holds {holds}")
    doc_block(text, prefix)
    begin, end = markers(prefix)
    before, rest = text.split(begin, 1)
    after = rest.split(end, 1)[1]
    Path(path).write_text(f"{before}{begin}\n{markdown(folder, '' if which == 'all' else which)}{end}{after}")
