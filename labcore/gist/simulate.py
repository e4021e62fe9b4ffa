"""GCN-IST in one process: the m subnets take their local steps one after the other (notebooks, app, cards).

Every message a subnet receives or sends is serialized for real and decoded on the other side, so the
bytes in the ledger are measured and the floats are exactly those a distributed run exchanges.
"""
from __future__ import annotations

import time

import pandas as pd
import torch

from ..runtime import one_thread
from ..net.ledger import Ledger
from . import subnets
from .config import GistConfig
from .graph import for_config
from .model import init_params
from .trainer import GistResult, eval_row, record, sync_rounds, train_subnet


def initial_params(cfg: GistConfig, g) -> dict[str, torch.Tensor]:
    return init_params(g.n_features, cfg.hidden, g.n_classes, cfg.seed)


def run(cfg: GistConfig, progress=None, rounds: int | None = None, evaluate: bool = True) -> GistResult:
    """Train `cfg`; `progress(done, total)` is called after each sync; `rounds` stops early (tests);
    `evaluate=False` evaluates the merged model only after the last sync (timing the training alone)."""
    one_thread()
    g = for_config(cfg)
    params = initial_params(cfg, g)
    ledger, rows, loss_rows, parts = Ledger(), [], [], []
    plan = sync_rounds(cfg)[:rounds] if rounds else sync_rounds(cfg)
    t_start = time.perf_counter()
    for r, (start, steps) in enumerate(plan):
        part = subnets.draw(cfg, start, g.n_features)
        parts.append(part)
        down = [subnets.message("down", subnets.extract(params, part, i)) for i in range(cfg.subnets)]
        record(ledger, r, "down", down)
        up, received, losses = [], [], []
        t0 = time.perf_counter()
        for i in range(cfg.subnets):
            blocks = subnets.decode(down[i].serialize())
            new, ls = train_subnet(cfg, g, blocks, part, i, start, steps)
            up.append(subnets.message("up", new))
            losses.append(ls)
            loss_rows += [{"round": r, "epoch": start + k + 1, "subnet": i, "loss": v} for k, v in enumerate(ls)]
        sec_train = time.perf_counter() - t0
        record(ledger, r, "up", up)
        received = [subnets.decode(msg.serialize()) for msg in up]
        params = subnets.merge(params, part, received)
        if evaluate or r == len(plan) - 1:
            row = eval_row(cfg, g, params, r, start + steps, losses)
            row.update(bytes_up=sum(len(m.serialize()) for m in up),
                       bytes_down=sum(len(m.serialize()) for m in down), sec_train=sec_train)
            rows.append(row)
        if progress:
            progress(r + 1, len(plan))
    timing = {"wall_s": time.perf_counter() - t_start, "epochs": sum(steps for _, steps in plan)}
    return GistResult(cfg, pd.DataFrame(rows), pd.DataFrame(loss_rows), ledger.frame(), params, parts, timing)
