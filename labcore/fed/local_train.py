"""Local training of a whole cohort of clients at once (the hot path).

Model: matrix factorization with logits x_ui = p_u . q_i and binary cross-entropy on positives and sampled
negatives (NCF / CoLR). The item embedding a client trains is either

* full:      q_i = Q_i + D_i           (FedMF, SVD, Top-K: D is the local update)
* low-rank:  q_i = Q_i + B a_i         (CoLR / SCoLR: only A = [a_i] is trained)

Each method's local step is written once to be read, in its own file (`methods.base.train_client`,
`methods.colr.train_client`); `train_cohort_readable` runs the cohort through them. The engine's `train_cohort`
runs the same steps compiled (`kernels.fused`, `kernels.fused_lowrank`; `kernels.dispatch` picks one), the tests
checking each kernel against the readable form.

Rows are the (client, item) pairs the cohort touches, and nothing else: a client's update is zero on every item
outside its positives and sampled negatives, so the result is a `RowUpdate` (the touched rows, sorted by client
then item) and memory and time grow with the interactions touched, not with clients x items.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit

from ..methods import base as fedmf
from ..methods import colr
from .kernels.dispatch import choose_kernel
from .sampling import RoundPlan
from .updates import LocalResult, LowRank, RowUpdate, SummedRows
from .workspace import Workspace, take

__all__ = ["train_cohort", "train_cohort_readable", "LocalResult", "LowRank", "RowUpdate", "SummedRows"]


def touched_items(plan: RoundPlan, n_items: int) -> torch.Tensor:
    t = torch.zeros(plan.n_clients * n_items, dtype=torch.bool)
    t[torch.from_numpy(plan.sample_client.astype(np.int64) * n_items + plan.sample_item)] = True
    return t.view(plan.n_clients, n_items)


def touched_rows(plan: RoundPlan, n_items: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct (client, item) pairs of the round's samples, sorted, as keys client * N + item, and
    each sample's row among them."""
    keys = torch.from_numpy(plan.sample_client.astype(np.int64) * n_items + plan.sample_item)
    uniq, inverse = torch.unique(keys, sorted=True, return_inverse=True)
    return uniq, inverse


def _filled_slots(slots: np.ndarray, rows: int = 8192) -> int:
    """The schedule's non-padding slots, counted a block of rows at a time (a mask of the whole schedule is
    the size of a sample array: 18 MB at Pinterest's full participation, at the round's memory peak)."""
    return sum(int(np.count_nonzero(slots[i:i + rows] >= 0)) for i in range(0, slots.shape[0], rows))


@njit(cache=True)
def _client_first(sample_client, first):
    """first[m] = the index of client m's first sample (np.searchsorted's left side), in one pass that also checks
    that the samples are grouped by client (non-decreasing). Returns False, first unfinished, if they are not."""
    filled = 0
    for j in range(sample_client.shape[0]):
        c = sample_client[j]
        if c < filled - 1 or c >= first.shape[0] - 1:  # a descent, or a client outside 0..n_clients-1
            return False
        while filled <= c:
            first[filled] = j
            filled += 1
    while filled < first.shape[0]:
        first[filled] = sample_client.shape[0]
        filled += 1
    return True


def client_first(sample_client: np.ndarray, n_clients: int) -> np.ndarray | None:
    """Each client's first sample index (n_clients + 1 offsets) when the samples are grouped by client, else None."""
    first = np.empty(n_clients + 1, dtype=np.int64)
    return first if _client_first(sample_client, first) else None


def train_cohort(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                 lowrank: LowRank | None = None, workspace: Workspace | None = None,
                 prox_mu: float = 0.0, variates: tuple | None = None,
                 sum_on_arrival: tuple | None = None) -> LocalResult:
    """The engine's trainer: each client walks its steps in one compiled pass (`kernels.fused`, or
    `kernels.fused_lowrank` as `kernels.dispatch.choose_kernel` says), reading and writing its touched rows in
    place. The update of `train_cohort_readable` up to summation order; an item table in another dtype than
    float32 takes that readable path.
    prox_mu > 0: FedProx's local objective, + mu/2 ||item table - Q||^2 (the kernels apply its pull lazily).
    variates: SCAFFOLD's (c, ci_lo, ci_hi, ci_item, ci_val), the clients' rows in schedule order
    (`scaffold.ControlVariates.trainer_inputs`); the rows returned are then the gradient steps G alone.
    sum_on_arrival: (aggregation, the clients' weights[, DP's clip norm]) for a full item table (FedMF): the
    server's aggregate is summed as each client ends (each client's rows clipped first, with a clip norm), and the
    rows returned are `SummedRows` (no per-client rows are kept)."""
    from .kernels import fused, fused_lowrank

    if Q.dtype != torch.float32:  # the kernels are float32 like every run; other dtypes take the readable path
        if variates is not None:
            raise ValueError(f"variates need a float32 item table (got {Q.dtype}): SCAFFOLD's correction is in the "
                             "compiled trainer only")
        if sum_on_arrival is not None:
            raise ValueError(f"sum_on_arrival needs a float32 item table (got {Q.dtype}): the sum is taken in the "
                             "compiled trainer")
        return train_cohort_readable(Q, p0, plan, lr, weight_decay, lowrank, prox_mu)
    M, (N, d) = plan.n_clients, Q.shape
    first = plan.first if plan.first is not None else client_first(plan.sample_client, M)
    item_bits = None
    if first is None:  # samples not grouped by client (no plan of ours does this)
        uniq, _ = touched_rows(plan, N)
        row_first = np.searchsorted((uniq // N).numpy(), np.arange(M + 1)).astype(np.int64)
        row_item = (uniq % N).numpy()
    else:
        row_first, row_item, item_bits = fused.touched_rows_grouped(first, plan.sample_item, N, workspace)
    if sum_on_arrival is not None:
        if lowrank is not None or variates is not None or prox_mu:
            raise ValueError("sum_on_arrival: only a full item table (FedMF) without SCAFFOLD or FedProx is summed on "
                             "arrival")
        return _train_summed(Q, p0, plan, lr, weight_decay, row_first, row_item, item_bits, *sum_on_arrival)
    order_t = torch.from_numpy(plan.order)
    p = np.ascontiguousarray(p0[order_t].numpy(), dtype=np.float32)
    Qn = np.ascontiguousarray(Q.numpy())
    label = np.ascontiguousarray(plan.sample_label, dtype=np.float32)
    sched = (plan.slots, plan.sample_item, label, row_item, plan.n_active.astype(np.int64),
             plan.offsets.astype(np.int64), lr, 2.0 * weight_decay, prox_mu)
    B = None if lowrank is None else np.ascontiguousarray(lowrank.B.to(torch.float32).numpy())
    # the update table, trained in place by the kernel; not zeroed: each client zeroes its rows just before it trains
    W = take(workspace, "W", (row_item.shape[0], d if B is None else B.shape[1]), np.float32)
    rows = RowUpdate.from_offsets(M, N, row_first, torch.from_numpy(row_item), torch.from_numpy(W), item_bits)
    row_lo, row_hi = rows.indptr[plan.order], rows.indptr[plan.order + 1]  # each client's rows, in schedule order
    if variates is not None and (B is not None or prox_mu):
        raise ValueError("SCAFFOLD's variates need the full item table (FedMF) and prox_mu=0")
    kernel = choose_kernel(low_rank=B is not None, rank=0 if B is None else B.shape[1], prox_mu=prox_mu,
                           scaffold=variates is not None)
    if kernel == "full_scaffold":
        loss_sum = fused.full_rows_scaffold(Qn, W, row_lo, row_hi, p, *sched[:-1], *variates)
    elif kernel == "full":
        loss_sum = fused.full_rows(Qn, W, row_lo, row_hi, p, *sched)
    else:
        row_scale = np.ascontiguousarray((lowrank.col_mask * lowrank.grad_scale[:, None]).to(torch.float32)[order_t])
        if kernel == "lowrank_small":
            loss_sum = fused_lowrank.lowrank_rows_small(Qn, B, row_scale, W, row_lo, row_hi, p, *sched[:-1])
        else:
            loss_sum = fused.lowrank_rows(Qn, B, row_scale, W, row_lo, row_hi, p, *sched)
    back = torch.from_numpy(np.argsort(plan.order))
    filled = plan.n_filled if plan.n_filled >= 0 else _filled_slots(plan.slots)
    return LocalResult(torch.from_numpy(p)[back], None, None, loss_sum, filled, rows)


def _train_summed(Q, p0, plan, lr, weight_decay, row_first, row_item, item_bits, how, weights, clip=math.inf
                  ) -> LocalResult:
    """`train_cohort` of a full item table with the server's sum taken as each client ends
    (`kernels.fused.full_rows_summed`); clip: each client's rows clipped to that norm first (DP, weighted)."""
    from .kernels import fused

    if how not in ("item_mean", "weighted"):
        raise ValueError(f"aggregation={how!r}: allowed values are item_mean, weighted")
    if not math.isinf(clip) and how != "weighted":
        raise ValueError(f"aggregation={how!r}: clipped rows are summed 'weighted' only (DP's fixed denominator)")
    M = plan.n_clients
    position = np.argsort(plan.order)  # client m's place in the schedule
    p = np.ascontiguousarray(p0[torch.from_numpy(plan.order)].numpy(), dtype=np.float32)
    w = weights.to(torch.float32) if how == "weighted" else None
    loss_sum, total, count, first_rows = fused.full_rows_summed(
        np.ascontiguousarray(Q.numpy()), row_first, position, p, plan.slots, plan.sample_item,
        np.ascontiguousarray(plan.sample_label, dtype=np.float32), row_item, plan.n_active.astype(np.int64),
        plan.offsets.astype(np.int64), lr, 2.0 * weight_decay, None if w is None else w.numpy(), clip)
    rows = SummedRows.from_sum(M, row_first, torch.from_numpy(row_item), item_bits, how, torch.from_numpy(total),
                               torch.from_numpy(count) if how == "item_mean" else None, torch.from_numpy(first_rows),
                               w, clip)
    filled = plan.n_filled if plan.n_filled >= 0 else _filled_slots(plan.slots)
    return LocalResult(torch.from_numpy(p)[torch.from_numpy(position)], None, None, loss_sum, filled, rows)


def client_batches(plan: RoundPlan, m: int, dtype: torch.dtype = torch.float32):
    """Client m's local steps as (items, labels), in the order it takes them (its epochs' shuffled batches)."""
    items_all = torch.from_numpy(plan.sample_item.astype(np.int64))
    labels_all = torch.from_numpy(plan.sample_label).to(dtype)
    steps = plan.steps
    for t in range(int(plan.n_steps[m])):
        idx = torch.from_numpy(steps[t, m][steps[t, m] >= 0])
        yield items_all[idx], labels_all[idx]


def train_cohort_readable(Q: torch.Tensor, p0: torch.Tensor, plan: RoundPlan, lr: float, weight_decay: float,
                          lowrank: LowRank | None = None, prox_mu: float = 0.0) -> LocalResult:
    """Every client of the cohort through its method's readable local step, one after the other
    (`methods.base.train_client`: FedMF, SVD, Top-K; `methods.colr.train_client`: CoLR, SCoLR). The rows kept are
    the items each client's samples touch: its update is zero elsewhere."""
    M, N = plan.n_clients, Q.shape[0]
    ps, items, values, loss_sum, n_samples = [], [], [], 0.0, 0
    for m in range(M):
        batches = list(client_batches(plan, m, Q.dtype))
        if lowrank is None:
            p, update, loss = fedmf.train_client(Q, p0[m], batches, lr, weight_decay, prox_mu)
        else:
            scale = (lowrank.col_mask[m] * lowrank.grad_scale[m]).to(Q.dtype)
            p, update, loss = colr.train_client(Q, p0[m], batches, lr, weight_decay, lowrank.B.to(Q.dtype), scale,
                                                prox_mu)
        touched = torch.unique(torch.cat([i for i, _ in batches])) if batches else torch.zeros(0, dtype=torch.int64)
        ps.append(p), items.append(touched), values.append(update[touched])
        loss_sum += loss
        n_samples += sum(len(i) for i, _ in batches)
    counts = np.array([len(i) for i in items], dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    rows = RowUpdate.from_offsets(M, N, indptr, torch.cat(items), torch.cat(values))
    return LocalResult(torch.stack(ps) if ps else p0.clone(), None, None, loss_sum, n_samples, rows)
