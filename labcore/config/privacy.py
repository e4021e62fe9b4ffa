"""Protection of the uplink: encryption or secure aggregation (labcore.fed.secure) and user-level differential
privacy (labcore.privacy.dp, DP-FedAvg with Opacus's accountant)."""
from __future__ import annotations

from dataclasses import dataclass

from ..privacy.params import MAX_PRIME_BITS, MIN_PRIME_BITS, check_ckks  # pure Python: no TenSEAL import
from ..typed_config import ConfigError, fail
from .group import ConfigGroup
from .method import METHODS

ENCRYPTIONS = ("none", "ckks", "secagg", "paillier")  # labcore.fed.secure implements each
# Which methods each protection supports (why the others cannot: labcore.fed.secure).
ENCRYPTION_METHODS = {"none": METHODS, "ckks": ("fedmf", "colr", "scolr"), "secagg": ("fedmf", "colr", "scolr"),
                      "paillier": ("topk",)}
DP_MODES = ("none", "central", "distributed", "local")
_CKKS_FIELDS = ("ckks_degree", "ckks_scale_bits", "ckks_coeff_bits", "he_real_every")
_PAILLIER_FIELDS = ("paillier_key_bits", "he_real_values")


@dataclass(frozen=True)
class PrivacyConfig(ConfigGroup):
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
    # user-level DP: clients join by Poisson sampling (client_schedule="poisson", q = clients_per_round / users)
    # and the clipped updates' noisy sum is divided by the expected cohort (aggregation="weighted")
    dp_mode: str = "none"  # none, central (the server adds the noise), distributed (shares under secagg), local
    dp_noise_multiplier: float = 0.0  # sigma; 0 with dp_target_epsilon > 0: the sigma that spends it in `rounds`
    dp_target_epsilon: float = 0.0  # the budget: training stops before a round would exceed it (0 = no budget)
    dp_delta: float = 0.0  # 0 = 1 / number of users
    dp_clip: float = 1.0  # C: each client's update clipped to this L2 norm in the space the server aggregates

    CHOICES = {"encryption": ENCRYPTIONS, "dp_mode": DP_MODES}
    RANGES = {"paillier_key_bits": (1024, 8192), "he_real_clients": (1, 10**7),
                               "he_real_every": (1, 10**6), "he_real_values": (1, 10**7)}

    @classmethod
    def check_rules(cls, c) -> None:
        if not 0 < c.secagg_threshold <= 1:
            fail("secagg_threshold", c.secagg_threshold, "allowed range is (0, 1]: the share of the sampled "
                                                          "clients that must upload (0.5 = a strict majority)")
        _check_encryption(c)
        _check_dp(c)

    @classmethod
    def unused(cls, c) -> tuple[str, ...]:
        unused = {"none": _CKKS_FIELDS + _PAILLIER_FIELDS + ("he_real_clients",), "ckks": _PAILLIER_FIELDS,
                  "secagg": _CKKS_FIELDS + _PAILLIER_FIELDS, "paillier": _CKKS_FIELDS}.get(c.encryption, ())
        unused += ("secagg_threshold",) if c.encryption != "secagg" else ()
        return unused + (("secagg_threshold",) if not c.dropout else ())  # everyone uploads: any threshold is met


def _check_dp(c) -> None:
    """DP's own ranges, and the settings its guarantee cannot cover (each refused by name)."""
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


def _check_encryption(c) -> None:
    if not MIN_PRIME_BITS <= c.ckks_scale_bits <= MAX_PRIME_BITS:  # before the chain () = (60, scale, 60) uses it
        fail("ckks_scale_bits", c.ckks_scale_bits, f"allowed range is {MIN_PRIME_BITS}..{MAX_PRIME_BITS}")
    bits = c.ckks_coeff_bits
    if not isinstance(bits, tuple) or not all(isinstance(b, int) and not isinstance(b, bool) for b in bits):
        fail("ckks_coeff_bits", bits, "expected a tuple of prime sizes in bits, e.g. (60, 50, 60), or () for "
                                       "(60, ckks_scale_bits, 60)")
    try:
        check_ckks(c.ckks_degree, tuple(bits) or (60, c.ckks_scale_bits, 60), c.ckks_scale_bits,
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
