"""`FairConfig`: one FAIR experiment, frozen and validated like `labcore.config.RunConfig`.

Capacity schemes are written as in the paper: "1x-2x" means the first half of
the users (by id) hold the model at 1x (full size) and the second half at 2x
compression; "4x-8x-16x" splits the users into three (almost) equal groups.
`assign="random"` instead puts a seeded random `full_fraction` of the users at
the first capacity and the rest at the second (the paper's Table 3).
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, fields

from ..typed_config import ConfigError, TypedConfig, build, check_choices, check_ranges, check_types, fail, hash_key
from .data import DATASETS, MLP_DATASETS, RANKING_DATASETS, RATING_DATASETS
from .hashing import HASH_FUNCTION, SIZES

TASKS = ("ranking", "rating", "mlp")
METHODS = ("fair", "fair-hom", "full-trn", "fedavg", "fedhm", "fixed")
METHOD_LABELS = {"fair": "FAIR-HET", "fair-hom": "FAIR-HOM", "full-trn": "FULL-TRN", "fedavg": "FedAvg",
                 "fedhm": "FedHM", "fixed": "one model size"}
ASSIGNS = ("by_id", "random")
OPTIMIZERS = ("adam", "sgd")
TASK_DATASETS = {"ranking": RANKING_DATASETS, "rating": RATING_DATASETS, "mlp": MLP_DATASETS}


@dataclass(frozen=True)
class FairConfig(TypedConfig):
    # task and data
    task: str = "ranking"  # ranking: NeuMF + BPR, NDCG@20; rating: NeuMF-MLP + MSE; mlp: 64-512-10 on digits
    dataset: str = "synthetic"
    data_seed: int = 0
    # method and capacities
    method: str = "fair"
    capacities: str = "1x-2x"
    model_ratio: int = 1  # method="fixed": the one model size (ratio) everyone who can hold it trains at
    assign: str = "by_id"
    full_fraction: float = 0.5  # assign="random": share of users at the first capacity
    assign_seed: int = 101  # the paper's seed for the random 1x users of Table 3
    consistent: bool = True  # False: the ablation, every device draws its own hash
    signed: bool = True  # count-sketch sign hash on top of Eq. 7
    sizes: str = "pow2"  # pow2: m = greatest power of two <= n / ratio (the paper); chain: exact ratios
    hash_per_round: bool = False  # draw a new hash every round instead of once per run
    block: int = 0  # values hashed together (ROBE/ROAST-style): 0 = one embedding row (dim), 1 = element-wise
    # model
    dim: int = 8  # embedding size (8 factors for NeuMF, 32 for NeuMF-MLP)
    mlp_layers: int = 1  # NeuMF's MLP tower depth (1 for ranking, 3 for rating)
    hidden: int = 512  # mlp task: hidden width
    # federated training
    rounds: int = 200
    clients_per_round: int = 10
    local_epochs: int = 5
    batch_size: int = 512
    optimizer: str = "adam"  # a fresh optimizer state every round on every device, as the reference code
    lr: float = 1e-3
    weight_decay: float = 1e-6  # BPR / MSE L2 on the embeddings a batch uses
    num_negatives: int = 1
    n_devices: int = 30  # mlp task: devices the digits are spread over
    dirichlet_alpha: float = 0.5
    # evaluation and bookkeeping
    eval_every: int = 10
    top_k: int = 20
    seed: int = 0
    checkpoint_every: int = 50

    def __post_init__(self):
        _validate(self)

    # --- identity -------------------------------------------------------------
    def key(self) -> str:
        d = {k: v for k, v in self.to_dict().items() if k not in _NOT_IN_KEY}
        return hash_key({**d, "hash_function": HASH_FUNCTION}, "fair-")

    # --- capacities -----------------------------------------------------------
    def ratios(self) -> tuple[int, ...]:
        """The scheme's compression ratios, e.g. "1x-2x" -> (1, 2)."""
        return parse_capacities(self.capacities)

    def describe(self) -> str:
        label = METHOD_LABELS[self.method]
        if self.method == "fedavg":
            return label
        if self.method == "full-trn" and self.assign == "random":
            return f"{label} {self.full_fraction:.0%} at 1x"
        if self.method == "fixed":
            return f"model at {self.model_ratio}x, {self.capacities} devices"
        tail = "" if self.consistent else " (inconsistent)"
        return f"{label} {self.capacities}{tail}"


_NOT_IN_KEY = ("checkpoint_every",)
FIELD_NAMES = tuple(f.name for f in fields(FairConfig))
_TYPES = typing.get_type_hints(FairConfig)
_RANGES = {
    "data_seed": (0, 2**63 - 1), "seed": (0, 2**63 - 1), "assign_seed": (0, 2**63 - 1), "dim": (1, 1024),
    "mlp_layers": (1, 6), "hidden": (1, 8192), "rounds": (1, 10**6), "clients_per_round": (1, 10**5),
    "local_epochs": (1, 1000), "batch_size": (1, 1 << 20), "num_negatives": (1, 100), "n_devices": (2, 10**5),
    "eval_every": (1, 10**6), "top_k": (1, 1000), "checkpoint_every": (1, 10**6), "block": (0, 1024),
    "model_ratio": (1, 2**16),
}
_CHOICES = {"task": TASKS, "method": METHODS, "assign": ASSIGNS, "sizes": SIZES, "optimizer": OPTIMIZERS}


def parse_capacities(text: str) -> tuple[int, ...]:
    """ "1x-2x-4x" -> (1, 2, 4); each a power of two, at most 8 tiers."""
    if not isinstance(text, str) or not text:
        fail("capacities", text, 'expected tiers like "1x-2x" or "4x-8x-16x"')
    out = []
    for tok in text.lower().split("-"):
        tok = tok.strip()
        if not tok.endswith("x") or not tok[:-1].isdigit():
            fail("capacities", text, 'expected tiers like "1x-2x" or "4x-8x-16x" (a power of two before each x)')
        r = int(tok[:-1])
        if r < 1 or r & (r - 1) or r > 2**16:
            fail("capacities", text, f"{tok} is not a power of two between 1x and 65536x")
        out.append(r)
    if len(out) > 8:
        fail("capacities", text, "at most 8 tiers")
    return tuple(out)


def _validate(c: FairConfig) -> None:
    check_types(c, _TYPES)
    check_choices(c, {**_CHOICES, "dataset": DATASETS})
    if c.dataset not in TASK_DATASETS[c.task]:
        fail("dataset", c.dataset, f"task={c.task!r} runs on " + ", ".join(TASK_DATASETS[c.task]))
    check_ranges(c, _RANGES, positive=("lr",), nonnegative=("weight_decay",),
                 at_most={"lr": 1e4, "weight_decay": 1e4})
    if not 0 < c.full_fraction <= 1:
        fail("full_fraction", c.full_fraction, "allowed range is (0, 1]")
    if not 0 < c.dirichlet_alpha <= 1e6:
        fail("dirichlet_alpha", c.dirichlet_alpha, "allowed range is (0, 1e6]")
    ratios = parse_capacities(c.capacities)
    if c.assign == "random" and len(ratios) != 2:
        fail("capacities", c.capacities, 'assign="random" needs exactly two tiers, e.g. "1x-2x"')
    if c.method == "full-trn" and 1 not in ratios:
        fail("method", c.method, f"full-trn trains only devices that hold the full model, and capacities="
                                  f"{c.capacities!r} has no 1x tier")
    if c.method == "fixed" and (c.model_ratio & (c.model_ratio - 1) or not any(r <= c.model_ratio for r in ratios)):
        fail("model_ratio", c.model_ratio, f"a power of two that some device of {c.capacities!r} can hold "
                                            f"(>= {min(ratios)})")
    if c.method == "fedhm":
        limit = fedhm_limit(c)
        bad = [r for r in ratios if r >= limit]
        if bad:
            fail("capacities", c.capacities, f"FedHM cannot compress {bad[0]}x: a rank-k factorization needs "
                                              f"k = d/ratio >= 2 here (ratios below {limit}x); N/A as in the paper")
    if c.task != "mlp" and c.block and c.dim % c.block:
        fail("block", c.block, f"must divide dim ({c.dim}), or 0 for one embedding row")
    if c.task != "mlp" and c.dim & (c.dim - 1):
        fail("dim", c.dim, "must be a power of two (the low-rank baseline uses rank dim / ratio)")


def fedhm_limit(c: FairConfig) -> int:
    """The first compression ratio FedHM cannot serve (embedding tables: d; the digits MLP: see fedhm)."""
    if c.task == "mlp":
        from .fedhm import mlp_fedhm_limit  # (torch: only for the MLP's check)

        return mlp_fedhm_limit(c.hidden)
    return c.dim


def fedhm_supports(c: FairConfig) -> bool:
    try:
        c.replace(method="fedhm")
    except ConfigError:
        return False
    return True


def from_dict(d: dict) -> FairConfig:
    return build(FairConfig, d)


# --- the paper's settings ---------------------------------------------------------
def paper_ranking(dataset: str = "goodreads-100", **overrides) -> FairConfig:
    """Section 6.1 / Table 7: NeuMF (8 factors, one MLP layer), BPR, K=10, E=5, B=512, one negative,
    BPR decay 1e-6, Adam lr 1e-3 (the reference code's example), evaluation every 10 rounds."""
    base = dict(task="ranking", dataset=dataset, dim=8, mlp_layers=1, clients_per_round=10, local_epochs=5,
                batch_size=512, optimizer="adam", lr=1e-3, weight_decay=1e-6, num_negatives=1, rounds=200,
                eval_every=10, top_k=20)
    return from_dict({**base, **overrides})


def paper_rating(dataset: str = "ml-100k-100", **overrides) -> FairConfig:
    """Section 6.2 / Appendix E: NeuMF-MLP, d=32, three-layer MLP, MSE, K=10, E=1, 1000 rounds."""
    base = dict(task="rating", dataset=dataset, dim=32, mlp_layers=3, clients_per_round=10, local_epochs=1,
                batch_size=64, optimizer="adam", lr=1e-3, weight_decay=0.0, rounds=1000, eval_every=10,
                capacities="8x-16x")
    return from_dict({**base, **overrides})


def paper_mlp(**overrides) -> FairConfig:
    """Section 6.3: an MLP (here 64-512-10 on 8x8 digits), 30 devices, Dirichlet non-IID, E=20, K=10, T=200."""
    base = dict(task="mlp", dataset="digits", hidden=512, n_devices=30, dirichlet_alpha=0.5, clients_per_round=10,
                local_epochs=20, batch_size=32, optimizer="sgd", lr=0.05, weight_decay=0.0, rounds=200,
                eval_every=10, capacities="2x-4x", dim=8)
    return from_dict({**base, **overrides})
