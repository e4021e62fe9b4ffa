"""Changing a bandwidth or the tiers of a finished run: the re-timed view against a retrain.

    LABCORE_DATA=/path/to/data python benchmarks/wallclock_view.py            # ML-1M, the Explorer's defaults
    python benchmarks/wallclock_view.py --dataset synthetic                  # without the data

Trains the Explorer's default run once (CoLR@4, d=64, 60 clients, 100 rounds) on ML-1M, then, for a few
bandwidth / tier settings, times in one process:
  view:    what the Explorer does when only a wall-clock knob moved: `recompute` the round times from the
           stored table (no training) and rebuild the two charts that show time (metric panel, round time);
  retrain: what it did before: train the run again with that setting.
Prints both and their ratio, and checks that the view equals the retrained table's clock (target: view < 1 s).
Timings are on a shared machine: compare the ratio, measured in the same process, more than the seconds.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SETTINGS = {
    "uplink 0.05 MB/s": dict(bw_up=0.05),
    "uplink 0.02 MB/s, downlink 0.1 MB/s": dict(bw_up=0.02, bw_down=0.1),
    "straggler tier (10% at 1/20)": dict(bandwidth_tiers=((0.9, 1.0, 1.0), (0.1, 0.05, 0.05))),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="ml-1m")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--retrains", type=int, default=1, help="settings retrained for the comparison (slow part)")
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    import numpy as np

    from labcore import plots
    from labcore.app.state import EXPLORER_BASE
    from labcore.data import load_dataset
    from labcore.fed.engine import run
    from labcore.net.wallclock import recompute

    base = EXPLORER_BASE.replace(dataset=a.dataset, rounds=a.rounds)
    data = load_dataset(base.dataset, seed=base.data_seed)
    cache = tempfile.mkdtemp(prefix="wallclock-view-")
    t0 = time.perf_counter()
    trained = run(base, data=data, cache_dir=cache, progress=False)
    first = time.perf_counter() - t0
    print(f"{base.describe()} on {base.dataset}, {base.rounds} rounds, {base.clients_per_round} clients per round: "
          f"trained once in {first:.1f} s (load average {os.getloadavg()[0]:.1f})")
    counts = data.train_counts()
    for i, (name, change) in enumerate(SETTINGS.items()):
        cfg = base.replace(**change)
        reps = []
        for _ in range(5):
            t0 = time.perf_counter()
            table = recompute(trained.table, base, cfg, counts)
            from labcore.results import Result

            res = Result(cfg, table, trained.ledger, trained.notes)
            plots.metric_panel([res], "hr")
            plots.round_breakdown(res)
            reps.append(time.perf_counter() - t0)
        view = float(np.median(reps))
        line = f"  {name:40s} view {view * 1e3:7.1f} ms (median of 5)"
        if i < a.retrains:
            t0 = time.perf_counter()
            again = run(cfg, data=data, cache_dir=cache, use_cache=False, progress=False)
            retrain = time.perf_counter() - t0
            err = float(np.max(np.abs(again.table["wallclock"] - table["wallclock"]) / again.table["wallclock"]))
            line += f", retrain {retrain:6.1f} s: {retrain / view:,.0f}x; max relative clock difference {err:.1e}"
        before, after = trained.table["wallclock"].iloc[-1] / 60, table["wallclock"].iloc[-1] / 60
        line += f"; wall-clock {before:.1f} -> {after:.1f} min"
        print(line + ("" if view < 1 else "  (over the 1 s target)"))


if __name__ == "__main__":
    main()
