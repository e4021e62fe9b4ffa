"""What reproducing the FELLRec cards at full size costs: the wall-clock, the peak resident memory of the process
and of its workers, and the split pass's overhead against the unsplit pass (same batches, same process).

    python benchmarks/fellrec_full_cards.py --jobs 2 [--backbone minilm] [card ids]

The cards themselves are reproduced and stored by `labcore figure` (this runs it without --save):

    labcore figure fellrec-table1-ml100k fellrec-table4-ml100k ... --full --save --jobs 2
"""
import argparse
import os
import resource
import time

import torch

from labcore.cli import main
from labcore.fellrec import cards
from labcore.fellrec.experiments import base, model_size


def split_overhead(reps: int = 20) -> float:
    from labcore.fellrec.data import windows
    from labcore.fellrec.federated import dataset, foundation
    from labcore.fellrec.model import freeze_base
    from labcore.fellrec.offload import Channel, full_step, split, split_step

    cfg = base("full")
    d = dataset(cfg)
    m = foundation(cfg, d)
    freeze_base(m)
    x, y = (torch.as_tensor(a[:64]) for a in windows(d, d.client_users, cfg.history))
    halves, ch = split(m, cfg.client_layers), Channel()
    t0 = time.perf_counter()
    for _ in range(reps):
        full_step(m, x, y)
    t1 = time.perf_counter()
    for _ in range(reps):
        split_step(*halves, x, y, ch)
    t2 = time.perf_counter()
    return (t2 - t1) / (t1 - t0)


if __name__ == "__main__":
    torch.set_num_threads(1)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cards", nargs="*")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--backbone", choices=("tiny", "minilm"), default="tiny")
    ns = ap.parse_args()
    ids = ns.cards or list(cards.MINILM_CARD_IDS if ns.backbone == "minilm" else cards.CARD_IDS)
    print("model:", model_size(base("full")) if ns.backbone == "tiny" else base("full", "minilm").to_dict())
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    main(["figure", *ids, "--full", "--jobs", str(ns.jobs), "--html", "none", "--quiet"])
    print(f"all cards: {time.perf_counter() - t0:.0f} s wall on the shared 2-core machine, load average "
          f"{load0:.1f} at the start and {os.getloadavg()[0]:.1f} at the end")
    if ns.backbone == "tiny":
        print(f"split / unsplit training step time: {split_overhead():.2f}x (loaded shared machine)")
    print("peak RSS MiB: this process", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
          "| largest worker", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
