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


@pytest.mark.parametrize("name", list(METHODS))
def test_flower_records_carry_the_ledgers_bytes(name):
    """Each client's uplink record and the broadcast record hold exactly the ledger's payload bytes; the rest
    is framing: the lab's frame_bytes per part on one side, Flower's per-array framing on the other."""
    cfg = _cfg(name)
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
    n_pos = np.concatenate([meta["n_pos"] for _, meta in per_node])
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


def _assert_same_numbers(eng, table):
    ours, theirs = table.dropna(subset=["hr"]), eng.table.dropna(subset=["hr"])
    assert ours["round"].tolist() == theirs["round"].tolist()
    np.testing.assert_allclose(ours["hr"].to_numpy(), theirs["hr"].to_numpy(), atol=1e-5, rtol=0)
    np.testing.assert_allclose(ours["ndcg"].to_numpy(), theirs["ndcg"].to_numpy(), atol=1e-5, rtol=0)
    assert table["bytes_up"].tolist() == eng.table["bytes_up"].tolist()
    assert table["bytes_down"].tolist() == eng.table["bytes_down"].tolist()


@pytest.mark.parametrize("name", ["fedmf", "colr"])
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
