"""Typed, frozen, validated run configuration.

A `RunConfig` is the single description of an experiment: the engine, the
CLI, the notebooks and the app all build one. It is hashable, so its
`key()` names the on-disk result cache, and it round-trips to a URL query
string (the app keeps its whole state in the URL).
"""
from __future__ import annotations

import functools

import typing
from dataclasses import dataclass, field, fields

from .fed.kernels.dispatch import SMALL_RANK, choose_kernel  # noqa: F401  (SMALL_RANK: importers find it here)
from .fed.memory import PERSONAL_LIMIT, table_bytes
from .net.budget import exceeds
from .privacy.params import MAX_PRIME_BITS, MIN_PRIME_BITS, check_ckks  # pure Python: no TenSEAL import
from .typed_config import (ConfigError, TypedConfig, build, check_choices, check_ranges, check_types, coerce, fail,
                           hash_key)

METHODS = ("fedmf", "colr", "scolr", "svd", "topk")
DATASETS = ("synthetic", "ml-1m", "ml-100k", "pinterest")
SYNTHETIC_SIZES = ("tiny", "small", "medium", "ml1m")
B_INITS = ("normal", "orthonormal", "sphere", "sphere_scaled")
AGGREGATIONS = ("item_mean", "weighted")
COMP_TIME_MODES = ("calibrated", "measured")
CLIENT_SCHEDULES = ("uniform", "rotating", "poisson")  # labcore.fed.sampling.round_clients
ENCRYPTIONS = ("none", "ckks", "secagg", "paillier")  # labcore.fed.secure implements each
SERVER_OPTIMIZERS = ("fedavg", "fedavgm", "fedadam", "fedyogi")  # labcore.fed.algorithms.server_opt implements each
STRAGGLER_POLICIES = ("auto", "drop", "keep")  # labcore.fed.stragglers
ATTACKS = ("none", "replacement", "dba")  # labcore.fed.algorithms.attacks, .defenses
DEFENSES = ("none", "clip", "median", "trimmed", "krum")
PERSONALIZATIONS = ("none", "ditto", "apfl", "pfedme", "perfedavg")  # labcore.fed.personal, fed.meta_train
# Which methods each protection supports (why the others cannot: labcore.fed.secure).
ENCRYPTION_METHODS = {"none": METHODS, "ckks": ("fedmf", "colr", "scolr"), "secagg": ("fedmf", "colr", "scolr"),
                      "paillier": ("topk",)}


@dataclass(frozen=True)
class RunConfig(TypedConfig):
    # data
    dataset: str = "synthetic"
    synthetic_size: str = "small"
    data_seed: int = 0
    data_skew: float = 1.0  # synthetic only: spread of the clients' data sizes (0 = equal, larger = a few heavy)
    # model and method
    method: str = "colr"
    dim: int = 64  # embedding size d
    rank: int = 4  # CoLR / SVD rank r; SCoLR global rank r_g
    scolr_min_rank: int = 1  # SCoLR draws r_u uniformly in [scolr_min_rank, rank]
    topk_ratio: float = 0.0625  # Top-K keeps this fraction of the update's values
    b_init: str = "normal"  # distribution of CoLR's B (Fig. 5)
    b_as_seed: bool = True  # send B as a seed instead of a d x r matrix
    lowrank_lr_scale: bool = True  # scale A's learning rate by sqrt(r/d) (CoLR Appendix A)
    compress_down: bool = True  # SVD / Top-K also compress the aggregated downlink
    up_bits: int = 0  # stochastic quantization of the uplink; 0 = off (float32)
    down_bits: int = 0
    quant_bucket: int = 512  # values per norm scale in the quantizer
    # the wireless channel of the quantized messages (the wireless topic's Eq. 6): log2 of the number of levels K
    # a link carries error-free; quantized levels beyond K arrive with noise N(0, 1/(4K^2)). 0 = no limit.
    # It acts on quantized messages (up_bits / down_bits); a float32 link is not affected.
    up_link_budget: int = 0
    down_link_budget: int = 0
    # federated training
    rounds: int = 200
    clients_per_round: int = 60
    client_schedule: str = "uniform"  # "rotating": users shuffled once, M a round in turn (the CoLR authors' code)
    local_epochs: int = 2
    batch_size: int = 256
    lr: float = 0.5
    weight_decay: float = 1e-4
    num_negatives: int = 4
    aggregation: str = "item_mean"
    # the federated algorithm: FedProx's local objective, and the server's step from the round's mean update
    # (labcore.fed.algorithms.server_opt, Reddi et al. 2021). The defaults are FedAvg's: the mean update applied
    # as it is.
    prox_mu: float = 0.0  # FedProx: + mu/2 ||item table - the round's global one||^2 in every local step
    server_optimizer: str = "fedavg"  # fedavg, fedavgm, fedadam, fedyogi
    server_lr: float = 1.0  # eta
    server_momentum: float = 0.9  # FedAvgM's beta
    server_beta1: float = 0.9  # FedAdam / FedYogi
    server_beta2: float = 0.99
    server_tau: float = 1e-3  # FedAdam / FedYogi adaptivity (v starts at tau^2)
    scaffold: bool = False  # SCAFFOLD (Karimireddy et al. 2020, option II): control variates correct each local step
    qffl_q: float = 0.0  # q-FFL / q-FedAvg (Li et al. 2020): clients with a higher loss weigh more; 0 = FedAvg
    qffl_lipschitz: float = 0.0  # q-FedAvg's Lipschitz estimate L; 0 = 1 / lr (their code's choice)
    # systems heterogeneity (labcore.fed.stragglers): this share of each cohort takes a uniform 1..K-1 of its K steps
    stragglers: float = 0.0
    straggler_policy: str = "auto"  # auto (plain FedAvg drops them, FedProx / SCAFFOLD / q-FFL keep them), drop, keep
    # (labcore.fed.dropout) each sampled client's chance to drop out after the downlink, before its upload
    dropout: float = 0.0
    # a model-replacement backdoor and robust aggregation (labcore.fed.algorithms.attacks, .defenses; FedMF)
    attack: str = "none"  # none, replacement, dba: malicious users push target_item into everyone's top 10
    attacker_share: float = 0.0  # share of the users that are malicious (a fixed set drawn from the seed)
    attack_boost: float = 0.0  # the attackers' scale; 0 = the inverse of their share of the average (replacement)
    target_item: int = -1  # -1 = the least popular item with training data
    dba_parts: int = 4  # dba: the attackers form this many groups, each planting one block of the target row
    defense: str = "none"  # none, clip (norm clipping, + dp_noise), median, trimmed (per item), krum (multi-Krum)
    clip_norm: float = 1.0
    dp_noise: float = 0.0  # clip: Gaussian noise of std dp_noise x clip_norm / M on the aggregate
    trim_frac: float = 0.2  # trimmed: share cut at each end of each item's clients
    krum_f: int = 1  # krum: attackers tolerated per round; keeps the M - f clients of lowest Krum score
    # personalization (labcore.fed.personal; FedMF): every user also trains a personal model on its device
    personalization: str = "none"  # none, ditto, apfl, pfedme, perfedavg
    ditto_lambda: float = 0.1  # Ditto's pull of the personal item table toward the global one
    apfl_alpha: float = 0.5  # APFL: the personal table's share of the mixed model alpha V_u + (1 - alpha) Q
    pfedme_lambda: float = 1.0  # pFedMe: the pull between the personal model theta and the local model w
    pfedme_steps: int = 5  # pFedMe: K, the personal model's steps on each batch
    perfedavg_alpha: float = 0.5  # Per-FedAvg: the inner (personalization) step size; the outer one is lr
    # evaluation
    eval_every: int = 20
    rank_every: int = 10  # effective rank of client updates every k rounds (0 = never)
    top_k: int = 10
    # network and wall-clock model (CoLR section 5.2 (2), Wang et al. 2021 defaults)
    bw_down: float = 0.75  # MB/s, MB = 2**20 bytes (matches the paper's Table 2)
    bw_up: float = 0.25
    r_comp: float = 7.0
    c_comp: float = 10.0
    bandwidth_tiers: tuple = ()  # ((share, down_factor, up_factor), ...): heterogeneous links
    comp_time: str = "calibrated"  # "measured" uses this machine's timings (not reproducible)
    sec_per_sample: float = 2e-6  # calibrated client simulation cost per local sample-epoch
    sec_per_value: float = 2e-9  # calibrated server cost per aggregated value
    # encryption / secure aggregation of the uplink (labcore.fed.secure)
    encryption: str = "none"  # none, ckks (FedMF, CoLR, SCoLR), secagg (same), paillier (Top-K)
    ckks_degree: int = 8192  # poly modulus degree N: N/2 values per ciphertext
    ckks_scale_bits: int = 50  # CKKS scale 2**bits
    ckks_coeff_bits: tuple = ()  # coefficient modulus primes (bits); () = (60, ckks_scale_bits, 60)
    paillier_key_bits: int = 2048
    he_real_clients: int = 2  # clients per round encrypted for real; the others' costs are scaled from them
    he_real_every: int = 1  # CKKS: rounds encrypted for real (round 0, then every k-th); the others scaled from them
    he_real_values: int = 4  # Paillier: values per real client encrypted for real (cost is linear in k)
    # secagg with dropout: more than this share of the sampled clients must upload (t = floor(share M) + 1, at
    # most M) or the server refuses to unmask; 0.5 = a strict majority (Bonawitz et al.'s honest-majority setting)
    secagg_threshold: float = 0.5
    # user-level differential privacy (labcore.privacy.dp, DP-FedAvg with Opacus's accountant): clients join by
    # Poisson sampling (client_schedule="poisson", q = clients_per_round / users) and the clipped updates' noisy
    # sum is divided by the expected cohort (aggregation="weighted")
    dp_mode: str = "none"  # none, central (the server adds the noise), distributed (shares under secagg), local
    dp_noise_multiplier: float = 0.0  # sigma; 0 with dp_target_epsilon > 0: the sigma that spends it in `rounds`
    dp_target_epsilon: float = 0.0  # the budget: training stops before a round would exceed it (0 = no budget)
    dp_delta: float = 0.0  # 0 = 1 / number of users
    dp_clip: float = 1.0  # C: each client's update clipped to this L2 norm in the space the server aggregates
    # reproducibility and bookkeeping
    seed: int = 0
    checkpoint_every: int = 50

    def __post_init__(self):
        _validate(self)

    # --- identity -------------------------------------------------------
    def key(self) -> str:
        """The cache key for results: a hash of the store version and every field that differs from its default and
        can change the numbers. A new field at its default leaves every key as it was; a change of the code that
        changes the numbers raises STORE_VERSION, and every stored run is made again (DP_STORE_VERSION: DP runs')."""
        skip = set(_NOT_IN_KEY + _unused_encryption_fields(self.encryption))
        skip.update(_UNUSED_SERVER_FIELDS.get(self.server_optimizer, ()))
        skip.update(("straggler_policy",) if not self.stragglers else ())  # no straggler: no policy applies
        skip.update(("secagg_threshold",) if not self.dropout else ())  # everyone uploads: any threshold is met
        skip.update(_unused_robust_fields(self.attack, self.defense))
        skip.update(f for f, on in _PERSONAL_FIELDS if self.personalization != on)
        # a channel budget acts on quantized levels only: over a float32 link it cannot change the numbers
        skip.update(f"{d}_link_budget" for d in ("up", "down") if not getattr(self, f"{d}_bits"))
        default = _defaults()
        changed = {k: v for k, v in self.to_dict().items() if k not in skip and v != default[k]}
        if self.dp_mode != "none":
            changed["store_dp"] = DP_STORE_VERSION
            if self.dp_mode in ("local", "distributed"):
                changed["store_dp_on_sum"] = DP_ON_SUM_STORE_VERSION
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
STORE_VERSION = 1
# The version of the DP runs' stored results alone: raised with a change of the code that changes the numbers of
# DP runs only, so that theirs are made again and no other stored run is.
DP_STORE_VERSION = 2
# The version of local and distributed DP runs alone: the noise shares of the clients whose update no one reads alone
# are drawn at once on the sum (`privacy.dp.RoundDP.privatize_clients`), other numbers than each client's own draw.
DP_ON_SUM_STORE_VERSION = 1
ROW_QUANTIZED = ("fedmf", "colr", "scolr")  # methods whose uplink is each client's table, held by its touched rows
_NOT_IN_KEY = ("checkpoint_every",)  # bookkeeping that does not change the numbers


@functools.cache
def _defaults() -> dict:
    return RunConfig().to_dict()
# each personalization's own settings (out of the key under the others)
_PERSONAL_FIELDS = (("ditto_lambda", "ditto"), ("apfl_alpha", "apfl"), ("pfedme_lambda", "pfedme"),
                    ("pfedme_steps", "pfedme"), ("perfedavg_alpha", "perfedavg"))
# the server optimizer's settings that cannot change a run under it (kept out of its cache key)
_UNUSED_SERVER_FIELDS = {"fedavg": ("server_momentum", "server_beta1", "server_beta2", "server_tau"),
                         "fedavgm": ("server_beta1", "server_beta2", "server_tau"), "fedadam": ("server_momentum",),
                         "fedyogi": ("server_momentum",)}
_CKKS_FIELDS = ("ckks_degree", "ckks_scale_bits", "ckks_coeff_bits", "he_real_every")
_PAILLIER_FIELDS = ("paillier_key_bits", "he_real_values")


def _unused_robust_fields(attack: str, defense: str) -> tuple[str, ...]:
    """Attack and defense settings that cannot change a run (kept out of its cache key)."""
    out = ("attacker_share", "attack_boost", "target_item") if attack == "none" else ()
    out += ("dba_parts",) if attack != "dba" else ()
    unused = {"none": ("clip_norm", "dp_noise", "trim_frac"), "clip": ("trim_frac",),
              "median": ("clip_norm", "dp_noise", "trim_frac"), "trimmed": ("clip_norm", "dp_noise"),
              "krum": ("clip_norm", "dp_noise", "trim_frac")}
    return out + unused.get(defense, ()) + (("krum_f",) if defense != "krum" else ())


def _unused_encryption_fields(encryption: str) -> tuple[str, ...]:
    """Encryption settings that cannot change a run under `encryption` (kept out of its cache key)."""
    unused = {"none": _CKKS_FIELDS + _PAILLIER_FIELDS + ("he_real_clients",), "ckks": _PAILLIER_FIELDS,
              "secagg": _CKKS_FIELDS + _PAILLIER_FIELDS, "paillier": _CKKS_FIELDS}
    unused = {e: f + (("secagg_threshold",) if e != "secagg" else ()) for e, f in unused.items()}
    return unused.get(encryption, ())

FIELD_NAMES = tuple(f.name for f in fields(RunConfig))
_TYPES = typing.get_type_hints(RunConfig)

# field -> (lower, upper) inclusive; None = unbounded
_RANGES = {
    "dim": (1, 4096), "rank": (1, 4096), "scolr_min_rank": (1, 4096), "up_bits": (0, 32), "down_bits": (0, 32),
    "up_link_budget": (0, 24), "down_link_budget": (0, 24),
    "quant_bucket": (1, 1 << 24), "rounds": (1, 10**7), "clients_per_round": (1, 10**7), "local_epochs": (1, 1000),
    "batch_size": (1, 1 << 20), "num_negatives": (0, 1000), "eval_every": (1, 10**7), "rank_every": (0, 10**7),
    "top_k": (1, 100), "data_seed": (0, 2**63 - 1), "seed": (0, 2**63 - 1), "checkpoint_every": (1, 10**7),
    "paillier_key_bits": (1024, 8192), "he_real_clients": (1, 10**7), "he_real_every": (1, 10**6),
    "he_real_values": (1, 10**7),
    "data_skew": (0.0, 2.0),  # beyond ~2 the per-size cap and the 20-interaction floor lower the Gini again
    "server_momentum": (0.0, 0.999999), "server_beta1": (0.0, 0.999999), "server_beta2": (0.0, 0.999999),
    "stragglers": (0.0, 1.0), "dropout": (0.0, 0.99), "attacker_share": (0.0, 0.5), "trim_frac": (0.0, 0.49),
    "target_item": (-1, 10**9), "dba_parts": (2, 4096), "krum_f": (0, 10**7), "apfl_alpha": (0.0, 1.0),
    "pfedme_steps": (1, 100),
}
_POSITIVE = ("lr", "bw_down", "bw_up", "server_lr", "server_tau", "clip_norm", "perfedavg_alpha")
_NONNEGATIVE = ("weight_decay", "r_comp", "c_comp", "sec_per_sample", "sec_per_value", "prox_mu",
                "qffl_q", "qffl_lipschitz", "attack_boost", "dp_noise", "ditto_lambda", "pfedme_lambda")
_CHOICES = {
    "method": METHODS, "dataset": DATASETS, "synthetic_size": SYNTHETIC_SIZES, "b_init": B_INITS,
    "aggregation": AGGREGATIONS, "comp_time": COMP_TIME_MODES, "client_schedule": CLIENT_SCHEDULES,
    "server_optimizer": SERVER_OPTIMIZERS, "straggler_policy": STRAGGLER_POLICIES, "attack": ATTACKS,
    "defense": DEFENSES, "personalization": PERSONALIZATIONS,
}
# Upper ends of the open-ended numbers: far beyond any run of the lab, low enough that a product of them (the
# wall-clock model's seconds, a step of lr x gradient) stays a finite float.
_AT_MOST = {
    "lr": 1e4, "weight_decay": 1e4, "server_lr": 1e4, "server_tau": 1e3, "prox_mu": 1e4, "qffl_q": 100.0,
    "qffl_lipschitz": 1e9, "attack_boost": 1e6, "clip_norm": 1e9, "dp_noise": 1e3, "ditto_lambda": 1e4,
    "pfedme_lambda": 1e4, "perfedavg_alpha": 1e4, "bw_down": 1e9, "bw_up": 1e9, "r_comp": 1e9, "c_comp": 1e9,
    "sec_per_sample": 1.0, "sec_per_value": 1.0,
}




def _validate(c: RunConfig) -> None:
    check_types(c, _TYPES)
    check_choices(c, {**_CHOICES, "encryption": ENCRYPTIONS})
    check_ranges(c, _RANGES, _POSITIVE, _NONNEGATIVE, _AT_MOST)
    if not 0 < c.secagg_threshold <= 1:
        fail("secagg_threshold", c.secagg_threshold, "allowed range is (0, 1]: the share of the sampled clients "
                                                      "that must upload (0.5 = a strict majority)")
    if not 0 < c.topk_ratio <= 1:
        fail("topk_ratio", c.topk_ratio, "allowed range is (0, 1]")
    if c.method in ("colr", "scolr", "svd") and c.rank > c.dim:
        fail("rank", c.rank, f"must be <= dim ({c.dim}): a rank-r update of a d-dimensional embedding has r <= d")
    if c.method == "scolr" and c.scolr_min_rank > c.rank:
        fail("scolr_min_rank", c.scolr_min_rank, f"must be <= rank ({c.rank})")
    if c.dataset != "synthetic" and c.data_skew != 1.0:
        fail("data_skew", c.data_skew, f"data_skew applies to synthetic data only; {c.dataset} has its own, "
                                        "fixed per-client data sizes (use data_skew=1.0 or dataset='synthetic')")
    _validate_tiers(c.bandwidth_tiers)
    _validate_encryption(c)
    _validate_dp(c)


# --- differential privacy (labcore.privacy.dp) ---------------------------------------------------------------
DP_MODES = ("none", "central", "distributed", "local")


def _validate_dp(c: RunConfig) -> None:
    """DP's own ranges, and the settings its guarantee cannot cover (each refused by name)."""
    check_choices(c, {"dp_mode": DP_MODES})
    if not 0 <= c.dp_noise_multiplier <= 1e3:
        fail("dp_noise_multiplier", c.dp_noise_multiplier, "allowed range is 0..1000")
    if not 0 < c.dp_clip <= 1e9:
        fail("dp_clip", c.dp_clip, "allowed range is > 0 and at most 1e9")
    if not 0 <= c.dp_delta < 1:
        fail("dp_delta", c.dp_delta, "allowed range is (0, 1) (0 = 1 / number of users)")
    if not 0 <= c.dp_target_epsilon <= 1e4:
        fail("dp_target_epsilon", c.dp_target_epsilon, "allowed range is 0..10000 (0 = no budget)")
    if c.dp_mode == "none":
        return
    if c.client_schedule != "poisson":
        fail("client_schedule", c.client_schedule, f"must be 'poisson' with dp_mode={c.dp_mode!r}: the accountant's "
             "amplification by sampling holds for Poisson sampling (each user joins with q = clients_per_round / "
             "users), not for a fixed-size ('uniform') or a 'rotating' cohort")
    if c.aggregation != "weighted":
        fail("aggregation", c.aggregation, f"must be 'weighted' with dp_mode={c.dp_mode!r}: DP divides the sum by "
             "the expected cohort (a fixed denominator); the per-item mean divides by how many clients touched an "
             "item, so one client can move a rare item's row by its whole update (unbounded sensitivity)")
    for name, ok, why in (("defense", c.defense == "none", "the clipping of DP is its defense"),
                          ("scaffold", not c.scaffold, "its control variates are a second, unclipped uplink"),
                          ("qffl_q", not c.qffl_q, "its loss-dependent weights are not bounded"),
                          ("encryption", c.encryption != "paillier", "Paillier encrypts Top-K's values as sent: "
                                                                     "use 'secagg' or 'ckks'")):
        if not ok:
            fail(name, getattr(c, name), f"not available with dp_mode={c.dp_mode!r}: {why}")


def check_prox_pull(c: RunConfig) -> None:
    """FedProx's pull per local step is lr mu of the client's update (CoLR / SCoLR: of A through B^T B, whose
    eigenvalues are about d / r, times A's learning-rate scale sqrt(r / d)); 1 or more overshoots the global
    table and the run blows up. Checked before training (`engine.check_fits`), not on the config alone, so
    that a link can set prox_mu before the method it suits."""
    gain = 1.0
    if c.method in ("colr", "scolr"):
        gain = (c.dim / c.rank) ** 0.5 if c.lowrank_lr_scale else c.dim / c.rank
    if c.prox_mu * c.lr * gain >= 1:
        pull = c.lr * c.prox_mu * gain
        fail("prox_mu", c.prox_mu, f"must be below {1 / (c.lr * gain):.4g} with lr={c.lr:g}"
                                   + (f" and {c.method} at d/r = {c.dim}/{c.rank}" if gain != 1 else "")
                                   + f": every local step pulls the client's update back by {pull:.3g} of itself, "
                                     "and 1 or more overshoots the global table")


def check_algorithm(c: RunConfig) -> None:
    """SCAFFOLD and q-FFL on the engine: what they run with (checked before training, like `check_prox_pull`).

    Both run with FedMF, whose clients send their whole item-table update: SCAFFOLD's variates live in that
    table's space (CoLR trains a new random subspace every round, where a variate of the last one means
    nothing), and q-FFL's step needs the norm of each client's table update. Neither runs under quantization
    or encryption, which see each client's dense payload, nor together with FedProx."""
    if not (c.scaffold or c.qffl_q):
        return
    name, value = ("scaffold", True) if c.scaffold else ("qffl_q", c.qffl_q)
    if c.method != "fedmf":
        fail(name, value, f"runs with method='fedmf' only (got method={c.method!r}): "
                          + ("its control variates live in the whole item table's space" if c.scaffold
                             else "its step uses the norm of each client's whole item-table update"))
    if c.scaffold and c.qffl_q:
        fail("qffl_q", c.qffl_q, "must be 0 with scaffold=True (one algorithm at a time)")
    if c.prox_mu:
        fail("prox_mu", c.prox_mu, f"must be 0 with {name}={value!r} (one algorithm at a time)")
    for f in ("up_bits", "down_bits"):
        if getattr(c, f):
            fail(f, getattr(c, f), f"must be 0 with {name}={value!r}: quantization is not combined with it here")
    if c.encryption != "none":
        fail("encryption", c.encryption, f"must be 'none' with {name}={value!r}: "
                                         + ("a client's corrected update is dense, and the server updates its "
                                            "variate from every client's change" if c.scaffold
                                            else "the server weighs each client's update by its own loss"))
    if c.aggregation != "weighted":
        fail("aggregation", c.aggregation, f"must be 'weighted' with {name}={value!r}: "
                                           + ("a client's corrected update moves every item, so a per-item mean "
                                              "over the clients that trained an item has no meaning" if c.scaffold
                                              else "q-FFL replaces the per-client weights, and one normalizer "
                                                   "serves the whole table"))


def check_robust(c: RunConfig, n_items: int | None = None) -> None:
    """The backdoor and the defenses on the engine: what they run with (checked before training)."""
    if c.attack == "none" and c.attacker_share:
        fail("attacker_share", c.attacker_share, "must be 0 with attack='none' (choose attack='replacement')")
    if c.attack != "none" and not c.attacker_share:
        fail("attacker_share", c.attacker_share, f"must be above 0 with attack={c.attack!r} (0 < share <= 0.5)")
    if c.attack == "none" and c.defense == "none":
        return
    which = ("defense", c.defense) if c.defense != "none" else ("attack", c.attack)
    if c.method != "fedmf":
        fail(*which, f"runs with method='fedmf' only (got method={c.method!r}): the attack and the defenses act on "
                     "each client's item-table update")
    if c.encryption != "none" and c.defense != "none":  # an attack under encryption is allowed: it hides there
        fail("encryption", c.encryption, f"must be 'none' with defense={c.defense!r}: under encryption or secure "
                                         "aggregation the server sees only the sum, not each client's update")
    for name, value in (("scaffold", c.scaffold), ("qffl_q", c.qffl_q)):
        if value:
            fail(name, value, f"must be off with {which[0]}={which[1]!r} (SCAFFOLD and q-FFL aggregate their own way)")
    if c.attack == "dba" and c.dba_parts > c.dim:
        fail("dba_parts", c.dba_parts, f"allowed range is 2..dim={c.dim}: each part is a block of the target row's "
                                       "coordinates")
    if c.defense == "krum" and not c.clients_per_round > 2 * c.krum_f + 2:
        fail("krum_f", c.krum_f, f"Krum needs clients_per_round > 2 krum_f + 2; with {c.clients_per_round} clients a "
                                 f"round, krum_f is at most {max(0, (c.clients_per_round - 3) // 2)}")
    if n_items is not None and c.target_item >= n_items:
        fail("target_item", c.target_item, f"allowed range is -1 (the least popular item) or 0..{n_items - 1}")


def check_personal(c: RunConfig, n_users: int, n_items: int) -> None:
    """Personal models on the engine: FedMF, a pull below 1 per step, one algorithm at a time, and every user's
    personal table in memory (Ditto, APFL, pFedMe; Per-FedAvg makes its personal models at evaluation)."""
    if c.personalization == "none":
        return
    name = ("personalization", c.personalization)
    if c.method != "fedmf":
        fail(*name, f"runs with method='fedmf' only (got method={c.method!r}): each user's personal model is a "
                    "whole item table and its user vector")
    for field, f in (("ditto_lambda", "ditto"), ("pfedme_lambda", "pfedme")):
        if c.personalization == f and c.lr * getattr(c, field) >= 1:
            toward = "the global table" if f == "ditto" else "the local model w (and w toward it)"
            fail(field, getattr(c, field), f"must be below {1 / c.lr:.4g} with lr={c.lr:g}: every personal step "
                                           f"pulls the personal table toward {toward} by lr x lambda of the gap")
    if c.personalization in ("pfedme", "perfedavg"):  # they replace the local training, as these do
        for field, value in (("scaffold", c.scaffold), ("qffl_q", c.qffl_q), ("prox_mu", c.prox_mu)):
            if value:
                fail(field, value, f"must be off with personalization={c.personalization!r}: it trains the clients' "
                                   "update its own way (one algorithm at a time)")
    if c.personalization == "perfedavg":
        return
    need = table_bytes(n_users, n_items, c.dim)
    if need > PERSONAL_LIMIT:
        fail(*name, f"needs every user's personal table in memory: {n_users:,} users x {n_items:,} items x "
                    f"d={c.dim} = {need / 2**30:.1f} GiB, above {PERSONAL_LIMIT / 2**30:.0f} GiB; use a smaller data "
                    "set (ml-100k, synthetic), a smaller dim, or personalization='perfedavg'")


def _validate_encryption(c: RunConfig) -> None:
    if not MIN_PRIME_BITS <= c.ckks_scale_bits <= MAX_PRIME_BITS:  # before the chain () = (60, scale, 60) uses it
        fail("ckks_scale_bits", c.ckks_scale_bits, f"allowed range is {MIN_PRIME_BITS}..{MAX_PRIME_BITS}")
    bits = c.ckks_coeff_bits
    if not isinstance(bits, tuple) or not all(isinstance(b, int) and not isinstance(b, bool) for b in bits):
        fail("ckks_coeff_bits", bits, "expected a tuple of prime sizes in bits, e.g. (60, 50, 60), or () for "
                                       "(60, ckks_scale_bits, 60)")
    try:
        check_ckks(c.ckks_degree, c.ckks_chain(), c.ckks_scale_bits,
                   names={"degree": "ckks_degree", "coeff": "ckks_coeff_bits", "scale": "ckks_scale_bits"})
    except ValueError as e:
        hint = "" if bits else " (ckks_coeff_bits=() means (60, ckks_scale_bits, 60))"
        raise ConfigError(f"{e}{hint}") from None
    if c.paillier_key_bits % 256:
        fail("paillier_key_bits", c.paillier_key_bits, "must be a multiple of 256 (1024..8192)")
    enc = c.encryption
    if enc == "none":
        return
    combos = "; ".join(f"{e}: {', '.join(ms)}" for e, ms in ENCRYPTION_METHODS.items() if e != "none")
    if c.method not in ENCRYPTION_METHODS[enc]:
        why = {"svd": "the server would have to multiply the clients' factors U_u V_u^T (products of encrypted or "
                      "masked matrices) and SVD of an encrypted matrix is an open problem (CoLR section 5.2 (3))",
               "topk": "every client sends different indices, so packed ciphertexts or pairwise masks do not line "
                       "up; Top-K is encrypted value by value with paillier",
               }.get(c.method, "paillier encrypts value by value (~80 ms per value at 2048 bits): it is meant for "
                               "the k values of Top-K; use ckks or secagg for dense updates")
        fail("encryption", enc, f"not available with method={c.method!r}: {why}. Allowed combinations: {combos}")
    if c.up_bits:
        fail("up_bits", c.up_bits, f"must be 0 with encryption={enc!r}: quantized codes with per-client scales "
                                    "cannot be summed under encryption or masking")
    if enc in ("ckks", "paillier") and c.down_bits:
        fail("down_bits", c.down_bits, f"must be 0 with encryption={enc!r}: the downlink is the encrypted "
                                        "aggregate, which the server cannot quantize")
    if enc == "paillier":
        if c.aggregation != "weighted":
            fail("aggregation", c.aggregation, "must be 'weighted' with encryption='paillier': the per-item mean "
                                                "needs each client's item bitmap encrypted too (one Paillier "
                                                "encryption per item)")
        if c.compress_down:
            fail("compress_down", c.compress_down, "must be false with encryption='paillier': the server cannot "
                                                    "pick the top-k of encrypted values, clients download the "
                                                    "encrypted union of the uploaded indices")
    if enc == "secagg" and min(c.clients_per_round, c.he_real_clients) < 2:
        field_ = "clients_per_round" if c.clients_per_round < 2 else "he_real_clients"
        fail(field_, getattr(c, field_), "must be >= 2 with encryption='secagg': pairwise masks need two clients "
                                          "(with one, its masked vector is its update)")


def _validate_tiers(tiers) -> None:
    if not isinstance(tiers, tuple):
        fail("bandwidth_tiers", tiers, "expected a tuple of (share, down_factor, up_factor)")
    for t in tiers:
        if not (isinstance(t, tuple) and len(t) == 3
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x <= 1e6 for x in t)):
            fail("bandwidth_tiers", tiers, "each tier is (share > 0, down_factor > 0, up_factor > 0), each at most "
                                           "1e6, e.g. [[0.5, 1, 1], [0.5, 0.2, 0.2]]")
    if tiers and abs(sum(t[0] for t in tiers) - 1) > 1e-6:
        fail("bandwidth_tiers", tiers, "the shares must add up to 1")


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
