"""Systems heterogeneity on the engine: stragglers, as in FedProx's experiments (Li et al. 2020, section 5.1).

A share of each round's cohort cannot finish its local work in time: each such client takes a uniform 1..K-1 of
its K local steps (FedProx: "a random number of epochs"; here steps, since a client's K is E times its batches).
FedAvg drops them (their partial work is lost, and they neither train nor send); FedProx, and any algorithm that
keeps them, aggregates their partial work. `RunConfig.stragglers` sets the share, `straggler_policy` who keeps
them ("auto": plain FedAvg drops, FedProx / SCAFFOLD / q-FFL keep).

The draws come from their own stream of (seed, round). Kept stragglers train on the round's plan cut short: the
clients, negatives and shuffles are the ones of the same round without stragglers, and a straggler's steps are the
first steps of its full schedule. Dropped stragglers leave the cohort before the plan is made.
"""
from __future__ import annotations

import numpy as np

from .sampling import SLOT_DTYPE, RoundPlan, round_rng, schedule_rows

STREAM_STRAGGLERS = 5  # after sampling's streams (clients, negatives, shuffle, method, quantization)


def full_steps(counts: np.ndarray, num_negatives: int, epochs: int, batch_size: int) -> np.ndarray:
    """Each client's local steps without stragglers: E x its batches (`sampling.plan_round`'s n_steps)."""
    per = counts.astype(np.int64) * (1 + num_negatives)
    return (-(-per // batch_size)) * epochs


def draw(n_steps: np.ndarray, share: float, seed: int, round_idx: int, keep_one: bool = False):
    """Which clients of the cohort straggle (a bool per client) and the steps each then takes: a straggler with
    K > 1 steps takes a uniform 1..K-1 of them. keep_one: at most M - 1 stragglers (when they are dropped, so that
    a round keeps a client to aggregate)."""
    M = len(n_steps)
    rng = round_rng(seed, round_idx, STREAM_STRAGGLERS)
    n_slow = min(int(round(share * M)), M - 1 if keep_one else M)
    slow = np.zeros(M, dtype=bool)
    slow[rng.choice(M, n_slow, replace=False)] = True
    steps = n_steps.astype(np.int64).copy()
    short = slow & (steps > 1)
    steps[short] = rng.integers(1, steps[short])  # high is exclusive: 1..K-1
    return slow, steps


def truncate(plan: RoundPlan, steps: np.ndarray) -> RoundPlan:
    """The plan with client m stopping after steps[m] of its steps (each the first ones of its schedule). Samples
    that no remaining step uses are removed, so that their items do not count as rows the client touched."""
    if np.array_equal(steps, plan.n_steps):
        return plan
    if np.any(steps > plan.n_steps) or np.any(steps < 1):
        raise ValueError("steps must be between 1 and each client's planned steps")
    order, n_active, offsets, _ = schedule_rows(steps)
    old_position = np.empty_like(plan.order)
    old_position[plan.order] = np.arange(plan.order.shape[0])
    row_t = np.repeat(np.arange(n_active.shape[0]), n_active)  # the new schedule's rows: (step, client) pairs
    client = order[np.arange(int(offsets[-1])) - offsets[row_t]]
    slots = plan.slots[plan.offsets[row_t] + old_position[client]]
    used = np.zeros(plan.sample_item.shape[0], dtype=bool)
    used[slots[slots >= 0]] = True
    new_index = np.cumsum(used) - 1
    slots = np.where(slots >= 0, new_index[np.maximum(slots, 0)], -1).astype(SLOT_DTYPE)
    return RoundPlan(plan.clients, plan.n_pos, plan.sample_client[used], plan.sample_item[used],
                     plan.sample_label[used], steps.astype(np.int64), order, n_active, offsets, slots)
