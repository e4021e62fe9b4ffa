"""Compute the topic's full-size cards and store them in results/ (python -m labcore.sdp.reproduce [ids...]).

The same as `labcore figure <id> --full --save` for each id (default: every sdp card), through the shared
card registry and writer.
"""
from __future__ import annotations

import sys

from .. import figures


def reproduce(card_id: str) -> None:
    res = figures.reproduce(card_id, size="full", progress=True)
    figures.save(res, command=f"python -m labcore.sdp.reproduce {card_id}")
    print(f"{card_id}: {res.runtime_s:.0f} s, {res.verdict}")
    print(res.comparison().to_string(index=False), flush=True)


if __name__ == "__main__":
    for cid in sys.argv[1:] or [c for c in figures.card_ids() if c.startswith("sdp-")]:
        reproduce(cid)
