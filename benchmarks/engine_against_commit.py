"""The engine's round now against the engine of an earlier commit, in one process, the ratio printed.

    LABCORE_DATA=../shared/data .venv/bin/python benchmarks/engine_against_commit.py 0c4d624 [--rounds 15]
    ... engine_against_commit.py 0c4d624 --clients all --rounds 5     # full participation: every user each round

For a change that should not cost speed (a restructuring): the commit's `labcore/` is exported with `git archive`
into a temporary folder under the name `labcore_then` and imported beside today's `labcore`, so both engines run in
this process, on the same data arrays, with the same threads. For each config (ML-1M at CoLR's settings, 60 clients
a round: FedMF, CoLR@4, and FedMF under FedProx, SCAFFOLD, q-FFL and Ditto's cohort steps on ML-100K), each
simulation first plays two rounds (compilation, first-touch memory); then the two take turns, one round each, so
that a change in the machine's load falls on both alike. Prints each one's median round time and now / then.
"""
from __future__ import annotations

import argparse
import atexit
import dataclasses
import importlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Both engines compile their kernels afresh, in one cache of this run's own: a kernel loaded from the working copy's
# cache, compiled at another time, ran FedProx's rounds 7 % slower than the same source compiled now.
if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="labcore-numba-")
    atexit.register(shutil.rmtree, os.environ["NUMBA_CACHE_DIR"], ignore_errors=True)
ARMS = {  # name: (dataset, fields)
    "FedMF d=64": ("ml-1m", {"method": "fedmf"}),
    "CoLR@4": ("ml-1m", {"method": "colr", "rank": 4}),
    "FedProx mu=0.01": ("ml-1m", {"method": "fedmf", "prox_mu": 0.01}),
    "SCAFFOLD": ("ml-1m", {"method": "fedmf", "scaffold": True, "aggregation": "weighted"}),
    "q-FFL q=1": ("ml-1m", {"method": "fedmf", "qffl_q": 1.0, "aggregation": "weighted"}),
    "Ditto (ML-100K)": ("ml-100k", {"method": "fedmf", "personalization": "ditto"}),
}


def import_commit(commit: str, folder: Path):
    """The commit's package, importable as `labcore_then` (its modules import each other relatively; the three
    that name `labcore` absolutely are rewritten)."""
    blob = subprocess.run(["git", "archive", commit, "labcore"], cwd=ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(folder, filter="data")
    (folder / "labcore").rename(folder / "labcore_then")
    for path in (folder / "labcore_then").rglob("*.py"):
        text = path.read_text()
        if "labcore." in text:
            path.write_text(text.replace("from labcore.", "from labcore_then.").replace("import labcore.",
                                                                                         "import labcore_then."))
    sys.path.insert(0, str(folder))
    return importlib.import_module("labcore_then.fed.engine"), importlib.import_module("labcore_then.config")


def _known_then(cfg, then_config) -> dict:
    """cfg's fields for the commit's RunConfig: a field added since may be left out only at its default."""
    known = {f.name for f in dataclasses.fields(then_config.RunConfig)}
    default = type(cfg)().to_dict()
    new = [k for k, v in cfg.to_dict().items() if k not in known and v != default[k]]
    if new:
        raise SystemExit(f"the commit's RunConfig has no {', '.join(new)}: compare configs at their defaults")
    return {k: v for k, v in cfg.to_dict().items() if k in known}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("commit", help="the earlier commit (e.g. the one before a restructuring)")
    ap.add_argument("--rounds", type=int, default=15, help="rounds each engine plays per config, after two warm-up")
    ap.add_argument("--clients", default=None,
                    help="clients per round instead of the paper's 60: a number, or 'all' (every user of the dataset)")
    ap.add_argument("--only", nargs="+", choices=list(ARMS), metavar="CONFIG", help=f"some of: {', '.join(ARMS)}")
    args = ap.parse_args()

    from labcore.config import paper_ml1m
    from labcore.fed import engine as now_engine

    with tempfile.TemporaryDirectory() as tmp:
        then_engine, then_config = import_commit(args.commit, Path(tmp))
        print(f"{'config':<22} {'then (ms)':>10} {'now (ms)':>10} {'now / then':>11}")
        if args.clients:
            print(f"clients per round: {args.clients}")
        for name, (dataset, fields) in ARMS.items():
            if args.only and name not in args.only:
                continue
            cfg = paper_ml1m(dataset=dataset, rank_every=0, eval_every=10**6, **fields)
            data = now_engine.load_data(cfg)
            if args.clients:
                cohort = data.n_users if args.clients == "all" else min(int(args.clients), data.n_users)
                cfg = cfg.replace(clients_per_round=cohort)
            sims = {"now": now_engine.Simulation(cfg, data),
                    "then": then_engine.Simulation(then_config.RunConfig(**_known_then(cfg, then_config)), data)}
            for sim in sims.values():
                for _ in range(2):
                    sim.step()
            times = {k: [] for k in sims}
            for _ in range(args.rounds):
                for k, sim in sims.items():
                    t0 = time.perf_counter()
                    sim.step()
                    times[k].append(time.perf_counter() - t0)
            then, now = (statistics.median(times[k]) * 1000 for k in ("then", "now"))
            print(f"{name:<22} {then:>10.1f} {now:>10.1f} {now / then:>11.3f}", flush=True)


if __name__ == "__main__":
    main()
