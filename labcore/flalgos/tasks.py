"""Federated datasets: FedProx's Synthetic(alpha, beta), digits with label or quantity skew, MNIST / FEMNIST
files (see `files.py`), and heterogeneous quadratics.

A classification task is one flat array of samples ordered by client with `offsets` (client k owns rows
offsets[k]:offsets[k+1]), so batches of many clients are one gather.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True, eq=False)
class FedData:
    name: str
    x_train: torch.Tensor  # (n, d) float32, rows ordered by client
    y_train: torch.Tensor  # (n,) int64
    train_offsets: torch.Tensor  # (N + 1,) int64
    x_test: torch.Tensor
    y_test: torch.Tensor
    test_offsets: torch.Tensor
    n_classes: int

    @property
    def n_clients(self) -> int:
        return int(self.train_offsets.numel() - 1)

    @property
    def n_features(self) -> int:
        return int(self.x_train.shape[1])

    @property
    def train_sizes(self) -> torch.Tensor:
        return self.train_offsets[1:] - self.train_offsets[:-1]

    @property
    def test_sizes(self) -> torch.Tensor:
        return self.test_offsets[1:] - self.test_offsets[:-1]

    def client_of_train(self) -> torch.Tensor:
        return torch.repeat_interleave(torch.arange(self.n_clients), self.train_sizes)

    def client_of_test(self) -> torch.Tensor:
        return torch.repeat_interleave(torch.arange(self.n_clients), self.test_sizes)

    def summary(self) -> dict:
        n = self.train_sizes.numpy()
        return {"task": self.name, "clients": self.n_clients, "features": self.n_features, "classes": self.n_classes,
                "train samples": int(n.sum()), "test samples": int(self.test_sizes.sum()),
                "samples/client (min, median, max)": (int(n.min()), int(np.median(n)), int(n.max()))}


def from_client_lists(name: str, xs: list, ys: list, n_classes: int, train_share: float = 0.9) -> FedData:
    """Per-client arrays -> FedData; each client's first `train_share` of rows train, the rest test."""
    trx, tr_y, tex, te_y, ntr, nte = [], [], [], [], [], []
    for x, y in zip(xs, ys):
        k = int(train_share * len(y))
        trx.append(x[:k]), tr_y.append(y[:k]), tex.append(x[k:]), te_y.append(y[k:])
        ntr.append(k), nte.append(len(y) - k)
    off = lambda n: torch.from_numpy(np.concatenate([[0], np.cumsum(n)]).astype(np.int64))  # noqa: E731
    cat = lambda a, dt: torch.from_numpy(np.concatenate(a).astype(dt))  # noqa: E731
    return FedData(name, cat(trx, np.float32), cat(tr_y, np.int64), off(ntr), cat(tex, np.float32),
                   cat(te_y, np.int64), off(nte), n_classes)


# --- FedProx's Synthetic(alpha, beta) -----------------------------------------------------------------------
def synthetic(alpha: float, beta: float, n_clients: int = 30, seed: int = 0, dim: int = 60,
              n_classes: int = 10) -> FedData:
    """Li et al. (FedProx, 2020), Section 5.1 and their generator: device k draws u_k ~ N(0, alpha),
    B_k ~ N(0, beta); W_k (60x10) and b_k have entries ~ N(u_k, 1); v_k entries ~ N(B_k, 1);
    x ~ N(v_k, Sigma) with Sigma = diag(j^-1.2); y = argmax softmax(W_k x + b_k). Sizes follow a power law:
    lognormal(4, 2) + 50 samples per device. 90 % of each device's samples train, 10 % test."""
    rng = np.random.default_rng(seed)
    sizes = rng.lognormal(4, 2, n_clients).astype(int) + 50
    mean_w = rng.normal(0, alpha, n_clients)
    big_b = rng.normal(0, beta, n_clients)
    sd = np.sqrt(np.power(np.arange(1, dim + 1, dtype=np.float64), -1.2))
    xs, ys = [], []
    for k in range(n_clients):
        w = rng.normal(mean_w[k], 1, (dim, n_classes))
        b = rng.normal(mean_w[k], 1, n_classes)
        v = rng.normal(big_b[k], 1, dim)
        x = v + rng.standard_normal((sizes[k], dim)) * sd  # diagonal covariance
        xs.append(x)
        ys.append(np.argmax(x @ w + b, axis=1))  # argmax of softmax = argmax of logits
    return from_client_lists(f"synthetic({alpha:g},{beta:g})", xs, ys, n_classes)


# --- splitting a centralized dataset over clients -------------------------------------------------------------
def split_indices(y: np.ndarray, n_clients: int, split: str, alpha: float, seed: int,
                  min_size: int = 10) -> list[np.ndarray]:
    """Client index lists: Dirichlet(alpha) label skew (per class, shares over clients; Hsu et al. 2019 with
    NIID-Bench's cap of n / N samples per client), Dirichlet(alpha) quantity skew (sizes only, labels IID,
    `min_size` guaranteed) or IID.
    Redrawn until every client holds `min_size` samples."""
    rng = np.random.default_rng(seed)
    n, classes = len(y), np.unique(y)
    if n < n_clients * min_size:
        raise ValueError(f"n_clients={n_clients} is invalid: {n} samples cannot give every client {min_size}")
    for _ in range(1000):
        parts = [[] for _ in range(n_clients)]
        if split == "dirichlet":
            for c in classes:
                idx = rng.permutation(np.flatnonzero(y == c))
                cut = (np.cumsum(rng.dirichlet(np.full(n_clients, alpha))) * len(idx)).astype(int)[:-1]
                for k, chunk in enumerate(np.split(idx, cut)):
                    parts[k].extend(chunk.tolist())
        else:
            share = rng.dirichlet(np.full(n_clients, alpha)) if split == "quantity" else np.full(n_clients,
                                                                                                1 / n_clients)
            # quantity skew: min_size each, the rest by the Dirichlet shares (so tiny alphas never starve a client)
            sizes = min_size + np.floor(share * (n - n_clients * min_size)).astype(int)
            cut = np.cumsum(sizes)[:-1]
            parts = [c.tolist() for c in np.split(rng.permutation(n), cut)]
        if min(len(p) for p in parts) >= min_size:
            return [rng.permutation(np.asarray(p, dtype=np.int64)) for p in parts]
    raise ValueError(f"dirichlet_alpha={alpha} is invalid here: no draw in 1000 gave all {n_clients} clients "
                     f"{min_size} samples; raise dirichlet_alpha or lower n_clients")


def split_dataset(name: str, x: np.ndarray, y: np.ndarray, n_clients: int, split: str, alpha: float, seed: int,
                  n_classes: int, train_share: float = 0.8) -> FedData:
    parts = split_indices(y, n_clients, split, alpha, seed)
    return from_client_lists(name, [x[p] for p in parts], [y[p] for p in parts], n_classes, train_share)


def digits(n_clients: int = 30, split: str = "dirichlet", alpha: float = 0.5, seed: int = 0) -> FedData:
    """scikit-learn's 1797 8x8 digits (pixels / 16), split over clients; 80 % of each client's samples train."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return split_dataset(f"digits/{split}", x / 16.0, y, n_clients, split, alpha, seed, 10)


# --- heterogeneous quadratics ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Quadratics:
    """f_k(x) = 1/2 (x - b_k)^T A_k (x - b_k); the average's optimum x* = (sum A_k)^-1 sum A_k b_k."""

    A: torch.Tensor  # (N, P, P) float64, symmetric positive definite
    b: torch.Tensor  # (N, P)
    x_star: torch.Tensor  # (P,)

    @property
    def n_clients(self) -> int:
        return int(self.A.shape[0])


def quadratics(n_clients: int = 10, dim: int = 10, hetero: float = 1.0, seed: int = 0,
               eig_range: tuple[float, float] = (0.5, 2.0)) -> Quadratics:
    """Each client its own curvature (random rotation, eigenvalues in eig_range) and optimum b_k ~ N(0, hetero^2):
    different curvatures are what makes FedAvg's fixed point miss x* (equal A_k would not)."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(n_clients, dim, dim, generator=g, dtype=torch.float64))
    lo, hi = eig_range
    eig = lo + (hi - lo) * torch.rand(n_clients, dim, generator=g, dtype=torch.float64)
    A = q @ torch.diag_embed(eig) @ q.transpose(1, 2)
    A = (A + A.transpose(1, 2)) / 2
    b = hetero * torch.randn(n_clients, dim, generator=g, dtype=torch.float64)
    x_star = torch.linalg.solve(A.sum(0), torch.einsum("kij,kj->i", A, b))
    return Quadratics(A, b, x_star)
