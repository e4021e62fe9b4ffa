"""Top-K sparsification by magnitude: k values plus their int32 indices (both directions)."""
from __future__ import annotations

import numpy as np
import torch

from ..fed.updates import RowUpdate
from .base import FedMF, Wire
from .compress import topk_compress, topk_compress_rows, topk_count, topk_decompress
from .topk_kernels import topk_onto_rows


class TopKCompression(FedMF):
    name = "topk"

    def _k(self) -> int:
        return topk_count(self.n_items * self.d, self.cfg.topk_ratio)

    def encode(self, X: torch.Tensor) -> list[Wire]:
        values, indices = topk_compress(X, self._k())
        return self._wires(values, indices)

    def encode_rows(self, rows: RowUpdate) -> list[Wire]:
        """The same message from the touched rows (every other value is zero)."""
        return self._wires(*topk_compress_rows(rows.values, rows.item, rows.indptr, self.n_items, self._k()))

    @staticmethod
    def _wires(values: torch.Tensor, indices: torch.Tensor) -> list[Wire]:
        return [Wire("values", "values", values), Wire("indices", "indices", indices)]

    def decode_rows(self, wires: dict[str, Wire]) -> None:
        return None  # the message is k values and their positions, not rows

    def decode_onto(self, wires: dict[str, Wire], touched: RowUpdate) -> RowUpdate:
        """The k values of each client written at its touched rows (every value it picked lies on them), and at
        received-only rows where a noisy link moved a zero of a short client's padding off them (QSGD keeps a
        zero at zero; the link's noise need not): the dense decode's values, by rows."""
        values, indices = (np.ascontiguousarray(wires[n].data.numpy()) for n in ("values", "indices"))
        rows, off = topk_onto_rows(values, indices, np.ascontiguousarray(touched.item.numpy()), touched.indptr,
                                   self.d)
        return touched.with_values(torch.from_numpy(rows)).with_received(*off)

    def decode(self, wires: dict[str, Wire]) -> torch.Tensor:
        v = wires["values"].data
        return topk_decompress(v, wires["indices"].data, (v.shape[0], self.n_items, self.d))
