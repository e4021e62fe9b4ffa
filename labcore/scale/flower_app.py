"""The engine's methods as a Flower ServerApp and ClientApp (Flower >= 1.41 Message API).

One SuperNode serves a contiguous block of users (`--nodes`, one user per node up to all users on one).
Each round the ServerApp samples the engine's cohort, sends every node that holds sampled users one
`train` message, and turns the replies into the method's wires again:

    server -> node   ConfigRecord "round": round, the method's round seed (CoLR's B is drawn from it on
                     the node, as the engine draws it), the node's sampled users; plus the broadcasts the
                     node has not applied yet (ArrayRecord "down.<r>", ConfigRecord "sync")
    node -> server   ArrayRecord "up.<user>": that user's uplink parts, exactly the arrays the lab's ledger
                     serializes (A, delta_Q, U/V, values/indices, codes/scales, S, item_mask);
                     ConfigRecord "meta": N_u, loss, part kinds and widths

The server decodes, aggregates and builds the broadcast with `labcore.scale.federation.ServerRound` (the
method's own steps); every byte figure comes from the lab's `Ledger` fed with the arrays that arrived.
A node keeps its users' vectors and its copy of Q in the Flower context's state and folds in the rounds'
broadcasts it missed before it trains or evaluates (the ledger counts a broadcast once per client of the
round, as the paper does; Flower carries it to each node when that node is next contacted).

`client_app` / `server_app` below read their settings from the run config (`flwr run`, deployment);
`make_apps(...)` builds the same pair bound to a config (the simulation engine, tests, benchmarks).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
os.environ.setdefault("FLWR_DISABLE_UPDATE_CHECK", "1")
os.environ.setdefault("FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION", "1")

import numpy as np
import pandas as pd
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from ..config import RunConfig
from ..methods.base import Wire
from .federation import (NodeWork, ServerRound, broadcast_received, config_from_text, config_to_text,
                         finish_encrypted_round, partition, rows_to_wires)

_DATA: dict[tuple, object] = {}


def load_data(cfg: RunConfig):
    """The config's dataset, once per process (every node of a simulation process shares it)."""
    from ..fed.engine import load_data as engine_load

    key = (cfg.dataset, cfg.data_seed, cfg.synthetic_size, cfg.data_skew)
    if key not in _DATA:
        _DATA.clear()
        _DATA[key] = engine_load(cfg)
    return _DATA[key]


def flower_bytes(obj) -> int:
    """Bytes Flower serializes for a message's content or one record: every object, deflated, recursively.

    Flower addresses objects by content, so an identical array (one broadcast sent to many nodes) is
    stored once by the SuperLink; this counts it once per message, as a network would carry it.
    """
    return len(obj.deflate()) + sum(flower_bytes(c) for c in (obj.children or {}).values())


def array_payload(record: ArrayRecord) -> int:
    """The raw array bytes in a record (what the lab's ledger serializes, without any framing)."""
    return int(sum(a.numpy().nbytes for a in record.values()))


# --- records <-> wires --------------------------------------------------------------------------
def _wire_record(wires: list[Wire], m: int) -> ArrayRecord:
    return ArrayRecord({w.name: Array(np.ascontiguousarray(w.row(m))) for w in wires})


def _parts_meta(wires: list[Wire]) -> dict:
    return {"kinds": {w.name: w.kind for w in wires}, "width": {w.name: int(w.shape[1]) for w in wires},
            "ragged": {w.name: w.lengths is not None for w in wires}}


def _wires_from_records(records: list[ArrayRecord], meta: dict) -> list[Wire]:
    arrays = {name: [r[name].numpy() for r in records] for name in meta["kinds"]}
    return rows_to_wires(meta["kinds"], arrays, meta["width"], meta["ragged"])


# --- the node -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spec:
    """One federation's settings: the run config plus how users are spread over nodes."""

    cfg: RunConfig
    nodes: int
    draws: str = "engine"
    measure_bytes: bool = True
    timeout: float = 600.0
    keys: str = ""  # CKKS: folder with secret.ctx (read by the nodes) and public.ctx (read by the server)

    def run_config(self) -> dict:
        return {"config": config_to_text(self.cfg), "nodes": self.nodes, "draws": self.draws,
                "measure-bytes": self.measure_bytes, "timeout": self.timeout, "keys": self.keys}

    @staticmethod
    def from_run_config(rc) -> "Spec":
        return Spec(config_from_text(str(rc["config"])), int(rc["nodes"]), str(rc.get("draws", "engine")),
                    bool(rc.get("measure-bytes", True)), float(rc.get("timeout", 600.0)), str(rc.get("keys", "")))


def _node(spec: Spec, context: Context) -> NodeWork:
    cfg = spec.cfg
    data = load_data(cfg)
    pid = int(context.node_config["partition-id"])
    users = partition(data.n_users, spec.nodes)[pid]
    node = NodeWork(cfg, data, users, pid, spec.draws, spec.keys)
    st = context.state
    if "node.tables" in st:  # this node's state from its earlier messages
        node.Q = torch.from_numpy(st["node.tables"]["Q"].numpy().copy())
        node.P = torch.from_numpy(st["node.tables"]["P"].numpy().copy())
        node.synced = int(st["node.sync"]["synced"])
    return node


def _save_node(node: NodeWork, context: Context) -> None:
    context.state["node.tables"] = ArrayRecord({"Q": Array(node.Q.numpy()), "P": Array(node.P.numpy())})
    context.state["node.sync"] = ConfigRecord({"synced": node.synced})


def _catch_up(node: NodeWork, content: RecordDict) -> None:
    if "sync" not in content:
        return
    sync = json.loads(str(content["sync"]["rounds"]))
    for r, seed, meta in sync:
        rec = content[f"down.{r}"]
        if meta.get("ckks"):  # the encrypted aggregate, one bytes value per segment
            node.apply_encrypted_broadcast(r, seed, {n: bytes(rec[n]) for n in meta["sizes"] if n in rec}, meta)
            continue
        wires = [Wire(n, k, torch.from_numpy(rec[n].numpy().copy())[None]) for n, k in meta["kinds"].items()]
        node.apply_broadcast(r, seed, broadcast_received(wires, node.cfg, meta["info"]))


def _client_train(spec: Spec, msg: Message, context: Context) -> Message:
    node = _node(spec, context)
    _catch_up(node, msg.content)
    cfg_rec = msg.content["round"]
    users = np.asarray(list(cfg_rec["users"]), dtype=np.int64)
    sent, meta = node.train(int(cfg_rec["round"]), int(cfg_rec["seed"]), users)
    _save_node(node, context)
    content = RecordDict({f"up.{int(u)}": _wire_record(sent, m) for m, u in enumerate(users)})
    if "ciphertexts" in meta:  # CKKS: each user's ciphertexts, as bytes
        for m, u in enumerate(users):
            content[f"ct.{int(u)}"] = ConfigRecord(meta["ciphertexts"][m])
    parts = _parts_meta(sent)
    parts["info"] = meta["parts"]
    if "ciphertexts" in meta:
        parts.update(k=meta["k"], sizes=meta["sizes"])
    content["meta"] = ConfigRecord({"users": [int(u) for u in users], "n_pos": [int(n) for n in meta["n_pos"]],
                                    "loss_sum": float(meta["loss_sum"]), "n_samples": int(meta["n_samples"]),
                                    "parts": json.dumps(parts)})
    return Message(content=content, reply_to=msg)


def _client_evaluate(spec: Spec, msg: Message, context: Context) -> Message:
    node = _node(spec, context)
    _catch_up(node, msg.content)
    _save_node(node, context)
    hr, ndcg, n = node.evaluate()
    return Message(content=RecordDict({"eval": MetricRecord({"hr_sum": hr, "ndcg_sum": ndcg, "users": n})}),
                   reply_to=msg)


def _client_query(spec: Spec, msg: Message, context: Context) -> Message:
    return Message(content=RecordDict({"node": ConfigRecord({"partition-id": int(context.node_config["partition-id"])})}),
                   reply_to=msg)


def make_client_app(spec: Spec | None = None) -> ClientApp:
    """A ClientApp bound to `spec`, or (None) reading it from the run config of each message's run."""
    app = ClientApp()

    def get(context: Context) -> Spec:
        return spec if spec is not None else Spec.from_run_config(context.run_config)

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        return _client_train(get(context), msg, context)

    @app.evaluate()
    def evaluate(msg: Message, context: Context) -> Message:
        return _client_evaluate(get(context), msg, context)

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        return _client_query(get(context), msg, context)

    return app


# --- the server ---------------------------------------------------------------------------------
@dataclass
class FlowerRun:
    """What a Flower run of a config produced: the per-round table, the ledger and the byte comparison."""

    cfg: RunConfig
    table: pd.DataFrame
    ledger: pd.DataFrame
    bytes_check: pd.DataFrame  # per message part group: ledger bytes vs Flower's serialized record bytes
    seconds: list = field(default_factory=list)

    def save(self, folder) -> None:
        from pathlib import Path

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.table.to_csv(folder / "table.csv", index=False)
        self.ledger.to_csv(folder / "ledger.csv", index=False)
        self.bytes_check.to_csv(folder / "bytes_check.csv", index=False)
        (folder / "config.json").write_text(config_to_text(self.cfg))


def _wait_for_nodes(grid: Grid, n: int, timeout: float) -> list[int]:
    t0 = time.monotonic()
    while True:
        ids = list(grid.get_node_ids())
        if len(ids) >= n:
            return ids
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"only {len(ids)} of {n} SuperNodes connected within {timeout:.0f} s")
        time.sleep(0.2)


def _replies(grid: Grid, msgs: list[Message], timeout: float) -> list[Message]:
    replies = list(grid.send_and_receive(msgs, timeout=timeout))
    if len(replies) != len(msgs):
        raise RuntimeError(f"{len(msgs) - len(replies)} of {len(msgs)} nodes did not reply within {timeout:.0f} s")
    for r in replies:
        if r.has_error():
            raise RuntimeError(f"a node failed: {r.error.reason}")
    return replies


def run_server(grid: Grid, spec: Spec) -> FlowerRun:
    cfg = spec.cfg
    data = load_data(cfg)
    blocks = partition(data.n_users, spec.nodes)
    starts = np.array([b[0] for b in blocks])
    ids = _wait_for_nodes(grid, spec.nodes, spec.timeout)
    # which Flower node holds which block of users
    replies = _replies(grid, [Message(RecordDict({}), dst_node_id=i, message_type="query") for i in ids], spec.timeout)
    node_of = {int(r.content["node"]["partition-id"]): r.metadata.src_node_id for r in replies}
    if sorted(node_of) != list(range(spec.nodes)):
        raise RuntimeError(f"expected partitions 0..{spec.nodes - 1}, the nodes report {sorted(node_of)}")
    server = ServerRound(cfg, data.n_users, data.n_items, spec.keys)
    encrypted = cfg.encryption == "ckks"
    pending: dict[int, tuple] = {}  # round -> (seed, broadcast wires, meta) not yet applied by every node
    synced = {p: 0 for p in node_of}
    rows, checks, seconds = [], [], []

    def with_sync(content: RecordDict, p: int, upto: int) -> RecordDict:
        todo = [r for r in sorted(pending) if synced[p] <= r < upto]
        if todo:
            content["sync"] = ConfigRecord({"rounds": json.dumps([[r, pending[r][0], pending[r][2]] for r in todo])})
            for r in todo:
                down = pending[r][1]
                content[f"down.{r}"] = down if isinstance(down, ConfigRecord) else _wire_record(down, 0)
        synced[p] = max(synced[p], upto)
        return content

    def prune() -> None:
        low = min(synced.values())
        for r in [r for r in pending if r < low]:
            del pending[r]

    for t in range(cfg.rounds):
        t0 = time.perf_counter()
        clients, seed, setup = server.begin(t)
        owner = np.searchsorted(starts, clients, side="right") - 1
        msgs, sent_bytes = [], 0
        for p in np.unique(owner):
            users = clients[owner == p]
            content = RecordDict({"round": ConfigRecord({"round": t, "seed": seed, "users": [int(u) for u in users]})})
            content = with_sync(content, int(p), t)
            if spec.measure_bytes:
                sent_bytes += flower_bytes(content)
            msgs.append(Message(content, dst_node_id=node_of[int(p)], message_type="train"))
        replies = _replies(grid, msgs, spec.timeout)
        prune()
        by_user, ct_user, n_pos, loss, n_samples, meta, sizes = {}, {}, {}, 0.0, 0, None, {}
        for r in replies:
            m = r.content["meta"]
            meta = json.loads(str(m["parts"]))
            sizes.update(meta.get("sizes", {}))  # SCoLR: each node sends the columns its users trained
            for u, n in zip(m["users"], m["n_pos"]):
                by_user[int(u)] = r.content[f"up.{int(u)}"]
                n_pos[int(u)] = int(n)
                if encrypted:
                    ct_user[int(u)] = r.content[f"ct.{int(u)}"]
            loss += float(m["loss_sum"])
            n_samples += int(m["n_samples"])
        records = [by_user[int(u)] for u in clients]
        sent = _wires_from_records(records, meta)
        cohort_pos = np.array([n_pos[int(u)] for u in clients])
        if encrypted:
            cts = [{k: bytes(v) for k, v in ct_user[int(u)].items()} for u in clients]
            blobs, b = finish_encrypted_round(server, t, cts, cohort_pos, sent)
            down = ConfigRecord(blobs)
            pending[t] = (seed, down, {"ckks": True, "sizes": sizes, "m": len(clients), "k": meta["k"]})
        else:
            info = _merge_info([json.loads(str(r.content["meta"]["parts"]))["info"]
                                for r in _in_cohort_order(replies, clients)])
            down, down_info, b = server.finish(t, setup, sent, info, cohort_pos)
            pending[t] = (seed, down, {"kinds": {w.name: w.kind for w in down}, "info": down_info})
        row = {"round": t, "loss": loss / max(n_samples, 1), "bytes_up": b["bytes_up"], "bytes_down": b["bytes_down"],
               "bytes_up_client": float(np.mean(b["bytes_up_client"])), "bytes_down_client": b["bytes_down_client"],
               "messages": len(msgs)}
        if spec.measure_bytes:
            fl_up = [flower_bytes(rec) for rec in records]
            payload = [array_payload(rec) for rec in records]
            if encrypted:
                fl_up = [f + flower_bytes(ct_user[int(u)]) for f, u in zip(fl_up, clients)]
                payload = [p + sum(len(bytes(v)) for v in ct_user[int(u)].values()) for p, u in zip(payload, clients)]
            down_rec = down if encrypted else _wire_record(down, 0)
            checks.append({"round": t, "direction": "up", "ledger_bytes": int(b["bytes_up_client"].sum()),
                           "flower_record_bytes": int(sum(fl_up)), "payload_bytes": int(sum(payload)),
                           "messages": len(records), "parts": len(meta["kinds"])})
            checks.append({"round": t, "direction": "down", "ledger_bytes": b["bytes_down_client"],
                           "flower_record_bytes": flower_bytes(down_rec),
                           "payload_bytes": (sum(len(bytes(v)) for v in down.values()) if encrypted
                                             else array_payload(down_rec)),
                           "messages": 1, "parts": len(down)})
            row["flower_bytes_up"] = int(sum(flower_bytes(r.content) for r in replies))
            row["flower_bytes_down"] = sent_bytes
        if (t + 1) % cfg.eval_every == 0 or t + 1 == cfg.rounds:
            emsgs = [Message(with_sync(RecordDict({}), p, t + 1), dst_node_id=node_of[p], message_type="evaluate")
                     for p in sorted(node_of)]
            ev = _replies(grid, emsgs, spec.timeout)
            prune()
            n = sum(int(r.content["eval"]["users"]) for r in ev)
            row["hr"] = sum(float(r.content["eval"]["hr_sum"]) for r in ev) / max(n, 1)
            row["ndcg"] = sum(float(r.content["eval"]["ndcg_sum"]) for r in ev) / max(n, 1)
        row["sec_round"] = time.perf_counter() - t0
        seconds.append(row["sec_round"])
        rows.append(row)
    return FlowerRun(cfg, pd.DataFrame(rows), server.ledger.frame(), pd.DataFrame(checks), seconds)


def _in_cohort_order(replies: list[Message], clients: np.ndarray) -> list[Message]:
    first = {int(r.content["meta"]["users"][0]): r for r in replies}
    pos = np.searchsorted(clients, sorted(first))
    return [first[int(clients[i])] for i in pos]


def _merge_info(infos: list[dict]) -> dict:
    """Per-part values-per-row lists of several nodes, concatenated in cohort order."""
    out = {}
    for info in infos:
        for name, part in info.items():
            if name not in out:
                out[name] = dict(part, n=list(part["n"]))
            else:
                out[name]["n"] += part["n"]
    return out


def make_server_app(spec: Spec | None = None, sink: list | None = None) -> ServerApp:
    """A ServerApp bound to `spec` (or reading it from the run config); the FlowerRun goes to `sink` and,
    when the run config names an `out` folder, to CSVs there."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        s = spec if spec is not None else Spec.from_run_config(context.run_config)
        res = run_server(grid, s)
        if sink is not None:
            sink.append(res)
        out = str(context.run_config.get("out", "")) if spec is None else ""
        if out:
            res.save(out)

    return app


def make_apps(spec: Spec, sink: list) -> tuple[ServerApp, ClientApp]:
    return make_server_app(spec, sink), make_client_app(spec)


# the apps `flwr run` loads (labcore/scale/app/pyproject.toml): settings from the run config
server_app = make_server_app()
client_app = make_client_app()
