"""Reproduce the FELLRec cards at full size and store them in results/ (python benchmarks/fellrec_full_cards.py).

`--backbone minilm` runs the MiniLM cards (fellrec-minilm-*) instead of the tiny backbone's; the peak resident
memory of the process (and of its workers) is printed at the end.

`--jobs 2` first trains the union of the cards' runs in two processes (one torch thread each, the 2-core
budget), longest first; the cards then read them from the run cache. Prints the wall-clock time, the CPU
seconds of the runs trained here (what they cost on an idle machine) and the load average, and the split
pass's overhead against the unsplit pass (same batches, same process)."""
import os
import sys
import time

import torch

from labcore import figures
from labcore.fellrec import cards  # noqa: F401  (registers the cards)
from labcore.fellrec.experiments import base, model_size, prefetch


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


def run_costs(cid: str) -> dict:
    """CPU and wall-clock seconds of the card's runs as each was trained (from the run cache)."""
    import json

    from labcore.fellrec.federated import cache_dir

    metas = [json.loads((cache_dir() / "runs" / c.key() / "meta.json").read_text())
             for c in cards.CARDS[cid].configs("full")]
    cpu = [m["cpu_seconds"] for m in metas if m.get("cpu_seconds") is not None]
    return {"runs_cpu_s": round(sum(cpu), 1), "runs_wall_s": round(sum(m.get("seconds", 0) for m in metas), 1),
            "runs_cpu_missing": len(metas) - len(cpu),  # trained before runs recorded CPU time
            "runs_load_avg": sorted({m["load_avg"] for m in metas if "load_avg" in m})}


if __name__ == "__main__":
    torch.set_num_threads(1)
    args = sys.argv[1:]
    jobs = 1
    if "--jobs" in args:
        i = args.index("--jobs")
        jobs = int(args[i + 1])
        del args[i: i + 2]
    backbone = "tiny"
    if "--backbone" in args:
        i = args.index("--backbone")
        backbone = args[i + 1]
        del args[i: i + 2]
    ids = args or list(cards.MINILM_CARD_IDS if backbone == "minilm" else cards.CARD_IDS)
    if backbone == "tiny":
        print("model:", model_size(base("full")))
    else:
        print("config:", base("full", "minilm").to_dict())
    total = time.perf_counter()
    load0 = os.getloadavg()[0]
    if jobs > 1:
        cpu = prefetch({cid: cards.CARDS[cid].configs("full") for cid in ids}, jobs)
        print(f"{len(cpu)} runs trained in {jobs} processes: {time.perf_counter() - total:.0f} s wall, "
              f"{sum(v or 0 for v in cpu.values()):.0f} CPU s", flush=True)
    for cid in ids:
        t0 = time.perf_counter()
        command = f"python benchmarks/fellrec_full_cards.py --jobs {jobs} --backbone {backbone} {cid}"
        res = figures.reproduce(cid, size="full", progress=False)
        res.meta.update(run_costs(cid))
        figures.save(res, command=command, runtime_s=time.perf_counter() - (total if jobs > 1 else t0))
        ours, ok = res.ours, res.within_tolerance
        print(cid, f"{time.perf_counter() - t0:.0f} s", "within tolerance" if ok else "MISS", flush=True)
        print(ours.to_string(max_rows=20), flush=True)
    print(f"all cards: {time.perf_counter() - total:.0f} s wall on the shared 2-core machine, load average "
          f"{load0:.1f} at the start and {os.getloadavg()[0]:.1f} at the end")
    if backbone == "tiny":
        print(f"split / unsplit training step time: {split_overhead():.2f}x (loaded shared machine)")
    import resource

    print("peak RSS MiB: this process", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
          "| largest worker", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
