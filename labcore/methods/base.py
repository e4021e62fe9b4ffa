"""The method protocol, and FedMF as its plainest instance.

Like a Flower strategy, a method says four things and nothing else:
what the server fixes for the round (`setup_round`), how a client's trained
parameters become its uplink (`uplink`), how the server turns the cohort's
uplinks into one aggregate and a broadcast (`decode_uplink`, `downlink`), and
how that broadcast changes the item table (`apply_downlink`). The engine runs
the loop, local training, quantization, encryption and the payload ledger; a
variant overrides one step instead of copying the loop.

Everything that crosses the network is a `Wire`: one named part for the whole
cohort, row m being client m's payload (a valid prefix of `lengths[m]` values
when clients send different sizes, as in SCoLR).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..config import RunConfig
from ..fed.local_train import LocalResult, LowRank

FLOAT_KINDS = ("values", "factors")  # parts a quantizer may encode


@dataclass(frozen=True, eq=False)
class Wire:
    name: str
    kind: str  # a labcore.net.message kind
    data: torch.Tensor  # (M, n) for uplink (one row per client), (1, n) for the broadcast
    lengths: np.ndarray | None = None  # valid prefix per row; None = the whole row
    bits_per_value: int | None = None  # theoretical width if not the dtype's (e.g. a 1-bit mask)

    def row(self, m: int) -> np.ndarray:
        r = self.data[m].numpy()
        return r if self.lengths is None else r[: int(self.lengths[m])]

    def with_data(self, data: torch.Tensor) -> "Wire":
        return Wire(self.name, self.kind, data, self.lengths, self.bits_per_value)


@dataclass(frozen=True, eq=False)
class RoundSetup:
    """What the server fixes at the start of a round (shared by the cohort)."""

    lowrank: LowRank | None = None
    seed: int | None = None
    extra: dict = field(default_factory=dict)


class FedMF:
    """Federated MF: clients send their full item-table update (CoLR Eq. 2 and 5)."""

    name = "fedmf"

    def __init__(self, cfg: RunConfig, n_items: int):
        self.cfg, self.n_items, self.d = cfg, n_items, cfg.dim

    def setup_round(self, round_idx: int, n_clients: int, gen: torch.Generator) -> RoundSetup:
        return RoundSetup()

    # How an item-table update (M, N, d) travels. FedMF: as it is. SVD / Top-K override
    # these two and inherit the four message steps below.
    def encode(self, X: torch.Tensor) -> list[Wire]:
        return [Wire("delta_Q", "values", X.reshape(X.shape[0], -1))]

    def decode(self, wires: dict[str, Wire]) -> torch.Tensor:
        w = wires["delta_Q"].data
        return w.view(w.shape[0], self.n_items, self.d)

    def _down_codec(self):
        """Compressors also compress the downlink unless compress_down is off."""
        return self if self.cfg.compress_down else FedMF(self.cfg, self.n_items)

    # client -> server
    def uplink(self, local: LocalResult, setup: RoundSetup) -> list[Wire]:
        return self.encode(local.update)

    def decode_uplink(self, wires: dict[str, Wire], setup: RoundSetup) -> torch.Tensor:
        """Per-client updates in the space the server averages: (M, N, k)."""
        return self.decode(wires)

    # server -> clients
    def downlink(self, aggregate: torch.Tensor, setup: RoundSetup) -> list[Wire]:
        return self._down_codec().encode(aggregate[None])

    def apply_downlink(self, Q: torch.Tensor, wires: dict[str, Wire], setup: RoundSetup) -> torch.Tensor:
        return Q + self._down_codec().decode(wires)[0]
