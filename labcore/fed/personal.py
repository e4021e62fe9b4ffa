"""Personal models on the recommendation engine (FedMF): Ditto (Li et al. 2021, "Ditto: fair and robust FL through
personalization") and APFL (Deng et al. 2020, "Adaptive personalized federated learning").

Every user also keeps a personal model: its own copy V_u of the item table and its own user vector. When sampled,
a client first trains and sends the global update as usual (FedAvg); then, on the same batches, it trains its
personal model on its data with Ditto's pull toward the round's global table:

    V_u <- V_u - lr (grad of the client's loss at V_u + lambda (V_u - Q))

the loss and its scaling those of the engine's local training (`methods.base.train_client`: mean BCE, lr
times the batch size, item gradients averaged over an item's samples in the batch, L2 weight decay), the pull over
the whole table as FedProx's. Nothing personal leaves the device: the ledger is unchanged. With lambda = 0 the
personal model is local training alone; as lambda grows it approaches the global model. Personalized quality
(`hr_personal`, `ndcg_personal`, by `metrics.hit_ratio_ndcg` with every user's own table): every user ranked with
its own (V_u, personal user vector); users never sampled hold the initial global model.

APFL (`personalization="apfl"`, mixing weight alpha = `apfl_alpha`, fixed; the paper also offers learning it):
the personal model is the mixture alpha v + (1 - alpha) w of the user's own model v = (V_u, its user vector) and
its local copy w of the global model (the item table and the user's FedMF vector). A sampled client follows
Algorithm 1: at every local step, on the same batch, w takes the global algorithm's step and v takes

    v <- v - lr alpha (grad of the client's loss at alpha v + (1 - alpha) w)

with w the local copy as it moves during the round (`train_apfl` replays the global local step beside the personal
one; the replay equals the round's global training, tested). Personal quality ranks every user with
alpha v + (1 - alpha) w of the current global table and the user's current vector. alpha = 0 is the global model;
alpha = 1 is local training alone (Ditto with lambda = 0).

Vectorized across the cohort: one batch step of all clients is a few tensor operations on (M, B) samples and the
(M, N, d) personal tables; no Python loop over clients. Every user's table is kept in memory (n_users x items x d
floats; pFedMe's personal models too), so `config.check_personal` refuses data sets where that does not fit
(MovieLens-1M at d = 64: 5.3 GiB).
"""
from __future__ import annotations

import numpy as np
import torch

from .memory import PERSONAL_LIMIT, table_bytes  # noqa: F401  (the limit the config checks)


class PersonalModels:
    """Every user's personal item table and user vector (float32), starting from the initial global model; `kind`
    "ditto" (pull `lam`), "apfl" (mixing weight `alpha`) or "pfedme" (trained in `meta_train`, kept here)."""

    def __init__(self, Q0: torch.Tensor, P0: torch.Tensor, kind: str = "ditto", lam: float = 0.0,
                 alpha: float = 1.0):
        self.V = Q0[None].expand(P0.shape[0], -1, -1).clone()
        self.p = P0.clone()
        self.kind = kind
        self.lam, self.alpha = (lam, 1.0) if kind == "ditto" else (0.0, alpha)

    def tables(self, Q: torch.Tensor):
        """The item tables users rank with, given the current global table Q: (n_users, N, d), or for APFL the
        function of (users, items) that mixes those rows (`metrics.hit_ratio_ndcg` takes either)."""
        if self.kind != "apfl":
            return self.V
        return lambda u, items: self.alpha * self.V[u, items] + (1 - self.alpha) * Q[items]

    def users(self, P: torch.Tensor) -> torch.Tensor:
        """The user vectors users rank with, given the global model's (APFL mixes them too)."""
        return self.p if self.kind != "apfl" else self.alpha * self.p + (1 - self.alpha) * P

    def store(self, clients: np.ndarray, Q: torch.Tensor, row_client: torch.Tensor, row_item: torch.Tensor,
              rows: torch.Tensor, p: torch.Tensor) -> None:
        """pFedMe: the cohort's personal models are the round's Q with the rows they moved (`meta_train`)."""
        c = torch.from_numpy(np.asarray(clients, dtype=np.int64))
        V = Q[None].expand(len(c), -1, -1).clone()
        V[row_client, row_item] = rows
        self.V[c], self.p[c] = V, p

    def quality(self, sim) -> dict:
        """HR@k and NDCG@k with every user ranked by its own personal model."""
        from ..metrics import hit_ratio_ndcg

        d = sim.data
        hr, ndcg = hit_ratio_ndcg(self.users(sim.P), self.tables(sim.Q), d.test_items, d.test_negatives,
                                  sim.cfg.top_k)
        return {"hr_personal": hr, "ndcg_personal": ndcg}

    def state_dict(self) -> dict:
        return {"V": self.V, "p": self.p}

    def load_state_dict(self, st: dict) -> None:
        self.V, self.p = st["V"], st["p"]

    def train(self, clients: np.ndarray, Q: torch.Tensor, P: torch.Tensor, plan, lr: float, weight_decay: float,
              prox_mu: float = 0.0) -> None:
        """The cohort's personal steps on the round's batches (`plan`), from the round's global table Q and the
        users' global vectors P (all users') as they were before the round's local training."""
        c = torch.from_numpy(np.asarray(clients, dtype=np.int64))
        if self.kind == "apfl":
            V, p, _, _ = train_apfl(self.V[c], self.p[c], Q, P[c], plan, lr, weight_decay, self.alpha, prox_mu)
        else:
            V, p = train_personal(self.V[c], self.p[c], Q, plan, lr, weight_decay, self.lam)
        self.V[c], self.p[c] = V, p


def cohort_steps(plan, n_items: int, dtype):
    """The cohort's local steps, all clients at once: for each step, which of its (M, B) slots hold a sample (the
    rest is padding), each client's batch size (M,), the slots' items and labels, and each slot's row of a
    (client, item) table (client x n_items + item)."""
    items_all = torch.from_numpy(plan.sample_item.astype(np.int64))
    labels_all = torch.from_numpy(plan.sample_label).to(dtype)
    rows = torch.arange(plan.steps.shape[1])
    for idx in torch.from_numpy(plan.steps):  # (M, B) sample indices, -1 = padding
        valid = idx >= 0
        items = items_all[idx.clamp(min=0)]
        yield valid, valid.sum(1), items, labels_all[idx.clamp(min=0)], rows[:, None] * n_items + items


def train_personal(V: torch.Tensor, p: torch.Tensor, Q: torch.Tensor, plan, lr: float, weight_decay: float,
                   lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Ditto: V (M, N, d), p (M, d): the cohort's personal models after their local steps (new tensors).

    The pull lam (V - Q) moves every row of an active client's table at every step; kept as one scale per client
    (V = Q + s_m D, the pull multiplies s_m by 1 - lr lam), so that a step costs the rows its batch touches, not
    the whole table. The same steps as the dense update, to float rounding."""
    M, N, d = V.shape
    D = (V - Q).reshape(M * N, d)  # s_m D_m = V_m - Q
    s = torch.ones(M, dtype=torch.float64)
    p = p.clone()
    keep = 1.0 - lr * lam
    for valid, bs, items, y, key in cohort_steps(plan, N, V.dtype):
        active = bs > 0
        e = Q[items] + s.to(V.dtype)[:, None, None] * D[key]  # (M, B, d): the personal rows
        x = (p[:, None, :] * e).sum(-1)
        g = (torch.sigmoid(x) - y) * valid  # dBCE/dx per sample (the batch mean's 1 / bs cancels lr x bs)
        # user vector: lr x (mean over the batch of g e + 2 wd u)
        grad_p = (g[..., None] * e).sum(1) / bs.clamp(min=1).to(V.dtype)[:, None] + 2 * weight_decay * p
        # item rows: lr x (mean over the item's samples of g u + 2 wd e), each distinct (client, item) once
        uniq, inv = torch.unique(key[valid], return_inverse=True)
        sums = torch.zeros(len(uniq), d, dtype=V.dtype).index_add_(0, inv, (g[..., None] * p[:, None, :])[valid])
        count = torch.bincount(inv, minlength=len(uniq)).to(V.dtype)
        client = uniq // N
        row_now = Q[uniq % N] + s.to(V.dtype)[client, None] * D[uniq]
        grad_rows = sums / count[:, None] + 2 * weight_decay * row_now
        p = torch.where(active[:, None], p - lr * grad_p, p)
        s = torch.where(active, s * keep, s)  # the pull on the whole table, then the rows' gradient step
        D[uniq] -= (lr * grad_rows) / s.to(V.dtype)[client, None]
        small = s < 1e-12  # fold a vanishing scale into its table before it underflows
        if bool(small.any()):
            D.view(M, N, d)[small] *= s[small].to(V.dtype)[:, None, None]
            s = torch.where(small, torch.ones_like(s), s)
    return Q + s.to(V.dtype)[:, None, None] * D.view(M, N, d), p


def train_apfl(V: torch.Tensor, p: torch.Tensor, Q: torch.Tensor, p_global: torch.Tensor, plan, lr: float,
               weight_decay: float, alpha: float, prox_mu: float = 0.0):
    """APFL's local steps (Deng et al. 2020, Algorithm 1, alpha fixed) for the cohort. The client's local copy of the
    global model, w = (W, p_w), starts at the round's global table Q and the client's own user vector p_global (M, d);
    its personal model v = (V, p) is V (M, N, d), p (M, d). At every step, on the same batch, both from the step's
    start:

        w <- w - lr grad f(w)                                   FedMF's local step (with FedProx's pull if prox_mu)
        v <- v - lr alpha grad f(alpha v + (1 - alpha) w)       the personal step through the mixed model

    The mixture takes both parts of the model: the item rows and the user vector. Returns the personal model's new
    (V, p), and the local copy's (W - Q, p_w), which is the round's global local training replayed (tested equal to
    it). W is held as Q + s Dw with one scale per client, so that FedProx's pull on the whole table costs nothing
    per row, as in `train_personal`."""
    M, N, d = V.shape
    D = (V - Q).reshape(M * N, d)  # V = Q + D
    Dw = torch.zeros(M * N, d, dtype=V.dtype)  # W = Q + s Dw
    s = torch.ones(M, dtype=torch.float64)
    p, pw = p.clone(), p_global.clone()
    keep = 1.0 - lr * prox_mu
    for valid, bs, items, y, key in cohort_steps(plan, N, V.dtype):
        active = bs > 0
        scale = s.to(V.dtype)
        e_w = Q[items] + scale[:, None, None] * Dw[key]  # (M, B, d): the local copy's rows
        e_m = alpha * (Q[items] + D[key]) + (1 - alpha) * e_w  # the mixed model's rows
        p_m = alpha * p + (1 - alpha) * pw  # and its user vector
        g_w = (torch.sigmoid((pw[:, None, :] * e_w).sum(-1)) - y) * valid  # dBCE/dx per sample
        g_m = (torch.sigmoid((p_m[:, None, :] * e_m).sum(-1)) - y) * valid
        n = bs.clamp(min=1).to(V.dtype)[:, None]
        grad_pw = (g_w[..., None] * e_w).sum(1) / n + 2 * weight_decay * pw
        grad_p = alpha * ((g_m[..., None] * e_m).sum(1) / n + 2 * weight_decay * p_m)
        uniq, inv = torch.unique(key[valid], return_inverse=True)  # each distinct (client, item) once
        count = torch.bincount(inv, minlength=len(uniq)).to(V.dtype)[:, None]
        client = uniq // N
        row_w = Q[uniq % N] + scale[client, None] * Dw[uniq]
        row_m = alpha * (Q[uniq % N] + D[uniq]) + (1 - alpha) * row_w
        sum_w = torch.zeros(len(uniq), d, dtype=V.dtype).index_add_(0, inv, (g_w[..., None] * pw[:, None, :])[valid])
        sum_m = torch.zeros(len(uniq), d, dtype=V.dtype).index_add_(0, inv, (g_m[..., None] * p_m[:, None, :])[valid])
        grad_w = sum_w / count + 2 * weight_decay * row_w
        grad_v = alpha * (sum_m / count + 2 * weight_decay * row_m)
        pw = torch.where(active[:, None], pw - lr * grad_pw, pw)
        p = torch.where(active[:, None], p - lr * grad_p, p)
        s = torch.where(active, s * keep, s)  # FedProx's pull on the whole local copy, then its rows' step
        Dw[uniq] -= (lr * grad_w) / s.to(V.dtype)[client, None]
        D[uniq] -= lr * grad_v
        small = s < 1e-12  # fold a vanishing scale into its table before it underflows
        if bool(small.any()):
            Dw.view(M, N, d)[small] *= s[small].to(V.dtype)[:, None, None]
            s = torch.where(small, torch.ones_like(s), s)
    W_update = s.to(V.dtype)[:, None, None] * Dw.view(M, N, d)
    return Q + D.view(M, N, d), p, W_update, pw
