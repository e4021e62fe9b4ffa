"""The algorithms, one class each, every class overriding only the step it changes (Flower's `FedProx(FedAvg)`).

A round, as `Simulation.step` plays it:  downlink() -> local_train(ctx) [correct() inside every local step]
-> personalize(ctx, theta) -> uplink(theta, ctx) -> aggregate(parts, coef, ops) -> server_update(agg, ctx).
`theta` is the cohort's local models, shape (C, P); `ctx.active(t)` is 1 for clients still stepping at local
step t (stragglers stop early) and 0 after, so one masked update serves every client.

Sources (update rules as printed there):
  FedAvg      McMahan et al. 2017, Alg. 1 (server step size eta_g as Reddi et al. 2021, Alg. 1)
  FedProx     Li et al. 2020 (MLSys), Alg. 2: local objective F_k(w) + mu/2 ||w - w^t||^2
  SCAFFOLD    Karimireddy et al. 2020, Alg. 1, option II: c_i+ = c_i - c + (x - y_i) / (K eta_l)
  q-FedAvg    Li et al. 2020 (ICLR), Alg. 3, L = 1 / eta_l
  FedAvgM     Hsu et al. 2019: v <- beta v + Delta, x <- x + eta_g v
  FedAdam/Yogi Reddi et al. 2021, Alg. 2 (no bias correction, v_-1 = tau^2)
  Ditto       Li et al. 2021, Alg. 1 (global: FedAvg; personal: v <- v - eta (grad F_k(v) + lam (v - w^t)))
  pFedMe      Dinh et al. 2020, Alg. 1 (theta solves the Moreau subproblem in K inner steps)
  APFL        Deng et al. 2020, Alg. 1 with a fixed alpha
  Per-FedAvg  Fallah et al. 2020, first-order version (Hessian term dropped)
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..fed.algorithms import server_opt
from .config import FLConfig
from .problems import Batches


@dataclass(eq=False)
class RoundContext:
    round: int
    cohort: torch.Tensor  # (C,) ids of the clients that train and upload this round
    steps: torch.Tensor  # (C,) local steps each actually takes
    batches: Batches
    gen: torch.Generator

    def active(self, t: int, dtype=torch.float32) -> torch.Tensor:
        return (t < self.steps).to(dtype)[:, None]

    @property
    def max_steps(self) -> int:
        return int(self.steps.max()) if len(self.steps) else 0


class FedAvg:
    name = "fedavg"
    personalized = False
    batches_per_step = 1  # minibatches a local step reads
    server_step = "fedavg"  # the server's step from the mean update (`labcore.fed.algorithms.server_opt`, shared with the engine)

    def __init__(self, cfg: FLConfig, problem, n_clients: int):
        self.cfg, self.problem, self.N, self.P = cfg, problem, n_clients, problem.P
        self.w = problem.init(torch.Generator().manual_seed(cfg.seed))
        self.server = server_opt.make(self.server_step, lr=cfg.server_lr, momentum=cfg.server_momentum,
                                      beta1=cfg.beta1, beta2=cfg.beta2, tau=cfg.tau)

    # --- what the server sends ---------------------------------------------------------------------------------
    def downlink(self) -> dict[str, torch.Tensor]:
        return {"model": self.w}

    # --- local training ------------------------------------------------------------------------------------------
    def local_train(self, ctx: RoundContext) -> torch.Tensor:
        theta = self.w.expand(len(ctx.cohort), self.P).clone()
        for t in range(ctx.max_steps):
            g = self.correct(self.problem.grads(theta, ctx.batches, t), theta, ctx)
            theta = theta - self.cfg.lr * (ctx.active(t, theta.dtype) * g)
        return theta

    def correct(self, g: torch.Tensor, theta: torch.Tensor, ctx: RoundContext) -> torch.Tensor:
        """The local gradient a step follows (FedAvg: the plain minibatch gradient)."""
        return g

    def personalize(self, ctx: RoundContext, theta: torch.Tensor) -> None:
        """Update the clients' personal models after local training (global-model algorithms: nothing)."""

    # --- what the clients send and how the server combines it ---------------------------------------------------
    def uplink(self, theta: torch.Tensor, ctx: RoundContext) -> dict[str, torch.Tensor]:
        return {"delta": theta - self.w}

    def aggregate(self, parts: dict, coef: torch.Tensor, ops) -> dict[str, torch.Tensor]:
        return ops.mean(parts, coef)

    def server_update(self, agg: dict, ctx: RoundContext) -> None:
        self.w = self.w + self.server.step(agg["delta"])

    # --- evaluation ------------------------------------------------------------------------------------------------
    def personal_models(self) -> torch.Tensor | None:
        return None


class FedProx(FedAvg):
    name = "fedprox"

    def correct(self, g, theta, ctx):
        return g + self.cfg.mu * (theta - self.w)


class Scaffold(FedAvg):
    """Control variates c (server) and c_i (clients) start at zero; both travel, doubling each direction."""

    name = "scaffold"

    def __init__(self, cfg, problem, n_clients):
        super().__init__(cfg, problem, n_clients)
        self.c = torch.zeros(self.P, dtype=self.w.dtype)
        self.c_i = torch.zeros(n_clients, self.P, dtype=self.w.dtype)

    def downlink(self):
        return {"model": self.w, "control": self.c}

    def correct(self, g, theta, ctx):
        return g - self.c_i[ctx.cohort] + self.c  # y_i <- y_i - eta_l (g_i(y_i) - c_i + c)

    def uplink(self, theta, ctx):
        delta = theta - self.w
        k = ctx.steps.to(theta.dtype)[:, None]  # the steps this client actually took
        old = self.c_i[ctx.cohort]
        new = old - self.c - delta / (k * self.cfg.lr)  # option II: c_i - c + (x - y_i) / (K eta_l)
        self.c_i[ctx.cohort] = new
        return {"delta": delta, "dcontrol": new - old}

    def aggregate(self, parts, coef, ops):
        out = ops.mean({"delta": parts["delta"]}, coef)
        out["dcontrol"] = ops.total({"dcontrol": parts["dcontrol"]})["dcontrol"] / self.N  # (1/N) sum, not a mean
        return out

    def server_update(self, agg, ctx):
        super().server_update(agg, ctx)
        self.c = self.c + agg["dcontrol"]


class QFedAvg(FedAvg):
    """q-FedAvg: w <- w - sum_k Delta_k / sum_k h_k with Delta_k = F_k^q L (w - w_k),
    h_k = q F_k^(q-1) ||L (w - w_k)||^2 + L F_k^q, F_k the global model's loss on k's training data."""

    name = "qffl"

    def uplink(self, theta, ctx):
        q, L = self.cfg.q, 1.0 / self.cfg.lr
        F = self.problem.client_train_loss(self.w)[ctx.cohort].to(theta.dtype)[:, None] + 1e-10
        dw = L * (self.w - theta)
        fq = F.pow(q)
        h = q * F.pow(q - 1) * dw.pow(2).sum(1, keepdim=True) + L * fq
        return {"delta": fq * dw, "h": h}

    def aggregate(self, parts, coef, ops):
        return ops.total(parts)

    def server_update(self, agg, ctx):
        self.w = self.w - agg["delta"] / agg["h"][0]


class FedAvgM(FedAvg):
    name = "fedavgm"
    server_step = "fedavgm"


class FedAdam(FedAvg):
    name = "fedadam"
    server_step = "fedadam"


class FedYogi(FedAdam):
    name = "fedyogi"
    server_step = "fedyogi"


class _Personal(FedAvg):
    """Keeps one personal model per client (N, P); a client that never trained uses the global model."""

    personalized = True

    def __init__(self, cfg, problem, n_clients):
        super().__init__(cfg, problem, n_clients)
        self.v = torch.zeros(n_clients, self.P, dtype=self.w.dtype)
        self.seen = torch.zeros(n_clients, dtype=torch.bool)

    def _start(self, cohort):
        fresh = cohort[~self.seen[cohort]]
        self.v[fresh] = self.w
        self.seen[cohort] = True
        return self.v[cohort]

    def personal_models(self):
        return torch.where(self.seen[:, None], self.v, self.w[None, :])


class Ditto(_Personal):
    name = "ditto"

    def personalize(self, ctx, theta):
        v, w = self._start(ctx.cohort), self.w
        for t in range(ctx.max_steps):
            g = self.problem.grads(v, ctx.batches, t) + self.cfg.lam * (v - w)
            v = v - self.cfg.lr * (ctx.active(t, v.dtype) * g)
        self.v[ctx.cohort] = v


class PFedMe(_Personal):
    """Local step r: theta ~= argmin f(theta; D_r) + lam/2 ||theta - w_r||^2 (K inner steps, personal_lr),
    then w_r+1 = w_r - eta lam (w_r - theta). Server: w <- (1 - beta) w + beta mean(w_R)."""

    name = "pfedme"

    def local_train(self, ctx):
        w_loc = self.w.expand(len(ctx.cohort), self.P).clone()
        th = w_loc.clone()
        cfg = self.cfg
        for t in range(ctx.max_steps):
            a = ctx.active(t, w_loc.dtype)
            for _ in range(cfg.inner_steps):
                g = self.problem.grads(th, ctx.batches, t) + cfg.lam * (th - w_loc)
                th = th - cfg.personal_lr * (a * g)
            w_loc = w_loc - cfg.lr * cfg.lam * (a * (w_loc - th))
        self._start(ctx.cohort)
        self.v[ctx.cohort] = th
        return w_loc

    def server_update(self, agg, ctx):
        self.w = self.w + self.cfg.pfedme_beta * agg["delta"]


class APFL(_Personal):
    """Local: w_i <- w_i - eta grad f(w_i); v_i <- v_i - eta alpha grad f(alpha v_i + (1 - alpha) w_i).
    The personalized model is alpha v_i + (1 - alpha) w."""

    name = "apfl"

    def local_train(self, ctx):
        a_mix = self.cfg.apfl_alpha
        w_loc = self.w.expand(len(ctx.cohort), self.P).clone()
        v = self._start(ctx.cohort)
        for t in range(ctx.max_steps):
            a = ctx.active(t, w_loc.dtype)
            gw = self.problem.grads(w_loc, ctx.batches, t)
            gv = self.problem.grads(a_mix * v + (1 - a_mix) * w_loc, ctx.batches, t)
            w_loc = w_loc - self.cfg.lr * (a * gw)
            v = v - self.cfg.lr * (a * (a_mix * gv))
        self.v[ctx.cohort] = v
        return w_loc

    def personal_models(self):
        a = self.cfg.apfl_alpha
        return a * super().personal_models() + (1 - a) * self.w[None, :]


class PerFedAvg(FedAvg):
    """First-order Per-FedAvg: temp = w - alpha grad f(w; D), w <- w - beta grad f(temp; D'). Its personal model
    is one step w - alpha grad f_i(w; D_i) on each client's own minibatch."""

    name = "perfedavg"
    personalized = True
    batches_per_step = 2

    def local_train(self, ctx):
        theta = self.w.expand(len(ctx.cohort), self.P).clone()
        for t in range(ctx.max_steps):
            a = ctx.active(t, theta.dtype)
            temp = theta - self.cfg.personal_lr * self.problem.grads(theta, ctx.batches, 2 * t)
            theta = theta - self.cfg.lr * (a * self.problem.grads(temp, ctx.batches, 2 * t + 1))
        return theta

    def personal_models(self):
        everyone = torch.arange(self.N)
        gen = torch.Generator().manual_seed(self.cfg.seed + 7919)
        b = self.problem.draw(everyone, 1, self.cfg.batch_size, gen)
        w = self.w.expand(self.N, self.P)
        return w - self.cfg.personal_lr * self.problem.grads(w, b, 0)


class DPFedAvg(FedAvg):
    """User-level DP-FedAvg (McMahan et al. 2018; labcore.privacy.dp): each update clipped to clip_norm on the
    client, the sum (masked under secagg) plus N(0, dp_noise^2 clip_norm^2), divided by the expected cohort. The
    cohort is a Poisson sample (`Simulation.plan`)."""

    name = "dpfedavg"

    def aggregate(self, parts, coef, ops):
        from ..privacy import dp
        total = ops.total({"delta": dp.clip_updates(parts["delta"], self.cfg.clip_norm)})["delta"]
        g = torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + ops.round)
        noise = dp.gaussian(total.shape, self.cfg.dp_noise * self.cfg.clip_norm, g, total.dtype)
        return {"delta": (total + noise) / self.cfg.clients_per_round}

    def epsilon(self, rounds: int) -> float:
        from ..privacy import dp
        return dp.epsilon_rdp(self.cfg.clients_per_round / self.N, self.cfg.dp_noise, rounds, 1.0 / self.N)


STRATEGIES = {c.name: c for c in (FedAvg, FedProx, Scaffold, QFedAvg, FedAvgM, FedAdam, FedYogi, Ditto, PFedMe,
                                  APFL, PerFedAvg, DPFedAvg)}


def make(cfg: FLConfig, problem, n_clients: int) -> FedAvg:
    return STRATEGIES[cfg.algorithm](cfg, problem, n_clients)
