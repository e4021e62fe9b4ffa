"""Top-K sparsification by magnitude: k values plus their int32 indices (both directions)."""
from __future__ import annotations

import torch

from .base import FedMF, Wire
from .compress import topk_compress, topk_count, topk_decompress


class TopKCompression(FedMF):
    name = "topk"

    def encode(self, X: torch.Tensor) -> list[Wire]:
        values, indices = topk_compress(X, topk_count(self.n_items * self.d, self.cfg.topk_ratio))
        return [Wire("values", "values", values), Wire("indices", "indices", indices)]

    def decode(self, wires: dict[str, Wire]) -> torch.Tensor:
        v = wires["values"].data
        return topk_decompress(v, wires["indices"].data, (v.shape[0], self.n_items, self.d))
