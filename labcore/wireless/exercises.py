"""The wireless notebook's base config and exercise checks (answers computed with labcore, never typed in)."""
from __future__ import annotations


from ..labs_support import Feedback, close, missing, paper_size, todo
from ..methods.quantize import eq5_bits, qsgd_omega
from ..net.channel import RateRegion
from . import allocation, theory
from .config import WirelessConfig

LAB_SMOKE = dict(d=20, iterations=60, trials=8)  # seconds on one core
LAB_PAPER = dict(d=200, iterations=200, trials=100)  # the full-size cards' setting


def lab_config(paper: bool | None = None, **overrides) -> WirelessConfig:
    """The notebook's base run: smoke size unless LABCORE_PAPER_SIZE=1 (then the cards' full size)."""
    base = LAB_PAPER if (paper if paper is not None else paper_size()) else LAB_SMOKE
    return WirelessConfig(**{**base, **overrides})


def check_omega(answer, d: int, bits: int) -> Feedback:
    """Property 2's variance factor of a `bits`-bit quantizer of a d-vector."""
    if missing(answer):
        return todo("a number: omega = d / (4 k^2) with k = 2^bits")
    expected = qsgd_omega(d, 2**bits)
    ok = close(answer, expected, rel=0.01)
    return Feedback(ok, f"omega = {d} / (4 * {2**bits}^2) = {expected:.4g}" if ok else
                    f"{answer} is not it: k = 2^{bits} = {2**bits} levels, and omega grows with d")


def check_message_bits(answer, d: int, bits: int) -> Feedback:
    """Eq. (5): bits of one quantized d-vector at k = 2^bits levels."""
    if missing(answer):
        return todo("an integer: norm + signs + levels, as Eq. (5) counts them")
    parts = eq5_bits(d, 2**bits)
    expected = sum(parts.values())
    ok = close(answer, expected, abs_=0.5)
    return Feedback(ok, f"{expected:g} = 32 (norm) + 2 x {d} (signs) + {d} x {bits} (levels)" if ok else
                    f"{answer} is not it: the norm is 32 bits, each sign 2 bits and each level log2(k) bits")


def check_threshold_bits(answer, link: str = "up", d: int = 200, kappa: float = 2.0, step: float = 0.25) -> Feedback:
    """Theorem 1's fewest bits (log2 k) on one link, the other at full precision."""
    if missing(answer):
        return todo("a number of bits (log2 k), two decimals")
    expected = theory.threshold_bits(d, 1.0, kappa, step / kappa, link)
    ok = close(answer, expected, abs_=0.011)
    return Feedback(ok, f"log2 k >= {expected:.2f} on the {link}link (d = {d}, kappa = {kappa:g}, gamma L = {step:g})"
                    if ok else f"{answer} is not it: solve Theorem 1's {link}link condition for omega, then "
                               "omega = d / (4 k^2) for log2 k")


def check_allocation(answer, k1_bits: float, k2_bits: float, sum_bits: float, link: str = "up") -> Feedback:
    """The optimal two-user split (log2 k1, log2 k2) of a shared link (Eq. 9-10)."""
    if missing(answer):
        return todo("a pair (log2 k1, log2 k2), or 'infeasible'")
    region = RateRegion.two_users(k1_bits, k2_bits, sum_bits)
    try:
        expected = tuple(float(round(t, 6)) for t in allocation.solve(region, link=link))
    except allocation.InfeasibleAllocation as e:
        ok = isinstance(answer, str) and answer.strip().lower() == "infeasible"
        return Feedback(ok, f"infeasible: {e}" if ok else f"{answer} is not it: check Theorem 1's threshold first")
    try:
        ok = len(answer) == 2 and all(close(a, b, abs_=1e-3) for a, b in zip(answer, expected))
    except TypeError:
        ok = False
    return Feedback(ok, f"({expected[0]:g}, {expected[1]:g}) bits: the sum budget is used in full and split as "
                        "evenly as the users' own budgets allow" if ok else
                    f"{answer} is not it: the objective falls with more levels for either user, so the sum budget "
                    f"{sum_bits:g} is used in full; which split does symmetry suggest, and does a user's own "
                    "budget bind?")


def check_worse_link(answer, cfg: WirelessConfig | None = None) -> Feedback:
    """Which single quantized link ('up' or 'down') leaves the larger measured error floor at equal bits?"""
    if missing(answer):
        return todo("'up' or 'down'")
    from .fedavg import error_floor, simulate

    cfg = cfg or lab_config(bits_up=8)
    up = error_floor(simulate(cfg.replace(bits_up=8, bits_down=0, budget_up_bits=0, budget_down_bits=0))[0])
    down = error_floor(simulate(cfg.replace(bits_up=0, bits_down=8, budget_up_bits=0, budget_down_bits=0))[0])
    expected = "up" if up > down else "down"
    ok = str(answer).strip().lower() == expected
    return Feedback(ok, f"{expected}: floors {up:.3g} (uplink-only) and {down:.3g} (downlink-only) at 8 bits" if ok
                    else f"{answer} is not it: run both and compare their error floors")


__all__ = ["lab_config", "check_omega", "check_message_bits", "check_threshold_bits", "check_allocation",
           "check_worse_link"]
