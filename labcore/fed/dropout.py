"""Clients that drop out after being sampled (`RunConfig.dropout`), round by round, with or without secure aggregation.

A sampled client receives the round's model (its downlink is paid), then leaves before it uploads (a phone taken
off its charger, a lost connection): each with probability `dropout`, drawn from its own stream of (seed, round).
The server aggregates the survivors' updates with the weights renormalized over them; a dropped client's user
vector stays as it was. If every sampled client dropped, the first of them is kept, so that a round always has an
update (as `stragglers.draw(keep_one=True)`).

Under `encryption="secagg"` the dropped clients had taken part in the key agreement, so the survivors' masked
vectors carry masks that no longer cancel. The server asks every survivor to reveal the seed it shares with each
dropped client and removes those masks (Bonawitz et al. 2017): it recovers the exact sum if more than
`secagg_threshold` of the sampled clients uploaded, and refuses to unmask (SecureAggregationError, the run stops
with the round, the counts and the two fields to change) below that.
"""
from __future__ import annotations

import numpy as np

from ..config import RunConfig
from .sampling import round_rng

STREAM_DROPOUT = 6  # after the stragglers' stream


def draw(n_sampled: int, share: float, seed: int, round_idx: int) -> np.ndarray:
    """A bool per sampled client: True if it drops out this round (never all of them)."""
    dropped = round_rng(seed, round_idx, STREAM_DROPOUT).random(n_sampled) < share
    if n_sampled and dropped.all():
        dropped[0] = False
    return dropped


def threshold(n_sampled: int, share: float) -> int:
    """Survivors the server needs to unmask: strictly more than `share` of the sampled clients, at most all."""
    return min(n_sampled, int(np.floor(share * n_sampled)) + 1)


def check_survivors(cfg: RunConfig, round_idx: int, n_sampled: int, n_survivors: int) -> None:
    """Under secagg, stop the run loudly when too few sampled clients uploaded to unmask their sum."""
    if cfg.encryption != "secagg":
        return
    t = threshold(n_sampled, cfg.secagg_threshold)
    if n_survivors < t:
        from ..privacy.secagg import SecureAggregationError

        raise SecureAggregationError(
            f"round {round_idx + 1}: only {n_survivors} of the {n_sampled} sampled clients uploaded "
            f"(dropout={cfg.dropout:g}), below the secure-aggregation threshold t={t} (secagg_threshold="
            f"{cfg.secagg_threshold:g}: more than that share must upload); the server will not unmask a sum of so "
            "few inputs. Lower dropout, lower secagg_threshold, or sample more clients per round")
