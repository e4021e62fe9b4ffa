"""`STTConfig`: one frozen, validated description of a two-tower run (the core `RunConfig` pattern)."""
from __future__ import annotations

import typing
from dataclasses import dataclass, fields

from ..typed_config import TypedConfig, build, check_choices, check_ranges, check_types, fail, hash_key

FRAMEWORKS = ("centralized", "fl", "sttfedrec", "fcf", "fedmvmf")
TOWER_KINDS = ("dssm", "clsm")
DATASETS = ("ml-1m", "synthetic")
CHAIN_MODES = ("shares", "relay")
LABELS = {"centralized": "{T}", "fl": "FL-{T}", "sttfedrec": "STTFedRec-{T}", "fcf": "FCF", "fedmvmf": "FedMVMF"}


@dataclass(frozen=True)
class STTConfig(TypedConfig):
    framework: str = "sttfedrec"  # centralized, fl (naive FL two-tower), sttfedrec, fcf (federated MF), fedmvmf
    tower: str = "dssm"  # dssm or clsm (two-tower frameworks)
    # data
    dataset: str = "synthetic"
    synthetic_users: int = 300
    synthetic_items: int = 400
    data_seed: int = 0
    history: int = 5  # profile titles per user (user features; not training targets)
    n_features: int = 4096  # hashed letter-trigram buckets
    # requests (section 3.3 step 2)
    request_size: int = 10  # T: items per request (the paper's local batch size)
    rho: float = 0.9  # share of non-clicked items in a request (the paper's "negative sampling rate")
    batches_per_round: int = 1  # requests per client per round (its gradient is their mean)
    clients_per_round: int = 50  # K
    rounds: int = 200  # federated rounds (fcf: rounds of the core MF engine)
    # optimisation: FedAdam (Eq. 13-15) for the federated frameworks, Adam for centralized
    lr: float = 1e-3
    lr_decay: float = 0.01  # lr_t = lr * (1 - lr_decay) ** (t // decay_every)
    decay_every: int = 10
    beta1: float = 0.9
    beta2: float = 0.99
    tau: float = 1e-8
    dropout: float = 0.2
    init_std: float = 0.1
    gamma: float = 10.0  # softmax smoothing factor on the cosine (DSSM's gamma; Eq. 8 as printed is gamma = 1)
    # centralized training
    epochs: int = 1
    central_batch: int = 256  # requests per step
    max_steps: int = 0  # stop the centralized training after this many steps (0: all epochs)
    # FCF / FedMVMF
    mf_dim: int = 64
    private_lr: float = 0.05  # FedMVMF: SGD step of the private user vector on the device
    # the secure-aggregation chain (STTFedRec)
    chain_every: int = 0  # run the real chain on every n-th round (0: never; those rounds sum directly)
    chain_mode: str = "shares"
    ring_bits: int = 64
    frac_bits: int = 24
    # evaluation and measurement
    eval_every: int = 50
    eval_users: int = 1000  # users of the periodic evaluation (0 = all); the final evaluation uses all
    ledger_every: int = 0  # serialize every client's messages on every n-th round (0: first round only)
    seed: int = 0

    def __post_init__(self):
        _validate(self)

    # --- derived ---------------------------------------------------------------------------------
    @property
    def n_click(self) -> int:
        """Clicked items per request: round((1 - rho) T), at least 1."""
        return max(1, int(round((1.0 - self.rho) * self.request_size)))

    @property
    def n_neg(self) -> int:
        return self.request_size - self.n_click

    @property
    def effective_rho(self) -> float:
        return self.n_neg / self.request_size

    def label(self) -> str:
        return LABELS[self.framework].format(T=self.tower.upper())

    # --- identity ----------------------------------------------------------------------------------
    def key(self) -> str:
        d = {k: v for k, v in self.to_dict().items() if k not in _NOT_IN_KEY}
        return hash_key(d)


_NOT_IN_KEY = ("eval_users", "ledger_every")  # what is measured, not what is trained
FIELD_NAMES = tuple(f.name for f in fields(STTConfig))
_TYPES = typing.get_type_hints(STTConfig)
_CHOICES = {"framework": FRAMEWORKS, "tower": TOWER_KINDS, "dataset": DATASETS, "chain_mode": CHAIN_MODES}
_RANGES = {
    "synthetic_users": (10, 10**6), "synthetic_items": (20, 10**6), "history": (0, 100), "n_features": (16, 1 << 22),
    "request_size": (2, 10_000), "batches_per_round": (1, 1000), "clients_per_round": (2, 10**6),
    "rounds": (1, 10**7), "decay_every": (1, 10**7), "epochs": (1, 1000), "central_batch": (1, 1 << 20), "max_steps": (0, 10**8),
    "mf_dim": (1, 4096), "chain_every": (0, 10**7), "ring_bits": (16, 64), "frac_bits": (0, 60),
    "eval_every": (1, 10**7), "eval_users": (0, 10**7), "ledger_every": (0, 10**7), "data_seed": (0, 2**63 - 1),
    "seed": (0, 2**63 - 1),
}
_UNIT = ("rho", "lr_decay", "dropout", "beta1", "beta2")  # in [0, 1)
_POSITIVE = ("lr", "tau", "init_std", "gamma", "private_lr")
# init_std beyond ~10 saturates the towers' tanh at the first step; the others far beyond any run of the paper
_AT_MOST = {"lr": 1e4, "tau": 1.0, "init_std": 10.0, "gamma": 1e4, "private_lr": 1e4}


def _validate(c: STTConfig) -> None:
    check_types(c, _TYPES)
    check_choices(c, _CHOICES)
    check_ranges(c, _RANGES, positive=_POSITIVE, at_most=_AT_MOST)
    for name in _UNIT:
        if not 0 <= getattr(c, name) < 1:
            fail(name, getattr(c, name), "allowed range is [0, 1)")
    if c.frac_bits >= c.ring_bits - 1:
        fail("frac_bits", c.frac_bits, f"must be < ring_bits - 1 = {c.ring_bits - 1}")
    if c.n_neg < 1:
        fail("rho", c.rho, f"leaves no non-clicked item in a request of {c.request_size}: raise rho or request_size")


def from_dict(d: dict) -> STTConfig:
    return build(STTConfig, d)
