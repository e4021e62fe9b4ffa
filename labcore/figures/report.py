"""The reproduction table of docs/reproduction.md, built from the stored results (results/<id>.csv/.json)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .registry import list_cards, results_dir, stored


def _fmt_s(s) -> str:
    if s is None or s != s:
        return "-"
    return f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"


def _cards(prefix: str):
    return [c for c in list_cards() if c.id.startswith(prefix)]


def card_rows(folder: Path | str | None = None, prefix: str = "") -> pd.DataFrame:
    """One row per checked quantity of every stored card: card, quantity, paper, ours, ok."""
    rows = []
    for card in _cards(prefix):
        res = stored(card.id, folder)
        if res is None:
            rows.append({"card": card.id, "quantity": "(no stored result)", "paper": "", "ours": "", "ok": None})
            continue
        cmp = card.compare(res.ours, res.paper)
        for _, r in cmp.iterrows():
            if r["ok"] is not None and r["ok"] == r["ok"]:
                rows.append({"card": card.id, "quantity": r["quantity"], "paper": r["paper"], "ours": r["ours"],
                             "ok": bool(r["ok"])})
    return pd.DataFrame(rows)


def markdown(folder: Path | str | None = None, prefix: str = "") -> str:
    """Markdown: per card, within tolerance or not and the time of its runs; then every checked quantity."""
    folder = Path(folder) if folder else results_dir()
    head = ["| card | within tolerance | runs | wall-clock of its runs | CPU time of its runs | stored |",
            "|---|---|---|---|---|---|"]
    for card in _cards(prefix):
        res = stored(card.id, folder)
        if res is None:
            head.append(f"| `{card.id}` | not run | - | - | - | - |")
            continue
        m = res.meta
        n = len(m.get("configs", []))
        untimed, no_cpu = m.get("runs_without_time", 0) or 0, m.get("runs_without_cpu_time", 0) or 0
        wall = "-" if untimed >= n else _fmt_s(m.get("standalone_runtime_s")) + (
            f" (+{untimed} not timed)" if untimed else "")
        cpu = "-" if no_cpu >= n else _fmt_s(m.get("standalone_cpu_s")) + (f" (+{no_cpu} not timed)" if no_cpu else "")
        if not n:
            wall, cpu = _fmt_s(m.get("runtime_s")), "-"
        head.append(f"| `{card.id}` | {'yes' if res.within_tolerance else '**no**'} | {n} | {wall} | {cpu} | "
                    f"{m.get('date', '-')[:10]} |")
    rows = card_rows(folder, prefix)
    body = ["| card | quantity | paper | ours | ok |", "|---|---|---|---|---|"]
    for _, r in rows.iterrows():
        ok = "" if pd.isna(r["ok"]) else ("yes" if r["ok"] else "**no**")
        body.append(f"| `{r['card']}` | {r['quantity']} | {r['paper']} | {r['ours']} | {ok} |")
    return "\n".join(head) + "\n\n" + "\n".join(body) + "\n"
