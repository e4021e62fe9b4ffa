"""The work budget of one request: what a page may ask a hosted server to train before it runs anything.

A page adds up the runs it would have to train (finished runs in the cache cost nothing) and checks them here
before any run is queued:

* work: rounds x clients per round x samples per client x local epochs, summed over the runs, where samples per
  client is the dataset's mean training interactions per user x (1 + num_negatives), the positives and the
  negatives a client trains on each epoch. This is the expected number of sample-steps of local training, the
  part that grows with every knob a link or a slider can turn;
* memory: the engine's own estimate of one round's peak (`labcore.fed.engine.estimate_memory`, the heaviest
  possible cohort), summed over the runs that may train at once (`jobs.TRAINING_SLOTS`);
* encryptions: what is encrypted for real, summed over the runs: rounds x clients protected for real
  (`he_real_clients`) x CKKS ciphertexts of one upload (ceil(values / slots)) or Paillier values
  (`he_real_values`). Training never sees this cost: a ciphertext takes milliseconds, a sample-step
  nanoseconds (`python -m labcore.privacy.costs` measures both on this machine).

Above either limit the page says what is too large and by how much, and runs nothing. The limits are the
server's, set by whoever hosts the lab, never by a link:

    LABCORE_APP_BUDGET=600          # million sample-steps per request (default 150)
    LABCORE_APP_MEMORY_GB=8         # GiB per request (default 2)
    LABCORE_APP_ENCRYPTIONS=50000   # ciphertexts (CKKS) or values (Paillier) per request (default 20000)
    LABCORE_APP_BUDGET=off          # no limits (a laptop, one person)

The defaults fit every preset and every page's default view (tests/core/app/test_app_hosted.py) and the paper's own
1000-round ML-1M run of one method (99 million sample-steps). This module does not import Streamlit.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Sequence

from ..config import RunConfig
from ..data.base import InteractionData

WORK_ENV = "LABCORE_APP_BUDGET"
MEMORY_ENV = "LABCORE_APP_MEMORY_GB"
DEFAULT_WORK = 150e6  # sample-steps per request: about 10-30 s of training on one core
DEFAULT_MEMORY_GB = 2.0
ENCRYPTIONS_ENV = "LABCORE_APP_ENCRYPTIONS"
DEFAULT_ENCRYPTIONS = 20_000  # CKKS ciphertexts (N = 8192) or Paillier values: a few minutes of one core


class BudgetSettingError(ValueError):
    """An environment variable of the budget holds something else than a positive number or 'off'."""


@dataclass(frozen=True)
class Limits:
    work: float  # sample-steps per request (inf: no limit)
    memory: float  # bytes per request (inf: no limit)
    encryptions: float = math.inf  # real ciphertexts or Paillier values per request (inf: no limit)


def _read(name: str, default: float, unit: float, what: str) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default * unit
    if raw.lower() in ("off", "none", "inf"):
        return math.inf
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (value > 0 and math.isfinite(value)):
        raise BudgetSettingError(f"{name}={raw!r} is invalid: expected a positive number ({what}) or 'off'")
    return value * unit


def limits() -> Limits:
    """The server's limits, from its environment (read at every request: a restart is not needed to change them)."""
    if os.environ.get(WORK_ENV, "").strip().lower() in ("off", "none", "inf"):
        return Limits(math.inf, math.inf)
    return Limits(_read(WORK_ENV, DEFAULT_WORK / 1e6, 1e6, "million sample-steps per request"),
                  _read(MEMORY_ENV, DEFAULT_MEMORY_GB, 2**30, "GiB per request"),
                  _read(ENCRYPTIONS_ENV, DEFAULT_ENCRYPTIONS, 1, "ciphertexts or Paillier values per request"))


@dataclass(frozen=True)
class Cost:
    """What training one configuration asks of the server."""

    label: str  # the run, as a page names it
    rounds: int
    clients: int
    samples: float  # per client and epoch (mean interactions x (1 + negatives))
    epochs: int
    memory: int  # bytes: the engine's estimate of one round's peak
    encrypted_per_round: float = 0  # real ciphertexts or Paillier values of a round, on average (0: none)

    @property
    def work(self) -> float:
        return self.rounds * self.clients * self.samples * self.epochs

    @property
    def encryptions(self) -> int:
        return math.ceil(self.rounds * self.encrypted_per_round)

    def formula(self) -> str:
        return (f"{self.rounds:,} rounds x {self.clients:,} clients x {self.samples:,.0f} samples per client x "
                f"{self.epochs} local epochs")


def cost(cfg: RunConfig, data: InteractionData, rounds: int | None = None, label: str = "") -> Cost:
    """The cost of training `cfg` on `data` (`rounds` overrides the config's, as the attack plays a few)."""
    from ..fed.engine import estimate_memory

    mean = float(data.train_counts().mean()) if data.n_users else 0.0
    clients = min(cfg.clients_per_round, data.n_users)
    return Cost(label or cfg.describe(), int(rounds if rounds is not None else cfg.rounds), clients,
                mean * (1 + cfg.num_negatives), cfg.local_epochs, int(sum(estimate_memory(cfg, data).values())),
                encrypted_per_round(cfg, data.n_items, clients))


def encrypted_per_round(cfg: RunConfig, n_items: int, clients: int) -> float:
    """Ciphertexts (CKKS) or values (Paillier) encrypted for real in one round of `cfg` (CKKS: on average over the
    rounds, one in every `he_real_every` encrypting)."""
    if cfg.encryption not in ("ckks", "paillier"):
        return 0
    real = min(cfg.he_real_clients, clients)
    if cfg.encryption == "paillier":
        return real * cfg.he_real_values
    values = (cfg.rank if cfg.method in ("colr", "scolr") else cfg.dim) * n_items
    return real * math.ceil(values / (cfg.ckks_degree // 2)) / cfg.he_real_every


def _amount(x: float) -> str:
    return f"{x / 1e6:,.1f} million" if x >= 1e5 else f"{x:,.0f}"


def over(costs: Sequence[Cost], lim: Limits | None = None, at_once: int = 1) -> str | None:
    """None if the runs fit the budget, else a message: what is too large, by how much, and who can raise it."""
    lim = lim or limits()
    if not costs:
        return None
    problems = []
    work = sum(c.work for c in costs)
    if work > lim.work:
        biggest = max(costs, key=lambda c: c.work)
        what = (biggest.formula() if len(costs) == 1 else
                f"{len(costs)} runs; the largest, {biggest.label}: {biggest.formula()}")
        problems.append(f"it would train {_amount(work)} sample-steps ({what}), {work / lim.work:,.1f} times the "
                        f"budget of {_amount(lim.work)}")
    heaviest = sorted((c.memory for c in costs), reverse=True)[:max(1, at_once)]
    memory = sum(heaviest)
    if memory > lim.memory:
        problems.append(f"one round needs about {memory / 2**30:,.2f} GiB of memory"
                        + (f" ({len(heaviest)} runs at once)" if len(heaviest) > 1 else "")
                        + f", {memory / lim.memory:,.1f} times the budget of {lim.memory / 2**30:,.2f} GiB")
    encryptions = sum(c.encryptions for c in costs)
    if encryptions > lim.encryptions:
        problems.append(f"it would encrypt {encryptions:,} ciphertexts or values for real "
                        f"({encryptions / lim.encryptions:,.1f} times the budget of {lim.encryptions:,.0f})")
    if not problems:
        return None
    text = "; ".join(problems)
    lower = (["the rounds", "the clients per round", "the local epochs"] if work > lim.work else []) + \
        (["the clients per round", "the embedding size d or the rank", "the protection"] if memory > lim.memory
         else []) + (["the rounds", "the embedding size d or the rank", "the protection"]
                     if encryptions > lim.encryptions else []) + ["the dataset's size"]
    lower = list(dict.fromkeys(lower))
    return ("**Above this server's work budget; nothing was run.** " + text[0].upper() + text[1:]
            + ". Lower " + ", ".join(lower[:-1]) + " or " + lower[-1] + "; whoever hosts the lab can raise the "
            f"budget with ${WORK_ENV} (million sample-steps), ${MEMORY_ENV} (GiB per request) and "
            f"${ENCRYPTIONS_ENV}, never a link.")
