"""What one subnet does between two syncs, and the bookkeeping both executions share.

A subnet receives its blocks, builds a fresh Adam (the authors' code re-creates the optimizer at every
sync, with the learning rate of that epoch), takes `local` full-batch steps on the training nodes of the
whole graph and sends its blocks back. The simulation (`simulate.py`) runs the m subnets one after the
other in one process; `distributed.py` runs each in its own process. Both call `train_subnet` with the
same generators, so they produce the same floats.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ..diverged import check_finite
from ..net.ledger import Ledger
from ..net.message import Message
from .model import PARAMS, dropout_mask, evaluate, forward, seeded
from .subnets import Partition, subnet_input

DROPOUT_STREAM = 3


def lr_at(cfg, epoch: int) -> float:
    """The authors' schedule: lr, then lr/10 from 50 % and lr/100 from 75 % of the epochs."""
    lr = cfg.lr
    if cfg.lr_schedule and epoch >= int(cfg.epochs * 0.5):
        lr /= 10
    if cfg.lr_schedule and epoch >= int(cfg.epochs * 0.75):
        lr /= 10
    return lr


def train_subnet(cfg, g, blocks: dict[str, torch.Tensor], part: Partition, i: int, start: int, steps: int
                 ) -> tuple[dict[str, torch.Tensor], list[float]]:
    """Subnet i's `steps` local iterations from epoch `start`; returns its new blocks and its losses."""
    x = subnet_input(g.x, part, i)
    if cfg.input_scale != 1:
        x = x * cfg.input_scale  # |S_i| = F/m features: rescaled to the merged model's scale (config.py)
    p = {n: blocks[n].detach().clone().requires_grad_(True) for n in PARAMS}
    opt = torch.optim.Adam([p[n] for n in PARAMS], lr=lr_at(cfg, start), weight_decay=cfg.weight_decay)
    losses = []
    for e in range(start, start + steps):
        mask = dropout_mask((g.n_nodes, p["b1"].shape[0]), cfg.dropout, seeded(cfg.seed, DROPOUT_STREAM, e, i))
        opt.zero_grad(set_to_none=True)
        logits = forward(p, g.adj, x, cfg.layernorm, hidden_mask=mask)
        loss = F.cross_entropy(logits[g.train], g.y[g.train])
        loss.backward()
        opt.step()
        check_finite(f"epoch {e + 1}, subnet {i}", loss, list(p.values()), lower=f"lr (now {cfg.lr:g})")
        losses.append(loss.item())
    return {n: p[n].detach() for n in PARAMS}, losses


def sync_rounds(cfg) -> list[tuple[int, int]]:
    """(first epoch, local steps) of every sync round; the last round may be shorter."""
    return [(s, min(cfg.local, cfg.epochs - s)) for s in range(0, cfg.epochs, cfg.local)]


def record(ledger: Ledger, round_idx: int, direction: str, messages: list[Message]) -> None:
    """One ledger row per part: the m subnets' serialized sizes summed (messages = m)."""
    for name in [p.name for p in messages[0].parts]:
        sizes = [m.part_sizes()[name] for m in messages]
        ledger.rows.append({"round": round_idx, "direction": direction, "part": name, "kind": "values",
                            "messages": len(messages), "bytes": int(sum(s[0] for s in sizes)),
                            "bits": int(sum(s[1] for s in sizes))})


@dataclass(eq=False)
class GistResult:
    """One run: a row per sync round, each subnet's losses, the payload ledger, the final weights."""

    cfg: object
    history: pd.DataFrame  # round, epoch, lr, train_loss, val_loss, train/val/test_acc, bytes_up/down, sec_*
    subnet_loss: pd.DataFrame  # round, epoch, subnet, loss
    ledger: pd.DataFrame  # labcore.net.ledger.Ledger.COLUMNS
    params: dict[str, torch.Tensor]
    partitions: list[Partition] = field(default_factory=list)
    timing: dict = field(default_factory=dict)

    def summary(self) -> dict:
        h = self.history
        best = int(h["val_acc"].to_numpy().argmax())  # the first round with the best validation accuracy
        return {"test_at_best_val": float(h["test_acc"].iloc[best]), "test_last": float(h["test_acc"].iloc[-1]),
                "val_best": float(h["val_acc"].max()), "test_max": float(h["test_acc"].max()),
                "best_epoch": int(h["epoch"].iloc[best])}

    def bytes_per_subnet(self, direction: str = "up", partitioned_only: bool = False) -> float:
        """Measured bytes one subnet sends per sync (all parts, or only its partitioned blocks)."""
        led = self.ledger[self.ledger["direction"] == direction]
        if partitioned_only:
            owned = [n for n in PARAMS if self.partitions and self.partitions[0].partitioned(n)]
            led = led[led["part"].isin(owned)]
        per_round = led.groupby("round")[["bytes", "messages"]].sum()
        m = self.cfg.subnets
        return float((per_round["bytes"] / m).mean())


def eval_row(cfg, g, params, round_idx: int, epoch: int, losses: list[list[float]]) -> dict:
    ev = evaluate(params, g, cfg.layernorm)
    return {"round": round_idx, "epoch": epoch, "lr": lr_at(cfg, epoch - 1),
            "train_loss": float(np.mean([ls[-1] for ls in losses])), **ev}
