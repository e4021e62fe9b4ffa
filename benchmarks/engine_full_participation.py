"""The engine's local training against its former implementations: the same config, one command, the ratio printed.

    rows     (now) each client walks its steps in one compiled pass over its touched rows (`fed/kernels/fused.py`)
    batched  the former trainer: one batched torch step for all clients at a time, same rows layout
    dense    the layout before that: clients x items update tables

    python benchmarks/engine_full_participation.py                          # ML-1M, FedMF d=64 and CoLR@4, every user
    python benchmarks/engine_full_participation.py --dataset pinterest --methods colr
    python benchmarks/engine_full_participation.py --clients 60 --rounds 20 # the paper's cohort, 20 rounds each
    python benchmarks/engine_full_participation.py --full                  # the 1000-round paper runs, now and before
    python benchmarks/engine_full_participation.py --baseline dense         # against the clients x items layout

Each implementation runs in its own child process (so that peak memory is its own) with the same config;
the round times, their ratio and each one's peak resident memory are printed. The dense layout is skipped
(and said so) where its estimated memory exceeds what the machine has: that is the crash the row layout
removes. On a shared machine trust the ratio more than the seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _simulation(cfg, data, layout: str):
    from labcore.fed.engine import Simulation
    from labcore.fed.batched import train_cohort_batched

    if layout == "batched":
        return Simulation(cfg, data, trainer=train_cohort_batched)
    return Simulation(cfg, data, layout=layout)


def _peak(r: dict) -> str:
    """Peak resident memory in GiB (2^30 bytes, what ru_maxrss / 2^20 gives) and in 10^9 bytes."""
    return f"peak {r['peak_gib']:.2f} GiB ({r['peak_gib'] * 2**30 / 1e9:.2f} x 10^9 bytes)"


def child(spec: dict) -> dict:
    import labcore
    from labcore.config import ConfigError
    from labcore.fed.engine import Simulation, load_data

    base = labcore.paper_ml1m(dataset=spec["dataset"], method=spec["method"], rank=spec["rank"],
                              rank_every=0, eval_every=10**6)
    data = load_data(base)
    m = data.n_users if spec["clients"] <= 0 else min(spec["clients"], data.n_users)
    cfg = base.replace(clients_per_round=m)
    try:
        sim = _simulation(cfg, data, spec["layout"])
    except ConfigError as e:
        return {"refused": str(e)}
    times, cpu = [], 0.0
    for i in range(spec["rounds"] + 1):  # the first round warms up
        t0, c0 = time.perf_counter(), time.process_time()
        sim.step()
        times.append(time.perf_counter() - t0)
        cpu += (time.process_time() - c0) if i else 0.0
    return {"clients": m, "round_s": sum(times[1:]) / max(len(times) - 1, 1), "first_s": times[0],
            "cpu_s": cpu / max(len(times) - 1, 1),
            "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "describe": cfg.describe(),
            "q_sum": float(sim.Q.double().sum()), "loss": [r["loss"] for r in sim.rows]}


def full_run(spec: dict) -> dict:
    import labcore
    from labcore.fed.engine import Simulation, load_data
    from labcore.runner.rounds import train_rounds

    cfg = labcore.paper_ml1m(dataset=spec["dataset"], method=spec["method"], rank=spec["rank"])
    cfg = cfg.replace(rounds=spec.get("full_rounds") or cfg.rounds)
    data = load_data(cfg)
    t0, c0 = time.perf_counter(), time.process_time()
    res = train_rounds(_simulation(cfg, data, spec["layout"]), None)
    return {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "hr": float(res.final["hr"]),
            "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "describe": cfg.describe(),
            "hr_curve": res.table["hr"].dropna().tolist(), "loss": res.table["loss"].tolist()}


def spawn(spec: dict) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", json.dumps(spec)],
                         capture_output=True, text=True, env=os.environ.copy())
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="ml-1m")
    ap.add_argument("--methods", default="fedmf,colr")
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--clients", type=int, default=0, help="clients per round (0 = every user)")
    ap.add_argument("--rounds", type=int, default=2, help="timed rounds after one warm-up round")
    ap.add_argument("--baseline", default="batched", choices=("batched", "dense"),
                    help="the former implementation timed against the engine's (rows)")
    ap.add_argument("--only-new", action="store_true", help="time the engine's implementation alone")
    ap.add_argument("--full", action="store_true", help="time the 1000-round paper runs instead (both layouts)")
    ap.add_argument("--full-rounds", type=int, default=0,
                    help="with --full: train this many rounds instead of the paper's 1000 (a loaded machine)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        from labcore.runtime import use_threads

        use_threads()  # LABCORE_THREADS (default 1), as `labcore run` and the figure cards train
        spec = json.loads(a.child)
        print(json.dumps(full_run(spec) if spec.get("full") else child(spec)))
        return
    import torch

    print(f"torch threads {os.environ.get('LABCORE_THREADS', '1')} (torch {torch.__version__}), "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for method in a.methods.split(","):
        spec = dict(dataset=a.dataset, method=method, rank=a.rank, clients=a.clients, rounds=a.rounds)
        if a.full:
            spec.update(full=True, full_rounds=a.full_rounds)
            new = spawn({**spec, "layout": "rows"})
            old = {"error": "not timed (--only-new)"} if a.only_new else spawn({**spec, "layout": a.baseline})
            print(f"\n{new.get('describe', method)} on {a.dataset}: {a.full_rounds or 1000} rounds, 60 clients, "
                  f"eval every 100, effective rank every 10")
            for name, r in (("rows (now)", new), (f"{a.baseline} (before)", old)):
                print(f"  {name:15s} " + (f"{r['wall_s']:7.1f} s wall, {r['cpu_s']:7.1f} s CPU, HR@10 {r['hr']:.4f}, "
                                          + _peak(r) if "wall_s" in r else str(r)))
            if "wall_s" in new and "wall_s" in old:
                loss_rel = max(abs(x - y) / abs(y) for x, y in zip(new["loss"], old["loss"]))
                hr_abs = max(abs(x - y) for x, y in zip(new["hr_curve"], old["hr_curve"]))
                print(f"  ratio {a.baseline} / rows: {old['wall_s'] / new['wall_s']:.2f}x wall, "
                      f"{old['cpu_s'] / new['cpu_s']:.2f}x CPU; round losses to {loss_rel:.1e} relative, "
                      f"HR@10 curve to {hr_abs:.1e}")
            continue
        new = spawn({**spec, "layout": "rows"})
        old = {"error": "not timed (--only-new)"} if a.only_new else spawn({**spec, "layout": a.baseline})
        print(f"\n{new.get('describe', method)} on {a.dataset}, {new.get('clients', a.clients)} clients per round")
        for name, r in (("rows (now)", new), (f"{a.baseline} (before)", old)):
            if "round_s" in r:
                print(f"  {name:15s} {r['round_s']:8.2f} s/round, {r['cpu_s']:8.2f} s CPU "
                      f"(first {r['first_s']:.2f} s)  " + _peak(r))
            else:
                print(f"  {name:15s} {r.get('refused') or r.get('error')}")
        if "round_s" in new and "round_s" in old:
            same = new["loss"] == old["loss"] and new["q_sum"] == old["q_sum"]
            rel = max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(new["loss"] + [new["q_sum"]],
                                                                       old["loss"] + [old["q_sum"]]))
            print(f"  ratio {a.baseline} / rows: {old['round_s'] / new['round_s']:.1f}x time, "
                  f"{old['cpu_s'] / new['cpu_s']:.1f}x CPU, "
                  f"{old['peak_gib'] / new['peak_gib']:.1f}x peak memory; same losses and Q: "
                  f"{'bit for bit' if same else f'to {rel:.1e} relative'}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
    main()
