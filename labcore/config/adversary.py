"""A model-replacement backdoor and robust aggregation (labcore.fed.algorithms.attacks, .defenses; FedMF)."""
from __future__ import annotations

from dataclasses import dataclass

from ..typed_config import fail
from .group import ConfigGroup

ATTACKS = ("none", "replacement", "dba")
DEFENSES = ("none", "clip", "median", "trimmed", "krum")
# each defense's settings that cannot change a run under another
_UNUSED_BY_DEFENSE = {"none": ("clip_norm", "dp_noise", "trim_frac"), "clip": ("trim_frac",),
                      "median": ("clip_norm", "dp_noise", "trim_frac"), "trimmed": ("clip_norm", "dp_noise"),
                      "krum": ("clip_norm", "dp_noise", "trim_frac")}


@dataclass(frozen=True)
class AdversaryConfig(ConfigGroup):
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

    CHOICES = {"attack": ATTACKS, "defense": DEFENSES}
    RANGES = {"attacker_share": (0.0, 0.5), "trim_frac": (0.0, 0.49), "target_item": (-1, 10**9),
                               "dba_parts": (2, 4096), "krum_f": (0, 10**7)}
    POSITIVE = ("clip_norm",)
    NONNEGATIVE = ("attack_boost", "dp_noise")
    AT_MOST = {"attack_boost": 1e6, "clip_norm": 1e9, "dp_noise": 1e3}

    @classmethod
    def unused(cls, c) -> tuple[str, ...]:
        out = ("attacker_share", "attack_boost", "target_item") if c.attack == "none" else ()
        out += ("dba_parts",) if c.attack != "dba" else ()
        return out + _UNUSED_BY_DEFENSE.get(c.defense, ()) + (("krum_f",) if c.defense != "krum" else ())


def check_robust(c, n_items: int | None = None) -> None:
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
