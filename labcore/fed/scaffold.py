"""SCAFFOLD's control variates on the engine's item table (Karimireddy et al. 2020, Alg. 1, option II).

Client i corrects every local step by c - c_i (the server's variate minus its own), so each step moves the whole
item table, not only the rows its batch touched:

    y <- y - lr (g(y) + c - c_i)                       K_i steps (K_i: the steps client i actually took)
    c_i+ = c_i - c + (x - y_i) / (K_i lr)              option II
    x <- x + eta_g sum_i w_i (y_i - x)                 the engine's server step (server_lr, server_optimizer)
    c <- c + (1 / n_users) sum_i (c_i+ - c_i)          all users, not the cohort (the paper's N)

The drift c - c_i is constant within a round, so the compiled trainer keeps the gradient steps G_i apart from it
(`kernels.fused.full_rows_scaffold`): y_i - x = G_i - K_i lr (c - c_i), and option II reduces exactly to
c_i+ = -G_i / (K_i lr), which is zero off the rows client i touched this round. So every variate is stored by
rows, and the round's sums (the aggregate, the server's variate) are scatters of rows plus one dense term: no
clients x items table is ever built, while the ledger still charges each client's dense messages (y_i - x and
c_i+ - c_i, each items x d: SCAFFOLD doubles FedMF's uplink, and c doubles its downlink).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from numba import njit

from ..methods.base import Wire
from .updates import RowUpdate

_NO_ITEMS = np.zeros(0, dtype=np.int64)


@njit(cache=True)
def _two_sums(agg, change, item, values, ptr, w_agg, w_change):
    """agg[item[j]] += values[j] * w_agg[m] and change[item[j]] += values[j] * w_change[m] for client m's rows
    ptr[m]:ptr[m + 1], in one pass over the rows (each product rounded, then added: each target gets the bits of
    adding its scaled rows one by one, as `aggregate.rows_weighted_sum` does)."""
    for m in range(ptr.shape[0] - 1):
        a, b = w_agg[m], w_change[m]
        for j in range(ptr[m], ptr[m + 1]):
            i = item[j]
            for c in range(values.shape[1]):
                v = values[j, c]
                agg[i, c] += v * a
                change[i, c] += v * b


@dataclass(frozen=True, eq=False)
class ClientPayload:
    """An (M, N * d) float32 wire payload made client by client on demand (the ledger serializes one message
    of each shape; a test compares every client's against the dense reference)."""

    update: RowUpdate  # the round's rows: their dtype is the payload's
    make: Callable[[int], torch.Tensor]  # client m's (N, d) payload

    @property
    def shape(self) -> tuple[int, int]:
        M, N, d = self.update.shape
        return M, N * d

    def dense(self, clients: slice | None = None) -> torch.Tensor:
        lo, hi = (0, self.update.n_clients) if clients is None else (clients.start or 0, clients.stop)
        return torch.stack([self.make(m).reshape(-1) for m in range(lo, hi)]) if hi > lo else \
            torch.zeros(0, self.shape[1])


class ControlVariates:
    """The server's variate c (N, d) and every user's c_i, stored by the rows it touched when it last trained."""

    def __init__(self, n_users: int, n_items: int, dim: int):
        self.n_users, self.n_items, self.dim = n_users, n_items, dim
        self.c = torch.zeros(n_items, dim)
        self.items: list[np.ndarray | None] = [None] * n_users  # None: c_i = 0 (never trained)
        self.values: list[np.ndarray | None] = [None] * n_users

    # --- what the cohort's clients hold ------------------------------------------------------------------------
    def cohort_rows(self, clients: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The cohort's c_i as rows: client m's are ptr[m]:ptr[m + 1] (items ascending), with values."""
        items = [self.items[u] if self.items[u] is not None else _NO_ITEMS for u in clients]
        ptr = np.concatenate([[0], np.cumsum([len(a) for a in items])]).astype(np.int64)
        vals = [self.values[u] for u in clients if self.values[u] is not None]
        return (ptr, np.concatenate(items).astype(np.int64) if len(items) else _NO_ITEMS,
                np.concatenate(vals) if vals else np.zeros((0, self.dim), np.float32))

    def trainer_inputs(self, cohort: tuple, order: np.ndarray) -> tuple:
        """The compiled trainer's inputs (`kernels.fused.full_rows_scaffold`): c, and the cohort's c_i by rows
        (`cohort_rows`) with each client's first and end row in schedule order (`order`)."""
        ptr, item, val = cohort
        return (np.ascontiguousarray(self.c.numpy()), ptr[order], ptr[order + 1], item,
                np.ascontiguousarray(val, dtype=np.float32))

    # --- the round ------------------------------------------------------------------------------------------------
    def exchange(self, rows: RowUpdate, clients: np.ndarray, cohort: tuple, steps: np.ndarray, lr: float,
                 weights: torch.Tensor) -> tuple[list[Wire], torch.Tensor]:
        """After local training: the uplink's wires, the aggregate sum_i w_i (y_i - x), and the new variates
        (c and the cohort's c_i, stored). rows: the gradient steps G_i (client order); cohort: the c_i the clients
        trained with (`cohort_rows(clients)`); steps: K_i per client."""
        M, N, d = rows.shape
        K = steps.astype(np.float64)
        old_ptr, old_item, old_val = cohort
        ptr, item, G = np.asarray(rows.indptr), np.ascontiguousarray(rows.item.numpy()), rows.values.numpy()
        to_variate = (-1.0 / (K * lr)).astype(np.float32)  # c_i+ = -G_i / (K_i lr)
        c_old = self.c
        w = weights.to(torch.float64).numpy()

        # sum_i w_i (y_i - x) = sum_i w_i G_i + lr sum_i w_i K_i c_i - lr (sum_i w_i K_i) c, and
        # c <- c + (1 / n_users) sum_i (c_i+ - c_i): one pass over the new rows G, one over the old variates
        agg, change = np.zeros((N, d), np.float32), np.zeros((N, d), np.float32)
        _two_sums(agg, change, item, G, ptr, weights.to(torch.float32).numpy(), to_variate)
        _two_sums(agg, change, old_item, old_val, old_ptr, (lr * w * K).astype(np.float32),
                  np.full(M, -1.0, np.float32))
        agg -= np.float32(lr * float((w * K).sum())) * c_old.numpy()
        self.c = c_old + torch.from_numpy(change) / self.n_users

        def dense_rows(it, val, m_ptr, m, scale=np.float32(1.0)):
            out = torch.zeros(N, d)
            a, b = int(m_ptr[m]), int(m_ptr[m + 1])
            out[torch.from_numpy(it[a:b])] = torch.from_numpy(val[a:b] * scale)
            return out

        def delta_y(m):  # G_m - K_m lr (c - c_m)
            return dense_rows(item, G, ptr, m) - np.float32(K[m] * lr) * (c_old - dense_rows(old_item, old_val,
                                                                                                old_ptr, m))

        def delta_c(m):  # c_m+ - c_m
            return dense_rows(item, G, ptr, m, to_variate[m]) - dense_rows(old_item, old_val, old_ptr, m)

        wires = [Wire("delta_y", "values", None, rows=ClientPayload(rows, delta_y)),
                 Wire("delta_c", "values", None, rows=ClientPayload(rows, delta_c))]
        for m, u in enumerate(clients):  # each client keeps its own new variate (arrays of its own)
            a, b = int(ptr[m]), int(ptr[m + 1])
            self.items[u], self.values[u] = item[a:b].astype(np.int32), G[a:b] * to_variate[m]
        return wires, torch.from_numpy(agg)

    def broadcast(self) -> Wire:
        """c, sent to every client with the round's update (it corrects their next local steps)."""
        return Wire("control_c", "values", self.c.reshape(1, -1))

    # --- checkpoints ---------------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        users = np.array([u for u in range(self.n_users) if self.items[u] is not None], dtype=np.int64)
        ptr, item, val = self.cohort_rows(users)  # tensors: torch.save writes their storage as it is
        return {"c": self.c, "users": torch.from_numpy(users), "ptr": torch.from_numpy(ptr),
                "item": torch.from_numpy(item.astype(np.int32)), "values": torch.from_numpy(val)}

    def load_state_dict(self, st: dict) -> None:
        self.c = st["c"]
        self.items, self.values = [None] * self.n_users, [None] * self.n_users
        ptr, item, val = (np.asarray(st[k]) for k in ("ptr", "item", "values"))
        for j, u in enumerate(np.asarray(st["users"]).tolist()):
            a, b = int(ptr[j]), int(ptr[j + 1])
            self.items[u], self.values[u] = item[a:b].copy(), val[a:b].copy()

    def stored_rows(self) -> int:
        return sum(len(a) for a in self.items if a is not None)
