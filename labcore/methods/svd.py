"""SVD compression: train the full update, send its best rank-r factors (both directions)."""
from __future__ import annotations

import torch

from .base import FedMF, Wire
from .compress import svd_truncate


class SVDCompression(FedMF):
    name = "svd"

    def encode(self, X: torch.Tensor) -> list[Wire]:
        U, S, V = svd_truncate(X, self.cfg.rank)
        M = X.shape[0]
        return [Wire("U", "factors", (U * S[..., None, :]).reshape(M, -1)), Wire("V", "factors", V.reshape(M, -1))]

    def decode(self, wires: dict[str, Wire]) -> torch.Tensor:
        M, r = wires["U"].data.shape[0], self.cfg.rank
        return wires["U"].data.view(M, self.n_items, r) @ wires["V"].data.view(M, self.d, r).transpose(1, 2)
