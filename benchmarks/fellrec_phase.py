"""Does the federated phase matter, and does FELLRec beat FedAvg there? FedAvg against FELLRec over seeds.

    python benchmarks/fellrec_phase.py '{"tune": "full", "lr": 0.001}' --seeds 0 1 2 --jobs 2

Prints, for each method: the validation R@10 of the pre-trained foundation (before any federated round)
and after each round (mean over the 5 clients), and the test R@10, the per-client R@10 and the imbalance
(best - worst) / worst, per seed and as the mean over seeds. Overrides are FellrecConfig fields on top of the
full-size base config; runs are cached like the cards' runs. Choices are made on validation, never on test.
"""
import argparse
import json
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd
import torch

from labcore.fellrec.experiments import base

METHODS = ("fedavg", "fellrec")


def _run(cfg):
    from labcore.fellrec.federated import run

    torch.set_num_threads(1)
    r = run(cfg)
    curve = r.rounds.groupby("round")["val_R@10"].mean()
    return {"method": cfg.method, "seed": cfg.seed, **r.overall(), "val_by_round": [round(v, 4) for v in curve],
            "clients_R@10": [round(v, 4) for v in r.clients["R@10"]], "cpu_s": r.meta.get("cpu_seconds")}


def foundation_val(cfg) -> float:
    """Validation R@10 of the foundation alone, mean over the clients (the start of every method)."""
    from labcore.fellrec.clients import assign_clients
    from labcore.fellrec.federated import dataset, evaluate, foundation

    torch.set_num_threads(1)
    d = dataset(cfg)
    m = foundation(cfg, d)
    return float(np.mean([evaluate(m, d, g, cfg.history, "valid")["R@10"].mean() for g in assign_clients(cfg, d)]))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("overrides", nargs="?", default="{}", help="JSON of FellrecConfig fields")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    over = json.loads(a.overrides)
    cfgs = [base("full", method=m, seed=s, **over) for s in a.seeds for m in METHODS]
    print("overrides:", over, "| foundation validation R@10 (client mean):", round(foundation_val(cfgs[0]), 4),
          flush=True)
    with ProcessPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(_run, cfgs))
    df = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    print(df[["method", "seed", "R@10", "imbalance", "val_by_round", "clients_R@10", "cpu_s"]].to_string(index=False))
    mean = df.groupby("method")[["R@10", "R@20", "N@10", "N@20", "imbalance"]].mean()
    print(mean.round(4).to_string())
    f, g = mean.loc["fellrec"], mean.loc["fedavg"]
    print(f"FELLRec / FedAvg R@10 - 1 = {f['R@10'] / g['R@10'] - 1:+.2%}; imbalance {f['imbalance']:.3f} vs "
          f"{g['imbalance']:.3f}; FELLRec lower imbalance in {int((df[df.method == 'fellrec'].imbalance.values < df[df.method == 'fedavg'].imbalance.values).sum())}/{len(a.seeds)} seeds")
