"""`FLConfig`: one federated-optimization experiment, frozen and validated.

Every field that changes the numbers is in `key()`. Cross-field rules (a defense that cannot run with the
chosen aggregation, more attackers than clients, ...) fail as `<field>=<value> is invalid: <what is allowed>`.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, fields

from ..config import DATASETS as CORE_DATASETS
from ..config import SYNTHETIC_SIZES
from ..typed_config import ConfigError, TypedConfig, build, check_choices, check_ranges, check_types, fail, hash_key

TASKS = ("synthetic", "digits", "quadratic", "mnist", "femnist", "mf")
SPLITS = ("dirichlet", "quantity", "iid")
MODELS = ("logreg", "mlp")
ALGORITHMS = ("fedavg", "fedprox", "scaffold", "qffl", "fedavgm", "fedadam", "fedyogi", "ditto", "pfedme", "apfl",
              "perfedavg", "dpfedavg")
PERSONALIZED = ("ditto", "pfedme", "apfl", "perfedavg")
ALGORITHM_LABELS = {"fedavg": "FedAvg", "fedprox": "FedProx", "scaffold": "SCAFFOLD", "qffl": "q-FedAvg",
                    "fedavgm": "FedAvgM", "fedadam": "FedAdam", "fedyogi": "FedYogi", "ditto": "Ditto",
                    "pfedme": "pFedMe", "apfl": "APFL", "perfedavg": "Per-FedAvg (FO)",
                    "dpfedavg": "DP-FedAvg"}
WEIGHTINGS = ("samples", "uniform")
STRAGGLER_POLICIES = ("auto", "drop", "keep")  # auto: FedAvg drops stragglers, every other algorithm keeps them
ATTACKS = ("none", "replacement", "dba")
DEFENSES = ("none", "median", "trimmed", "krum", "clip")
CLASSIFICATION = ("synthetic", "digits", "mnist", "femnist")
CLASSES = {"synthetic": 10, "digits": 10, "mnist": 10, "femnist": 62}  # labels 0..n-1 of each task's data (tasks.py)
# task mf: the core's synthetic sizes and data sets (labcore.config)
MF_DATASETS = tuple(f"synthetic-{s}" for s in SYNTHETIC_SIZES) + tuple(d for d in CORE_DATASETS if d != "synthetic")


@dataclass(frozen=True)
class FLConfig(TypedConfig):
    # task and heterogeneity
    task: str = "digits"
    synthetic_alpha: float = 1.0  # Synthetic(alpha, beta): how much local models differ
    synthetic_beta: float = 1.0  # ... and how much local data differ
    n_clients: int = 30  # task mf: ignored, every user of the dataset is a client
    split: str = "dirichlet"  # digits / mnist: Dirichlet(alpha) label skew, Dirichlet(alpha) quantity skew, iid
    dirichlet_alpha: float = 0.5
    quad_dim: int = 10  # quadratic task: dimension
    quad_hetero: float = 1.0  # quadratic task: spread of the clients' optima
    mf_dataset: str = "synthetic-small"  # task mf: "synthetic-<size>" or a labcore.data dataset name
    mf_dim: int = 16  # task mf: embedding size
    mf_negatives: int = 4  # task mf: uniform negatives per positive
    data_seed: int = 0
    # model
    model: str = "logreg"  # multinomial logistic regression or a one-hidden-layer MLP
    hidden: int = 32
    # algorithm
    algorithm: str = "fedavg"
    mu: float = 0.0  # FedProx proximal weight
    q: float = 0.0  # q-FFL fairness exponent
    server_lr: float = 1.0  # eta_g (FedAvg, SCAFFOLD, FedAvgM, FedAdam/Yogi)
    server_momentum: float = 0.9  # FedAvgM
    beta1: float = 0.9  # FedAdam / FedYogi
    beta2: float = 0.99
    tau: float = 1e-3  # FedAdam / FedYogi adaptivity
    lam: float = 0.1  # Ditto / pFedMe lambda
    inner_steps: int = 5  # pFedMe: steps solving the Moreau-envelope subproblem
    personal_lr: float = 0.05  # pFedMe inner lr, Per-FedAvg alpha, Ditto's personal lr
    pfedme_beta: float = 1.0  # pFedMe server mixing
    apfl_alpha: float = 0.5  # APFL mixing weight of the personal model
    weighting: str = "samples"  # server averages by samples (FedAvg) or uniformly (SCAFFOLD, q-FFL papers)
    # local training and participation
    local_steps: int = 20
    batch_size: int = 10
    lr: float = 0.05
    rounds: int = 100
    clients_per_round: int = 10
    stragglers: float = 0.0  # share of each cohort doing 1..local_steps-1 steps (uniform)
    straggler_policy: str = "auto"
    dropout: float = 0.0  # chance a sampled client never uploads
    secagg: bool = False  # pairwise-masked secure aggregation of the uploads
    secagg_threshold: int = 0  # survivors needed to unmask; 0 = strict majority of the cohort
    # attacks and defenses
    attack: str = "none"
    attackers: int = 0  # malicious clients among n_clients (ids 0..attackers-1)
    attack_from: int = 0  # first round the attackers act
    boost: float = 0.0  # attackers scale their update (replacement, DBA); 0 = cohort / (server_lr x attackers in it)
    poison_frac: float = 0.5  # share of an attacker's batch carrying the trigger
    target_label: int = 0
    defense: str = "none"
    trim_frac: float = 0.2  # trimmed mean: share cut at each end
    krum_f: int = 1  # Krum: Byzantine clients tolerated (needs cohort > 2 f + 2)
    clip_norm: float = 1.0
    dp_noise: float = 0.0  # Gaussian noise multiplier on the clipped mean (std = dp_noise * clip_norm / cohort);
    # DP-FedAvg (algorithm="dpfedavg"): sigma, with C = clip_norm, Poisson cohorts and the fixed denominator
    # wire
    quantize_bits: int = 0  # QSGD on every float uplink part (0 = off)
    quantize_bucket: int = 512
    # bookkeeping
    eval_every: int = 5
    seed: int = 0

    def __post_init__(self):
        _validate(self)

    def key(self) -> str:
        return hash_key(self.to_dict(), "flalgos-")

    @property
    def label(self) -> str:
        return ALGORITHM_LABELS[self.algorithm]

    def drops_stragglers(self) -> bool:
        if self.straggler_policy == "auto":
            return self.algorithm == "fedavg"
        return self.straggler_policy == "drop"


FIELD_NAMES = tuple(f.name for f in fields(FLConfig))
_TYPES = typing.get_type_hints(FLConfig)
_RANGES = {
    "n_clients": (2, 100_000), "quad_dim": (1, 4096), "hidden": (1, 4096), "inner_steps": (1, 1000),
    "local_steps": (1, 10_000), "batch_size": (1, 100_000), "rounds": (1, 1_000_000), "clients_per_round": (1, 100_000),
    "attackers": (0, 100_000), "attack_from": (0, 1_000_000), "target_label": (0, 61), "krum_f": (0, 100_000),
    "quantize_bits": (0, 16), "quantize_bucket": (1, 1 << 24), "eval_every": (1, 1_000_000),
    "data_seed": (0, 2**63 - 1), "seed": (0, 2**63 - 1), "secagg_threshold": (0, 100_000),
    "stragglers": (0.0, 1.0), "dropout": (0.0, 0.99), "poison_frac": (0.0, 1.0), "trim_frac": (0.0, 0.49),
    "server_momentum": (0.0, 0.999999), "beta1": (0.0, 0.999999), "beta2": (0.0, 0.999999), "apfl_alpha": (0.0, 1.0),
    "pfedme_beta": (0.0, 1.0), "mf_dim": (1, 1024), "mf_negatives": (0, 100),
}
_AT_MOST = {"dirichlet_alpha": 1e6, "lr": 1e4, "server_lr": 1e4, "tau": 1e3, "personal_lr": 1e4, "clip_norm": 1e9,
            "mu": 1e4, "q": 100.0, "lam": 1e4, "boost": 1e6, "dp_noise": 1e3, "synthetic_alpha": 1e3,
            "synthetic_beta": 1e3, "quad_hetero": 1e6}
_CHOICES = {"task": TASKS, "split": SPLITS, "model": MODELS, "algorithm": ALGORITHMS, "weighting": WEIGHTINGS,
            "straggler_policy": STRAGGLER_POLICIES, "attack": ATTACKS, "defense": DEFENSES}


def _validate(c: FLConfig) -> None:
    check_types(c, _TYPES)
    check_choices(c, _CHOICES)
    check_ranges(c, _RANGES, positive=("dirichlet_alpha", "lr", "server_lr", "tau", "personal_lr", "clip_norm"),
                 nonnegative=("mu", "q", "lam", "boost", "dp_noise", "synthetic_alpha", "synthetic_beta",
                              "quad_hetero"), at_most=_AT_MOST)
    if c.task in CLASSES and c.target_label >= CLASSES[c.task]:
        fail("target_label", c.target_label, f"allowed range is 0..{CLASSES[c.task] - 1}: task={c.task!r} has "
                                             f"{CLASSES[c.task]} classes")
    if c.mf_dataset not in MF_DATASETS:
        fail("mf_dataset", c.mf_dataset, "allowed values are " + ", ".join(MF_DATASETS))
    if c.clients_per_round > c.n_clients and c.task != "mf":  # mf: checked against the dataset's users
        fail("clients_per_round", c.clients_per_round, f"at most n_clients ({c.n_clients})")
    if c.attackers > c.n_clients:
        fail("attackers", c.attackers, f"at most n_clients ({c.n_clients})")
    if c.attack == "none" and c.attackers:
        fail("attackers", c.attackers, 'must be 0 when attack="none" (or choose attack="replacement" or "dba")')
    if c.attack != "none" and not c.attackers:
        fail("attackers", c.attackers, f'attack={c.attack!r} needs at least one attacker (1..{c.n_clients})')
    if c.attack != "none" and c.task not in CLASSIFICATION:
        fail("attack", c.attack, "backdoors need a classification task: " + ", ".join(CLASSIFICATION))
    if c.defense != "none" and c.algorithm == "qffl":
        fail("defense", c.defense, "none with algorithm='qffl': q-FedAvg's server step is sum(Delta)/sum(h), "
                                   "not a mean a robust aggregator could replace")
    if c.secagg and c.defense in ("median", "trimmed", "krum"):
        fail("defense", c.defense, "none or clip with secagg=True: under secure aggregation the server sees only "
                                   "the sum, so it cannot take a median, trim or score single updates (clipping "
                                   "runs on the clients)")
    if c.defense == "krum" and not c.clients_per_round > 2 * c.krum_f + 2:
        fail("krum_f", c.krum_f, f"Krum needs clients_per_round > 2 f + 2; with {c.clients_per_round} clients a "
                                 f"round, f <= {max(0, (c.clients_per_round - 3) // 2)}")
    if c.secagg_threshold > c.clients_per_round:
        fail("secagg_threshold", c.secagg_threshold, f"0 (majority) or 1..clients_per_round ({c.clients_per_round})")
    if c.task == "mf" and c.algorithm in PERSONALIZED:
        fail("algorithm", c.algorithm, "a global-model algorithm on task='mf' (its private user vectors already are "
                                       "the personal part): "
                                       + ", ".join(a for a in ALGORITHMS if a not in PERSONALIZED))
    if c.algorithm == "dpfedavg" and (c.defense != "none" or c.attack != "none"):
        fail("defense" if c.defense != "none" else "attack", c.defense if c.defense != "none" else c.attack,
             "'none' with algorithm='dpfedavg' (its clipping is the defense; clip_norm and dp_noise set it)")
    if c.task == "quadratic" and c.algorithm in PERSONALIZED:
        fail("algorithm", c.algorithm, "a global-model algorithm on the quadratic task (it has no test data to "
                                       "personalize on): " + ", ".join(a for a in ALGORITHMS if a not in PERSONALIZED))


def from_dict(d: dict) -> FLConfig:
    return build(FLConfig, d)


def card_config_from_dict(d: dict):
    """A config a card of this topic lists: the topic's own, or the lab engine's (`flalgos-engine-ml1m`)."""
    try:
        return from_dict(d)
    except ConfigError:
        from ..config import from_dict as engine_config

        return engine_config(d)
