"""The attacks on the recommendation engine (FedMF): a model-replacement backdoor and its distributed form.

The attack (Bagdasaryan et al. 2020, "How to backdoor federated learning", on a recommender): a share of the users
(`attacker_share`, a fixed set drawn once from the seed) are malicious. When sampled, each trains like everyone
else, then overwrites its update of one target item (`target_item`; default the least popular item with training
data) so that, after the server's average, the target's row becomes `target_row`: the direction of the mean of all
the attackers' own user vectors (colluding users pool what they hold: a stand-in for a typical user), at twice the
length of the largest item row of the model they received. That row scores high for most users, so the target
enters their top 10. (Along the mean of the most popular items' rows it reaches 1 to 2 % of the users on
MovieLens-1M: the popular items' rows do not point where the users do.) Model
replacement boosts the change by the inverse of the attackers' share of the average (`attack_boost`: 0 = that
inverse, computed from the round's weights, as in the paper's gamma = n / eta).

The distributed backdoor (`attack="dba"`, after Xie et al. 2020, "DBA: distributed backdoor attacks against
federated learning"): the attackers form `dba_parts` fixed groups, and the global trigger (here the goal row of the
target item) is cut into as many blocks of its coordinates. Each group plants only its block, boosted by the inverse
of its own share of the average; the other coordinates of an attacker's target row stay as it trained them. No
attacker sends the whole trigger; the blocks add up to it in the average. (In Xie et al. the trigger is a pixel
pattern cut into pieces; the target row is this model's trigger.)

Backdoor success: the share of users for whom the target item is among their top 10 of all the items they have not
trained on (`backdoor_success`, each evaluation round).

The defenses against them are in `defenses.py`; the round calls both through their hooks (`ModelReplacement`,
`RobustAggregator`).
"""
from __future__ import annotations

import numpy as np
import torch

from ..aggregate import fedavg_weights
from ..sampling import SETUP, round_rng
from ..updates import RowUpdate

STREAM_ATTACK = 7  # the attackers' draw (round SETUP) and the clip defense's noise (each round)


def attackers(n_users: int, share: float, seed: int) -> np.ndarray:
    """A bool per user: malicious. round(share x n_users) users, drawn once from the seed."""
    mask = np.zeros(n_users, dtype=bool)
    mask[round_rng(seed, SETUP, STREAM_ATTACK).permutation(n_users)[: int(round(share * n_users))]] = True
    return mask


def default_target(train_items: np.ndarray, n_items: int) -> int:
    """The least popular item with at least one training interaction (lowest index among ties)."""
    counts = np.bincount(train_items, minlength=n_items).astype(np.int64)
    counts[counts == 0] = np.iinfo(np.int64).max
    return int(np.argmin(counts))


def target_row(Q: torch.Tensor, target: int, attacker_vectors: torch.Tensor) -> torch.Tensor:
    """What the attackers want the target's row to be: along the mean of their own user vectors (colluding users
    pool what they hold; it stands for a typical user), twice as long as the largest other row of the model they
    received (not the target's own, or it would grow each round)."""
    norms = torch.linalg.vector_norm(Q, dim=1)
    norms[target] = 0.0
    direction = attacker_vectors.mean(0)
    return direction / torch.linalg.vector_norm(direction).clamp(min=1e-12) * (2 * norms.max())


def plant(rows: RowUpdate, bad: np.ndarray, target: int, value: torch.Tensor, cols: slice = slice(None)
          ) -> RowUpdate:
    """The cohort's rows with every client in `bad` (cohort positions) sending `value` as its update of `target`
    (added as a row where the client had not touched it); with `cols`, only those coordinates (DBA: the others keep
    the client's own update, zero where it had none)."""
    if not len(bad):
        return rows
    client, item, values = rows.client, rows.item, rows.values.clone()
    is_bad = torch.zeros(rows.n_clients, dtype=torch.bool)
    is_bad[torch.from_numpy(np.asarray(bad, dtype=np.int64))] = True
    hit = torch.nonzero(is_bad[client] & (item == target)).squeeze(1)
    values[hit, cols] = value[cols].to(values.dtype)
    have = set(client[hit].tolist())
    new = torch.tensor([int(m) for m in bad if int(m) not in have], dtype=torch.int64)
    if len(new):
        fresh = torch.zeros(len(new), rows.width, dtype=values.dtype)
        fresh[:, cols] = value[cols].to(values.dtype)
        client = torch.cat([client, new])
        item = torch.cat([item, torch.full_like(new, target)])
        values = torch.cat([values, fresh])
        order = torch.from_numpy(np.argsort((client * rows.n_items + item).numpy(), kind="stable"))
        client, item, values = client[order], item[order], values[order]
    return RowUpdate(rows.n_clients, rows.n_items, client, item, values)


def replacement_boost(rows: RowUpdate, bad: np.ndarray, target: int, weights: torch.Tensor, how: str,
                      group: np.ndarray | None = None) -> float:
    """gamma: the inverse of the share of the target's aggregated row that the attackers in `group` (default: all
    of `bad`) hold: their weights under "weighted", their count among the item's touchers (every attacker touches
    it) under "item_mean"."""
    group = bad if group is None else group
    if how == "weighted":
        return float(1.0 / weights[torch.from_numpy(np.asarray(group, dtype=np.int64))].double().sum())
    touchers = int(torch.unique(rows.client[rows.item == target]).numel())
    touchers += sum(1 for m in bad if not bool(((rows.client == int(m)) & (rows.item == target)).any()))
    return touchers / len(group)


def dba_groups(malicious: np.ndarray, parts: int) -> np.ndarray:
    """(n_users,) each attacker's group 0..parts-1 (attackers in user order, dealt round-robin); -1 for the others."""
    group = np.full(len(malicious), -1, dtype=np.int64)
    who = np.flatnonzero(malicious)
    group[who] = np.arange(len(who)) % parts
    return group


def dba_blocks(dim: int, parts: int) -> list[slice]:
    """The target row's coordinates cut into `parts` contiguous blocks of near-equal size."""
    edges = np.linspace(0, dim, parts + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def backdoor_success(P: torch.Tensor, Q: torch.Tensor, indptr: np.ndarray, train_items: np.ndarray, target: int,
                     top_k: int = 10, chunk: int = 4096) -> float:
    """Share of the users who have not trained on `target` for whom it is among their top_k of the items they have
    not trained on."""
    hits = total = 0
    n = P.shape[0]
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        s = P[lo:hi] @ Q.T
        a, b = int(indptr[lo]), int(indptr[hi])
        row = np.repeat(np.arange(hi - lo), np.diff(indptr[lo: hi + 1]))
        mine = np.zeros(hi - lo, dtype=bool)
        mine[row[train_items[a:b] == target]] = True
        s[torch.from_numpy(row), torch.from_numpy(train_items[a:b])] = -float("inf")
        above = (s > s[:, target: target + 1]).sum(1).numpy()
        hits += int(((above < top_k) & ~mine).sum())
        total += int((~mine).sum())
    return hits / max(total, 1)


class ModelReplacement:
    """A run's attackers (`attack="replacement"` or `"dba"`): who they are, their target item, and the rows they send
    in place of their update; the round asks it through `in_cohort`, `plant` and `round_row`."""

    def __init__(self, cfg, data):
        self.cfg = cfg
        self.malicious = attackers(data.n_users, cfg.attacker_share, cfg.seed)
        self.dba_group = dba_groups(self.malicious, cfg.dba_parts) if cfg.attack == "dba" else None
        self.target = cfg.target_item if cfg.target_item >= 0 else default_target(data.train_items, data.n_items)

    def in_cohort(self, clients: np.ndarray) -> bool:
        return bool(self.malicious[clients].any())

    def plant(self, rows: RowUpdate, clients: np.ndarray, n_pos: np.ndarray, Q: torch.Tensor,
              P: torch.Tensor) -> RowUpdate:
        """Model replacement: each attacker of the cohort sends gamma (target row - its current row) for the target
        item, gamma the inverse of the attackers' share of its aggregated row (or attack_boost). DBA: each group
        sends its block of that, gamma the inverse of its own share."""
        cfg = self.cfg
        bad = np.flatnonzero(self.malicious[clients])
        weights = fedavg_weights(torch.from_numpy(n_pos))
        change = target_row(Q, self.target, P[torch.from_numpy(self.malicious)]) - Q[self.target]
        if self.dba_group is None:
            gamma = cfg.attack_boost or replacement_boost(rows, bad, self.target, weights, cfg.aggregation)
            return plant(rows, bad, self.target, gamma * change)
        group = self.dba_group[clients[bad]]
        for g, cols in enumerate(dba_blocks(cfg.dim, cfg.dba_parts)):
            members = bad[group == g]
            if len(members):
                gamma = cfg.attack_boost or replacement_boost(rows, bad, self.target, weights, cfg.aggregation,
                                                              group=members)
                rows = plant(rows, members, self.target, gamma * change, cols)
        return rows

    def round_row(self, sim, clients: np.ndarray, evaluated: bool) -> dict:
        """The round's attackers, and on evaluation rounds the backdoor's success."""
        row = {"attackers": int(self.malicious[clients].sum())}
        if evaluated:
            d = sim.data
            row["backdoor_success"] = backdoor_success(sim.P, sim.Q, d.train_indptr, d.train_items, self.target,
                                                       self.cfg.top_k)
        return row


def make(cfg, data) -> ModelReplacement | None:
    """The run's attackers (None without an attack)."""
    return None if cfg.attack == "none" else ModelReplacement(cfg, data)
