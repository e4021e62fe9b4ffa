"""The lab's round, split between a server and nodes that each hold some users' data.

Nothing here knows about Flower: `NodeWork` is what a node (a Flower SuperNode) does with a round's
instructions, `ServerRound` is what the server does with the nodes' replies. Both call the engine's own
steps (`labcore.fed.sampling`, `train_cohort`, the method's `setup_round` / `uplink` / `decode_uplink` /
`downlink` / `apply_downlink`, `aggregate`, the quantization mod and the `Ledger`), so there is one copy of
the math. `labcore.scale.flower_app` carries these objects over Flower messages.

Randomness. `draws="engine"` (default) makes every node draw the round's negatives and shuffles exactly as
the engine draws them for the whole cohort (each node computes the cohort's `RoundPlan` and keeps its own
users' rows): same seed, same numbers as `labcore run`. That needs every user's training counts and
positives on every node, which suits a simulation or a lab cluster but not real devices; `draws="local"`
has each node draw for its own users only from (seed, round, node) -- same distribution, other numbers.
Quantization noise is always drawn per node on the uplink (the engine draws it over the whole cohort), so
quantized uplinks agree with the engine in distribution, not bit for bit.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np
import torch

from ..config import RunConfig, from_dict
from ..fed import sampling as S
from ..fed.aggregate import aggregate, fedavg_weights
from ..fed.local_train import train_cohort
from ..fed.updates import LowRank, RowUpdate
from ..fed.mods import item_mask_wire, quantize_wires
from ..methods import make_method
from ..methods.base import FLOAT_KINDS, RoundSetup, Wire
from ..methods.quantize import dequantize, unpack_codes
from ..net.channel import MAX_BUDGET_BITS
from ..net.ledger import Ledger

DRAWS = ("engine", "local")
STREAM_NODE_QUANT = 101  # per-node quantization noise (the engine's streams are 0..5)


# --- configuration and partition ---------------------------------------------------------------
def config_to_text(cfg: RunConfig) -> str:
    return json.dumps(dataclasses.asdict(cfg), sort_keys=True)


def config_from_text(text: str) -> RunConfig:
    return from_dict(json.loads(text))


FLOWER_ENCRYPTIONS = ("none", "ckks")


def check_supported(cfg: RunConfig) -> None:
    if cfg.encryption not in FLOWER_ENCRYPTIONS:
        raise ValueError(f"encryption={cfg.encryption!r} is not available over Flower: allowed values are "
                         f"{', '.join(FLOWER_ENCRYPTIONS)} (secure aggregation and Paillier run in the lab's engine)")
    for name, plain in (("server_optimizer", "fedavg"), ("server_lr", 1.0), ("prox_mu", 0.0), ("scaffold", False),
                        ("qffl_q", 0.0), ("stragglers", 0.0), ("dropout", 0.0), ("attack", "none"),
                        ("defense", "none"), ("personalization", "none")):
        if getattr(cfg, name) != plain:
            raise ValueError(f"{name}={getattr(cfg, name)!r} is not available over Flower: allowed value is "
                             f"{plain!r} (FedAvg with every sampled client; FedProx, SCAFFOLD, q-FFL, the server "
                             "optimizers, stragglers, dropout, the backdoors, the defenses and the personal models run "
                             "in the lab's engine)")
    for way in ("up", "down"):  # the nodes and the server exchange the codes as sent: no channel between them
        if cfg.noisy_link(way):
            bits, budget = getattr(cfg, f"{way}_bits"), getattr(cfg, f"{way}_link_budget")
            exact = (f" and {bits}..{MAX_BUDGET_BITS}, budgets that carry all {2**bits - 1} levels exactly"
                     if bits <= MAX_BUDGET_BITS else "")
            raise ValueError(f"{way}_link_budget={budget} is not available over Flower with {way}_bits={bits}: allowed "
                             f"values are 0 (no limit){exact} (the noisy channel runs in the lab's engine)")


def partition(n_users: int, nodes: int) -> list[np.ndarray]:
    """Users 0..n_users-1 in `nodes` contiguous blocks (node k serves block k)."""
    if not 1 <= nodes <= n_users:
        raise ValueError(f"nodes={nodes} is invalid: allowed range 1..{n_users} (one user or more per node)")
    return [b.astype(np.int64) for b in np.array_split(np.arange(n_users), nodes)]


def method_seed(seed: int, round_idx: int, stream: int = S.STREAM_METHOD) -> int:
    """The seed of the engine's per-round generator for `stream` (travels in the round's ConfigRecord)."""
    return int(np.random.SeedSequence([seed, round_idx, stream]).generate_state(1)[0])


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def cohort(cfg: RunConfig, n_users: int, round_idx: int) -> np.ndarray:
    """The engine's cohort of the round (its client schedule)."""
    return S.round_clients(cfg.client_schedule, n_users, cfg.clients_per_round, cfg.seed, round_idx)


# --- slicing a cohort's round to some of its clients ----------------------------------------
def slice_plan(plan: S.RoundPlan, idx: np.ndarray) -> S.RoundPlan:
    """The rows of clients `idx` (positions in the cohort, sorted) of a cohort's RoundPlan: their samples and
    their batch schedule, exactly as the engine drew them for the whole cohort."""
    keep = np.isin(plan.sample_client, idx)
    old = np.nonzero(keep)[0]
    remap = np.full(plan.sample_client.shape[0] + 1, -1, dtype=np.int64)  # remap[-1] = -1 keeps padding
    remap[old] = np.arange(old.shape[0])
    n_steps = plan.n_steps[idx]
    # every (step, client) row of the cohort's schedule: which step, which client
    T = plan.n_active.shape[0]
    row_t = np.repeat(np.arange(T), plan.n_active)
    row_client = plan.order[np.arange(plan.offsets[-1]) - plan.offsets[row_t]]
    mine = np.isin(row_client, idx)
    order, n_active, offsets, position = S.schedule_rows(n_steps)
    local = np.searchsorted(idx, row_client[mine])
    slots = np.full((int(offsets[-1]), plan.slots.shape[1]), -1, dtype=S.SLOT_DTYPE)
    slots[offsets[row_t[mine]] + position[local]] = remap[plan.slots[mine]]
    return S.RoundPlan(plan.clients[idx], plan.n_pos[idx], np.searchsorted(idx, plan.sample_client[old]),
                       plan.sample_item[old], plan.sample_label[old], n_steps, order, n_active, offsets, slots)


def slice_setup(setup: RoundSetup, idx: np.ndarray, m: int) -> RoundSetup:
    """A round's setup for clients `idx` of a cohort of m: every per-client array keeps those rows."""
    def rows(v):
        if isinstance(v, (torch.Tensor, np.ndarray)) and v.ndim and v.shape[0] == m:
            return v[torch.from_numpy(idx)] if isinstance(v, torch.Tensor) else v[idx]
        return v

    lr = setup.lowrank
    if lr is not None:
        lr = LowRank(lr.B, rows(lr.col_mask), rows(lr.grad_scale))
    return RoundSetup(lr, setup.seed, {k: rows(v) for k, v in setup.extra.items()})


# --- what travels: one client's rows of the cohort's wires -----------------------------------
@dataclass
class Rows:
    """Part name -> (kind, one array per client), plus what the receiver needs to rebuild the wires."""

    kinds: dict[str, str]
    arrays: dict[str, list[np.ndarray]]
    width: dict[str, int]  # full row width of each part (a client may send a prefix: SCoLR)
    lengths: dict[str, bool]  # whether the wire had per-row valid prefixes


def wires_to_rows(wires: list[Wire]) -> Rows:
    rows = Rows({}, {}, {}, {})
    for w in wires:
        rows.kinds[w.name] = w.kind
        rows.arrays[w.name] = [np.ascontiguousarray(w.row(m)) for m in range(w.shape[0])]
        rows.width[w.name] = int(w.shape[1])
        rows.lengths[w.name] = w.lengths is not None
    return rows


def rows_to_wires(kinds: dict[str, str], arrays: dict[str, list[np.ndarray]], width: dict[str, int],
                  lengths: dict[str, bool]) -> list[Wire]:
    """Stack per-client rows into the cohort's wires (zero padding beyond a shorter row's prefix)."""
    out = []
    for name, kind in kinds.items():
        rows = arrays[name]
        n = np.array([r.shape[0] for r in rows], dtype=np.int64)
        data = np.zeros((len(rows), width[name]), dtype=rows[0].dtype)
        for m, r in enumerate(rows):
            data[m, : r.shape[0]] = r
        out.append(Wire(name, kind, torch.from_numpy(data), n if lengths[name] else None))
    return out


def part_info(wires: list[Wire]) -> dict[str, dict]:
    """What a receiver needs to decode quantized parts: each float part's kind, row width and values per row."""
    out = {}
    for w in wires:
        if w.kind in FLOAT_KINDS:
            n = w.lengths if w.lengths is not None else np.full(w.shape[0], w.shape[1])
            out[w.name] = {"kind": w.kind, "width": int(w.shape[1]), "ragged": w.lengths is not None,
                           "n": [int(v) for v in n]}
    return out


def received_wires(sent: list[Wire], bits: int, bucket: int, info: dict[str, dict]) -> dict[str, Wire]:
    """What the receiver decodes from what was sent: quantized parts dequantized from their packed codes."""
    if not bits:
        return {w.name: w for w in sent}
    by_name = {w.name: w for w in sent}
    out = {}
    for w in sent:
        if w.kind == "codes":
            base = w.name[: -len(".codes")]
            scales, part = by_name[base + ".scales"], info[base]
            rows = torch.zeros(w.shape[0], part["width"], dtype=torch.float32)
            for m, n in enumerate(part["n"]):
                lv, sg = unpack_codes(w.row(m)[None], n, bits)
                rows[m, :n] = dequantize(torch.from_numpy(lv), torch.from_numpy(sg),
                                         torch.from_numpy(np.ascontiguousarray(scales.row(m))[None]), bits, bucket,
                                         (1, n))[0]
            out[base] = Wire(base, part["kind"], rows, np.asarray(part["n"]) if part["ragged"] else None)
        elif w.kind != "scales":
            out[w.name] = w
    return out


# --- a node ---------------------------------------------------------------------------------
class NodeWork:
    """What a SuperNode holds and does: its users' data and vectors, its copy of Q, local training."""

    def __init__(self, cfg: RunConfig, data, users: np.ndarray, node: int, draws: str = "engine", keys: str = ""):
        from ..fed.engine import Simulation

        if draws not in DRAWS:
            raise ValueError(f"draws={draws!r} is invalid: allowed values are {', '.join(DRAWS)}")
        check_supported(cfg)
        if cfg.encryption == "ckks" and not keys:
            raise ValueError("encryption='ckks' needs keys: the folder with the nodes' secret.ctx "
                             "(labcore.scale.encrypted.write_keys)")
        self.cfg, self.data, self.users, self.node, self.draws, self.keys = cfg, data, users, node, draws, keys
        init = _initial_tables(cfg, data, Simulation)  # the engine's initial Q and P (same seed, same tables)
        self.Q = init[0].clone()
        self.P = init[1][torch.from_numpy(users)].clone()
        self.synced = 0  # broadcasts of rounds < synced are folded into Q
        self.method = make_method(cfg, data.n_items)
        self.sampler = init[2]

    # the server's broadcasts this node has not applied yet (it missed the rounds it was not sampled in)
    def apply_broadcast(self, round_idx: int, round_seed: int, wires: dict[str, Wire]) -> None:
        if round_idx < self.synced:
            return
        setup = self.method.setup_round(round_idx, self.cfg.clients_per_round, generator(round_seed))
        self.Q = self.method.apply_downlink(self.Q, wires, setup)
        self.synced = round_idx + 1

    def apply_encrypted_broadcast(self, round_idx: int, round_seed: int, blobs: dict[str, bytes], meta: dict) -> None:
        """A CKKS round's broadcast: decrypt the aggregate, then the method's own downlink onto Q."""
        from .encrypted import decrypt_broadcast

        if round_idx < self.synced:
            return
        setup = self.method.setup_round(round_idx, self.cfg.clients_per_round, generator(round_seed))
        agg = decrypt_broadcast(self.cfg, self.data.n_items, self.keys, blobs, meta["sizes"], meta["m"], meta["k"])
        down = self.method.downlink(agg, setup)
        self.Q = self.method.apply_downlink(self.Q, {w.name: w for w in down}, setup)
        self.synced = round_idx + 1

    def train(self, round_idx: int, round_seed: int, users: np.ndarray) -> tuple[list[Wire], dict]:
        """Local training of this node's sampled `users` (global ids) of round `round_idx`.

        Returns the sent uplink wires (one row per user, in `users` order) and per-user metadata.
        """
        cfg, data = self.cfg, self.data
        clients = cohort(cfg, data.n_users, round_idx)
        idx = np.searchsorted(clients, users)
        if not np.array_equal(clients[idx], users):
            raise ValueError(f"round {round_idx}: users {users.tolist()} are not all in the round's cohort")
        setup = slice_setup(self.method.setup_round(round_idx, len(clients), generator(round_seed)), idx,
                            len(clients))
        if self.draws == "engine":
            plan = slice_plan(_cohort_plan(cfg, data, self.sampler, clients, round_idx), idx)
        else:
            plan = S.plan_round(data, self.sampler, users, cfg.num_negatives, cfg.local_epochs, cfg.batch_size,
                                method_seed(cfg.seed, self.node, 1000), round_idx)
        mine = np.searchsorted(self.users, users)
        local = train_cohort(self.Q, self.P[torch.from_numpy(mine)], plan, cfg.lr, cfg.weight_decay, setup.lowrank)
        self.P[torch.from_numpy(mine)] = local.p
        up = self.method.uplink(local, setup)
        if cfg.encryption == "ckks":  # per user: its segments' ciphertexts; SCoLR's S_u in clear
            from .encrypted import clear_parts, encrypt_users

            cts, k, sizes = encrypt_users(cfg, self.keys, self.method, local, up, setup)
            meta = {"n_pos": plan.n_pos.astype(np.int64), "loss_sum": float(local.loss_sum),
                    "n_samples": int(local.n_samples), "parts": {}, "ciphertexts": cts, "k": k, "sizes": sizes}
            return clear_parts(up), meta
        sent, _ = quantize_wires(up, cfg.up_bits, cfg.quant_bucket,
                                 generator(method_seed(cfg.seed, round_idx, STREAM_NODE_QUANT + self.node)))
        if cfg.aggregation == "item_mean":
            sent = sent + [item_mask_wire(local.rows if getattr(local, "rows", None) is not None else local.touched)]
        meta = {"n_pos": plan.n_pos.astype(np.int64), "loss_sum": float(local.loss_sum),
                "n_samples": int(local.n_samples), "parts": part_info(up)}
        return sent, meta

    def evaluate(self) -> tuple[float, float, int]:
        """Sums of HR@K and NDCG@K over this node's users that have a test item, and their count."""
        from ..metrics import hit_ratio_ndcg

        items = self.data.test_items[self.users]
        n = int((items >= 0).sum())
        if n == 0:
            return 0.0, 0.0, 0
        hr, ndcg = hit_ratio_ndcg(self.P, self.Q, items, self.data.test_negatives[self.users], self.cfg.top_k)
        return hr * n, ndcg * n, n


_INIT: dict[str, tuple] = {}
_PLAN: dict[tuple, S.RoundPlan] = {}


def _initial_tables(cfg: RunConfig, data, Simulation):
    """Initial (Q, P, negative sampler) of a config, once per process (every node of a process shares them)."""
    key = cfg.key()
    if key not in _INIT:
        _INIT.clear()
        sim = Simulation(cfg, data)
        _INIT[key] = (sim.Q, sim.P, sim.sampler)
    return _INIT[key]


def _cohort_plan(cfg: RunConfig, data, sampler, clients: np.ndarray, round_idx: int) -> S.RoundPlan:
    key = (cfg.key(), round_idx)
    if key not in _PLAN:
        _PLAN.clear()
        _PLAN[key] = S.plan_round(data, sampler, clients, cfg.num_negatives, cfg.local_epochs, cfg.batch_size,
                                  cfg.seed, round_idx)
    return _PLAN[key]


# --- the server -------------------------------------------------------------------------------
def mask_rows(touched: np.ndarray) -> RowUpdate:
    """The rows the item mask says the clients trained, (M, N) bool -> RowUpdate (no values yet: the method's decode
    reads each client's values onto them), so that the server sums rows, not clients x items tables."""
    client, item = np.nonzero(touched)  # row-major: by client, then item
    indptr = np.concatenate([[0], np.cumsum(np.bincount(client, minlength=touched.shape[0]))]).astype(np.int64)
    return RowUpdate.from_offsets(touched.shape[0], touched.shape[1], indptr, torch.from_numpy(item),
                                  torch.empty(len(item), 0))


class ServerRound:
    """The server's side of round t: fix the setup, then decode, aggregate and broadcast with the method's steps."""

    def __init__(self, cfg: RunConfig, n_users: int, n_items: int, keys: str = ""):
        check_supported(cfg)
        self.cfg, self.n_users, self.n_items, self.keys = cfg, n_users, n_items, keys
        self.method = make_method(cfg, n_items)
        self.ledger = Ledger()

    def begin(self, round_idx: int) -> tuple[np.ndarray, int, RoundSetup]:
        cfg = self.cfg
        clients = cohort(cfg, self.n_users, round_idx)
        seed = method_seed(cfg.seed, round_idx)
        return clients, seed, self.method.setup_round(round_idx, len(clients), generator(seed))

    def finish(self, round_idx: int, setup: RoundSetup, sent: list[Wire], info: dict[str, dict],
               n_pos: np.ndarray) -> tuple[list[Wire], dict, dict]:
        """The cohort's sent uplink (rows in cohort order) -> the round's broadcast (sent wires) and bytes."""
        cfg = self.cfg
        up_bytes = self.ledger.record(round_idx, "up", sent)
        recv = received_wires(sent, cfg.up_bits, cfg.quant_bucket, info)
        mask = recv.pop("item_mask", None)
        m = len(n_pos)
        rows = None
        if mask is not None:
            touched = torch.from_numpy(np.unpackbits(mask.data.numpy(), axis=1, bitorder="little")[:, : self.n_items]
                                       .astype(bool))
            rows = mask_rows(touched.numpy())
        else:
            touched = torch.zeros(m, self.n_items, dtype=torch.bool)
        decoded = self.method.decode_uplink(recv, setup, rows)  # onto the mask's rows: as the engine's server
        agg = aggregate(decoded, cfg.aggregation, fedavg_weights(torch.from_numpy(n_pos)), touched,
                        getattr(self.method, "layout", "item"))
        down = self.method.downlink(agg, setup)
        down_sent, _ = quantize_wires(down, cfg.down_bits, cfg.quant_bucket,
                                      generator(method_seed(cfg.seed, round_idx, S.STREAM_QUANT + 1)))
        down_bytes = self.ledger.record(round_idx, "down", down_sent, receivers=m)
        return down_sent, part_info(down), {"bytes_up": int(up_bytes.sum()), "bytes_down": int(down_bytes.sum()) * m,
                           "bytes_up_client": up_bytes, "bytes_down_client": int(down_bytes.sum())}


def finish_encrypted_round(server: ServerRound, round_idx: int, users_cts: list[dict[str, bytes]], n_pos: np.ndarray,
                           clear: list[Wire]) -> tuple[dict[str, bytes], dict]:
    """A CKKS round at the server: sum the ciphertexts it cannot read (public context only)."""
    from .encrypted import aggregate_users

    return aggregate_users(server.cfg, server.keys, round_idx, users_cts, n_pos, clear, server.ledger)


def broadcast_received(sent: list[Wire], cfg: RunConfig, info: dict[str, dict]) -> dict[str, Wire]:
    """What a node folds into Q from the broadcast it received (dequantized when quantized)."""
    return received_wires(sent, cfg.down_bits, cfg.quant_bucket, info)


__all__ = ["NodeWork", "ServerRound", "partition", "slice_plan", "slice_setup", "wires_to_rows", "rows_to_wires",
           "received_wires", "part_info", "broadcast_received", "config_to_text", "config_from_text", "method_seed", "DRAWS", "FLOAT_KINDS"]
