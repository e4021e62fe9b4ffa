"""Reproduce the FELLRec cards at full size and store them in results/ (python benchmarks/fellrec_full_cards.py).

Also prints the split pass's overhead against the unsplit pass (same batches, same process)."""
import sys
import time

import torch

from labcore import figures
from labcore.fellrec import cards  # noqa: F401  (registers the cards)
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
    ids = sys.argv[1:] or list(cards.CARD_IDS)
    print("model:", model_size(base("full")))
    total = time.perf_counter()
    for cid in ids:
        t0 = time.perf_counter()
        command = f"python benchmarks/fellrec_full_cards.py {cid}"
        res = figures.reproduce(cid, size="full", progress=False)
        figures.save(res, command=command)
        ours, ok = res.ours, res.within_tolerance
        print(cid, f"{time.perf_counter() - t0:.0f} s", "within tolerance" if ok else "MISS", flush=True)
        print(ours.to_string(max_rows=20), flush=True)
    print(f"all cards: {time.perf_counter() - total:.0f} s (loaded shared 2-core machine)")
    print(f"split / unsplit training step time: {split_overhead():.2f}x (loaded shared machine)")
