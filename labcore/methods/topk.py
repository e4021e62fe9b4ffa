"""Top-K sparsification by magnitude: k values plus their int32 indices (both directions)."""
from __future__ import annotations

import torch

from ..fed.local_train import LocalResult
from .base import FedMF, RoundSetup, Wire
from .compress import topk_compress, topk_count, topk_decompress


class TopKCompression(FedMF):
    name = "topk"

    def _sparse(self, X: torch.Tensor) -> list[Wire]:
        k = topk_count(self.n_items * self.d, self.cfg.topk_ratio)
        values, indices = topk_compress(X, k)
        return [Wire("values", "values", values), Wire("indices", "indices", indices)]

    def _dense(self, wires: dict[str, Wire]) -> torch.Tensor:
        v = wires["values"].data
        return topk_decompress(v, wires["indices"].data, (v.shape[0], self.n_items, self.d))

    def uplink(self, local: LocalResult, setup: RoundSetup) -> list[Wire]:
        return self._sparse(local.update)

    def decode_uplink(self, wires: dict[str, Wire], setup: RoundSetup) -> torch.Tensor:
        return self._dense(wires)

    def downlink(self, aggregate: torch.Tensor, setup: RoundSetup) -> list[Wire]:
        if not self.cfg.compress_down:
            return super().downlink(aggregate, setup)
        return self._sparse(aggregate[None])

    def apply_downlink(self, Q: torch.Tensor, wires: dict[str, Wire], setup: RoundSetup) -> torch.Tensor:
        if not self.cfg.compress_down:
            return super().apply_downlink(Q, wires, setup)
        return Q + self._dense(wires)[0]
