"""`WirelessConfig`: one run of quantized FedAvg over budgeted links, frozen and validated.

Bits are written as in the report: "8 bits" is k = 2^8 quantization levels, a budget of 8 bits is
K = 2^8 levels the link delivers error-free. `bits_* = 0` means full precision on that link (no
quantizer), `budget_*_bits = 0` an unlimited (error-free) link. The step size is given as gamma * L
(the report's worked examples use gamma = 1/(4L), i.e. step = 0.25).

The report does not state d, the number of users or the iterations. We take d = 200: with kappa = 2
and gamma = 1/(4L) Theorem 1's conditions then need k_u >= 2^5.37 (the report's Table 1 threshold)
and k_d >= 2^6.41 (the report prints 2^6.43; no single d gives both at gamma = 1/(4L)).
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, fields

from ..methods.quantize import MAX_LEVELS_LOG2
from ..typed_config import TypedConfig, build, check_ranges, check_types, fail, hash_key


@dataclass(frozen=True)
class WirelessConfig(TypedConfig):
    # the task: linear regression with condition number kappa (Hessian spectrum spread evenly on [mu, L])
    d: int = 200
    users: int = 1
    samples: int = 400  # rows of each user's data
    kappa: float = 2.0
    mu: float = 1.0  # scale of the spectrum; L = kappa * mu
    label_noise: float = 0.1  # makes the users' own optima differ from x* (non-IID users)
    data_seed: int = 0
    # FedAvg of Eq. (2)-(3): one local gradient step per round
    step: float = 0.25  # gamma * L
    iterations: int = 200
    # quantization (k = 2^bits levels; 0 = full precision) and link budgets (K = 2^bits; 0 = no limit)
    bits_up: int = 0
    bits_down: int = 0
    budget_up_bits: int = 0
    budget_down_bits: int = 0
    # repetitions averaged into E[r_k] (one batch, not a loop) and the randomness of the quantizers/channel
    trials: int = 20
    seed: int = 0

    def __post_init__(self):
        check_types(self, _TYPES)
        check_ranges(self, _RANGES)
        if not 1.0 <= self.kappa <= 1e4:
            fail("kappa", self.kappa, "allowed range is 1..10000 (the condition number L / mu)")
        if not 0.0 < self.step < 2.0:
            fail("step", self.step, "gamma * L must be in (0, 2) for gradient descent to converge "
                                    "(Theorem 1 needs it below 0.5)")
        if not 0.0 < self.mu <= 1e3:
            fail("mu", self.mu, "must be > 0 and <= 1000")
        if not 0.0 <= self.label_noise <= 10.0:
            fail("label_noise", self.label_noise, "allowed range is 0..10")
        if self.samples * self.users < self.d:
            fail("samples", self.samples, f"users * samples must be >= d = {self.d} so that the problem has a "
                                          "unique optimum")

    @property
    def L(self) -> float:
        return self.kappa * self.mu

    @property
    def gamma(self) -> float:
        return self.step / self.L

    @property
    def k_up(self) -> float:
        return float("inf") if self.bits_up == 0 else 2**self.bits_up

    @property
    def k_down(self) -> float:
        return float("inf") if self.bits_down == 0 else 2**self.bits_down

    def key(self) -> str:
        return hash_key(self.to_dict(), "wireless-")

    def label(self) -> str:
        def side(b, K):
            q = "full" if b == 0 else f"{b} bits"
            return q if K == 0 else f"{q} (budget {K})"
        return f"up {side(self.bits_up, self.budget_up_bits)}, down {side(self.bits_down, self.budget_down_bits)}"


_TYPES = typing.get_type_hints(WirelessConfig)
_RANGES = {"d": (2, 5000), "users": (1, 256), "samples": (1, 100_000), "data_seed": (0, 2**63 - 1),
           "iterations": (1, 100_000), "bits_up": (0, MAX_LEVELS_LOG2), "bits_down": (0, MAX_LEVELS_LOG2),
           "budget_up_bits": (0, MAX_LEVELS_LOG2), "budget_down_bits": (0, MAX_LEVELS_LOG2),
           "trials": (1, 10_000), "seed": (0, 2**63 - 1)}
FIELD_NAMES = tuple(f.name for f in fields(WirelessConfig))


def from_dict(d: dict) -> WirelessConfig:
    """A config from a dict of values or strings (URL, CLI); unknown fields list the valid ones."""
    return build(WirelessConfig, d)
