"""The DP notebook's base config and exercise checks (answers computed with labcore and Opacus, never typed in)."""
from __future__ import annotations

from ..config import RunConfig
from ..labs_support import Feedback, close, missing, paper_size, todo
from ..privacy import dp
from . import experiments as ex


def lab_config(paper: bool | None = None, **overrides) -> RunConfig:
    """The notebook's DP run: smoke size unless LABCORE_PAPER_SIZE=1 (then ML-1M at CoLR's settings)."""
    size = "full" if (paper if paper is not None else paper_size()) else "smoke"
    return ex.base(size, **{"dp_mode": "central", "dp_noise_multiplier": 1.0, "dp_clip": ex.DP_CLIP, **overrides})


def check_sigma(answer, epsilon: float, q: float, rounds: int, delta: float) -> Feedback:
    """The noise multiplier that spends `epsilon` in `rounds` rounds at sampling rate q (RDP, Opacus)."""
    if missing(answer):
        return todo("a number: sigma from opacus.accountants.utils.get_noise_multiplier (or labcore.privacy.dp."
                    "noise_for_epsilon)")
    expected = dp.noise_for_epsilon(epsilon, q, rounds, delta)
    ok = close(answer, expected, rel=0.03)
    spent = dp.epsilon_rdp(q, float(answer), rounds, delta) if _number(answer) and float(answer) > 0 else None
    return Feedback(ok, f"sigma = {expected:.3f} spends epsilon = {epsilon:g} in {rounds} rounds at q = {q:g}" if ok
                    else f"{answer} is not it" + (f": it spends epsilon = {spent:.3g}" if spent is not None else "")
                    + "; more noise spends less")


def faster_spender(a: dict, b: dict, delta: float) -> str:
    """'A' or 'B': which of two (q, sigma, rounds) settings ends with the larger epsilon."""
    ea = dp.epsilon_rdp(a["q"], a["sigma"], a["rounds"], delta)
    eb = dp.epsilon_rdp(b["q"], b["sigma"], b["rounds"], delta)
    return "A" if ea > eb else "B"


def check_faster(answer, a: dict, b: dict, delta: float) -> Feedback:
    """Which configuration spends the privacy budget faster (the larger epsilon after its rounds)?"""
    if missing(answer):
        return todo("'A' or 'B'")
    expected = faster_spender(a, b, delta)
    ea = dp.epsilon_rdp(a["q"], a["sigma"], a["rounds"], delta)
    eb = dp.epsilon_rdp(b["q"], b["sigma"], b["rounds"], delta)
    ok = str(answer).strip().upper() == expected
    return Feedback(ok, f"{expected}: epsilon A = {ea:.3g}, B = {eb:.3g}" if ok else
                    f"{answer!r} is not it: sampling amplifies privacy roughly in proportion to q, and epsilon "
                    "grows about like sqrt(rounds) / sigma")


def _number(x) -> bool:
    try:
        float(x)
        return True
    except (TypeError, ValueError):
        return False
