"""Typed, frozen, validated run configuration.

A `RunConfig` is the single description of an experiment: the engine, the CLI, the notebooks and the app all
build one. It is hashable, so its `key()` names the on-disk result cache, and it round-trips to a URL query
string (the app keeps its whole state in the URL).

Its fields come in groups, each a small dataclass in its own module that checks its own values:

    data.py           DataConfig           the data set and its seed
    method.py         MethodConfig         the compression method: CoLR, SCoLR, SVD, Top-K, FedMF; quantization
    training.py       TrainingConfig       rounds, cohorts, local steps, evaluation, the seed
    algorithm.py      AlgorithmConfig      FedProx, the server optimizers, SCAFFOLD, q-FFL, personal models
    heterogeneity.py  HeterogeneityConfig  stragglers and dropout
    adversary.py      AdversaryConfig      the backdoor attacks and the robust aggregators
    network.py        NetworkConfig        bandwidths, the wall-clock model, the quantized messages' channel
    privacy.py        PrivacyConfig        encryption, secure aggregation, differential privacy

`RunConfig` is all of them at once: it inherits their fields, so every field keeps its flat name (`cfg.rank`,
`labcore train --rank 8`, `?rank=8`), and `cfg.group("privacy")` gives one group on its own.
"""
from __future__ import annotations

import functools
import typing
from dataclasses import dataclass, fields

from ..fed.kernels.dispatch import SMALL_RANK, choose_kernel  # noqa: F401  (SMALL_RANK: importers find it here)
from ..net.budget import exceeds
from ..typed_config import ConfigError, TypedConfig, build, coerce, hash_key  # noqa: F401  (ConfigError: re-export)
from .adversary import ATTACKS, DEFENSES, AdversaryConfig, check_robust  # noqa: F401
from .algorithm import (PERSONALIZATIONS, SERVER_OPTIMIZERS, AlgorithmConfig, check_algorithm,  # noqa: F401
                        check_personal, check_prox_pull)
from .data import DATASETS, SYNTHETIC_SIZES, DataConfig  # noqa: F401
from .heterogeneity import STRAGGLER_POLICIES, HeterogeneityConfig  # noqa: F401
from .method import B_INITS, METHODS, MethodConfig  # noqa: F401
from .network import COMP_TIME_MODES, NetworkConfig  # noqa: F401
from .privacy import DP_MODES, ENCRYPTION_METHODS, ENCRYPTIONS, PrivacyConfig  # noqa: F401
from .training import AGGREGATIONS, CLIENT_SCHEDULES, TrainingConfig  # noqa: F401

GROUPS = {"data": DataConfig, "method": MethodConfig, "training": TrainingConfig, "algorithm": AlgorithmConfig,
          "heterogeneity": HeterogeneityConfig, "adversary": AdversaryConfig, "network": NetworkConfig,
          "privacy": PrivacyConfig}


# A dataclass takes its bases' fields from the last base to the first: the groups are listed in reverse so that
# the fields keep the order of GROUPS (the CLI's --help, the URL).
@dataclass(frozen=True)
class RunConfig(PrivacyConfig, NetworkConfig, AdversaryConfig, HeterogeneityConfig, AlgorithmConfig, TrainingConfig,
                MethodConfig, DataConfig, TypedConfig):
    def __post_init__(self):
        _validate(self)

    def group(self, name: str):
        """One group of this config's fields on its own (a frozen `GROUPS[name]`)."""
        if name not in GROUPS:
            raise ConfigError(f"group={name!r} is invalid: allowed values are {', '.join(GROUPS)}")
        cls = GROUPS[name]
        return cls(**{f: getattr(self, f) for f in cls.names()})

    # --- identity -------------------------------------------------------
    def key(self) -> str:
        """The cache key for results: a hash of the store version and every field that differs from its default and
        can change the numbers (each group names its fields that cannot, `ConfigGroup.unused`). A new field at its
        default leaves every key as it was; a change of the code that changes the numbers raises STORE_VERSION."""
        skip = {f for g in GROUPS.values() for f in g.unused(self)}
        default = _defaults()
        changed = {k: v for k, v in self.to_dict().items() if k not in skip and v != default[k]}
        return hash_key({"store": STORE_VERSION, **changed})

    def small_rank_kernel(self) -> bool:
        """Whether local training runs in the kernel compiled for its rank (`fed.kernels.fused_lowrank`): CoLR and
        SCoLR at rank <= SMALL_RANK without FedProx (`fed.kernels.dispatch.choose_kernel`, the trainer's rule)."""
        return choose_kernel(low_rank=self.method in ("colr", "scolr"), rank=self.rank, prox_mu=self.prox_mu,
                             scaffold=self.scaffold) == "lowrank_small"

    def describe(self) -> str:
        m = self.method
        label = {"fedmf": f"FedMF d={self.dim}", "colr": f"CoLR@{self.rank}", "scolr": f"SCoLR 1-{self.rank}",
                 "svd": f"SVD@{self.rank}", "topk": f"TopK {self.topk_ratio:g}"}[m]
        if self.up_bits or self.down_bits:
            label += f" q{self.up_bits or 32}/{self.down_bits or 32}b"
        if self.encryption != "none":
            label += " +" + {"ckks": "CKKS", "secagg": "SecAgg", "paillier": "Paillier"}[self.encryption]
        if self.scaffold:
            label += " SCAFFOLD"
        if self.qffl_q:
            label += f" q-FFL q={self.qffl_q:g}"
        if self.dropout:
            label += f" dropout {self.dropout:g}"
        if self.personalization == "ditto":
            label += f" Ditto lambda={self.ditto_lambda:g}"
        if self.personalization == "apfl":
            label += f" APFL alpha={self.apfl_alpha:g}"
        if self.personalization == "pfedme":
            label += f" pFedMe lambda={self.pfedme_lambda:g} K={self.pfedme_steps}"
        if self.personalization == "perfedavg":
            label += f" Per-FedAvg alpha={self.perfedavg_alpha:g}"
        return label

    def drops_stragglers(self) -> bool:
        """Whether this run's stragglers leave the round: "auto" drops them under plain FedAvg only (FedProx's
        comparison: FedAvg drops the stragglers, FedProx keeps their partial work)."""
        if self.straggler_policy == "auto":
            return not (self.prox_mu or self.scaffold or self.qffl_q)
        return self.straggler_policy == "drop"

    def quantized_by_rows(self) -> bool:
        """A quantized uplink of a method in ROW_QUANTIZED: drawn for and coded by the rows the clients hold
        (`quantize.quantize_rows`); received by them too unless the link is noisy (`noisy_link`)."""
        return bool(self.up_bits) and self.method in ROW_QUANTIZED

    def noisy_link(self, way: str) -> bool:
        """A quantized link ("up" or "down") with more levels than its budget carries exactly: it can move a zero."""
        bits = getattr(self, f"{way}_bits")
        return bool(bits) and exceeds(2**bits - 1, getattr(self, f"{way}_link_budget"))

    def ckks_chain(self) -> tuple[int, ...]:
        """The coefficient modulus actually used: ckks_coeff_bits, or (60, ckks_scale_bits, 60)."""
        return tuple(self.ckks_coeff_bits) or (60, self.ckks_scale_bits, 60)


# The version of the stored results: raised with every change of the code that changes the numbers a config gives
# (a summation order, a random draw, a kernel), so that no result made another way is served for it.
STORE_VERSION = 3
ROW_QUANTIZED = ("fedmf", "colr", "scolr")  # methods whose uplink is each client's table, held by its touched rows
FIELD_NAMES = tuple(f.name for f in fields(RunConfig))
_TYPES = typing.get_type_hints(RunConfig)


@functools.cache
def _defaults() -> dict:
    return RunConfig().to_dict()


def _validate(c: RunConfig) -> None:
    """Every group's values first (types, choices, ranges), then every group's rules between fields."""
    for g in GROUPS.values():
        g.check_values(c, _TYPES)
    for g in GROUPS.values():
        g.check_rules(c)


def coerce_field(name: str, raw):
    """Turn a string (URL, CLI) into the field `name`'s type; other values pass through.

    Raises ConfigError naming the field when the string does not parse; the value is not range-checked.
    """
    return coerce(name, raw, _TYPES[name])


def from_dict(d: dict) -> RunConfig:
    return build(RunConfig, d)


def from_query(params: dict[str, str]) -> RunConfig:
    return from_dict(dict(params))


def paper_ml1m(**overrides) -> RunConfig:
    """CoLR's ML-1M settings: d=64, 1% of users per round, E=2, B=256, 1000 rounds, and the authors' client
    schedule (users shuffled once, then 60 a round in turn: `client_schedule="rotating"`)."""
    base = dict(dataset="ml-1m", dim=64, clients_per_round=60, local_epochs=2, batch_size=256,
                rounds=1000, eval_every=100, rank_every=10, client_schedule="rotating")
    return from_dict({**base, **overrides})
