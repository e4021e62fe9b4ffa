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
when clients send different sizes, as in SCoLR). A dense update (FedMF's
Delta Q, CoLR's A) is held by the rows the clients touched (`RowBlock`): the
payload is the same (M, n) array, zero elsewhere, and it is charged in full by
the ledger, but nothing clients x items large is materialised.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from numba import njit

from ..config import RunConfig
from ..fed.updates import LocalResult, LowRank, RowUpdate
from .quantize_kernels import payload_position

# --- FedMF's local training, written to be read ---------------------------------------------------------------
def train_client(Q: torch.Tensor, p: torch.Tensor, batches, lr: float, weight_decay: float, prox_mu: float = 0.0
                 ) -> tuple[torch.Tensor, torch.Tensor, float]:
    """One FedMF client's local training: its user vector after training, its update D of the item table, and its
    summed loss. The engine runs the same steps compiled (`fed.kernels.fused`), tested equal to this.

    The model scores item i for the user by x = p . (Q_i + D_i): Q is the round's global item table (frozen during
    local training), D the client's update (from 0; it is what the client uploads). A batch's loss is the binary
    cross-entropy of its positives (label 1) and sampled negatives (label 0), plus L2 on the embeddings it uses.
    The step is the CoLR reference code's (torch embeddings with `scale_grad_by_freq`, the loss averaged over the
    batch, the learning rate times the batch size): the user vector moves by lr times the batch's mean gradient,
    and each item row by lr times the mean of its gradient over the row's occurrences in the batch.
    prox_mu: FedProx's local objective adds mu/2 ||D||^2 (the distance to the global table), which pulls every
    row of D, the rows of no batch too. batches: (items, labels) of each local step, in order."""
    p, D, loss_sum = p.clone(), torch.zeros_like(Q), 0.0
    for items, labels in batches:
        e = Q[items] + D[items]  # (b, d): the batch's item embeddings
        x = e @ p  # the logits
        loss_sum += float(F.binary_cross_entropy_with_logits(x, labels, reduction="sum"))
        g = torch.sigmoid(x) - labels  # dBCE/dx of each sample
        grad_p = (g[:, None] * e).mean(0) + 2 * weight_decay * p
        grad_e = g[:, None] * p + 2 * weight_decay * e  # each sample's gradient for its item's row
        occurrences = torch.bincount(items, minlength=Q.shape[0])[items]
        grad_D = torch.zeros_like(D).index_add_(0, items, grad_e / occurrences[:, None])
        grad_D += prox_mu * D  # the gradient of mu/2 ||D||^2 (0 without FedProx)
        D = D - lr * grad_D
        p = p - lr * grad_p
    return p, D, loss_sum


FLOAT_KINDS = ("values", "factors")  # parts a quantizer may encode
LAYOUTS = ("item", "factor")


@njit(cache=True)
def fill_rows(out, indptr, item, values, n_items, factor):
    """out[m] = client m's (N, k) table flattened item-major (value (i, j) at i k + j) or factor-major (j N + i),
    from its rows indptr[m]:indptr[m + 1]; out zeroed before (untouched rows stay zero)."""
    k = values.shape[1]
    for m in range(indptr.shape[0] - 1):
        for r in range(indptr[m], indptr[m + 1]):
            i = item[r]
            for j in range(k):
                out[m, payload_position(i, j, n_items, k, factor)] = values[r, j]


@njit(cache=True)
def gather_rows(data, indptr, item, n_items, factor, out):
    """The inverse of `fill_rows`: out[r] = the k values of row r (client m's item item[r]) read from client m's
    flattened table data[m], item-major or factor-major."""
    k = out.shape[1]
    for m in range(indptr.shape[0] - 1):
        for r in range(indptr[m], indptr[m + 1]):
            i = item[r]
            for j in range(k):
                out[r, j] = data[m, payload_position(i, j, n_items, k, factor)]


@dataclass(frozen=True, eq=False)
class RowBlock:
    """An (M, N * k) wire payload held by the rows the clients touched (every other value is zero).

    Client m's row flattens its (N, k) table item-major (`layout="item"`: value (i, j) at i * k + j, FedMF's
    Delta Q) or factor-major (`"factor"`: at j * N + i, CoLR's A sent column by column).
    """

    update: RowUpdate
    layout: str = "item"

    @property
    def shape(self) -> tuple[int, int]:
        M, N, k = self.update.shape
        return M, N * k

    def dense(self, clients: slice | None = None) -> torch.Tensor:
        X = self.update.dense(clients)
        X = X.transpose(1, 2) if self.layout == "factor" else X
        return X.reshape(X.shape[0], -1)


@dataclass(frozen=True, eq=False)
class Wire:
    name: str
    kind: str  # a labcore.net.message kind
    data: torch.Tensor | None  # (M, n) for uplink (one row per client), (1, n) for the broadcast; None if `rows`
    lengths: np.ndarray | None = None  # valid prefix per row; None = the whole row
    bits_per_value: int | None = None  # theoretical width if not the dtype's (e.g. a 1-bit mask)
    rows: RowBlock | None = None  # the same payload by touched rows
    # a value sent as zero arrives as zero (QSGD keeps a zero at zero); False after a noisy link, which can move a
    # zero level: then the payload cannot be read back onto the rows the clients touched
    exact_zeros: bool = True

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.data.shape) if self.data is not None else self.rows.shape

    @property
    def dtype(self) -> torch.dtype:
        return self.data.dtype if self.data is not None else self.rows.update.dtype

    def dense(self) -> torch.Tensor:
        """The (M, n) payload as one tensor (for the quantizer and encryption; clients x n large)."""
        return self.data if self.data is not None else self.rows.dense()

    def fill(self, a: int, b: int, out: torch.Tensor) -> None:
        """Write rows a..b-1 of the (M, n) payload into `out` (b - a, n), of any float dtype: from the rows when the
        payload is held by them (one compiled pass, no (M, n) table; float32 to float64 is exact)."""
        if self.data is not None:
            out.copy_(self.data[a:b])
            return
        u = self.rows.update
        lo, hi = int(u.indptr[a]), int(u.indptr[b])
        out.zero_()
        fill_rows(out.numpy(), u.indptr[a:b + 1] - lo, u.item[lo:hi].numpy(), u.values[lo:hi].numpy(),
                  u.n_items, self.rows.layout == "factor")

    def row(self, m: int) -> np.ndarray:
        r = (self.data[m] if self.data is not None else self.rows.dense(slice(m, m + 1))[0]).numpy()
        return r if self.lengths is None else r[: int(self.lengths[m])]

    def with_data(self, data: torch.Tensor, exact_zeros: bool = True) -> "Wire":
        return Wire(self.name, self.kind, data, self.lengths, self.bits_per_value, exact_zeros=exact_zeros)

    def onto_rows(self, rows: RowUpdate, width: int, layout: str) -> RowUpdate | None:
        """The (M, N * width) payload read back onto `rows` (which must hold every nonzero of it: the rows the
        clients touched), laid out as `layout` says; None when it cannot be (held by rows already, or a noisy
        link moved zeros). O(rows x width): no clients x items table is summed."""
        if self.data is None or not self.exact_zeros:
            return None
        if self.data.shape[0] != rows.n_clients or self.data.shape[1] < rows.n_items * width:
            raise ValueError(f"{self.name}: a payload of shape {tuple(self.data.shape)} cannot hold {rows.n_clients} "
                             f"clients' tables of {rows.n_items} x {width} values")  # the kernel reads unchecked
        out = torch.empty((int(rows.indptr[-1]), width), dtype=torch.float32)
        gather_rows(np.ascontiguousarray(self.data.to(torch.float32).numpy()), rows.indptr,
                    np.ascontiguousarray(rows.item.numpy()), rows.n_items, layout == "factor", out.numpy())
        return rows.with_values(out)


@dataclass(frozen=True, eq=False)
class RoundSetup:
    """What the server fixes at the start of a round (shared by the cohort)."""

    lowrank: LowRank | None = None
    seed: int | None = None
    extra: dict = field(default_factory=dict)


class FedMF:
    """Federated MF: clients send their full item-table update (CoLR Eq. 2 and 5)."""

    name = "fedmf"
    layout = "item"  # how the dense decode laid the cohort's updates out (the aggregate's summation order)

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

    # The same two steps from the rows the clients touched (every other row of X is zero), so that nothing
    # clients x items large is built. None: this codec has no row form (the engine encodes the dense table).
    # FedMF's uplink is the update itself, sent by rows; SVD / Top-K override both.
    def encode_rows(self, rows: RowUpdate) -> list[Wire] | None:
        if type(self).encode is not FedMF.encode:
            return None
        return [Wire("delta_Q", "values", None, rows=RowBlock(rows, "item"))]

    def decode_rows(self, wires: dict[str, Wire]) -> RowUpdate | None:
        """The per-client updates by rows, if the uplink arrived by rows (quantized parts arrive dense)."""
        w = wires.get("delta_Q")
        return w.rows.update if w is not None and w.rows is not None else None

    # client -> server
    def uplink(self, local: LocalResult, setup: RoundSetup) -> list[Wire]:
        wires = self.encode_rows(local.rows) if local.rows is not None else None
        return wires if wires is not None else self.encode(local.dense_update())

    def decode_onto(self, wires: dict[str, Wire], touched: RowUpdate) -> RowUpdate | None:
        """The per-client updates on the rows the clients touched (known to the server from the item mask), for a
        message that does not travel by rows but decodes onto them: a quantized update (every other value arrives
        as zero) or Top-K's. None: decode densely."""
        w = wires.get("delta_Q")
        if w is None or type(self).decode is not FedMF.decode or touched.received is not None:
            return None
        return w.onto_rows(touched, self.d, "item")

    def decode_uplink(self, wires: dict[str, Wire], setup: RoundSetup,
                      touched: RowUpdate | None = None) -> torch.Tensor | RowUpdate:
        """Per-client updates in the space the server averages: (M, N, k), or a RowUpdate when sent by rows or
        decoded onto the `touched` rows."""
        rows = self.decode_rows(wires)
        if rows is None and touched is not None:
            rows = self.decode_onto(wires, touched)
        return rows if rows is not None else self.decode(wires)

    # server -> clients
    def downlink(self, aggregate: torch.Tensor, setup: RoundSetup) -> list[Wire]:
        return self._down_codec().encode(aggregate[None])

    def downlink_delta(self, wires: dict[str, Wire], setup: RoundSetup) -> torch.Tensor:
        """The (N, d) change of the item table the broadcast stands for (`apply_downlink` adds it to Q)."""
        return self._down_codec().decode(wires)[0]

    def apply_downlink(self, Q: torch.Tensor, wires: dict[str, Wire], setup: RoundSetup) -> torch.Tensor:
        return Q + self.downlink_delta(wires, setup)
