"""Compute the topic's full-size cards and store them in results/ (python -m labcore.sdp.reproduce [ids...]).

Equivalent to `labcore figure 'sdp-*' --full`; kept here so the topic can be reproduced on its own."""
from __future__ import annotations

import json
import sys
import time

from ..figures.registry import _CARDS, CardResult, results_dir
from . import cards  # noqa: F401  (registers the cards)


def reproduce(card_id: str) -> None:
    card = _CARDS[card_id]
    t0 = time.perf_counter()
    ours = card.compute("full", progress=True)
    runtime = time.perf_counter() - t0
    result = CardResult(card.id, ours, card.paper.copy(), None, runtime, card.check(ours), "full")
    command = f"python -m labcore.sdp.reproduce {card_id}"
    try:
        from ..figures import save

        save(result, command=command)
    except Exception:  # the shared writer needs every topic importable; write the same two files directly
        folder = results_dir()
        ours.to_csv(folder / f"{card.id}.csv", index=False, float_format="%.6g")
        meta = {"card": card.id, "title": card.title, "size": "full", "command": command,
                "runtime_s": round(runtime, 1), "within_tolerance": result.within_tolerance,
                "tolerance": card.tolerance_text, "notes": list(card.notes),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "configs": []}
        (folder / f"{card.id}.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{card_id}: {runtime:.0f} s, within tolerance: {result.within_tolerance}")
    print(card.compare(ours).to_string(index=False), flush=True)


if __name__ == "__main__":
    for cid in sys.argv[1:] or list(k for k in _CARDS if k.startswith("sdp-")):
        reproduce(cid)
