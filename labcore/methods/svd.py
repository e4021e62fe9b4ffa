"""SVD compression: train the full update, send its best rank-r factors (both directions)."""
from __future__ import annotations

import torch

from ..fed.updates import RowUpdate
from .base import FedMF, RowBlock, Wire
from .compress import svd_truncate, svd_truncate_rows


class SVDCompression(FedMF):
    name = "svd"

    def encode(self, X: torch.Tensor) -> list[Wire]:
        U, S, V = svd_truncate(X, self.cfg.rank)
        M = X.shape[0]
        return [Wire("U", "factors", (U * S[..., None, :]).reshape(M, -1)), Wire("V", "factors", V.reshape(M, -1))]

    def decode(self, wires: dict[str, Wire]) -> torch.Tensor:
        M, r = wires["U"].data.shape[0], self.cfg.rank
        return wires["U"].data.view(M, self.n_items, r) @ wires["V"].data.view(M, self.d, r).transpose(1, 2)

    # By rows: U is zero on every row the client did not touch, so it travels by the touched rows (the same
    # (M, N * r) message, charged in full) and the decoded update U V^T lives on those rows too.
    def encode_rows(self, rows: RowUpdate) -> list[Wire]:
        U, S, V = svd_truncate_rows(rows.values, rows.indptr, self.cfg.rank)
        US = U * S[rows.client]
        return [Wire("U", "factors", None, rows=RowBlock(rows.with_values(US), "item")),
                Wire("V", "factors", V.reshape(rows.n_clients, -1))]

    def decode_rows(self, wires: dict[str, Wire]) -> RowUpdate | None:
        if wires["U"].rows is None:  # quantized: arrived as a dense payload
            return None
        U = wires["U"].rows.update
        V = wires["V"].data.view(U.n_clients, self.d, self.cfg.rank)
        out = U.values.new_empty(U.values.shape[0], self.d)
        ptr = U.indptr
        for m in range(U.n_clients):  # ragged: one small product per client
            a, b = int(ptr[m]), int(ptr[m + 1])
            torch.mm(U.values[a:b], V[m].T, out=out[a:b])
        return U.with_values(out)
