"""Pure server-side aggregation math (tested on tiny hand-computed arrays).

Two layouts of the cohort's updates, the same numbers:

* dense (M, N, k) tensors: `weighted_sum`, `item_mean` (small cohorts, the dense codecs SVD / Top-K and
  the quantizer, tests);
* `RowUpdate` (the rows the clients touched): `rows_sum`, `rows_item_mean`, `rows_weighted_sum`, whose cost
  grows with the rows, not with clients x items.

`rows_sum` reproduces `dense.sum(0)` bit for bit. torch sums over the client axis with a fixed association
(ATen's cascade sum: runs of 16 clients, then levels of 16 runs; or, on some columns, four interleaved
partial sums), and adding an exact zero changes nothing, so the same tree evaluated on the non-zero rows
only gives the same bits. Which of torch's two trees a column uses depends on the tensor's layout, not on
the values; `_column_modes` asks torch once per shape with a small probe. The stored results of the lab
were computed with the dense sum: this keeps them valid.
"""
from __future__ import annotations

import torch

from .local_train import RowUpdate


def fedavg_weights(n_samples: torch.Tensor) -> torch.Tensor:
    """w_u = N_u / N over the round's cohort (CoLR Eq. 2)."""
    n = n_samples.to(torch.float64)
    return (n / n.sum()).to(torch.float32)


def weighted_sum(updates: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum_u w_u X_u for X of shape (M, ...)."""
    return torch.tensordot(weights.to(updates.dtype), updates, dims=1)


def item_mean(updates: torch.Tensor, touched: torch.Tensor) -> torch.Tensor:
    """Per item row: the sum over clients divided by how many clients touched that item.

    The CoLR reference aggregates this way: an item seen by one client of the
    cohort gets that client's full update instead of 1/M of it.
    updates: (M, N, k), touched: (M, N) bool.
    """
    counts = touched.sum(0).clamp(min=1).to(updates.dtype)
    return updates.sum(0) / counts[:, None]


def aggregate(updates, how: str, weights: torch.Tensor, touched: torch.Tensor | None,
              layout: str = "item") -> torch.Tensor:
    """updates: a dense (M, N, k) tensor or a RowUpdate (then `touched` is not needed and `layout` says how
    the former dense decode laid it out: "item" = contiguous (M, N, k), "factor" = (M, k, N) transposed)."""
    if how not in ("weighted", "item_mean"):
        raise ValueError(f"aggregation={how!r}: allowed values are item_mean, weighted")
    if isinstance(updates, RowUpdate):
        return rows_weighted_sum(updates, weights) if how == "weighted" else rows_item_mean(updates, layout)
    return weighted_sum(updates, weights) if how == "weighted" else item_mean(updates, touched)


# --- the row layout ----------------------------------------------------------------------------------------
def _segsum(keys: torch.Tensor, vals: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sums of runs of equal keys (keys non-decreasing), each added left to right from 0."""
    uk, inv = torch.unique_consecutive(keys, return_inverse=True)
    out = vals.new_zeros((uk.shape[0], vals.shape[1]))
    out.scatter_add_(0, inv[:, None].expand(-1, vals.shape[1]), vals)
    return uk, out


def _ordered_sum(parts: list[tuple[torch.Tensor, torch.Tensor]], k: int, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Per key, the sum of the parts' values in the order the parts are listed (missing parts skipped)."""
    parts = [(e, v) for e, v in parts if e.numel()]
    if not parts:
        return torch.zeros(0, dtype=torch.int64), torch.zeros(0, k, dtype=dtype)
    keys = torch.cat([e * len(parts) + j for j, (e, _) in enumerate(parts)])
    vals = torch.cat([v for _, v in parts])
    keys, perm = torch.sort(keys, stable=True)
    uk, s = _segsum(keys // len(parts), vals[perm])
    return uk, s


def _ceil_log2(n: int) -> int:
    return max(int(n - 1).bit_length(), 0) if n > 1 else 0


def _cascade(e: torch.Tensor, p: torch.Tensor, v: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ATen's multi-level cascade sum of n addends per key e, evaluated on the non-zero ones.

    Rows sorted by (e, p); p in 0..n-1 is the addend's position. Addends go into runs of 2^L (L =
    max(4, ceil(log2 n) / 4)); run sums into level-1 groups of 2^L runs, whose sums go into level-2 groups
    of 2^L, whose sums go into level 3; the final sum is ((rest + level 1) + level 2) + level 3.
    """
    k, dt = v.shape[1], v.dtype
    L = max(4, _ceil_log2(n) // 4)
    n_runs = n >> L
    span = max(n_runs, 1) + 1
    in_run = p < (n_runs << L)
    rest = _segsum(e[~in_run], v[~in_run])
    # runs: keyed (e, run)
    c = p[in_run] >> L
    ck, s0 = _segsum(e[in_run] * span + c, v[in_run])
    ce, c = ck // span, ck % span
    n_g1 = n_runs >> L  # complete level-1 groups
    g1 = c >> L
    done1 = g1 < n_g1
    a1 = _segsum(ce[~done1], s0[~done1])  # the level-1 accumulator still open at the end
    gk, s1 = _segsum(ce[done1] * span + g1[done1], s0[done1])
    ge, g1 = gk // span, gk % span
    n_g2 = n_g1 >> L
    g2 = g1 >> L
    done2 = g2 < n_g2
    a2 = _segsum(ge[~done2], s1[~done2])
    hk, s2 = _segsum(ge[done2] * span + g2[done2], s1[done2])
    a3 = _segsum(hk // span, s2)
    return _ordered_sum([rest, a1, a2, a3], k, dt)


def _interleaved(e: torch.Tensor, p: torch.Tensor, v: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ATen's row_sum: four interleaved cascades over n // 4 addends each (addend i -> partial i % 4), the
    addends beyond 4 (n // 4) added to partial 0, then ((p0 + p1) + p2) + p3."""
    k, dt = v.shape[1], v.dtype
    q = n // 4
    main = p < 4 * q
    em, pm, vm = e[main], p[main], v[main]
    key = em * 4 + pm % 4
    key, perm = torch.sort(key, stable=True)
    pk, ps = _cascade(key, pm[perm] // 4, vm[perm], q) if q else (key[:0], vm[:0])
    part, pe = pk % 4, pk // 4
    first = part == 0
    p0 = _ordered_sum([(pe[first], ps[first]), (e[~main], v[~main])], k, dt)
    return _ordered_sum([p0] + [(pe[part == j], ps[part == j]) for j in (1, 2, 3)], k, dt)


def _scatter_rows(n_items: int, k: int, dtype, keys: torch.Tensor, sums: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(n_items, k, dtype=dtype)
    out[keys] = sums
    return out


_MODES: dict[tuple, torch.Tensor] = {}


def _dense_layout(X: torch.Tensor, layout: str) -> torch.Tensor:
    """(M, N, k) values in the memory layout the former dense decode produced."""
    if layout == "factor":  # CoLR / SCoLR: (M, k, N) storage seen as (M, N, k)
        return X.transpose(1, 2).contiguous().transpose(1, 2)
    return X.contiguous()


def _column_modes(n_items: int, k: int, layout: str, dtype) -> torch.Tensor:
    """(N, k) bool: True where torch's sum over clients uses the interleaved tree for this shape and layout."""
    key = (n_items, k, layout, dtype, torch.get_num_threads())
    if key in _MODES:
        return _MODES[key]
    # 1 + 2^-24 rounds back to 1 (a tie, to even), 2^-24 + 2^-24 does not: in order 1 + e + e stays 1, with
    # addends 1 and 5 in the same interleaved partial the sum is 1 + 2^-23.
    n, eps = 16, 2.0**-24
    X = torch.zeros(n, n_items, k, dtype=dtype)
    X[0], X[1], X[5] = 1.0, eps, eps
    ref = _dense_layout(X, layout).sum(0)
    if not bool(((ref == 1.0) | (ref == 1.0 + 2 * eps)).all()):
        raise RuntimeError("the client sum of this torch build follows neither known order; "
                           "use the dense layout (labcore.fed.engine.Simulation(layout='dense'))")
    modes = ref != 1.0
    _MODES[key] = modes
    return modes


def _seq(tables) -> torch.Tensor:
    """t0 + t1 + ... added left to right (the order of an accumulator that starts at 0)."""
    it = iter(tables)
    acc = next(it).clone()
    for t in it:
        acc += t
    return acc


def _cascade_by_client(rows: RowUpdate) -> torch.Tensor:
    """(N, k): `_cascade` over all clients, from rows in their own (client, item) order, on dense tables.

    Runs of 2^L clients are contiguous in the rows: one scatter_add_ per level-1 group (2^L runs) sums each
    (run, item) left to right into a (2^L, N, k) table; the levels above add whole (N, k) tables in the same
    order as `_cascade`. Work: the rows once, plus one (N, k) addition per run; no sort, no gathered copy.
    """
    N, k, n, dt = rows.n_items, rows.width, rows.n_clients, rows.values.dtype
    L = max(4, _ceil_log2(n) // 4)
    size = 1 << L
    n_runs = n >> L
    ptr = rows.indptr

    def run_sums(c0: int, c1: int, run: int) -> torch.Tensor:
        """Sums per (run of `run` clients, item) of clients c0..c1-1: (ceil((c1 - c0) / run), N, k)."""
        a, b = int(ptr[c0]), int(ptr[c1])
        buf = torch.zeros(-(-(c1 - c0) // run) * N, k, dtype=dt)
        key = torch.div(rows.client[a:b] - c0, run, rounding_mode="floor") * N + rows.item[a:b]
        buf.scatter_add_(0, key[:, None].expand(-1, k), rows.values[a:b])  # in row order: clients ascending
        return buf.view(-1, N, k)

    zero = torch.zeros(N, k, dtype=dt)
    rest = run_sums(n_runs << L, n, n)[0] if n > n_runs << L else zero
    n_g1, n_g2 = n_runs >> L, (n_runs >> L) >> L
    a1 = _seq(run_sums(n_g1 << 2 * L, n_runs << L, size)) if n_runs > n_g1 << L else zero
    a2, a3, s1_open = zero, zero, []
    for g1 in range(n_g1):  # complete level-1 groups, one (2^L, N, k) table at a time
        s1 = _seq(run_sums(g1 << 2 * L, (g1 + 1) << 2 * L, size))
        if (g1 >> L) < n_g2:  # into a complete level-2 group
            s1_open.append(s1)
            if len(s1_open) == size:
                s2 = _seq(s1_open)
                a3 = s2 if a3 is zero else a3 + s2
                s1_open = []
        else:
            a2 = s1 if a2 is zero else a2 + s1
    return ((rest + a1) + a2) + a3


def rows_sum(rows: RowUpdate, layout: str = "item") -> torch.Tensor:
    """(N, k): the sum over clients of the row layout, bit for bit `rows.dense().sum(0)` in `layout`."""
    N, k, M, dt = rows.n_items, rows.width, rows.n_clients, rows.values.dtype
    if N * k == 1:  # a one-value table: torch reduces a contiguous vector another way; it is small anyway
        return _dense_layout(rows.dense(), layout).sum(0)
    out = _cascade_by_client(rows)
    modes = _column_modes(N, k, layout, dt)
    if modes.any():  # a few columns (table edges) use torch's interleaved tree: their items' rows only
        use = torch.nonzero(modes.any(1)[rows.item]).squeeze(1)
        item, perm = torch.sort(rows.item[use], stable=True)  # (item, client) order
        use = use[perm]
        inter = _scatter_rows(N, k, dt, *_interleaved(item, rows.client[use], rows.values[use], M))
        out = torch.where(modes, inter, out)
    return out


def rows_item_mean(rows: RowUpdate, layout: str = "item") -> torch.Tensor:
    counts = rows.item_counts().clamp(min=1).to(rows.values.dtype)
    return rows_sum(rows, layout) / counts[:, None]


def rows_weighted_sum(rows: RowUpdate, weights: torch.Tensor) -> torch.Tensor:
    """sum_u w_u X_u over the rows, clients added in order (equal to the dense tensordot to float rounding)."""
    w = weights.to(rows.values.dtype)[rows.client]
    item, perm = torch.sort(rows.item, stable=True)
    return _scatter_rows(rows.n_items, rows.width, rows.values.dtype,
                         *_segsum(item, rows.values[perm] * w[perm][:, None]))
