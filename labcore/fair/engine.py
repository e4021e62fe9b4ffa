"""FAIR's round loop (Algorithms 1 and 2), vectorized across the round's devices.

One round:

1. K devices are drawn (from the 1x devices only under FULL-TRN); each trains
   at the ratio its capacity and the method give it (`baselines.training_ratio`).
2. Downlink: for every distinct subspace of the round the server reduces each
   item table once (Eq. 4: psi = S^T theta / counts; the server basis itself at
   1x), and sends every device its psi, the dense weights and the hash seed.
3. Local training, all devices at once. A batch realizes only the item rows it
   needs, on the fly (Eq. 6): block u of item x goes to column block
   h(u) mod (m_c / Z) of the device's psi, with signs from the sign hash, both
   computed from the device's hash integers, so no device ever holds an n-sized
   table. The gradient of those rows goes back to psi through the same map
   (S^T). Device c's psi is psi_g (what its subspace group was sent) plus the
   change of the blocks it touched; the round keeps the touched (device, table,
   block) rows in one small working set, so every step reads and writes a few
   MB instead of full per-device copies (see `_Local`). Devices are ordered by
   their number of local steps, so the devices still training at step s are a
   prefix (a slice, not a gather), as in the core engine.
4. Uplink: each device returns psi', dense' and the seed. The server recovers
   them in its own basis (Eq. 5) and takes the FedAvg mean weighted by local data
   size. Recovery is linear, so it sums the psi' of each subspace first and
   recovers once per subspace and table.
5. Every `eval_every` rounds: NDCG@20 over all items (ranking), test MSE
   (rating) or test accuracy (mlp) of the server model. User embeddings stay on
   their device (they are never sent); the evaluation uses them as they are.

Randomness comes from generators seeded by (seed, round, stream), so a run
resumed from a checkpoint draws exactly what an uninterrupted one would.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ..config import ConfigError
from ..runtime import default_cache_dir, use_threads
from ..fed.sampling import SETUP, STREAM_CLIENTS, STREAM_NEGATIVES, STREAM_SHUFFLE, NegativeSampler, round_rng, \
    sample_clients
from ..net.ledger import Ledger
from ..net.message import array_part, seed_part, serialize_part
from . import metrics
from .baselines import device_memory, device_ratios, eligible_users, training_ratio
from .config import FairConfig, from_dict
from .fedhm import fedhm_rank, lowrank_factors, mlp_fedhm_ranks
from .data import load
from .hashing import SubspaceFamily, column_hash, sign_hash
from ..diverged import check_finite
from .model import MLPSpec, NeuMFSpec, bpr_loss, init_dense, init_mlp, l2_penalty, mlp_logits, mse_loss, \
    neumf_all_items, neumf_pair_scores, neumf_scores

BETAS, EPS = (0.9, 0.999), 1e-8
ROUND_COLUMNS = ("round", "loss", "metric", "bytes_up", "bytes_down", "bytes_up_client_max", "clients", "clients_1x",
                 "local_steps", "sec_local", "sec_round")
METRIC_NAME = {"ranking": "ndcg@20", "rating": "mse", "mlp": "accuracy"}
HIGHER_IS_BETTER = {"ranking": True, "rating": False, "mlp": True}


def _seed(*parts: int) -> int:
    """A 63-bit seed from integers (what travels as the hash seed)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _gen(*parts: int) -> torch.Generator:
    return torch.Generator().manual_seed(_seed(*parts))


@dataclass(eq=False)
class Group:
    """Devices of one round that share a subspace (or a low-rank size) for every table."""

    key: tuple
    ratio: int
    members: list  # positions in the round's training order
    subs: list  # Subspace per table (hash path) or None
    seed: int | None = None  # the hash seed sent to the group's devices (None: no hash travels)
    start: int = 0  # first buffer entry of the group's block
    m: int = 0  # values per table per device


def _steps(counts: np.ndarray, epochs: int, batch: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(S, C, B) sample ids (epoch e's samples are e * N + local id), -1 padding; and steps per client."""
    n = int(counts.sum())
    c = counts.shape[0]
    nb = -(-counts // batch)
    n_steps = nb * epochs
    steps = np.full((max(int(n_steps.max(initial=0)), 1), c, batch), -1, np.int64)
    s_client = np.repeat(np.arange(c), counts)
    local = np.arange(n) - (np.cumsum(counts) - counts)[s_client]
    for e in range(epochs):
        perm = np.argsort(s_client + rng.random(n), kind="stable")  # by client, random within
        steps[e * nb[s_client] + local // batch, s_client, local % batch] = e * n + perm
    return steps, n_steps


class FairSimulation:
    """State of one FAIR run; `step()` plays one round."""

    def __init__(self, cfg: FairConfig, data=None):
        use_threads()
        self.cfg = cfg
        self.data = data if data is not None else load_data(cfg)
        d = self.data
        self.n_users = d.n_users
        if cfg.clients_per_round > self.n_users:
            raise ConfigError(f"clients_per_round={cfg.clients_per_round} is invalid: {d.name} has only "
                              f"{self.n_users} devices (allowed range 1..{self.n_users})")
        self.device_ratio = device_ratios(cfg, self.n_users)
        self.eligible = eligible_users(cfg, self.device_ratio)
        if self.eligible.size == 0:
            raise ConfigError(f"capacities={cfg.capacities!r} is invalid for method={cfg.method!r}: no device "
                              "holds the full model")
        g = _gen(cfg.seed, SETUP, 0)
        if cfg.task == "mlp":
            self.mspec = MLPSpec(d.x_train.shape[1], cfg.hidden, 10)
            self.spec = None
            self.n_tables, self.rows, self.d = 1, self.mspec.size, 1
            self.theta = [init_mlp(self.mspec, g)]
            self.dense = torch.zeros(0)
            self.P = torch.zeros(self.n_users, 0)
        else:
            self.spec = NeuMFSpec.ranking(cfg.dim, cfg.mlp_layers) if cfg.task == "ranking" else \
                NeuMFSpec.rating(cfg.dim, cfg.mlp_layers)
            self.n_tables, self.rows, self.d = len(self.spec.tables), d.n_items, self.spec.dim
            self.theta = [torch.randn(self.rows * self.d, generator=g) * 0.01 for _ in range(self.n_tables)]
            dd = init_dense(self.spec, g)
            self.dense = torch.cat([dd[k].reshape(-1) for k in self.spec.dense_shapes()])
            self.P = torch.randn(self.n_users, self.n_tables * self.d, generator=g) * 0.01  # on the devices
        self.n = self.rows * self.d  # values per table
        self.block = 1 if cfg.task == "mlp" else (cfg.block or self.d)
        if self.d % self.block:
            raise ConfigError(f"block={cfg.block} is invalid: it must divide the embedding size {self.d}")
        self.max_ratio = max(max(cfg.ratios()), cfg.model_ratio if cfg.method == "fixed" else 1)
        self._store: dict[str, torch.Tensor] = {}
        self.families = self._families(0)
        self.sampler = NegativeSampler(d.interactions()) if cfg.task == "ranking" else None
        self.ledger = Ledger()
        self.rows_out: list[dict] = []
        self.round = 0

    # --- subspaces --------------------------------------------------------------
    def hash_seed(self, round_idx: int, user: int = -1) -> int:
        """The seed a device is sent: the run's (or round's) shared one, or its own in the ablation."""
        parts = [self.cfg.seed, 0xFA1, user + 1]
        if self.cfg.hash_per_round:
            parts.append(round_idx)
        return _seed(*parts)

    def _tables_of(self, seed: int) -> list[SubspaceFamily]:
        """One hash per table, all derived from the one seed that travels."""
        c = self.cfg
        return [SubspaceFamily(self.n, _seed(seed, t), c.signed, c.sizes, self.max_ratio, self.block)
                for t in range(self.n_tables)]

    def int_buffer(self, name: str, size: int) -> torch.Tensor:
        """An int64 scratch vector kept from round to round (grown when a round needs more)."""
        buf = self._store.get(name)
        if buf is None or buf.numel() < size:
            buf = torch.empty(size, dtype=torch.int64)
            self._store[name] = buf
        return buf[:size]

    def _families(self, round_idx: int) -> list[SubspaceFamily]:
        return self._tables_of(self.hash_seed(round_idx))

    def _dims(self) -> dict[int, int]:
        return {r: self.families[0].dim(r) for r in set(self.cfg.ratios()) | {1, self.max_ratio, self.cfg.model_ratio}}

    def _groups(self, users: np.ndarray, ratios: np.ndarray, round_idx: int) -> list[Group]:
        cfg = self.cfg
        if cfg.hash_per_round and round_idx != getattr(self, "_fam_round", 0):
            self.families, self._fam_round = self._families(round_idx), round_idx
        groups: dict[tuple, Group] = {}
        for pos, (u, r) in enumerate(zip(users, ratios)):
            r = int(r)
            own = cfg.method != "fedhm" and not cfg.consistent and r > 1
            key = (r, int(u)) if own else (r,)
            if key not in groups:
                seed = None
                if cfg.method == "fedhm":
                    subs = None
                elif own:  # the ablation: this device's own hash, not shared with anyone
                    seed = self.hash_seed(round_idx, int(u))
                    subs = [f.subspace(r) for f in self._tables_of(seed)]
                else:
                    seed = self.hash_seed(round_idx)
                    subs = [f.subspace(r) for f in self.families]
                groups[key] = Group(key, r, [], subs, seed)
            groups[key].members.append(pos)
        return list(groups.values())

    # --- one round --------------------------------------------------------------
    def step(self) -> dict:
        cfg, t = self.cfg, self.round
        t_start = time.perf_counter()
        k = min(cfg.clients_per_round, self.eligible.size)
        users = self.eligible[sample_clients(self.eligible.size, k, round_rng(cfg.seed, t, STREAM_CLIENTS))]
        counts = self.data.train_counts()[users]
        order = np.argsort(-counts, kind="stable")  # most local steps first: active devices are a prefix
        users, counts = users[order], counts[order]
        ratios = training_ratio(cfg, self.device_ratio[users])
        weights = torch.from_numpy(counts / counts.sum()).float()  # FedAvg p_i = n_i / sum n_j
        groups = self._groups(users, ratios, t)
        local = _Local(self, users, groups, self._plan(users, counts, t))  # downlink: Eq. 4 per subspace
        t0 = time.perf_counter()
        loss = local.train()
        sec_local = time.perf_counter() - t0
        down = self._record(t, "down", local, groups, initial=True)
        up = self._record(t, "up", local, groups, initial=False)
        self._aggregate(local, groups, weights)
        if self.P.shape[1]:
            self.P[torch.from_numpy(users)] = local.users().detach().clone()
        check_finite(f"round {t + 1}", loss, [*self.theta, self.P], lower=f"lr (now {cfg.lr:g})")
        row = {"round": t, "loss": loss, "bytes_up": int(up.sum()), "bytes_down": int(down.sum()),
               "bytes_up_client_max": int(up.max()), "clients": int(users.size),
               "clients_1x": int((ratios == 1).sum()), "local_steps": int(local.plan[0].shape[0]),
               "sec_local": sec_local}
        if (t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds:
            row["metric"] = self.evaluate()
        row["sec_round"] = time.perf_counter() - t_start
        self.rows_out.append(row)
        self.round += 1
        return row

    # --- local training -------------------------------------------------------------
    def _plan(self, users: np.ndarray, counts: np.ndarray, t: int):
        """Every sample of the round: (S, C, B) step table and the samples' items / targets / images."""
        cfg = self.cfg
        steps, n_steps = _steps(counts, cfg.local_epochs, cfg.batch_size, round_rng(cfg.seed, t, STREAM_SHUFFLE))
        d = self.data
        E = cfg.local_epochs
        if cfg.task == "ranking":
            pos = np.concatenate([d.user_train(u) for u in users])
            owners = np.repeat(users, counts)
            negs = self.sampler.sample(np.tile(np.repeat(owners, cfg.num_negatives), E),
                                       round_rng(cfg.seed, t, STREAM_NEGATIVES))  # fresh every epoch
            items = np.concatenate([np.tile(pos, E)[:, None], negs.reshape(-1, cfg.num_negatives)], 1)
            return steps, n_steps, {"items": torch.from_numpy(items)}
        if cfg.task == "rating":
            starts = np.searchsorted(d.train[0], users)
            idx = np.tile(np.concatenate([np.arange(s, s + c) for s, c in zip(starts, counts)]), E)
            return steps, n_steps, {"items": torch.from_numpy(d.train[1][idx][:, None]),
                                    "target": torch.from_numpy(d.train[2][idx])}
        starts = np.searchsorted(d.owner, users)
        idx = np.tile(np.concatenate([np.arange(s, s + c) for s, c in zip(starts, counts)]), E)
        return steps, n_steps, {"x": torch.from_numpy(d.x_train[idx]), "y": torch.from_numpy(d.y_train[idx])}

    # --- server side ------------------------------------------------------------------
    def _aggregate(self, local: "_Local", groups: list[Group], w: torch.Tensor) -> None:
        """theta = sum_i p_i S_i psi_i' (Eq. 5 then FedAvg), one recovery per subspace and table."""
        new = [torch.zeros(self.n) for _ in range(self.n_tables)]
        for g in groups:
            for t in range(self.n_tables):
                summed = local.weighted_sum(g, t, w)
                new[t] += summed if (g.subs is None or g.ratio == 1) else g.subs[t].recover(summed)
        self.theta = new
        if self.dense.numel():
            self.dense = (w[:, None] * local.flat.detach()[:, :self.dense.numel()]).sum(0)

    def _record(self, t: int, direction: str, local: "_Local", groups: list[Group], initial: bool) -> np.ndarray:
        """Every device's message serialized (measured bytes); ledger rows per part; bytes per device.

        The psi of the devices of one subspace have one shape, so their serialized length is one
        number: the first device's psi (its real values) is serialized and its length counted for
        each device of the subspace; dense weights and seeds are serialized device by device.
        """
        per_part: dict[str, list] = {}
        sizes = np.zeros(len(local.users_np), np.int64)
        for g in groups:
            shared: dict[str, tuple[int, int]] = {}
            for j, pos in enumerate(g.members):
                for part in local.parts(g, pos, initial, lazy=j > 0):
                    if isinstance(part, tuple):  # (name, kind) of a table part sized like the first device's
                        name, kind = part
                        b, bits = shared[name]
                    else:
                        name, kind = part.name, part.kind
                        b, bits = len(serialize_part(part)), part.bits
                        if kind in ("values", "factors") and name != "dense":
                            shared[name] = (b, bits)
                    sizes[pos] += b
                    acc = per_part.setdefault(name, [kind, 0, 0, 0])
                    acc[1] += 1
                    acc[2] += b
                    acc[3] += bits
        for name, (kind, msgs, b, bits) in per_part.items():
            self.ledger.rows.append({"round": t, "direction": direction, "part": name, "kind": kind,
                                     "messages": msgs, "bytes": b, "bits": bits})
        return sizes

    # --- evaluation ---------------------------------------------------------------------
    def server_dense(self) -> dict[str, torch.Tensor]:
        out, pos = {}, 0
        for k, s in self.spec.dense_shapes().items():
            size = math.prod(s)
            out[k] = self.dense[pos:pos + size].reshape(s)
            pos += size
        return out

    def evaluate(self) -> float:
        cfg, d = self.cfg, self.data
        with torch.no_grad():
            if cfg.task == "mlp":
                w = self.mspec.unflatten(self.theta[0][None])
                logits = mlp_logits(self.mspec, w, torch.from_numpy(d.x_test)[None])[0]
                return metrics.accuracy(logits, torch.from_numpy(d.y_test))
            dense = self.server_dense()
            items = torch.stack([th.view(self.rows, self.d) for th in self.theta], 1)  # (I, T, d)
            users = self.P.view(self.n_users, self.n_tables, self.d)
            if cfg.task == "rating":
                u, i, y = (torch.from_numpy(a) for a in d.test)
                return metrics.mse(neumf_pair_scores(self.spec, dense, users[u], items[i]), y)
            return metrics.ndcg_at_k(lambda us: neumf_all_items(self.spec, dense, users[us], items), d.n_items,
                                     d.train_indptr, d.train_items, d.test_indptr, d.test_items, cfg.top_k)

    # --- devices --------------------------------------------------------------------------
    def device_table(self) -> pd.DataFrame:
        """Model values each tier stores on the device, and its measured bytes per round."""
        user_values = self.P.shape[1]
        rows = device_memory(self.cfg, self.rows, self.n_tables, int(self.dense.numel()), user_values,
                             self._dims())
        return pd.DataFrame(rows)

    # --- checkpoints ------------------------------------------------------------------------
    def state(self) -> dict:
        return {"round": self.round, "theta": self.theta, "dense": self.dense, "P": self.P, "rows": self.rows_out,
                "ledger": self.ledger.rows, "key": self.cfg.key()}

    def load_state(self, st: dict) -> None:
        if st.get("key") != self.cfg.key():
            raise ValueError("checkpoint belongs to a different config")
        self.round, self.theta, self.dense, self.P = st["round"], st["theta"], st["dense"], st["P"]
        self.rows_out, self.ledger = list(st["rows"]), Ledger(st["ledger"])
        if self.cfg.hash_per_round:
            self.families, self._fam_round = self._families(self.round), self.round

    def result(self, complete: bool) -> "FairResult":
        table = pd.DataFrame(self.rows_out).reindex(columns=list(ROUND_COLUMNS))
        return FairResult(self.cfg, table, self.ledger.frame(), self.device_table(), self.data.notes, complete)


class _Local:
    """The round's devices, trained side by side.

    Device c of subspace group g holds psi_c = psi_g (the reduction it was sent) until it trains;
    afterwards psi_c = psi_g + delta_c, where delta_c is non-zero only on the blocks its batches
    touched. The simulation keeps exactly that: one psi_g per group and table, and a compact
    working set W of the (device, table, block) rows the round touches, deduplicated once per round
    with a persistent key -> position map (no sort). Every step reads and writes only W, which is a
    few MB, so the per-step gathers stay in cache. The numbers are those of devices holding full
    psi copies: a row is realized from W exactly as it would be from the device's psi (Eq. 6).
    """

    def __init__(self, sim: FairSimulation, users: np.ndarray, groups: list[Group], plan):
        self.sim, self.cfg = sim, sim.cfg
        self.users_np = users
        C, T, Z = users.size, sim.n_tables, sim.block
        self.C, self.T, self.Z = C, T, Z
        self.groups = groups
        self.lowrank = sim.cfg.method == "fedhm"
        self.adam = sim.cfg.optimizer == "adam"
        self.signed = sim.cfg.signed
        theta = sim.theta
        self.gid = torch.zeros(C, dtype=torch.int64)
        self.mb = torch.ones(C, dtype=torch.int64)  # column blocks per table
        self.full = torch.zeros(C, dtype=torch.bool)
        self.coef = torch.zeros(C, T, 4, dtype=torch.int64)
        self.hashed = False
        self.down: dict[tuple, list[torch.Tensor]] = {}  # psi_g per table: what the group's devices received
        self.factors: dict[tuple, list[tuple[torch.Tensor, torch.Tensor]]] = {}
        voff, R = [], 0
        for gi, g in enumerate(groups):
            if self.lowrank and g.ratio > 1 and sim.cfg.task != "mlp":
                k = fedhm_rank(sim.d, g.ratio)
                fac = [lowrank_factors(theta[t].view(sim.rows, sim.d), k) for t in range(T)]
                self.factors[g.key] = fac
                psi0 = [F.pad(U, (0, sim.d - k)).reshape(-1) for U, _ in fac]  # U padded to d columns
            elif g.ratio == 1 or self.lowrank:
                psi0 = list(theta)
            else:
                psi0 = [g.subs[t].reduce(theta[t]) for t in range(T)]  # Eq. 4
            self.down[g.key] = psi0
            g.m = psi0[0].numel()
            voff.append([R + t * (g.m // Z) for t in range(T)])
            R += T * (g.m // Z)
            for pos in g.members:
                self.gid[pos] = gi
                self.mb[pos] = g.m // Z
                self.full[pos] = g.ratio == 1 or self.lowrank
                if not self.full[pos]:
                    self.hashed = True
                    for t in range(T):
                        h = g.subs[t].hash
                        self.coef[pos, t] = torch.tensor([h.c1, h.c0, h.s1, h.s0])
        self.voff = torch.tensor(voff, dtype=torch.int64).view(len(groups), T)  # virtual row of (group, table)
        self.R = R  # virtual rows per device; key of (device c, row r) = c * R + r, C * R = the scratch row
        # --- per-device dense vector: [dense weights | user rows | low-rank V per table] ---
        D, Ud = sim.dense.numel(), sim.P.shape[1]
        parts = [sim.dense[None].expand(C, D), sim.P[torch.from_numpy(users)]]
        self.D, self.Ud = D, Ud
        self.grad_mask = None
        if self.lowrank and sim.cfg.task != "mlp":
            V = torch.eye(sim.d).expand(C, T, sim.d, sim.d).clone()
            mask = torch.ones(C, D + Ud + T * sim.d * sim.d)
            for g in groups:
                for pos in g.members:
                    if g.ratio == 1:
                        mask[pos, D + Ud:] = 0  # a full device trains its table directly: V = I stays fixed
                    else:
                        k = fedhm_rank(sim.d, g.ratio)
                        for t in range(T):
                            V[pos, t] = F.pad(self.factors[g.key][t][1], (0, 0, 0, sim.d - k))
            parts.append(V.reshape(C, -1))
            self.grad_mask = mask
        if self.lowrank and sim.cfg.task == "mlp":
            self._mlp_lowrank_init(groups, parts)
        self.flat = torch.cat([p.reshape(C, -1) for p in parts], 1).clone().requires_grad_(True)
        if self.adam:
            self.fm, self.fv = torch.zeros_like(self.flat), torch.zeros_like(self.flat)
        self.plan = plan
        self._pending = None
        self.W = None
        if sim.cfg.task != "mlp":
            self._index_rows(plan)
        elif not self.lowrank:
            self._index_mlp()

    # --- the round's working set ----------------------------------------------------
    def _columns(self, client: torch.Tensor, units: torch.Tensor) -> torch.Tensor:
        """Eq. 7 on blocks, per device: units (N, ..., 1, nb) -> column blocks (N, ..., T, nb)."""
        T = self.T
        view = (-1,) + (1,) * (units.dim() - 1)
        if not self.hashed:
            return units.expand(*units.shape[:-2], T, units.shape[-1])
        co = self.coef[client]
        c1 = co[:, :, 0].view(-1, *([1] * (units.dim() - 3)), T, 1)
        c0 = co[:, :, 1].view(c1.shape)
        col = column_hash(units, c1, c0) % self.mb[client].view(view)
        return torch.where(self.full[client].view(view), units, col)

    def _sign_words(self, client: torch.Tensor, units: torch.Tensor) -> torch.Tensor | None:
        """One sign-hash word per block (N, ..., T, nb[, words]); 0 on full devices (all signs +1)."""
        if not (self.hashed and self.signed):
            return None
        T, Z = self.T, self.Z
        co = self.coef[client]
        s1 = co[:, :, 2].view(-1, *([1] * (units.dim() - 3)), T, 1)
        s0 = co[:, :, 3].view(s1.shape)
        words = (Z + 30) // 31
        if words == 1:
            word = sign_hash(units, s1, s0)
        else:
            k = torch.arange(Z)
            word = sign_hash(units[..., None] * words + k // 31, s1[..., None], s0[..., None])
        full = self.full[client].view((-1,) + (1,) * (word.dim() - 1))
        return torch.where(full, 0, word)

    def _bits_to_signs(self, word: torch.Tensor) -> torch.Tensor:
        """g = 1 - 2 * bit (k mod 31) of the block's word: (..., Z) floats."""
        k = torch.arange(self.Z)
        w = word[..., None] if word.shape[-1:] != (self.Z,) or (self.Z + 30) // 31 == 1 else word
        return 1.0 - 2.0 * ((w >> (k % 31)) & 1).float()

    def _dedup(self, keys: torch.Tensor) -> torch.Tensor:
        """Compact ids of the keys (equal keys, equal ids); builds W0 from the groups' psi."""
        flat = keys.reshape(-1)
        n = flat.numel()
        where = self.sim.int_buffer("slot_of", self.C * self.R + 1)
        pos = torch.arange(n)
        where.index_copy_(0, flat, pos)  # some position of each key wins; all copies then read it
        rep = where.index_select(0, flat)
        first = rep == pos
        cid = torch.cumsum(first, 0) - 1
        ids = cid.index_select(0, rep)
        ukey = flat[first]
        self.ukey = ukey
        # initial rows: the group's psi (what the device was sent)
        Z = self.Z
        W0 = torch.zeros(ukey.numel(), Z)
        dev, row = ukey // self.R, ukey % self.R
        real = dev < self.C
        self.sel = {}
        for gi, g in enumerate(self.groups):
            in_g = real & (self.gid[dev.clamp(max=self.C - 1)] == gi)
            for t in range(self.T):
                lo = int(self.voff[gi, t])
                idx = torch.nonzero(in_g & (row >= lo) & (row < lo + g.m // Z)).view(-1)
                col = row[idx] - lo
                W0[idx] = self.down[g.key][t].view(-1, Z).index_select(0, col)
                self.sel[(gi, t)] = (idx, col, dev[idx])
        self.W0 = W0
        self.W = W0.clone()
        if self.adam:
            self.MV = torch.zeros(ukey.numel(), 2, Z)  # lazy Adam's m and v, one row per W row
        self.where_u = torch.zeros(ukey.numel(), dtype=torch.int64)  # per-step duplicate map
        return ids.view(keys.shape)

    def _index_rows(self, plan) -> None:
        """Keys of every (step, device, sample, item, table, block) of the round, deduplicated."""
        steps, n_steps, samples = plan
        sim, C, T, Z = self.sim, self.C, self.T, self.Z
        S = steps.shape[0]
        active = (n_steps[None, :] > np.arange(S)[:, None]).sum(1)
        self.cum = np.concatenate([[0], np.cumsum(active)])
        on = np.arange(C)[None, :] < active[:, None]
        sid = torch.from_numpy(steps[on])  # (rows, B): step-major, devices in training order
        client = torch.from_numpy(np.nonzero(on)[1])
        valid = sid >= 0
        self.sid, self.valid = sid.clamp(min=0), valid
        nb = sim.d // Z
        items = samples["items"][self.sid]  # (rows, B, J)
        units = (items[..., None] * nb + torch.arange(nb))[:, :, :, None, :]  # (rows, B, J, 1, nb)
        col = self._columns(client, units)
        keys = client.view(-1, 1, 1, 1, 1) * self.R + self.voff[self.gid[client]].view(-1, 1, 1, T, 1) + col
        keys = torch.where(valid.view(*valid.shape, 1, 1, 1), keys, C * self.R)  # padding: the scratch row
        self.words = self._sign_words(client, units)
        self.ids = self._dedup(keys)
        self.samples = samples

    def _index_mlp(self) -> None:
        """The general model realizes every weight at every step: one key per (device, coordinate)."""
        n = self.sim.n
        keys = torch.empty(self.C, n, dtype=torch.int64)
        sign = torch.ones(self.C, n)
        for gi, g in enumerate(self.groups):
            sub = g.subs[0]
            slots, sg = sub.slots(), sub.signs()
            for pos in g.members:
                keys[pos] = pos * self.R + int(self.voff[gi, 0]) + slots
                if sg is not None:
                    sign[pos] = sg
        self.mlp_sign = sign
        self.ids = self._dedup(keys)
        # compact ids follow the devices' order, so the active devices' rows are a prefix of W
        self.mlp_rows = torch.cummax(self.ids.max(1).values, 0).values + 1  # rows of devices 0..c

    # --- training ----------------------------------------------------------------------
    def train(self) -> float:
        cfg, sim = self.cfg, self.sim
        steps, n_steps, samples = self.plan
        loss_sum, n_sum = 0.0, 0
        if cfg.task == "mlp":
            active = (n_steps[None, :] > np.arange(steps.shape[0])[:, None]).sum(1)
            steps_t = torch.from_numpy(steps)
        for s in range(steps.shape[0]):
            if cfg.task == "mlp":
                a = int(active[s])
                idx = steps_t[s, :a]
                valid = idx >= 0
                ids = idx.clamp(min=0)
                mask = valid.float()
                loss = self._mlp_loss(a, samples["x"][ids], samples["y"][ids], mask, mask.sum(1).clamp(min=1))
            else:
                lo, hi = int(self.cum[s]), int(self.cum[s + 1])
                a = hi - lo
                mask = self.valid[lo:hi].float()
                count = mask.sum(1).clamp(min=1)
                rows = self._realize(lo, hi)
                users_a, dense_a = self.user_rows(a), self.dense_views(a)
                scores = neumf_scores(sim.spec, dense_a, users_a, rows)
                if cfg.task == "ranking":
                    loss = bpr_loss(scores, mask, count)
                else:
                    loss = mse_loss(scores, samples["target"][self.sid[lo:hi]], mask, count)
                if cfg.weight_decay:
                    loss = loss + cfg.weight_decay * l2_penalty(users_a, rows, mask, count)
            loss.backward()
            self.update(a, s + 1)
            loss_sum += float(loss.detach())
            n_sum += a
        return loss_sum / max(n_sum, 1)

    def _realize(self, lo: int, hi: int) -> torch.Tensor:
        """Eq. 6: the item rows (a, B, J, T, d) of steps rows lo..hi, from the devices' psi."""
        ids = self.ids[lo:hi]
        a, B, J, T, nb = ids.shape
        d, Z = self.sim.d, self.Z
        idk = ids.reshape(-1)
        sel = self.W.index_select(0, idk)
        vals = sel.view(a, B, J, T, nb, Z)
        sign = None if self.words is None else self._bits_to_signs(self.words[lo:hi])
        if sign is not None:
            vals = vals * sign
        rows = vals.reshape(a, B, J, T, d).requires_grad_(True)
        self._pending = (idk, sel, sign, rows)
        if self.lowrank:
            V = self.flat[:a, self.D + self.Ud:].view(a, T, d, d)
            return torch.einsum("abjtk,atkl->abjtl", rows, V)
        return rows

    def _mlp_loss(self, a: int, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor,
                  count: torch.Tensor) -> torch.Tensor:
        spec = self.sim.mspec
        if self.lowrank:
            f = self._mlp_factor_views(a)
            w = {n: (f[n] if n.startswith("b") else torch.bmm(f["U" + n[1:]], f["V" + n[1:]]))
                 for n in spec.shapes()}
        else:
            idk = self.ids[:a].reshape(-1)
            sel = self.W.view(-1).index_select(0, idk)
            sign = self.mlp_sign[:a]
            leaf = (sel.view(a, -1) * sign).requires_grad_(True)
            self._pending = (idk, sel, sign, leaf)
            w = spec.unflatten(leaf)
        logits = mlp_logits(spec, w, x)
        ce = F.cross_entropy(logits.reshape(-1, spec.n_out), y.reshape(-1), reduction="none").view(a, -1)
        return ((ce * mask).sum(1) / count).sum()

    def user_rows(self, a: int) -> torch.Tensor:
        return self.flat[:a, self.D:self.D + self.Ud].view(a, self.T, self.sim.d)

    def users(self) -> torch.Tensor:
        return self.flat[:, self.D:self.D + self.Ud]

    def dense_views(self, a: int) -> dict[str, torch.Tensor]:
        out, pos = {}, 0
        for k, s in self.sim.spec.dense_shapes().items():
            size = math.prod(s)
            out[k] = self.flat[:a, pos:pos + size].reshape(a, *s)
            pos += size
        return out

    # --- optimizer steps -------------------------------------------------------------
    def update(self, a: int, step: int) -> None:
        lr = self.cfg.lr
        if self._pending is not None and self.cfg.task == "mlp":
            idk, _, sign, leaf = self._pending
            self._dense_step(int(self.mlp_rows[a - 1]), idk, (leaf.grad * sign).reshape(-1), step, lr)
            self._pending = None
        if self._pending is not None:
            idk, sel, sign, leaf = self._pending
            grad = leaf.grad
            if sign is not None:
                grad = grad.view(sign.shape) * sign
            self._table_step(idk, sel, grad.reshape(sel.shape), step, lr)
            self._pending = None
        if self.flat.grad is not None:
            g = self.flat.grad[:a]
            if self.grad_mask is not None:
                g = g * self.grad_mask[:a]
            p = self.flat.data[:a]
            if self.adam:
                b1, b2 = BETAS
                m, v = self.fm[:a], self.fv[:a]
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                bc1, bc2 = 1 - b1**step, 1 - b2**step
                p.addcdiv_(m, v.sqrt().div_(math.sqrt(bc2)).add_(EPS), value=-lr / bc1)
            else:
                p.add_(g, alpha=-lr)
            self.flat.grad = None

    def _table_step(self, idk: torch.Tensor, sel: torch.Tensor, grad: torch.Tensor, step: int, lr: float) -> None:
        """SGD, or lazy Adam (torch.optim.SparseAdam's rule): only the rows this batch touched move.

        A row touched several times in one batch gets the sum of its gradients (S^T of the realized
        rows' gradients): the copies are summed through a position map, then every copy computes
        the same new value, so writing them all back is idempotent. Adam's m and v of a row sit side
        by side (one gather, one scatter).
        """
        flat = self.Z == 1  # width-1 row kernels are slow: use 1-D views
        W = self.W.view(-1) if flat else self.W
        if flat:
            sel, grad = sel.view(-1), grad.reshape(-1)
        k = idk.numel()
        pos = torch.arange(k)
        self.where_u.index_copy_(0, idk, pos)
        rep = self.where_u.index_select(0, idk)
        g = grad
        if not torch.equal(rep, pos):  # some row occurs twice in this batch
            g = torch.zeros_like(grad).index_add_(0, rep, grad).index_select(0, rep)
        if not self.adam:
            W.index_copy_(0, idk, sel - lr * g)
            return
        b1, b2 = BETAS
        mv = self.MV.index_select(0, idk)
        g2 = g.view(k, -1)
        m = mv[:, 0].mul_(b1).add_(g2, alpha=1 - b1)
        v = mv[:, 1].mul_(b2).addcmul_(g2, g2, value=1 - b2)
        self.MV.index_copy_(0, idk, mv)
        size = lr * math.sqrt(1 - b2**step) / (1 - b1**step)
        W.index_copy_(0, idk, sel - (size * m / (v.sqrt() + EPS)).view(sel.shape))

    def _dense_step(self, rows: int, idk: torch.Tensor, grad: torch.Tensor, step: int, lr: float) -> None:
        """The general model: every row of the active devices is touched, so step densely on W[:rows]."""
        W = self.W.view(-1)[:rows]
        g = torch.zeros(rows).index_add_(0, idk, grad)  # S^T of the realized weights' gradient
        if not self.adam:
            W.add_(g, alpha=-lr)
            return
        b1, b2 = BETAS
        m, v = self.MV[:rows, 0, 0], self.MV[:rows, 1, 0]
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        size = lr * math.sqrt(1 - b2**step) / (1 - b1**step)
        W.addcdiv_(m, v.sqrt().add_(EPS), value=-size)

    # --- the general model under FedHM: per-device factors, realized each step --------------
    def _mlp_lowrank_init(self, groups: list[Group], parts: list) -> None:
        """FedHM on the MLP: each weight W (a x b) as U (a x r) V (r x b), r = min(a, b), zero-padded
        beyond the device's rank; a full device holds W itself with an identity on the smaller side
        (kept fixed), so one batched product serves every device of the round."""
        spec, theta = self.sim.mspec, self.sim.theta[0]
        w = spec.unflatten(theta[None])
        C = self.C
        shapes = spec.shapes()
        mats = [n for n, s in shapes.items() if len(s) == 2]
        blocks, masks, self._mlp_shapes = {}, {}, []
        for name in shapes:
            s = shapes[name]
            if len(s) == 1:
                blocks[name] = w[name][0].expand(C, *s).clone()
                masks[name] = torch.ones(C, s[0])
                self._mlp_shapes.append((name, s))
                continue
            a, b = s
            r = min(a, b)
            blocks["U" + name[1:]], blocks["V" + name[1:]] = torch.zeros(C, a, r), torch.zeros(C, r, b)
            masks["U" + name[1:]], masks["V" + name[1:]] = torch.ones(C, a * r), torch.ones(C, r * b)
            self._mlp_shapes += [("U" + name[1:], (a, r)), ("V" + name[1:], (r, b))]
        self.mlp_factors = {}
        for g in groups:
            ks = mlp_fedhm_ranks(shapes, g.ratio)
            facs = {}
            for name in mats:
                W = w[name][0]
                a, b = W.shape
                whole = ks[name] >= min(a, b)  # not factorized on this device
                if whole:
                    U, V = (torch.eye(a), W) if a <= b else (W, torch.eye(b))
                else:
                    U, V = lowrank_factors(W, ks[name])
                facs[name] = None if whole else (U, V)
                for pos in g.members:
                    blocks["U" + name[1:]][pos, :, :U.shape[1]] = U
                    blocks["V" + name[1:]][pos, :V.shape[0], :] = V
                    if whole:  # the identity factor stays fixed: the device trains W itself
                        masks[("U" if a <= b else "V") + name[1:]][pos] = 0
            self.mlp_factors[g.key] = facs
        order = [n for n, _ in self._mlp_shapes]
        parts += [blocks[n] for n in order]
        self.grad_mask = torch.cat([masks[n] for n in order], 1)

    @staticmethod
    def _mlp_weight(f: dict, name: str, pos) -> torch.Tensor:
        if name.startswith("b"):
            return f[name][pos]
        return f["U" + name[1:]][pos] @ f["V" + name[1:]][pos]

    def _mlp_factor_views(self, a: int) -> dict[str, torch.Tensor]:
        out, pos = {}, 0
        for k, s in self._mlp_shapes:
            size = math.prod(s)
            out[k] = self.flat[:a, pos:pos + size].reshape(a, *s)
            pos += size
        return out

    # --- after training: what the server receives --------------------------------------------
    def device_psi(self, g: Group, pos: int, t: int) -> torch.Tensor:
        """Device pos's trained psi of table t (its group's psi plus its own changes)."""
        gi = self.groups.index(g)
        base = self.down[g.key][t].view(-1, self.Z).clone()
        if self.W is not None:
            idx, col, dev = self.sel[(gi, t)]
            mine = dev == pos
            base.index_copy_(0, col[mine], self.W.index_select(0, idx[mine]))
        return base.view(-1)

    def weighted_sum(self, g: Group, t: int, w: torch.Tensor) -> torch.Tensor:
        """sum over the group's devices of p_i psi_i' (table t), in the group's basis; FedHM: of U_i V_i."""
        sim, Z = self.sim, self.Z
        gi = self.groups.index(g)
        pw = w[g.members]
        if self.lowrank and sim.cfg.task == "mlp":
            f = {k: v.detach() for k, v in self._mlp_factor_views(self.C).items()}
            out = torch.zeros(sim.n)
            for j, pos in enumerate(g.members):
                out += pw[j] * torch.cat([self._mlp_weight(f, name, pos).reshape(-1)
                                          for name in sim.mspec.shapes()])
            return out
        base = self.down[g.key][t].view(-1, Z)
        idx, col, dev = self.sel[(gi, t)]
        delta = (self.W - self.W0).index_select(0, idx)
        if self.lowrank:  # U_i V_i = (U_g + delta_i) V_i
            d = sim.d
            Vs = self.flat.detach()[:, self.D + self.Ud:].view(self.C, self.T, d, d)[:, t]
            out = base @ torch.einsum("j,jkl->kl", pw, Vs[g.members])
            for j, pos in enumerate(g.members):
                mine = dev == pos
                out.index_add_(0, col[mine], (delta[mine] @ Vs[pos]) * pw[j])
            return out.view(-1)
        out = base * pw.sum()
        out.index_add_(0, col, delta * w[dev].unsqueeze(1))
        return out.view(-1)

    def parts(self, g: Group, pos: int, initial: bool, lazy: bool = False) -> list:
        """Device pos's message: psi per table (FedHM: U and V), dense weights, hash seed.

        lazy: give (name, kind) for table parts instead of building them (same shape as the
        group's first device, whose real message was serialized).
        """
        sim, out, T = self.sim, [], self.T
        if self.lowrank and g.ratio > 1 and sim.cfg.task == "mlp":
            facs = self.mlp_factors[g.key]
            f = None if initial else {k: v[pos].detach() for k, v in self._mlp_factor_views(self.C).items()}
            w0 = sim.mspec.unflatten(sim.theta[0][None])
            for name in sim.mspec.shapes():
                if name.startswith("b") or facs[name] is None:
                    val = w0[name][0] if initial else (f[name] if name.startswith("b") else
                                                       self._mlp_weight(f, name, slice(None)))
                    out.append(array_part(name, "values", np.ascontiguousarray(val.numpy())))
                    continue
                U, V = facs[name]
                k = U.shape[1]
                Ud = U if initial else f["U" + name[1:]][:, :k]
                Vd = V if initial else f["V" + name[1:]][:k, :]
                out.append(array_part("U" + name[1:], "factors", np.ascontiguousarray(Ud.numpy())))
                out.append(array_part("V" + name[1:], "factors", np.ascontiguousarray(Vd.numpy())))
        elif self.lowrank and g.ratio > 1:
            k = fedhm_rank(sim.d, g.ratio)
            for t in range(T):
                if lazy:
                    out += [(f"U_{t}", "factors"), (f"V_{t}", "factors")]
                    continue
                if initial:
                    U, V = self.factors[g.key][t]
                else:
                    U = self.device_psi(g, pos, t).view(sim.rows, sim.d)[:, :k]
                    V = self.flat.detach()[pos, self.D + self.Ud:].view(T, sim.d, sim.d)[t, :k]
                out.append(array_part(f"U_{t}", "factors", np.ascontiguousarray(U.numpy())))
                out.append(array_part(f"V_{t}", "factors", np.ascontiguousarray(V.numpy())))
        else:
            for t in range(T):
                if lazy:
                    out.append((f"psi_{t}", "values"))
                    continue
                psi = self.down[g.key][t] if initial else self.device_psi(g, pos, t)
                out.append(array_part(f"psi_{t}", "values", psi.detach().numpy()))
        if sim.cfg.method in ("fair", "fair-hom"):  # Algorithm 1: the seed goes to every device of the round
            out.append(seed_part("hash_seed", g.seed if g.seed is not None else sim.hash_seed(sim.round)))
        if self.D:
            dense = sim.dense if initial else self.flat.detach()[pos, :self.D]
            out.append(array_part("dense", "values", dense.numpy()))
        return out


# --- results ---------------------------------------------------------------------------
@dataclass(eq=False)
class FairResult:
    config: FairConfig
    table: pd.DataFrame  # ROUND_COLUMNS; metric is NaN on rounds without evaluation
    ledger: pd.DataFrame  # Ledger.COLUMNS
    devices: pd.DataFrame  # per tier: values stored on the device
    notes: str = ""
    complete: bool = True
    cached: bool = False

    @property
    def metric_name(self) -> str:
        return METRIC_NAME[self.config.task]

    def curve(self) -> pd.DataFrame:
        return self.table.dropna(subset=["metric"])[["round", "metric"]]

    @property
    def best(self) -> tuple[float, int]:
        """(best evaluated value, its round counted from 1), as the paper's "@ Best" columns."""
        c = self.curve()
        if c.empty:
            return float("nan"), -1
        i = c["metric"].idxmax() if HIGHER_IS_BETTER[self.config.task] else c["metric"].idxmin()
        return float(c.loc[i, "metric"]), int(c.loc[i, "round"]) + 1

    @property
    def final(self) -> float:
        c = self.curve()
        return float(c["metric"].iloc[-1]) if len(c) else float("nan")

    def bytes_per_device(self) -> pd.DataFrame:
        g = self.ledger.groupby(["direction", "part"], as_index=False)[["messages", "bytes", "bits"]].sum()
        g["bytes_per_message"] = g["bytes"] / g["messages"]
        return g

    # --- on disk (labcore.runner.store) ------------------------------------------------------------------
    TABLES = ("table", "ledger", "devices")

    def save(self, folder: Path, run_timing: dict | None = None) -> None:
        from ..runner.store import save_run

        save_run(folder, {n: getattr(self, n) for n in self.TABLES},
                 {"config": self.config.to_dict(), "notes": self.notes, "complete": self.complete}, run_timing)

    @staticmethod
    def load(folder: Path) -> "FairResult":
        from ..runner.store import load_run

        tables, meta = load_run(folder, FairResult.TABLES)
        return FairResult(from_dict(meta["config"]), *(tables[n] for n in FairResult.TABLES),
                          meta.get("notes", ""), meta.get("complete", True), cached=True)


def load_data(cfg: FairConfig):
    return load(cfg.dataset, seed=cfg.data_seed, n_devices=cfg.n_devices, alpha=cfg.dirichlet_alpha)


def run(cfg: FairConfig, *, data=None, cache_dir: Path | str | None = None, use_cache: bool = True,
        progress: bool = False, on_round: Callable[[dict], None] | None = None,
        should_stop: Callable[[], bool] | None = None) -> FairResult:
    """Train and evaluate one configuration; cached on disk by `cfg.key()`, resumable from a checkpoint."""
    from ..runner.cached import run_cached

    def bar(start: int):
        from tqdm.auto import tqdm

        return tqdm(total=cfg.rounds, initial=start, desc=cfg.describe(), unit="round", leave=False)

    folder = Path(cache_dir or default_cache_dir()) / cfg.key()
    return run_cached(lambda: FairSimulation(cfg, data), folder if use_cache else None, FairResult.load,
                      bar if progress else None, on_round=on_round, should_stop=should_stop,
                      postfix=lambda row: {METRIC_NAME[cfg.task]: f"{row['metric']:.4f}"}
                      if "metric" in row else None)
