"""Reproduce the GIST cards at full size and store them in results/:

    LABCORE_DATA=/path/to/data python -m labcore.gist.reproduce [card ids ...] [--jobs 2]

The same as `labcore figure <id> --full --save`, through the shared card registry and writer, except that the
uncached runs are trained first in `--jobs` processes. Runs are cached per config (`experiments.cache_dir()`),
so an interrupted reproduction resumes.
"""
from __future__ import annotations

import argparse
import sys
import time

from .. import figures
from . import experiments
from .cards import CARDS


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cards", nargs="*", default=list(CARDS), help=f"card ids (default: all): {', '.join(CARDS)}")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes for the uncached runs")
    ap.add_argument("--size", default="full", choices=figures.SIZES)
    args = ap.parse_args(argv)
    for cid in args.cards:
        card = figures.get(cid)
        t0 = time.perf_counter()
        configs = card.configs(args.size)
        if configs and cid != "gist-bytes":
            experiments.summaries(configs, jobs=args.jobs, progress=True)  # train what is missing, in parallel
        res = figures.reproduce(cid, args.size)
        res.meta.update(experiments.train_seconds(configs) if cid != "gist-bytes" else {})
        runtime = time.perf_counter() - t0  # training included (runs cached earlier count as 0)
        cmd = f"python -m labcore.gist.reproduce {cid} --jobs {args.jobs}"
        path = figures.save(res, cmd, runtime_s=runtime) if args.size == "full" else "(smoke: not stored)"
        print(f"{cid}: {runtime:.0f} s, {res.verdict} -> {path}", flush=True)
        print(res.comparison().to_string(index=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
