"""labcore.scale: the engine's methods as a Flower federation, and card runs on Ray.

Small on purpose (synthetic tiny data, 2 rounds, Ray with 2 CPUs): the machine may be shared.
"""
import io
import os

import numpy as np
import pandas as pd
import pytest
import torch

pytest.importorskip("flwr")
pytest.importorskip("ray")
os.environ.setdefault("FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION", "1")

from labcore.config import RunConfig  # noqa: E402
from labcore.fed import sampling as S  # noqa: E402
from labcore.fed.engine import load_data, run  # noqa: E402
from labcore.fed.local_train import train_cohort  # noqa: E402
from labcore.net.message import frame_bytes  # noqa: E402
from labcore.scale import federation as F  # noqa: E402
from labcore.scale.flower_app import _wire_record, array_payload, flower_bytes  # noqa: E402

TINY = dict(dataset="synthetic", synthetic_size="tiny", rounds=2, clients_per_round=10, eval_every=1, rank=4)
METHODS = {"fedmf": {}, "colr": {}, "scolr": {"scolr_min_rank": 1}, "svd": {}, "topk": {"topk_ratio": 0.1},
           "colr-quantized": {"up_bits": 4, "down_bits": 8}}
# Flower's framing of one array in a record: its Array object, one ArrayChunk object and the .npy header
# (measured 420-440 bytes with Flower 1.41); the lab's framing is frame_bytes(name, 1) per part.
FLOWER_FRAMING_PER_ARRAY = (300, 600)


def _cfg(name: str, **kw) -> RunConfig:
    return RunConfig(method=name.split("-")[0], **{**TINY, **METHODS[name], **kw})


def test_partition_and_grid():
    blocks = F.partition(50, 3)
    assert [len(b) for b in blocks] == [17, 17, 16] and np.array_equal(np.concatenate(blocks), np.arange(50))
    with pytest.raises(ValueError, match="nodes=0 is invalid"):
        F.partition(50, 0)
    from labcore.scale.cli import grid_configs

    cfgs = grid_configs({"method": "colr"}, ["rank=1,2", "lr=0.5,1.0"])
    assert [(c.rank, c.lr) for c in cfgs] == [(1, 0.5), (1, 1.0), (2, 0.5), (2, 1.0)]


def test_a_nodes_slice_of_the_round_trains_as_in_the_whole_cohort():
    cfg = _cfg("colr")
    data = load_data(cfg)
    node = F.NodeWork(cfg, data, np.arange(data.n_users), 0)
    clients = F.cohort(cfg, data.n_users, 0)
    plan = S.plan_round(data, node.sampler, clients, cfg.num_negatives, cfg.local_epochs, cfg.batch_size, cfg.seed, 0)
    setup = node.method.setup_round(0, len(clients), F.generator(F.method_seed(cfg.seed, 0)))
    whole = train_cohort(node.Q, node.P[clients], plan, cfg.lr, cfg.weight_decay, setup.lowrank)
    idx = np.array([1, 4, 5, 9])
    part = train_cohort(node.Q, node.P[clients[idx]], F.slice_plan(plan, idx), cfg.lr, cfg.weight_decay,
                        F.slice_setup(setup, idx, len(clients)).lowrank)
    torch.testing.assert_close(part.p, whole.p[idx], atol=1e-6, rtol=0)
    up_whole = node.method.uplink(whole, setup)[0]
    up_part = node.method.uplink(part, F.slice_setup(setup, idx, len(clients)))[0]
    for j, m in enumerate(idx):
        np.testing.assert_allclose(up_part.row(j), up_whole.row(int(m)), atol=1e-6, rtol=0)


def _nodes_uplink(cfg: RunConfig):
    """Round 0 trained by three nodes: the server, its setup, the cohort's sent uplink, part info and n_pos."""
    data = load_data(cfg)
    blocks = F.partition(data.n_users, 3)
    server = F.ServerRound(cfg, data.n_users, data.n_items)
    clients, seed, setup = server.begin(0)
    owner = np.searchsorted([b[0] for b in blocks], clients, side="right") - 1
    per_node = []
    for p in np.unique(owner):
        node = F.NodeWork(cfg, data, blocks[p], int(p))
        per_node.append(node.train(0, seed, clients[owner == p]))
    kinds = {w.name: w.kind for w in per_node[0][0]}
    width = {w.name: int(w.shape[1]) for w in per_node[0][0]}
    ragged = {w.name: w.lengths is not None for w in per_node[0][0]}
    arrays = {n: [r for sent, _ in per_node for r in F.wires_to_rows(sent).arrays[n]] for n in kinds}
    sent = F.rows_to_wires(kinds, arrays, width, ragged)
    info = {}
    for _, meta in per_node:
        for k, v in meta["parts"].items():
            info.setdefault(k, dict(v, n=[]))["n"] += v["n"]
    return server, setup, sent, info, np.concatenate([meta["n_pos"] for _, meta in per_node])


@pytest.mark.parametrize("name", list(METHODS))
def test_flower_records_carry_the_ledgers_bytes(name):
    """Each client's uplink record and the broadcast record hold exactly the ledger's payload bytes; the rest
    is framing: the lab's frame_bytes per part on one side, Flower's per-array framing on the other."""
    server, setup, sent, info, n_pos = _nodes_uplink(_cfg(name))
    clients = np.arange(len(n_pos))
    down, _, b = server.finish(0, setup, sent, info, n_pos)
    for m in range(len(clients)):
        rec = _wire_record(sent, m)
        lab_framing = sum(frame_bytes(w.name, 1) for w in sent)
        assert array_payload(rec) == b["bytes_up_client"][m] - lab_framing
        extra = flower_bytes(rec) - array_payload(rec)
        lo, hi = FLOWER_FRAMING_PER_ARRAY
        assert lo * len(sent) <= extra <= hi * len(sent) + 200, (name, extra)
    rec = _wire_record(down, 0)
    down_framing = sum(frame_bytes(w.name, 1) if w.kind != "seed" else frame_bytes(w.name, 0) for w in down)
    assert array_payload(rec) == b["bytes_down_client"] - down_framing


@pytest.mark.parametrize("name", ["topk", "fedmf", "colr-quantized"])
def test_the_flower_server_decodes_onto_the_item_masks_rows(name, monkeypatch):
    """As the engine's server: each client's values (Top-K's k values, FedMF's update, CoLR's dequantized A) read
    onto the rows its item mask names, aggregated by rows (no clients x items sum), equal to the dense decode's
    aggregate to float rounding."""
    from labcore.fed.aggregate import item_mean, rows_item_mean
    from labcore.fed.local_train import RowUpdate

    cfg = _cfg(name, aggregation="item_mean")
    server, setup, sent, info, n_pos = _nodes_uplink(cfg)
    kinds = []
    method = type(server.method)
    decode_uplink = method.decode_uplink
    monkeypatch.setattr(method, "decode_uplink", lambda self, *a: kinds.append(type(out := decode_uplink(self, *a))) or out)
    server.finish(0, setup, sent, info, n_pos)
    assert kinds == [RowUpdate]
    recv = F.received_wires(sent, cfg.up_bits, cfg.quant_bucket, info)
    mask = recv.pop("item_mask").data.numpy()
    touched = np.unpackbits(mask, axis=1, bitorder="little")[:, : server.n_items].astype(bool)
    rows = decode_uplink(server.method, recv, setup, F.mask_rows(touched))
    assert np.array_equal(rows.indptr, np.concatenate([[0], np.cumsum(touched.sum(1))]))
    dense = decode_uplink(server.method, recv, setup)
    assert torch.equal(rows.dense(), dense) and rows.values.ne(0).any()
    torch.testing.assert_close(rows_item_mean(rows), item_mean(dense, torch.from_numpy(touched)), atol=1e-7, rtol=1e-6)


def _assert_same_numbers(eng, table):
    ours, theirs = table.dropna(subset=["hr"]), eng.table.dropna(subset=["hr"])
    assert ours["round"].tolist() == theirs["round"].tolist()
    np.testing.assert_allclose(ours["hr"].to_numpy(), theirs["hr"].to_numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(ours["ndcg"].to_numpy(), theirs["ndcg"].to_numpy(), atol=1e-5, rtol=0)
    assert table["bytes_up"].tolist() == eng.table["bytes_up"].tolist()
    assert table["bytes_down"].tolist() == eng.table["bytes_down"].tolist()


# the server decodes each client's values onto the rows the item mask names (the engine's rows path); each
# case starts a Flower simulation on Ray (a minute of start-up): CI runs them after the default suite
@pytest.mark.deployment
@pytest.mark.parametrize("name", ["fedmf", "colr", "topk"])
def test_flower_simulation_gives_the_engines_numbers(name, tmp_path, monkeypatch):
    from labcore.scale.simulate import run_flower

    monkeypatch.setenv("LABCORE_CACHE", str(tmp_path / "cache"))
    cfg = _cfg(name)
    eng = run(cfg, use_cache=False, progress=False)
    fr = run_flower(cfg, nodes=4, num_cpus=2)
    _assert_same_numbers(eng, fr.table)
    # the bytes of the real messages: payload exactly the ledger's, framing as stated
    up = fr.bytes_check[fr.bytes_check.direction == "up"]
    extra = up.flower_record_bytes - up.payload_bytes
    assert (extra >= FLOWER_FRAMING_PER_ARRAY[0] * up.parts * up.messages).all()
    assert (extra <= (FLOWER_FRAMING_PER_ARRAY[1] * up.parts + 200) * up.messages).all()
    assert (fr.table["flower_bytes_up"] > fr.table["bytes_up"]).all()


@pytest.mark.deployment  # minutes of process start-up: CI runs it after the default suite
def test_deployment_superlink_and_three_supernodes(tmp_path):
    """Flower's deployment mode: a SuperLink and 3 SuperNodes as separate processes on 127.0.0.1, CoLR for
    2 rounds through `flwr run`, every process stopped at the end."""
    import psutil

    from labcore.scale.deploy import LocalFederation

    cfg = _cfg("colr", eval_every=2)
    eng = run(cfg, use_cache=False, progress=False)
    fed = LocalFederation(nodes=3, workdir=tmp_path / "fed", startup_timeout=120)
    seen = set()
    try:
        fed.start()
        seen |= fed.pids()
        assert len(seen) >= 4  # the SuperLink and three SuperNodes at least
        out = fed.run(cfg, tmp_path / "out", timeout=400)
        seen |= fed.pids()
    finally:
        fed.stop()
    assert not fed.pids()
    assert not [p for p in seen if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    table = pd.read_csv(out / "table.csv")
    _assert_same_numbers(eng, table)


@pytest.mark.deployment  # minutes of process start-up: CI runs it after the default suite
def test_ray_backend_writes_the_same_cache_as_processes(tmp_path, monkeypatch):
    from labcore.figures.runs import train_parallel, train_ray
    from labcore.scale.ray_runs import shutdown

    cfgs = [_cfg("colr"), _cfg("fedmf")]
    tables = {}
    for backend in ("processes", "ray"):
        cache = tmp_path / backend
        monkeypatch.setenv("LABCORE_CACHE", str(cache))
        n = train_ray(cfgs, num_cpus=2, progress=False) if backend == "ray" else train_parallel(cfgs, 2, False)
        assert n == 2
        tables[backend] = {c.key(): (cache / c.key() / "table.csv").read_text() for c in cfgs}
        assert all((cache / c.key() / "result.json").exists() for c in cfgs)
    shutdown()
    for key in tables["ray"]:  # identical but for the measured seconds of local training
        a, b = (pd.read_csv(io.StringIO(tables[k][key])).drop(columns=["sec_local"]) for k in ("processes", "ray"))
        pd.testing.assert_frame_equal(a, b)


# --- CKKS over the federation: the nodes hold the secret key, the server only the public context ---------
CKKS = dict(encryption="ckks", ckks_degree=8192)


def _encrypted_protocol(cfg: RunConfig, keys, rounds: int = 2):
    """The federation's nodes and server, driven round by round in this process (what Flower carries)."""
    data = load_data(cfg)
    blocks = F.partition(data.n_users, 3)
    nodes = [F.NodeWork(cfg, data, b, k, keys=str(keys)) for k, b in enumerate(blocks)]
    server = F.ServerRound(cfg, data.n_users, data.n_items, str(keys))
    figures = []
    for t in range(rounds):
        clients, seed, _ = server.begin(t)
        owner = np.searchsorted([b[0] for b in blocks], clients, side="right") - 1
        cts, n_pos, sizes, clear = [], [], {}, []
        for p in np.unique(owner):
            sent, meta = nodes[p].train(t, seed, clients[owner == p])
            cts += meta["ciphertexts"]
            n_pos.append(meta["n_pos"])
            sizes.update(meta["sizes"])
            clear.append(sent)
            k = meta["k"]
        if clear[0]:  # SCoLR's S_u travels in clear: stack the nodes' rows in cohort order
            kinds = {w.name: w.kind for w in clear[0]}
            arrays = {n: [r for sent in clear for r in F.wires_to_rows(sent).arrays[n]] for n in kinds}
            clear = F.rows_to_wires(kinds, arrays, {w.name: int(w.shape[1]) for w in clear[0]},
                                    {w.name: w.lengths is not None for w in clear[0]})
        else:
            clear = []
        blobs, b = F.finish_encrypted_round(server, t, cts, np.concatenate(n_pos), clear)
        for node in nodes:
            node.apply_encrypted_broadcast(t, seed, blobs, {"sizes": sizes, "m": len(clients), "k": k})
        figures.append(b)
    return nodes, server, figures


@pytest.mark.parametrize("name,aggregation", [("fedmf", "weighted"), ("colr", "item_mean"), ("scolr", "item_mean")])
def test_ckks_federation_matches_the_plain_engine(name, aggregation, tmp_path):
    """Every node ends with the plain engine's item table (CKKS precision), the server's ledger carries the
    real ciphertext bytes (the engine's measure, within the few bytes by which serialized ciphertexts vary),
    and the server's copy of the keys cannot decrypt."""
    import tenseal as ts

    from labcore.fed.engine import Simulation
    from labcore.privacy.ckks import encrypt_update
    from labcore.scale.encrypted import node_context, server_context, write_keys

    cfg = _cfg(name, aggregation=aggregation, **CKKS)
    keys = write_keys(cfg, tmp_path / "keys")
    nodes, server, figures = _encrypted_protocol(cfg, keys)
    plain = Simulation(cfg.replace(encryption="none"), load_data(cfg))
    plain.step(), plain.step()
    for node in nodes:
        np.testing.assert_allclose(node.Q.numpy(), plain.Q.numpy(), atol=1e-6, rtol=0)
    eng = run(cfg.replace(he_real_clients=cfg.clients_per_round), use_cache=False, progress=False)
    np.testing.assert_allclose([f["bytes_up"] for f in figures], eng.table["bytes_up"], rtol=1e-3)
    np.testing.assert_allclose([f["bytes_down"] for f in figures], eng.table["bytes_down"], rtol=1e-3)
    from labcore.methods.base import FLOAT_KINDS

    up_kinds = set(server.ledger.frame().query("direction == 'up'")["kind"])  # no plaintext float leaves a node
    assert "ciphertext" in up_kinds and not up_kinds & set(FLOAT_KINDS)
    ctx = server_context(cfg, str(keys))  # the server can deserialize and add, never decrypt
    assert ctx.secret is None and not ctx.public.has_secret_key()
    ct = encrypt_update(node_context(cfg, str(keys)), np.ones(4))[0]
    with pytest.raises(ValueError):
        ts.ckks_vector_from(ctx.public, ct).decrypt()


def test_flower_refuses_what_it_cannot_carry(tmp_path):
    data = load_data(_cfg("colr"))
    with pytest.raises(ValueError, match="encryption='secagg' is not available over Flower: allowed values are none, ckks"):
        F.NodeWork(_cfg("colr", encryption="secagg"), data, np.arange(10), 0)
    with pytest.raises(ValueError, match="needs keys"):
        F.NodeWork(_cfg("colr", **CKKS), data, np.arange(10), 0)
    with pytest.raises(FileNotFoundError, match="secret.ctx not found"):
        F.NodeWork(_cfg("colr", **CKKS), data, np.arange(10), 0, keys=str(tmp_path)).train(0, 1, np.array([0]))
    # the nodes and the server exchange the codes as sent: a noisy link would be silently clean
    with pytest.raises(ValueError, match=r"up_link_budget=3 is not available over Flower with up_bits=8: allowed values "
                                         r"are 0 \(no limit\) and 8..24, budgets that carry all 255 levels exactly"):
        F.NodeWork(_cfg("colr", up_bits=8, up_link_budget=3), data, np.arange(10), 0)
    with pytest.raises(ValueError, match=r"down_link_budget=2 is not available over Flower with down_bits=32: allowed "
                                         r"values are 0 \(no limit\) \(the noisy"):
        F.NodeWork(_cfg("colr", down_bits=32, down_link_budget=2), data, np.arange(10), 0)
    F.NodeWork(_cfg("colr", up_bits=8, up_link_budget=8), data, np.arange(10), 0)  # a link that carries every level
    # refused before any process starts, not from inside the ServerApp
    from labcore.scale.deploy import LocalFederation
    from labcore.scale.simulate import run_flower

    noisy = _cfg("colr", up_bits=8, up_link_budget=3)
    with pytest.raises(ValueError, match="up_link_budget=3 is not available over Flower"):
        run_flower(noisy, nodes=2)
    with pytest.raises(ValueError, match="up_link_budget=3 is not available over Flower"):
        LocalFederation(nodes=2, workdir=tmp_path / "fed").run(noisy, tmp_path / "out")


@pytest.mark.parametrize("mode", ["sim", "deploy"])
def test_the_flower_command_refuses_a_noisy_link_before_starting_a_federation(mode, capsys, monkeypatch):
    from labcore.cli import main
    from labcore.scale import deploy

    monkeypatch.setattr(deploy.LocalFederation, "start", lambda self: pytest.fail("a federation was started"))
    assert main(["flower", mode, "--dataset", "synthetic", "--up-bits", "8", "--up-link-budget", "3"]) == 2
    assert "up_link_budget=3 is not available over Flower with up_bits=8" in capsys.readouterr().err


@pytest.mark.slow
def test_ckks_over_flower_simulation_gives_the_engines_numbers(tmp_path, monkeypatch):
    from labcore.scale.simulate import run_flower

    monkeypatch.setenv("LABCORE_CACHE", str(tmp_path / "cache"))
    cfg = _cfg("colr", **CKKS)
    eng = run(cfg.replace(he_real_clients=cfg.clients_per_round), use_cache=False, progress=False)
    fr = run_flower(cfg, nodes=3, num_cpus=2)
    ours, theirs = fr.table.dropna(subset=["hr"]), eng.table.dropna(subset=["hr"])
    np.testing.assert_allclose(ours["hr"], theirs["hr"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(ours["ndcg"], theirs["ndcg"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(fr.table["bytes_up"], eng.table["bytes_up"], rtol=1e-3)
    up = fr.bytes_check[fr.bytes_check.direction == "up"]
    assert (up.flower_record_bytes > up.payload_bytes).all()  # the ciphertexts plus Flower's framing


@pytest.mark.deployment  # a fresh Ray start: most of a minute
def test_a_local_ray_start_gives_no_accelerator_warning():
    """Ray warns at its first start in a process unless told to leave the accelerator variables alone for tasks that
    ask for no GPU (the lab's never do); a fresh process, so that no earlier start in this one has used up the warning."""
    import subprocess
    import sys

    code = ("import warnings\nfrom labcore.scale.ray_runs import connect\nimport ray\n"
            "with warnings.catch_warnings(record=True) as seen:\n    warnings.simplefilter('always')\n"
            "    connect(None, 1)\nray.shutdown()\n"
            "print('accelerator warnings:', sum('RAY_ACCEL' in str(w.message) for w in seen))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "accelerator warnings: 0", out.stdout
