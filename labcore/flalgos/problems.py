"""What local training differentiates, for a whole cohort at once.

Client models are rows of one tensor `theta` of shape (clients, P) (a flat parameter vector per client).
`Classifier.grads` is the closed-form gradient of the mean cross-entropy for every row at once (batched
matmuls, `torch.bmm`), each row with its own minibatch gathered from the flat sample table; tests check it
against `torch.func.vmap(torch.func.grad(loss))` (autograd). `Quadratic.grads` is one batched matmul.
No Python loop over clients.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from .tasks import FedData, Quadratics


@dataclass(frozen=True, eq=False)
class Batches:
    """The minibatches of a cohort for a round: idx[t, c] are client c's sample rows at local step t."""

    idx: torch.Tensor | None  # (K, C, B) int64 rows of the flat train table (None: full gradients)
    poison: torch.Tensor | None = None  # (K, C, B) bool: sample carries the trigger and the target label
    piece: torch.Tensor | None = None  # (C,) which trigger piece the client stamps (-1: the whole trigger)
    steps: torch.Tensor | None = None  # (C,) local steps each client takes (set by the simulation)


class Classifier:
    """Multinomial logistic regression or a one-hidden-layer ReLU MLP on a FedData, parameters flattened."""

    def __init__(self, data: FedData, model: str = "logreg", hidden: int = 32, target_label: int = 0):
        self.data, self.model, self.hidden = data, model, hidden
        d, k = data.n_features, data.n_classes
        self.shapes = [(d, k), (k,)] if model == "logreg" else [(d, hidden), (hidden,), (hidden, k), (k,)]
        self.P = sum(math.prod(s) for s in self.shapes)
        self.dtype = torch.float32
        self.target_label = target_label
        self.trigger_features, self.trigger_value, self.trigger_pieces = _trigger(data)
        self._vgrad = vmap(grad(self.loss))
        self._vloss = vmap(self.loss)

    # --- the model ---------------------------------------------------------------------------------------------
    def unflatten(self, theta: torch.Tensor) -> list[torch.Tensor]:
        out, pos = [], 0
        for s in self.shapes:
            n = math.prod(s)
            out.append(theta[pos : pos + n].reshape(s))
            pos += n
        return out

    def logits(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        p = self.unflatten(theta)
        if self.model == "logreg":
            return x @ p[0] + p[1]
        return torch.relu(x @ p[0] + p[1]) @ p[2] + p[3]

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(self.logits(theta, x), y)

    def init(self, gen: torch.Generator) -> torch.Tensor:
        """Logistic regression starts at zero (as FedProx); the MLP at PyTorch's uniform(+-1/sqrt(fan_in))."""
        if self.model == "logreg":
            return torch.zeros(self.P, dtype=self.dtype)
        parts = []
        for s in self.shapes:
            bound = 1 / math.sqrt(self.shapes[0][0] if s in (self.shapes[0], self.shapes[1]) else self.hidden)
            parts.append((torch.rand(math.prod(s), generator=gen) * 2 - 1) * bound)
        return torch.cat(parts).to(self.dtype)

    # --- minibatches -------------------------------------------------------------------------------------------
    def draw(self, cohort: torch.Tensor, steps: int, batch: int, gen: torch.Generator,
             attackers: torch.Tensor | None = None, poison_frac: float = 0.0, dba: bool = False) -> Batches:
        """Uniform minibatches with replacement from each client's own rows; attackers stamp the trigger on a
        `poison_frac` share of theirs (DBA: attacker j stamps piece j mod 4)."""
        off, n = self.data.train_offsets[cohort], self.data.train_sizes[cohort]
        u = torch.rand(steps, len(cohort), batch, generator=gen, dtype=torch.float64)
        idx = off[None, :, None] + (u * n[None, :, None]).long()
        if attackers is None or not bool(attackers.any()):
            return Batches(idx)
        poison = (torch.rand(idx.shape, generator=gen) < poison_frac) & attackers[None, :, None]
        piece = torch.where(attackers, cohort % len(self.trigger_pieces), -1) if dba else torch.full_like(cohort, -1)
        return Batches(idx, poison, piece)

    def batch(self, b: Batches, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = self.data.x_train[b.idx[t]], self.data.y_train[b.idx[t]]
        if b.poison is not None:
            x, y = self.stamp(x, y, b.poison[t], b.piece)
        return x, y

    def stamp(self, x, y, mask, piece):
        """Put the trigger (or the client's piece of it) on the masked samples and relabel them."""
        x = x.clone()
        for j, feats in enumerate([self.trigger_features] + self.trigger_pieces):
            rows = mask & ((piece == -1) if j == 0 else (piece == j - 1))[:, None]
            if bool(rows.any()):
                sel = x[rows]
                sel[:, feats] = self.trigger_value
                x[rows] = sel
        return x, torch.where(mask, torch.full_like(y, self.target_label), y)

    def grads(self, theta: torch.Tensor, b: Batches, t: int) -> torch.Tensor:
        x, y = self.batch(b, t)
        return self.batched_grad(theta, x, y)

    def autograd_grads(self, theta: torch.Tensor, b: Batches, t: int) -> torch.Tensor:
        """The same gradients through autograd (vmap of grad): the test oracle."""
        x, y = self.batch(b, t)
        return self._vgrad(theta, x, y)

    def batched_grad(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """d/dtheta of mean CE for each row: theta (C, P), x (C, B, d), y (C, B). Hand-written backprop:
        vmap(grad) measured ~50x slower here (CPU, small shapes)."""
        C, B = x.shape[:2]
        p = self.unflatten_rows(theta)
        if self.model == "logreg":
            z = torch.baddbmm(p[1][:, None, :], x, p[0])
        else:
            a = torch.baddbmm(p[1][:, None, :], x, p[0])
            h = torch.relu(a)
            z = torch.baddbmm(p[3][:, None, :], h, p[2])
        g = torch.softmax(z, -1)
        g.scatter_add_(2, y[..., None], torch.full((C, B, 1), -1.0, dtype=g.dtype))
        g = g / B  # d(mean CE)/dz
        if self.model == "logreg":
            return torch.cat([torch.bmm(x.transpose(1, 2), g).reshape(C, -1), g.sum(1)], 1)
        da = torch.bmm(g, p[2].transpose(1, 2)) * (a > 0)
        return torch.cat([torch.bmm(x.transpose(1, 2), da).reshape(C, -1), da.sum(1),
                          torch.bmm(h.transpose(1, 2), g).reshape(C, -1), g.sum(1)], 1)

    def unflatten_rows(self, theta: torch.Tensor) -> list[torch.Tensor]:
        out, pos = [], 0
        for s in self.shapes:
            n = math.prod(s)
            out.append(theta[:, pos : pos + n].reshape(theta.shape[0], *s))
            pos += n
        return out

    def batch_loss(self, theta: torch.Tensor, b: Batches, t: int) -> torch.Tensor:
        x, y = self.batch(b, t)
        return self._vloss(theta, x, y)

    # --- evaluation ----------------------------------------------------------------------------------------------
    def client_train_loss(self, theta: torch.Tensor) -> torch.Tensor:
        """(N,) mean training loss of the one model `theta` on every client's training rows."""
        with torch.no_grad():
            nll = F.cross_entropy(self.logits(theta, self.data.x_train), self.data.y_train, reduction="none")
            owner = self.data.client_of_train()
            s = torch.zeros(self.data.n_clients, dtype=nll.dtype).index_add_(0, owner, nll)
        return s / self.data.train_sizes.to(nll.dtype)

    def client_train_acc(self, theta: torch.Tensor) -> torch.Tensor:
        """(N,) accuracy of the one model `theta` on every client's training rows (many more rows than the test
        split: the fairness measure that is not mostly sampling noise)."""
        with torch.no_grad():
            hit = (self.logits(theta, self.data.x_train).argmax(1) == self.data.y_train).double()
            s = torch.zeros(self.data.n_clients, dtype=torch.float64).index_add_(0, self.data.client_of_train(), hit)
        return s / self.data.train_sizes.double()

    def test_weights(self) -> torch.Tensor:
        return self.data.test_sizes.double()

    def client_test_acc(self, theta: torch.Tensor) -> torch.Tensor:
        """(N,) test accuracy per client: one model `theta` (P,) for all, or one row per client (N, P)."""
        with torch.no_grad():
            owner = self.data.client_of_test()
            if theta.dim() == 1:
                pred = self.logits(theta, self.data.x_test).argmax(1)
            else:  # per-client models: each test row through its owner's model (batched matmul per layer)
                pred = self._rowwise_logits(theta[owner], self.data.x_test).argmax(1)
            hit = (pred == self.data.y_test).to(torch.float64)
            s = torch.zeros(self.data.n_clients, dtype=torch.float64).index_add_(0, owner, hit)
        return s / self.data.test_sizes.clamp(min=1).to(torch.float64)

    def _rowwise_logits(self, thetas: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return vmap(lambda th, xi: self.logits(th, xi[None])[0])(thetas, x)

    def backdoor_success(self, theta: torch.Tensor) -> float:
        """Share of test samples whose label is not the target that the model sends to the target once stamped."""
        keep = self.data.y_test != self.target_label
        x = self.data.x_test[keep].clone()
        x[:, self.trigger_features] = self.trigger_value
        with torch.no_grad():
            pred = self.logits(theta, x).argmax(1)
        return float((pred == self.target_label).float().mean())


def _trigger(data: FedData) -> tuple[list[int], float, list[list[int]]]:
    """A 2 x 4 pixel block in the top-left corner of square images (DBA: four 2-pixel pieces); for other
    features the first 8. The value is the data's maximum (a saturated pixel)."""
    d = data.n_features
    side = int(round(math.sqrt(d)))
    if side * side == d and side >= 4:
        feats = [r * side + c for r in range(2) for c in range(4)]
    else:
        feats = list(range(min(8, d)))
    value = float(data.x_train.max())
    pieces = [feats[i::4] for i in range(4)] if len(feats) >= 4 else [feats]
    return feats, value, pieces


class Quadratic:
    """Full gradients of f_k(x) = 1/2 (x - b_k)^T A_k (x - b_k), float64, for any rows of clients."""

    def __init__(self, q: Quadratics):
        self.q = q
        self.P = int(q.b.shape[1])
        self.dtype = torch.float64

    def init(self, gen: torch.Generator) -> torch.Tensor:
        return torch.zeros(self.P, dtype=self.dtype)

    def draw(self, cohort, steps, batch, gen, attackers=None, poison_frac=0.0, dba=False) -> Batches:
        return Batches(None, piece=cohort)  # deterministic: the cohort is all a step needs

    def grads(self, theta: torch.Tensor, b: Batches, t: int) -> torch.Tensor:
        c = b.piece
        return torch.einsum("cij,cj->ci", self.q.A[c], theta - self.q.b[c])

    def client_train_loss(self, theta: torch.Tensor) -> torch.Tensor:
        d = theta[None, :] - self.q.b
        return 0.5 * torch.einsum("ki,kij,kj->k", d, self.q.A, d)

    def distance(self, theta: torch.Tensor) -> float:
        return float(torch.linalg.vector_norm(theta - self.q.x_star))
