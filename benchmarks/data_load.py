"""Loading a dataset: parsing the source files against reading the parsed split back from its cache.

    LABCORE_DATA=../shared/data python benchmarks/data_load.py [--dataset ml-1m]

Prints both times and their ratio (the cache is what makes the second notebook cell or page visit instant),
plus the synthetic generator's sizes. The load average is printed beside the numbers: a loaded machine is
slower for both, the ratio is what to compare.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="ml-1m")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LABCORE_SPLIT_CACHE"] = tmp  # an empty parsed-split cache: the first load parses
        from labcore.data import load_dataset
        from labcore.data.synthetic import make_synthetic

        for size in ("tiny", "small"):
            _, s = timed(lambda: make_synthetic(size, seed=0))
            print(f"synthetic {size:<6} generated in {s * 1000:7.1f} ms")
        _, first = timed(lambda: load_dataset(a.dataset, seed=0))
        _, again = timed(lambda: load_dataset(a.dataset, seed=0))
        print(f"{a.dataset}: parse {first:.2f} s, from the cache {again * 1000:.0f} ms, ratio {first / again:.0f}x")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
