"""Quantized FedAvg of Eq. (2)-(3) over budgeted links, batched over trials and users.

    x~_{k,i} = Q_d(x_k) - gamma grad f_i(Q_d(x_k))      (each user: one gradient step from the broadcast)
    x_{k+1}  = (1/n) sum_i Q_u^(i)(x~_{k,i})             (the server averages the users' quantized models)

Q is the stochastic quantizer of Eq. (4)-(5) (`labcore.methods.quantize.quantize_levels`); its levels
cross the channel of Eq. (6) (`labcore.net.channel`). The broadcast is quantized once and every user
receives it through its own channel (independent noise when k_d > K_D). All trials and users advance
together as (trials, users, d) tensors: the only Python loop is over iterations.

The payload ledger serializes the messages of the first trial for real: per user and direction the
parts `norm` (32 bits), `sign` (2 bits a coordinate) and `levels` (d log2 k bits, Eq. 5's
variable-length count; the wire packs log2(k) + 1 bits a level, since levels run 0..k).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import pandas as pd
import torch

from ..methods.quantize import dequantize_levels, eq5_bits, pack_uint, quantize_levels
from ..net.channel import LinkModel, effective_omega
from ..net.ledger import Ledger
from ..net.message import Message, Part, array_part, serialize_part
from . import theory
from .config import WirelessConfig
from .data import Problem, make_problem

COLUMNS = ("iteration", "err", "err_lo", "err_hi", "bound")


def _generator(seed: int, stream: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed) * 1_000_003 + stream)


def quantized_message(direction: str, levels: np.ndarray, signs: np.ndarray, norm: float, k: int) -> Message:
    """One quantized vector as the parts of Eq. (5), with the theoretical bits of Eq. (5) on each part."""
    d = levels.shape[-1]
    bits = eq5_bits(d, k)
    sign_codes = np.where(signs, 2, np.where(levels > 0, 1, 0))  # sgn in {-1, 0, +1} as 2-bit codes
    return Message.of(direction, [
        array_part("norm", "scales", np.array([norm], dtype=np.float32)),
        Part("sign", "codes", pack_uint(sign_codes[None], 2)[0], int(bits["sign"])),
        Part("levels", "codes", pack_uint(levels[None], int(math.log2(k)) + 1)[0], int(math.ceil(bits["levels"]))),
    ])


def full_message(direction: str, x: np.ndarray) -> Message:
    """Full precision: the model as float32 values."""
    return Message.of(direction, [array_part("model", "values", x.astype(np.float32))])


class WirelessFedAvg:
    """Step by step: `step()` plays one round; `err` holds r_k / ||x*||^2 of every trial so far."""

    def __init__(self, cfg: WirelessConfig, problem: Problem | None = None, links: LinkModel | None = None):
        self.cfg = cfg
        self.problem = problem if problem is not None else make_problem(cfg)
        self.links = links if links is not None else LinkModel(cfg.budget_up_bits, cfg.budget_down_bits)
        self.gen = _generator(cfg.seed, 0)
        self.x = torch.zeros(cfg.trials, cfg.d, dtype=torch.float64)  # x_0 = 0: r_0 = ||x*||^2
        self.round = 0
        self.xs2 = float(self.problem.x_star.pow(2).sum())
        self.err = [np.ones(cfg.trials)]
        self.ledger = Ledger()

    # --- one link ----------------------------------------------------------------------------------
    def _send(self, direction: str, x: torch.Tensor, bits: int, receivers: int) -> torch.Tensor:
        """x (R, m, d) -> what `receivers` receivers decode (R, receivers, d), after quantizer and channel.

        m = 1 for the broadcast (one quantization, each receiver's own channel), m = users on the uplink."""
        cfg = self.cfg
        if bits == 0:
            self._record(direction, [full_message(direction, x[0, j].numpy()) for j in range(x.shape[1])], receivers)
            return x.expand(x.shape[0], receivers, x.shape[2]) if x.shape[1] == 1 else x
        k = 2**bits
        levels, signs, norms = quantize_levels(x, k, self.gen)
        self._record(direction, [quantized_message(direction, levels[0, j].numpy(), signs[0, j].numpy(),
                                                   float(norms[0, j]), k) for j in range(x.shape[1])], receivers)
        if x.shape[1] == 1 and receivers > 1:
            levels, signs, norms = (levels.expand(-1, receivers, -1), signs.expand(-1, receivers, -1),
                                    norms.expand(-1, receivers))
        levels = self.links.transmit(direction, levels, k, self.gen)
        return dequantize_levels(levels, signs, norms, k)

    def _record(self, direction: str, messages: list[Message], receivers: int) -> None:
        # the broadcast is one message downloaded by every user: counted once per receiving user
        times = receivers if len(messages) == 1 else 1
        for name in [p.name for p in messages[0].parts]:
            parts = [m[name] for m in messages]
            self.ledger.rows.append({"round": self.round, "direction": direction, "part": name,
                                     "kind": parts[0].kind, "messages": len(parts) * times,
                                     "bytes": sum(len(serialize_part(p)) for p in parts) * times,
                                     "bits": sum(p.bits for p in parts) * times})

    def step(self) -> None:
        cfg, P = self.cfg, self.problem
        xd = self._send("down", self.x[:, None, :], cfg.bits_down, cfg.users)  # Eq. (2): Q_d(x_k) at each user
        x_tilde = xd - cfg.gamma * P.gradient(xd)
        xu = self._send("up", x_tilde, cfg.bits_up, cfg.users)  # Q_u^(i)(x~_{k,i}) at the server
        self.x = xu.mean(1)  # Eq. (3)
        self.round += 1
        self.err.append(((self.x - P.x_star).pow(2).sum(1) / self.xs2).numpy())

    # --- the theory beside it -------------------------------------------------------------------------
    def omegas(self) -> tuple[float, float]:
        """(w_u, w_d) valid for quantizer + channel on each link (`labcore.net.channel.effective_omega`)."""
        cfg = self.cfg
        return (effective_omega(cfg.d, cfg.k_up, cfg.budget_up_bits),
                effective_omega(cfg.d, cfg.k_down, cfg.budget_down_bits))

    def bound(self, iterations: np.ndarray) -> np.ndarray:
        w_u, w_d = self.omegas()
        return theory.bound_curve(iterations, self.problem.mu, self.problem.L, self.cfg.gamma, w_u, w_d)

    def table(self) -> pd.DataFrame:
        """One row per iteration: mean, 10% and 90% quantiles of r_k / ||x*||^2 over trials, Theorem 1's bound."""
        E = np.stack(self.err)
        it = np.arange(E.shape[0])
        return pd.DataFrame({"iteration": it, "err": E.mean(1), "err_lo": np.quantile(E, 0.1, axis=1),
                             "err_hi": np.quantile(E, 0.9, axis=1), "bound": self.bound(it)})


def simulate(cfg: WirelessConfig, progress: Callable[[float], None] | None = None,
             problem: Problem | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Play `cfg.iterations` rounds; return (per-iteration table, payload ledger)."""
    from ..runtime import use_threads

    use_threads()  # one intra-op thread: these tensors are small (see labcore.runtime.use_threads)
    sim = WirelessFedAvg(cfg, problem)
    for t in range(cfg.iterations):
        sim.step()
        if progress is not None and (t % 10 == 9 or t == cfg.iterations - 1):
            progress((t + 1) / cfg.iterations)
    return sim.table(), sim.ledger.frame()


def error_floor(table: pd.DataFrame, tail: float = 0.25) -> float:
    """The mean of r_k / ||x*||^2 over the last `tail` of the iterations (the error neighbourhood we measure)."""
    n = max(1, int(len(table) * tail))
    return float(table["err"].iloc[-n:].mean())


def bits_per_round(ledger: pd.DataFrame) -> pd.DataFrame:
    """Measured bytes and Eq. (5) bits of one round, per direction and part (all users)."""
    one = ledger[ledger["round"] == ledger["round"].min()]
    return one.groupby(["direction", "part"], as_index=False)[["messages", "bytes", "bits"]].sum()
