"""The federated algorithm: FedProx's local objective, the server's step, SCAFFOLD, q-FFL, and the personal models
(labcore.fed.algorithms, labcore.fed.personal). The defaults are FedAvg's: the mean update applied as it is."""
from __future__ import annotations

from dataclasses import dataclass

from ..fed.memory import PERSONAL_LIMIT, table_bytes
from ..typed_config import fail
from .group import ConfigGroup

SERVER_OPTIMIZERS = ("fedavg", "fedavgm", "fedadam", "fedyogi")  # labcore.fed.algorithms.server_opt implements each
PERSONALIZATIONS = ("none", "ditto", "apfl", "pfedme", "perfedavg")  # labcore.fed.personal, fed.meta_train
# the server optimizer's settings that cannot change a run under it
_UNUSED_SERVER_FIELDS = {"fedavg": ("server_momentum", "server_beta1", "server_beta2", "server_tau"),
                         "fedavgm": ("server_beta1", "server_beta2", "server_tau"), "fedadam": ("server_momentum",),
                         "fedyogi": ("server_momentum",)}
# each personalization's own settings
_PERSONAL_FIELDS = (("ditto_lambda", "ditto"), ("apfl_alpha", "apfl"), ("pfedme_lambda", "pfedme"),
                    ("pfedme_steps", "pfedme"), ("perfedavg_alpha", "perfedavg"))


@dataclass(frozen=True)
class AlgorithmConfig(ConfigGroup):
    # the server's step from the round's mean update (labcore.fed.algorithms.server_opt, Reddi et al. 2021)
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
    # personalization (labcore.fed.personal; FedMF): every user also trains a personal model on its device
    personalization: str = "none"  # none, ditto, apfl, pfedme, perfedavg
    ditto_lambda: float = 0.1  # Ditto's pull of the personal item table toward the global one
    apfl_alpha: float = 0.5  # APFL: the personal table's share of the mixed model alpha V_u + (1 - alpha) Q
    pfedme_lambda: float = 1.0  # pFedMe: the pull between the personal model theta and the local model w
    pfedme_steps: int = 5  # pFedMe: K, the personal model's steps on each batch
    perfedavg_alpha: float = 0.5  # Per-FedAvg: the inner (personalization) step size; the outer one is lr

    CHOICES = {"server_optimizer": SERVER_OPTIMIZERS, "personalization": PERSONALIZATIONS}
    RANGES = {"server_momentum": (0.0, 0.999999), "server_beta1": (0.0, 0.999999),
                               "server_beta2": (0.0, 0.999999), "apfl_alpha": (0.0, 1.0), "pfedme_steps": (1, 100)}
    POSITIVE = ("server_lr", "server_tau", "perfedavg_alpha")
    NONNEGATIVE = ("prox_mu", "qffl_q", "qffl_lipschitz", "ditto_lambda", "pfedme_lambda")
    AT_MOST = {"server_lr": 1e4, "server_tau": 1e3, "prox_mu": 1e4, "qffl_q": 100.0,
                                "qffl_lipschitz": 1e9, "ditto_lambda": 1e4, "pfedme_lambda": 1e4,
                                "perfedavg_alpha": 1e4}

    @classmethod
    def unused(cls, c) -> tuple[str, ...]:
        return (_UNUSED_SERVER_FIELDS.get(c.server_optimizer, ())
                + tuple(f for f, on in _PERSONAL_FIELDS if c.personalization != on))


def check_prox_pull(c) -> None:
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


def check_algorithm(c) -> None:
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


def check_personal(c, n_users: int, n_items: int) -> None:
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
    if c.personalization == "apfl" and c.scaffold:
        fail("scaffold", c.scaffold, "must be off with personalization='apfl': APFL's personal steps follow the "
                                     "client's local copy of the global model, replayed for FedAvg's and FedProx's "
                                     "local steps (use prox_mu, qffl_q or a server optimizer instead)")
    if c.personalization == "perfedavg":
        return
    need = table_bytes(n_users, n_items, c.dim)
    if need > PERSONAL_LIMIT:
        fail(*name, f"needs every user's personal table in memory: {n_users:,} users x {n_items:,} items x "
                    f"d={c.dim} = {need / 2**30:.1f} GiB, above {PERSONAL_LIMIT / 2**30:.0f} GiB; use a smaller data "
                    "set (ml-100k, synthetic), a smaller dim, or personalization='perfedavg'")
