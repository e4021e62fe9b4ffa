"""GCN-IST for real: m worker processes, one subnet each, synchronising over torch.distributed (gloo, loopback).

Every worker loads the graph, builds the same initial weights and draws the same partition from the
shared seed (so the partition itself never travels). Between syncs worker i trains only its own subnet.
At a sync it serializes its blocks into a `labcore.net.message.Message`, the m byte strings are exchanged
with one `all_gather` (there is no server: every worker receives every block and merges the same way, in
rank order), and the merge is the one of `subnets.merge`. So for the same config the weights equal the
simulation's (`simulate.run`) float for float; `tests/gist/test_gist_distributed.py` checks that.

Measured per sync and worker: seconds of local training, seconds waiting for the slowest worker
(a barrier), seconds of the exchange itself, and the bytes of the message sent.
"""
from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..runtime import one_thread
from ..net.ledger import Ledger
from ..net.message import Message, deserialize_parts
from . import subnets
from .config import GistConfig
from .graph import for_config
from .simulate import initial_params
from .trainer import GistResult, eval_row, record, sync_rounds, train_subnet


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, cfg: GistConfig, port: int, rounds: int | None, evaluate: bool, out: str) -> None:
    import torch.distributed as dist

    one_thread()
    m = cfg.subnets
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=m,
                            timeout=timedelta(seconds=120))
    try:
        g = for_config(cfg)
        params = initial_params(cfg, g)
        plan = sync_rounds(cfg)[:rounds] if rounds else sync_rounds(cfg)
        ledger, rows, losses_mine, times, parts = Ledger(), [], [], [], []
        # warm-up outside the timings: the first optimizer step of a fresh process pays lazy imports and
        # allocations (seconds); the results are thrown away and every draw is seeded, so nothing changes
        part0 = subnets.draw(cfg, 0, g.n_features)
        train_subnet(cfg, g, subnets.extract(params, part0, rank), part0, rank, 0, 1)
        dist.barrier()
        t_start = time.perf_counter()
        for r, (start, steps) in enumerate(plan):
            part = subnets.draw(cfg, start, g.n_features)
            parts.append(part)
            t0 = time.perf_counter()
            new, ls = train_subnet(cfg, g, subnets.extract(params, part, rank), part, rank, start, steps)
            buf = subnets.message("up", new).serialize()
            t1 = time.perf_counter()
            dist.barrier()  # waiting for the slowest subnet, measured apart from the exchange
            t2 = time.perf_counter()
            mine = torch.frombuffer(bytearray(buf), dtype=torch.uint8)
            gathered = [torch.empty_like(mine) for _ in range(m)]
            dist.all_gather(gathered, mine)
            t3 = time.perf_counter()
            raw = [bytes(t.numpy().tobytes()) for t in gathered]
            params = subnets.merge(params, part, [subnets.decode(b) for b in raw])
            t4 = time.perf_counter()
            times.append({"round": r, "rank": rank, "epochs": steps, "sec_train": t1 - t0, "sec_wait": t2 - t1,
                          "sec_comm": t3 - t2, "sec_merge": t4 - t3, "bytes_sent": len(buf)})
            losses_mine += [{"round": r, "epoch": start + k + 1, "subnet": rank, "loss": v} for k, v in enumerate(ls)]
            if rank == 0:
                record(ledger, r, "up", [Message("up", tuple(deserialize_parts(b))) for b in raw])
                if evaluate or r == len(plan) - 1:
                    row = eval_row(cfg, g, params, r, start + steps, [[0.0]])
                    row.update(bytes_up=sum(len(b) for b in raw), sec_train=t1 - t0)
                    rows.append(row)
        wall = time.perf_counter() - t_start
        everyone = [None] * m
        dist.all_gather_object(everyone, {"times": times, "losses": losses_mine, "wall": wall})
        if rank == 0:
            torch.save({"rows": rows, "ledger": ledger.rows, "params": params, "parts": parts,
                        "everyone": everyone}, Path(out) / "result.pt")
        dist.barrier()  # leave together: the result is written and no peer sends any more
    except BaseException:
        dist.destroy_process_group()
        raise
    # A clean run leaves without tearing gloo down: its threads could abort the process at shutdown
    # ("terminate called without an active exception", SIGABRT) after all the work was done and saved.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_distributed(cfg: GistConfig, rounds: int | None = None, evaluate: bool = True,
                    timeout: float = 600.0) -> GistResult:
    """Train `cfg` with `cfg.subnets` worker processes; the result carries each worker's timings."""
    import torch.multiprocessing as mp

    for_config(cfg)  # fail here, with the loader's message, rather than in m workers
    ctx = mp.get_context("spawn")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="gist-dist-") as out:
        procs = [ctx.Process(target=_worker, args=(i, cfg, port, rounds, evaluate, out), daemon=True)
                 for i in range(cfg.subnets)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout
        for p in procs:
            p.join(max(1.0, deadline - time.monotonic()))
        alive = [p.pid for p in procs if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.terminate()
        bad = [(i, p.exitcode) for i, p in enumerate(procs) if p.exitcode not in (0, None)]
        if alive or bad:
            raise RuntimeError(f"distributed GIST run failed: workers still running {alive}, exit codes {bad}")
        got = torch.load(Path(out) / "result.pt", weights_only=False)
    times = pd.DataFrame([t for w in got["everyone"] for t in w["times"]])
    losses = pd.DataFrame([x for w in got["everyone"] for x in w["losses"]]).sort_values(["round", "subnet", "epoch"])
    timing = {"wall_s": max(w["wall"] for w in got["everyone"]), "per_worker": times,
              "epochs": int(times[times["rank"] == 0]["epochs"].sum())}
    return GistResult(cfg, pd.DataFrame(got["rows"]), losses.reset_index(drop=True),
                      pd.DataFrame(got["ledger"], columns=list(Ledger.COLUMNS)), got["params"], got["parts"], timing)


def timing_summary(res: GistResult) -> dict:
    """Seconds per epoch (wall), and per sync: training, waiting, exchange (means over workers and syncs)."""
    t = res.timing["per_worker"]
    per_sync = t.groupby("round")[["sec_train", "sec_wait", "sec_comm", "sec_merge"]].max()
    return {"wall_per_epoch_s": res.timing["wall_s"] / res.timing["epochs"],
            "train_per_sync_s": float(per_sync["sec_train"].mean()),
            "wait_per_sync_s": float(t["sec_wait"].mean()),
            "comm_per_sync_s": float(t["sec_comm"].mean()),
            "comm_per_sync_median_s": float(np.median(t["sec_comm"])),
            "bytes_sent_per_worker_per_sync": float(t["bytes_sent"].mean())}
