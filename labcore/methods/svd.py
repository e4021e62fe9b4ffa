"""SVD compression: train the full update, send its best rank-r factors (both directions)."""
from __future__ import annotations

import torch

from ..fed.local_train import LocalResult
from .base import FedMF, RoundSetup, Wire
from .compress import svd_reconstruct, svd_truncate


class SVDCompression(FedMF):
    name = "svd"

    def _factors(self, X: torch.Tensor) -> list[Wire]:
        U, S, V = svd_truncate(X, self.cfg.rank)
        M = X.shape[0]
        return [Wire("U", "factors", (U * S[..., None, :]).reshape(M, -1)), Wire("V", "factors", V.reshape(M, -1))]

    def _unfactor(self, wires: dict[str, Wire], M: int) -> torch.Tensor:
        r = self.cfg.rank
        US = wires["U"].data.view(M, self.n_items, r)
        V = wires["V"].data.view(M, self.d, r)
        return svd_reconstruct(US, torch.ones(M, r, dtype=US.dtype), V)

    def uplink(self, local: LocalResult, setup: RoundSetup) -> list[Wire]:
        return self._factors(local.update)

    def decode_uplink(self, wires: dict[str, Wire], setup: RoundSetup) -> torch.Tensor:
        return self._unfactor(wires, wires["U"].data.shape[0])

    def downlink(self, aggregate: torch.Tensor, setup: RoundSetup) -> list[Wire]:
        if not self.cfg.compress_down:
            return super().downlink(aggregate, setup)
        return self._factors(aggregate[None])

    def apply_downlink(self, Q: torch.Tensor, wires: dict[str, Wire], setup: RoundSetup) -> torch.Tensor:
        if not self.cfg.compress_down:
            return super().apply_downlink(Q, wires, setup)
        return Q + self._unfactor(wires, 1)[0]
