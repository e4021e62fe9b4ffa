"""CKKS parameter rules, without TenSEAL: the run configuration validates with these.

`check_ckks(degree, coeff_bits, scale_bits)` raises ValueError naming the
offending parameter; `CkksParams` (re-exported by labcore.privacy.ckks) calls it
with its own field names and `labcore.config` with the RunConfig field names,
so an invalid chain is reported the same way wherever it is given.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

ALLOWED_DEGREES = (8192, 16384, 32768)
# Largest total coefficient-modulus size (bits) that keeps 128-bit security,
# from SEAL's HE-standard table (CoeffModulus::MaxBitCount, sec_level_type::tc128).
MAX_COEFF_BITS_128 = {8192: 218, 16384: 438, 32768: 881}
# SEAL accepts primes of at most 60 bits; below ~20 bits precision is meaningless.
MIN_PRIME_BITS, MAX_PRIME_BITS = 20, 60
# Integer headroom required at the last level: first prime >= scale bits + 8,
# so decrypted values up to |x| < 2**7 = 128 (sign bit + 7 integer bits) are safe.
MIN_INTEGER_BITS = 8
MIN_SCALE_BITS = 20
SECURITY_BITS = 128

PARAM_NAMES = {"degree": "poly_modulus_degree", "coeff": "coeff_mod_bit_sizes", "scale": "global_scale_bits"}


def default_chain(scale_bits: int) -> tuple[int, ...]:
    """The shortest chain weighted aggregation needs: (60, scale, 60).

    One inner prime is consumed by the rescale after the plaintext weight
    multiplication; the first prime (60 bits) holds the result with
    60 - scale - 1 integer bits; the last (60) is the special prime.
    """
    return (60, int(scale_bits), 60)


def check_ckks(degree: int, coeff_bits: tuple[int, ...], scale_bits: int, names: dict | None = None) -> None:
    """Raise ValueError (naming the parameter by `names`) unless the triple is usable at 128-bit security.

    Rules:
      * degree is one of 8192, 16384, 32768;
      * at least 3 primes (first, >= 1 inner, special): weighted aggregation
        multiplies by a plaintext weight and rescales once, consuming one inner prime;
      * every prime is 20..60 bits (SEAL's limit is 60);
      * the total is at most SEAL's 128-bit-security maximum for the degree
        (8192 -> 218, 16384 -> 438, 32768 -> 881 bits);
      * 20 <= scale bits <= every inner prime (rescaling divides by an inner
        prime q: after a multiplication the scale is 2**(2s) / q, which must not grow);
      * first prime >= scale bits + 8: the decrypted value lives modulo the first
        prime at the last level, so 8 bits are left for the sign and integer part.
    """
    nm = {**PARAM_NAMES, **(names or {})}
    n, mods, s = degree, tuple(coeff_bits), scale_bits
    if n not in ALLOWED_DEGREES:
        raise ValueError(f"{nm['degree']}={n} is not allowed; allowed values: {', '.join(map(str, ALLOWED_DEGREES))}")
    if len(mods) < 3:
        raise ValueError(
            f"{nm['coeff']}={mods} needs at least 3 primes (first, at least one inner prime, special): "
            "weighted aggregation rescales once after the plaintext multiplication"
        )
    bad = [b for b in mods if not MIN_PRIME_BITS <= b <= MAX_PRIME_BITS]
    if bad:
        raise ValueError(
            f"{nm['coeff']}={mods}: every prime must have {MIN_PRIME_BITS}..{MAX_PRIME_BITS} bits, got {bad}"
        )
    total, limit = sum(mods), MAX_COEFF_BITS_128[n]
    if total > limit:
        raise ValueError(
            f"{nm['coeff']}={mods} totals {total} bits, above the 128-bit-security maximum of "
            f"{limit} bits for {nm['degree']}={n} (limits: 8192->218, 16384->438, 32768->881)"
        )
    inner = mods[1:-1]
    if s < MIN_SCALE_BITS:
        raise ValueError(f"{nm['scale']}={s} is too small; it must be >= {MIN_SCALE_BITS}")
    if s > min(inner):
        raise ValueError(
            f"{nm['scale']}={s} overflows: it must be <= every inner prime of {nm['coeff']} "
            f"(smallest inner prime: {min(inner)} bits), otherwise the scale grows at each rescale"
        )
    if mods[0] < s + MIN_INTEGER_BITS:
        raise ValueError(
            f"{nm['scale']}={s} overflows: the first prime of {nm['coeff']} ({mods[0]} bits) must be "
            f">= {nm['scale']} + {MIN_INTEGER_BITS} to leave room for the integer part of the values"
        )


@dataclass(frozen=True)
class CkksParams:
    """CKKS encryption parameters, validated on construction (see `check_ckks`).

    Security level is always 128 bits (TenSEAL's default; the totals enforce it).
    Default (60, 40, 40, 60) at scale 2**40 is TenSEAL's tutorial chain;
    `precise()` is the shorter, more precise chain the engine uses.
    """

    poly_modulus_degree: int = 8192
    coeff_mod_bit_sizes: tuple[int, ...] = (60, 40, 40, 60)
    global_scale_bits: int = 40

    def __post_init__(self):
        object.__setattr__(self, "coeff_mod_bit_sizes", tuple(int(b) for b in self.coeff_mod_bit_sizes))
        check_ckks(self.poly_modulus_degree, self.coeff_mod_bit_sizes, self.global_scale_bits)

    @property
    def slots(self) -> int:
        return self.poly_modulus_degree // 2

    @property
    def scale(self) -> float:
        return float(2**self.global_scale_bits)

    @property
    def security_bits(self) -> int:
        return SECURITY_BITS

    @property
    def max_abs_value(self) -> float:
        """Largest |value| a decrypted result may have (integer headroom of the first prime)."""
        return 2.0 ** (self.coeff_mod_bit_sizes[0] - self.global_scale_bits - 1)

    def n_ciphertexts(self, n_values: int) -> int:
        return max(1, math.ceil(n_values / self.slots))

    def describe(self) -> str:
        return (f"CKKS N={self.poly_modulus_degree} ({self.slots} slots), q={list(self.coeff_mod_bit_sizes)}, "
                f"scale 2^{self.global_scale_bits}, {SECURITY_BITS}-bit security")

    @classmethod
    def precise(cls, poly_modulus_degree: int = 8192) -> "CkksParams":
        """(60, 50, 60) with scale 2**50: ~1000x less error than the default.

        CKKS error after encryption plus one plaintext multiplication and rescale
        is an absolute error of roughly sqrt(N) * 2**-scale_bits (about 1e-8 at
        2**40, N=8192). On weighted means of values ~1e-2 that is ~1e-6
        relative; each extra scale bit halves it, so 2**50 gives ~1e-9. The first
        prime (60) still leaves 10 integer bits (|values| < 512). With one inner
        prime the fresh ciphertext also carries one prime fewer (smaller bytes).
        """
        return cls(poly_modulus_degree, default_chain(50), 50)
