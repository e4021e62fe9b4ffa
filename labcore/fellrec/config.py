"""`FellrecConfig`: one FELLRec experiment (data, model, clients, method, offloading), frozen and validated.

Every bad value fails as `<field>=<value> is invalid: <what is allowed>`; rules that need the data (more
clients than users) are checked by `check_fits` once the data is loaded. `key()` is the cache key.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, fields

from ..typed_config import ConfigError, TypedConfig, build, check_choices, check_ranges, check_types, fail, hash_key

DATASETS = ("ml-100k", "ml-1m", "amazon-games", "synthetic")
ITEM_TEXTS = ("title", "title+id", "id")  # how an item is written: its title's BPE tokens, plus/or an id token
METHODS = ("central", "fedavg", "fedprox", "ditto", "fellrec")
METHOD_LABELS = {"central": "centralized (no federation)", "fedavg": "FedAvg", "fedprox": "FedProx",
                 "ditto": "Ditto", "fellrec": "FELLRec"}
SPLITS = ("kmeans", "dirichlet")
TUNES = ("lora", "full")
BACKBONES = ("tiny", "minilm")  # the lab's small transformer pre-trained here, or all-MiniLM-L6-v2 (RecFormer style)
MINILM_LAYERS, MINILM_HIDDEN = 6, 384
MINILM_FIELDS = ("title_tokens", "samples", "temperature")  # used by the MiniLM backbone only  # what the clients fine-tune: LoRA adapters (BIGRec) or every weight (RecFormer)


@dataclass(frozen=True)
class FellrecConfig(TypedConfig):
    # data
    dataset: str = "synthetic"  # ml-100k, ml-1m (titles), amazon-games (ids only), synthetic (smoke / tests)
    item_text: str = "title"  # amazon-games has no titles: it is always read as "id"
    max_users: int = 0  # 0 = every user; otherwise the first max_users users (by id) of the dataset
    history: int = 16  # items the model reads (the last `history` of a user's sequence)
    foundation_share: float = 0.2  # share of users held out for the central "foundation" pre-training
    vocab_size: int = 600  # BPE vocabulary learned on the titles (tokenizers)
    data_seed: int = 0
    # backbone: "tiny" (the decoder-only transformer below) or "minilm" (all-MiniLM-L6-v2 reading titles)
    backbone: str = "tiny"
    title_tokens: int = 8  # minilm: WordPiece tokens kept of each title (the token budget)
    samples: int = 1024  # minilm: the few-shot training samples (next items) shared by the clients
    temperature: float = 0.2  # minilm: score = cos(user, item) / temperature (chosen on validation R@10)
    # model (tiny: a decoder-only transformer, nanoGPT style)
    n_layer: int = 8  # N
    n_embd: int = 32
    n_head: int = 2
    lora_rank: int = 4  # r of the LoRA adapters on the attention projections
    lora_alpha: float = 8.0  # LoRA scale alpha / r
    tune: str = "lora"  # the client-specific parameters R_c: the LoRA adapters, or "full" (every weight)
    pretrain_epochs: int = 10
    pretrain_lr: float = 3e-3
    # clients
    n_clients: int = 5
    split: str = "kmeans"  # kmeans on the core MF engine's user embeddings, or dirichlet(c) over those clusters
    dirichlet_c: float = 0.5  # concentration c (Table 6): small c = very different clients
    mf_rounds: int = 30  # rounds of the core MF engine that learns the user embeddings
    # federated fine-tuning
    method: str = "fellrec"
    rounds: int = 5  # T epochs of Algorithm 1
    local_epochs: int = 1  # R local rounds
    batch_size: int = 64
    lr: float = 1e-2  # Adam on the LoRA parameters, a fresh state every round
    prox_mu: float = 0.01  # FedProx proximal weight
    ditto_lambda: float = 0.1  # Ditto: pull of the personal model towards the global one
    alpha: float = 0.1  # speed-related warm-up factor of eq. (4)
    beta: float = 3.0  # time-related warm-up factor of eq. (4)
    dyn_agg: bool = True  # eqs. (2)-(3): cosine-similarity aggregation (off: data-size weights)
    dyn_speed: bool = True  # eq. (4): curriculum heating w_c (off: w_c = 1)
    # flexible storage
    offload: bool = True  # False: the client holds every layer (FedAvg's O(N) storage)
    client_layers: int = 2  # k: the client keeps layers 1..k and N, the server k+1..N-1
    # evaluation
    seed: int = 0

    def __post_init__(self):
        _validate(self)

    def key(self) -> str:
        d = self.to_dict()
        if d["backbone"] == "tiny":  # the tiny backbone's keys stay those of runs made before MiniLM
            for f in ("backbone",) + MINILM_FIELDS:
                d.pop(f)
        if d["tune"] == "lora":  # the default keeps the keys runs had before the field existed
            d.pop("tune")
        return hash_key(d, "fellrec-")

    def label(self) -> str:
        return METHOD_LABELS[self.method]

    def describe(self) -> str:
        ab = "" if self.method != "fellrec" else f", alpha={self.alpha:g}, beta={self.beta:g}"
        split = "KMeans" if self.split == "kmeans" else f"Dirichlet c={self.dirichlet_c:g}"
        return f"{self.label()} on {self.dataset}, {self.n_clients} clients ({split}){ab}, seed {self.seed}"

    def depth(self) -> int:
        """N: the backbone's number of layers (MiniLM has 6; the tiny model n_layer)."""
        return MINILM_LAYERS if self.backbone == "minilm" else self.n_layer

    def server_layers(self) -> int:
        """How many layers the server holds (N - k - 1), 0 without offloading."""
        return self.depth() - self.client_layers - 1 if self.offload else 0


FIELD_NAMES = tuple(f.name for f in fields(FellrecConfig))
_TYPES = typing.get_type_hints(FellrecConfig)
_RANGES = {
    "max_users": (0, 10**7), "history": (2, 256), "vocab_size": (50, 50_000), "data_seed": (0, 2**63 - 1),
    "n_layer": (3, 64), "n_embd": (4, 1024), "n_head": (1, 64), "lora_rank": (1, 1024), "pretrain_epochs": (0, 1000),
    "n_clients": (1, 10_000), "mf_rounds": (1, 10_000), "rounds": (1, 10_000), "local_epochs": (1, 100),
    "batch_size": (1, 1 << 16), "client_layers": (1, 63), "seed": (0, 2**63 - 1), "title_tokens": (1, 64),
    "samples": (1, 10**7),
}


def _validate(c: FellrecConfig) -> None:
    check_types(c, _TYPES)
    check_choices(c, {"dataset": DATASETS, "item_text": ITEM_TEXTS, "method": METHODS, "split": SPLITS,
                      "tune": TUNES, "backbone": BACKBONES})
    check_ranges(c, _RANGES, positive=("lr", "pretrain_lr", "temperature", "lora_alpha", "alpha", "beta", "dirichlet_c"),
                 nonnegative=("prox_mu", "ditto_lambda"),
                 at_most={"lr": 1e4, "pretrain_lr": 1e4, "temperature": 1e4, "lora_alpha": 1e6, "alpha": 1e6,
                          "beta": 1e6, "dirichlet_c": 1e6, "prox_mu": 1e4, "ditto_lambda": 1e4})
    if not 0 < c.foundation_share < 1:
        fail("foundation_share", c.foundation_share, "allowed range is (0, 1): some users pre-train, the rest are clients")
    if c.backbone == "minilm":
        _validate_minilm(c)
        return
    if c.n_embd % c.n_head:
        fail("n_head", c.n_head, f"must divide n_embd={c.n_embd}")
    if c.lora_rank > c.n_embd:
        fail("lora_rank", c.lora_rank, f"allowed range is 1..{c.n_embd} (the hidden size n_embd)")
    if c.client_layers >= c.n_layer - 1:
        fail("client_layers", c.client_layers, f"allowed range is 1..{c.n_layer - 2}: the client keeps layers 1..k "
                                               f"and N, the server k+1..N-1, so k + 1 < N = {c.n_layer}")


def _validate_minilm(c: FellrecConfig) -> None:
    """MiniLM's shape is fixed (6 layers, hidden 384): k and the LoRA rank are checked against it."""
    if c.dataset == "amazon-games":
        fail("dataset", c.dataset, "backbone=minilm reads item titles: allowed values are ml-100k, ml-1m, synthetic")
    if c.tune != "lora":
        fail("tune", c.tune, "backbone=minilm fine-tunes LoRA adapters only: allowed value is lora")
    if c.lora_rank > MINILM_HIDDEN:
        fail("lora_rank", c.lora_rank, f"allowed range is 1..{MINILM_HIDDEN} (MiniLM's hidden size)")
    if c.client_layers >= MINILM_LAYERS - 1:
        fail("client_layers", c.client_layers, f"allowed range is 1..{MINILM_LAYERS - 2} for backbone=minilm: the "
                                               f"client keeps layers 1..k and {MINILM_LAYERS}, the server "
                                               f"k+1..{MINILM_LAYERS - 1}")


def check_fits(cfg: FellrecConfig, n_users: int) -> None:
    """Rules that need the data: every client needs at least one user."""
    if cfg.n_clients > n_users:
        raise ConfigError(f"n_clients={cfg.n_clients} is invalid: {cfg.dataset} has only {n_users} client users "
                          f"(allowed range 1..{n_users})")


def from_dict(d: dict) -> FellrecConfig:
    return build(FellrecConfig, d)


__all__ = ["FellrecConfig", "ConfigError", "check_fits", "from_dict", "METHODS", "METHOD_LABELS", "DATASETS"]
