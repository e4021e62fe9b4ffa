"""Full-size card results on disk: `results/<card id>.csv` (our numbers) and `.json` (configs, command, time).

Same files and fields as `labcore.figures.save` / `labcore.figures.stored`, written and read with this
topic's own card objects, so storing or showing a GIST card does not depend on other topics' cards.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import time

import pandas as pd

from ..figures.registry import CardResult, results_dir


def _card(card_id: str):
    from .cards import CARDS

    if card_id not in CARDS:
        raise KeyError(f"card_id={card_id!r} is invalid: GIST cards are {', '.join(CARDS)}")
    return CARDS[card_id]


def reproduce(card_id: str, size: str = "smoke", progress: bool = False) -> CardResult:
    card = _card(card_id)
    t0 = time.perf_counter()
    ours = card.compute(size, progress)
    runtime = time.perf_counter() - t0
    return CardResult(card.id, ours, card.paper.copy(), card.plot(ours), runtime, card.check(ours), size,
                      {"configs": [c.to_query() for c in card.configs(size)]})


def save(result: CardResult, command: str, folder=None) -> str:
    card = _card(result.card_id)
    folder = results_dir() if folder is None else folder
    folder.mkdir(parents=True, exist_ok=True)
    result.ours.to_csv(folder / f"{card.id}.csv", index=False, float_format="%.6g")
    meta = {"card": card.id, "title": card.title, "size": result.size, "command": command,
            "runtime_s": round(float(result.runtime_s), 1), "within_tolerance": bool(result.within_tolerance),
            "tolerance": card.tolerance_text,
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared with other work while measured)",
            "notes": list(card.notes),
            "configs": [{"key": c.key(), **c.to_query()} for c in card.configs(result.size)]}
    (folder / f"{card.id}.json").write_text(json.dumps(meta, indent=1, default=list) + "\n")
    return str(folder / f"{card.id}.csv")


def stored(card_id: str, folder=None) -> CardResult | None:
    card = _card(card_id)
    folder = results_dir() if folder is None else folder
    csv, meta_path = folder / f"{card.id}.csv", folder / f"{card.id}.json"
    if not csv.exists():
        return None
    ours = pd.read_csv(csv)
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    return CardResult(card.id, ours, card.paper.copy(), card.plot(ours), float(meta.get("runtime_s", "nan")),
                      card.check(ours), meta.get("size", "full"), meta)
