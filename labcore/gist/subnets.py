"""GCN-IST's partition, the subnets' blocks, their messages and the server's merge (pure functions).

Row-wise GIST (Fig. 2 of the report), each sync round draws a fresh random disjoint partition:
* split="layer1": the input features into m groups S_i. Subnet i owns the rows S_i of θ1 (and sees only
  the columns S_i of X); b1, θ2 and b2 are whole in every subnet and averaged at the merge.
* split="both": also the hidden units into m groups T_i. Subnet i owns the block θ1[S_i, T_i], b1[T_i] and
  θ2[T_i, :]; b2 is averaged; the off-diagonal blocks θ1[S_i, T_j] (i != j) stay as they were this round.
Column-wise variant (Fig. 5), split="layer1": θ1 is split actively by column (the hidden units T_i), θ2
passively by row: subnet i owns θ1[:, T_i], b1[T_i], θ2[T_i, :] and sees every feature.

The output bias b2 is never partitioned and is averaged at every merge (the authors' code never merges it
when the output layer is split, so it stays at its initial zeros; that bug is not reproduced here).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..net.message import Message, array_part, deserialize_parts
from .model import PARAMS, seeded

PARTITION_STREAM = 2


@dataclass(frozen=True, eq=False)
class Partition:
    """Index groups of one sync round: `features[i]` (S_i) and `hidden[i]` (T_i); None = not split."""

    m: int
    features: tuple[torch.Tensor, ...] | None
    hidden: tuple[torch.Tensor, ...] | None

    def index(self, name: str, i: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """(rows, cols) of parameter `name` owned by subnet i; None = all of that axis."""
        s = self.features[i] if self.features is not None else None
        t = self.hidden[i] if self.hidden is not None else None
        return {"theta1": (s, t), "b1": (t, None), "theta2": (t, None), "b2": (None, None)}[name]

    def partitioned(self, name: str) -> bool:
        """Whether subnets own disjoint blocks of this parameter (else each holds a copy, averaged)."""
        rows, cols = self.index(name, 0)
        return rows is not None or cols is not None

    def owner_map(self, n_features: int, hidden: int) -> np.ndarray:
        """(F, H) array: which subnet owns each entry of θ1 this round, -1 = nobody (kept as it was)."""
        own = np.full((n_features, hidden), -1, dtype=np.int64)
        for i in range(self.m):
            rows, cols = self.index("theta1", i)
            r = slice(None) if rows is None else rows.numpy()
            c = slice(None) if cols is None else cols.numpy()
            own[np.ix_(np.arange(n_features)[r], np.arange(hidden)[c])] = i
        return own


def groups(n: int, m: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """A uniformly random split of range(n) into m disjoint groups (sorted within each group)."""
    return tuple(torch.sort(c).values for c in torch.chunk(torch.randperm(n, generator=gen), m))


def draw(cfg, epoch: int, n_features: int) -> Partition:
    """The partition of the sync round that starts at `epoch` (same seed, same epoch -> same partition)."""
    gen = seeded(cfg.seed, PARTITION_STREAM, epoch)
    feats = groups(n_features, cfg.subnets, gen) if cfg.splits_features else None
    hidden = groups(cfg.hidden, cfg.subnets, gen) if cfg.splits_hidden else None
    return Partition(cfg.subnets, feats, hidden)


def _take(t: torch.Tensor, rows, cols) -> torch.Tensor:
    if rows is not None:
        t = t.index_select(0, rows)
    if cols is not None:
        t = t.index_select(1, cols)
    return t


def extract(params: dict[str, torch.Tensor], part: Partition, i: int) -> dict[str, torch.Tensor]:
    """Subnet i's copy of its blocks (fresh tensors)."""
    return {n: _take(params[n], *part.index(n, i)).clone() for n in PARAMS}


def subnet_input(x: torch.Tensor, part: Partition, i: int) -> torch.Tensor:
    return x if part.features is None else x.index_select(1, part.features[i])


def message(direction: str, params: dict[str, torch.Tensor]) -> Message:
    """One subnet's blocks as a real message (float32 values, one part per parameter)."""
    return Message.of(direction, [array_part(n, "values", params[n].detach().numpy().astype(np.float32))
                                  for n in PARAMS])


def decode(buf: bytes) -> dict[str, torch.Tensor]:
    return {p.name: torch.from_numpy(np.array(p.payload)) for p in deserialize_parts(buf)}


def merge(params: dict[str, torch.Tensor], part: Partition, received: list[dict[str, torch.Tensor]]
          ) -> dict[str, torch.Tensor]:
    """The server's merge: write every subnet's disjoint blocks back, average what every subnet holds."""
    out = {n: t.clone() for n, t in params.items()}
    for n in PARAMS:
        if part.partitioned(n):
            for i, got in enumerate(received):
                rows, cols = part.index(n, i)
                if rows is not None and cols is not None:
                    out[n][rows.unsqueeze(1), cols.unsqueeze(0)] = got[n]
                elif rows is not None:
                    out[n][rows] = got[n]
                else:
                    out[n][:, cols] = got[n]
        else:
            acc = received[0][n].clone()
            for got in received[1:]:
                acc = acc + got[n]
            out[n] = acc / len(received)
    return out
