"""The federated engine: batched == loop oracle, determinism, resume, validation, ledger sizes."""
import dataclasses

import numpy as np
import pytest
import torch

from labcore.config import ConfigError, RunConfig
from labcore.fed import sampling as S
from labcore.fed.engine import Simulation, run
from labcore.runner.checkpoint import CHECKPOINT
from labcore.runtime import default_cache_dir
from labcore.fed.local_train import LowRank, train_cohort
from oracles.fed_loop import train_clients_loop
from labcore.net.message import frame_bytes

FAST = dict(clients_per_round=8, local_epochs=2, batch_size=16, dim=8, rank=2, eval_every=5, rounds=10, rank_every=5)


def _plan(data, m=8, seed=0, t=0, batch=16):
    clients = S.sample_clients(data.n_users, m, S.round_rng(seed, t, S.STREAM_CLIENTS))
    return S.plan_round(data, S.NegativeSampler(data), clients, 4, 2, batch, seed, t)


# stored_client is None where the samples are grouped by client: compared as the sample_client it stands for
PLAN_FIELDS = tuple("sample_client" if f.name == "stored_client" else f.name for f in dataclasses.fields(S.RoundPlan)
                    if f.default is dataclasses.MISSING)


@pytest.mark.parametrize("m,epochs,batch", [(8, 2, 16), (1, 1, 4), (30, 3, 5), (30, 2, 512)])
def test_compiled_round_plan_equals_the_numpy_plan_bit_for_bit(tiny, m, epochs, batch):
    from oracles.fed_loop import plan_round_numpy

    m = min(m, tiny.n_users)
    clients = S.sample_clients(tiny.n_users, m, S.round_rng(3, 1, S.STREAM_CLIENTS))
    a = S.plan_round(tiny, S.NegativeSampler(tiny), clients, 4, epochs, batch, 3, 1)
    b = plan_round_numpy(tiny, S.NegativeSampler(tiny), clients, 4, epochs, batch, 3, 1)
    assert a.stored_client is None  # grouped by client: no per-sample client column until one is read
    for f in PLAN_FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and np.array_equal(x, y), f


def test_a_tie_in_the_shuffle_keys_falls_back_to_the_global_sort():
    """The per-client bucket sort hands back to numpy's global argsort when two keys are equal or one
    rounded up into the next client's range; otherwise it gives the global sort's order."""
    from labcore.fed.kernels.sampling import shuffle_into_slots

    first, n_batches = np.array([0, 3, 6]), np.array([1, 1])
    offsets, position = np.array([0, 2]), np.array([0, 1])

    def run(u):  # the uniform draws: client m's keys are m + u
        slots = np.full((2, 3), -1, dtype=np.int64)
        return shuffle_into_slots(1, np.array(u), first, n_batches, 0, offsets, position, 3, slots), slots

    ok, slots = run([0.5, 0.1, 0.9, 0.7, 0.2, 0.3])
    assert ok and slots.tolist() == [[1, 0, 2], [4, 5, 3]]  # = np.argsort of the keys, client by client
    assert not run([0.5, 0.5, 0.9, 0.7, 0.2, 0.3])[0]  # a tie
    assert not run([0.5, 0.1, 0.9, 0.7, 0.2, 1 - 2**-54])[0]  # client 1's key 1 + u rounds up to 2
    assert 1 + (1 - 2**-54) == 2.0 and run([0.5, 0.1, 0.9, 0.7, 0.2, 1 - 2**-52])[0]  # a key just below 2 sorts


def test_the_bucket_sort_equals_numpys_argsort_with_crowded_buckets():
    """Keys crowded into a few buckets (the insertion sort's long moves) and spread ones, clients of 1 to 50
    samples: the schedule holds np.argsort(client + u), client by client."""
    from labcore.fed.kernels.sampling import shuffle_into_slots

    rng = np.random.default_rng(5)
    sizes = np.array([1, 2, 7, 50, 13])
    first = np.concatenate([[0], np.cumsum(sizes)])
    u = rng.random(first[-1])
    u[first[3]:first[3] + 30] = 0.25 + rng.random(30) * 1e-3  # 30 of client 3's keys in one bucket
    B = 64  # one batch a client: row m is client m's order
    slots = np.full((len(sizes), B), 99, dtype=np.int64)  # a reused buffer: the shuffle writes every slot
    assert shuffle_into_slots(2, u, first, np.ones(len(sizes), np.int64), 0, np.array([0]), np.arange(len(sizes)),
                              B, slots)
    perm = np.argsort(np.repeat(np.arange(len(sizes)), sizes) + u)
    assert np.concatenate([slots[m, :sizes[m]] for m in range(len(sizes))]).tolist() == perm.tolist()
    assert all((slots[m, sizes[m]:] == -1).all() for m in range(len(sizes)))  # the padding


def test_the_plan_after_a_fallback_is_the_numpy_plan(tiny, monkeypatch):
    from labcore.fed.kernels import sampling as sampling_kernels
    from oracles.fed_loop import plan_round_numpy

    real = sampling_kernels.shuffle_into_slots
    monkeypatch.setattr(sampling_kernels, "shuffle_into_slots", lambda *a: real(*a) and False)  # always a "tie"
    clients = S.sample_clients(tiny.n_users, 8, S.round_rng(0, 0, S.STREAM_CLIENTS))
    a = S.plan_round(tiny, S.NegativeSampler(tiny), clients, 4, 2, 16, 0, 0)
    b = plan_round_numpy(tiny, S.NegativeSampler(tiny), clients, 4, 2, 16, 0, 0)
    assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in PLAN_FIELDS)


def test_the_negative_samplers_hits_are_numpys_also_past_their_first_buffer():
    """`dense_hits_grouped` keeps its hits in buffers that start at a sixteenth of the samples and double: a
    cohort whose draws mostly hit (dense users) fills them several times over."""
    from labcore.fed.kernels.sampling import dense_hits_grouped

    rng = np.random.default_rng(0)
    dense = rng.random((40, 30)) < 0.9
    users = np.array([3, 0, 39, 7, 7], dtype=np.int64)
    starts = np.array([0, 900, 901, 3000, 3000, 5000], dtype=np.int64)
    items = rng.integers(0, 30, size=5000).astype(np.int32)
    hits, hit_user = dense_hits_grouped(dense, users, starts, items)
    sample_user = np.repeat(users, np.diff(starts))
    want = np.flatnonzero(dense[sample_user, items])
    assert want.size > 4 * 1024 and np.array_equal(hits, want) and np.array_equal(hit_user, sample_user[want])


def test_round_plan_uses_every_sample_once_per_epoch(tiny):
    plan = _plan(tiny)
    used = plan.steps[plan.steps >= 0]
    assert np.bincount(used, minlength=len(plan.sample_item)).tolist() == [2] * len(plan.sample_item)
    # negatives never hit the client's training items
    neg = plan.sample_label == 0
    users = plan.clients[plan.sample_client[neg]]
    assert not S.NegativeSampler(tiny).is_positive(users, plan.sample_item[neg]).any()
    assert (plan.sample_label.reshape(-1).sum()) == plan.n_pos.sum()


@pytest.mark.parametrize("lowrank", [False, True])
def test_batched_training_equals_the_per_client_loop(tiny, lowrank):
    plan = _plan(tiny)
    g = torch.Generator().manual_seed(0)
    Q, P = torch.randn(tiny.n_items, 6, generator=g) * 0.3, torch.randn(8, 6, generator=g) * 0.3
    lr_ = None
    if lowrank:  # SCoLR-style: some clients train only some columns
        mask = torch.ones(8, 3)
        mask[1, 2] = 0
        mask[4, 0] = 0
        lr_ = LowRank(torch.randn(6, 3, generator=g) / 3**0.5, mask, torch.full((8,), (3 / 6) ** 0.5))
    a = train_cohort(Q, P, plan, 0.1, 1e-2, lr_)
    b = train_clients_loop(Q, P, plan, 0.1, 1e-2, lr_)
    assert torch.allclose(a.dense_update(), b.update, atol=1e-5)
    assert torch.allclose(a.p, b.p, atol=1e-5)
    assert a.loss_sum == pytest.approx(b.loss_sum, rel=1e-5)
    if lowrank:
        assert a.dense_update()[1, :, 2].abs().max() == 0  # a frozen column stays zero


@pytest.mark.parametrize("method", ["fedmf", "colr", "scolr", "svd", "topk"])
def test_every_method_trains_and_is_deterministic(tiny, method):
    cfg = RunConfig(method=method, topk_ratio=0.25, **FAST)
    a = run(cfg, data=tiny, use_cache=False, progress=False)
    b = run(cfg, data=tiny, use_cache=False, progress=False)
    measured = ["sec_local"]  # this machine's timing: the only column allowed to differ
    assert a.table.drop(columns=measured).equals(b.table.drop(columns=measured)) and a.ledger.equals(b.ledger)
    assert len(a.table) == 10 and a.table["hr"].notna().sum() == 2
    assert a.table["loss"].iloc[-1] < a.table["loss"].iloc[0]
    assert (a.table["bytes_up"] > 0).all() and (a.table["t_round"] > 0).all()
    c = run(cfg.replace(seed=1), data=tiny, use_cache=False, progress=False)
    assert not c.table["loss"].equals(a.table["loss"])


@pytest.mark.parametrize("method", ["svd", "fedmf", "colr"])
def test_the_same_config_gives_the_same_bits_run_after_run(tiny, method):
    """Twelve runs in one process, each with its buffers wherever the allocator puts them. The compiled
    trainer once summed in an order that depended on where its scratch buffers lay (a vectorized loop
    with a run-time overlap check and a scalar fallback): about one run in five differed in the last bits."""
    cfg = RunConfig(method=method, **FAST)
    tables = {run(cfg, data=tiny, use_cache=False, progress=False).table["loss"].to_numpy().tobytes()
              for _ in range(12)}
    assert len(tables) == 1


def test_scolr_with_full_local_rank_equals_colr(tiny):
    colr = run(RunConfig(method="colr", **FAST), data=tiny, use_cache=False, progress=False)
    scolr = run(RunConfig(method="scolr", scolr_min_rank=FAST["rank"], **FAST), data=tiny, use_cache=False,
                progress=False)
    assert np.allclose(colr.table["loss"], scolr.table["loss"], rtol=1e-6)
    assert np.allclose(colr.table["hr"].dropna(), scolr.table["hr"].dropna())


def test_colr_ledger_is_r_times_items_float32_plus_framing(tiny):
    cfg = RunConfig(method="colr", aggregation="weighted", **FAST)
    res = run(cfg, data=tiny, use_cache=False, progress=False)
    r, n, m = cfg.rank, tiny.n_items, cfg.clients_per_round
    up = res.ledger.query("direction == 'up' and round == 0")
    assert up["part"].tolist() == ["A"]
    assert up["bytes"].item() == m * (r * n * 4 + frame_bytes("A", 1))
    assert up["bits"].item() == m * r * n * 32
    down = res.ledger.query("direction == 'down' and round == 0").set_index("part")
    assert down.loc["A", "bytes"] == m * (r * n * 4 + frame_bytes("A", 1))
    assert down.loc["B_seed", "bytes"] == m * (8 + frame_bytes("B_seed", 0))  # B travels as a seed
    assert res.table["bytes_up_client"].iloc[0] == r * n * 4 + frame_bytes("A", 1)


def test_topk_ledger_is_k_values_plus_k_indices(tiny):
    cfg = RunConfig(method="topk", topk_ratio=0.1, aggregation="weighted", **FAST)
    res = run(cfg, data=tiny, use_cache=False, progress=False)
    k = int(np.ceil(0.1 * tiny.n_items * cfg.dim))
    up = res.ledger.query("direction == 'up' and round == 0").set_index("part")
    assert up.loc["values", "bytes"] == 8 * (4 * k + frame_bytes("values", 1))
    assert up.loc["indices", "bytes"] == 8 * (4 * k + frame_bytes("indices", 1))


def test_quantized_uplink_is_bits_plus_sign_per_value_and_a_scale_per_bucket(tiny):
    cfg = RunConfig(method="colr", aggregation="weighted", up_bits=3, quant_bucket=16, **FAST)
    res = run(cfg, data=tiny, use_cache=False, progress=False)
    n = cfg.rank * tiny.n_items
    up = res.ledger.query("direction == 'up' and round == 0").set_index("part")
    assert up.loc["A.codes", "bytes"] == 8 * (int(np.ceil(n * 4 / 8)) + frame_bytes("A.codes", 1))
    assert up.loc["A.scales", "bytes"] == 8 * (4 * int(np.ceil(n / 16)) + frame_bytes("A.scales", 1))
    down = res.ledger.query("direction == 'down' and round == 0")
    assert "A" in down["part"].tolist()  # the downlink stays float32 when down_bits = 0


def test_item_mean_sends_an_item_bitmap(tiny):
    res = run(RunConfig(method="colr", aggregation="item_mean", **FAST), data=tiny, use_cache=False, progress=False)
    mask = res.ledger.query("part == 'item_mask' and round == 0")
    assert mask["bytes"].item() == 8 * (int(np.ceil(tiny.n_items / 8)) + frame_bytes("item_mask", 1))


def test_clients_per_round_larger_than_users_is_rejected(tiny):
    with pytest.raises(ConfigError, match="clients_per_round=31.*only 30 users"):
        Simulation(RunConfig(clients_per_round=31), tiny)


def test_result_is_cached_and_an_interrupted_run_resumes_to_the_same_numbers(tiny, tmp_path):
    cfg = RunConfig(method="colr", checkpoint_every=3, **FAST)
    full = run(cfg, data=tiny, use_cache=False, progress=False)
    stops = iter([False] * 7 + [True])
    part = run(cfg, data=tiny, cache_dir=tmp_path, progress=False, should_stop=lambda: next(stops))
    assert not part.complete and len(part.table) == 7
    assert (tmp_path / cfg.key() / CHECKPOINT).exists()
    resumed = run(cfg, data=tiny, cache_dir=tmp_path, progress=False)
    assert resumed.complete and not resumed.cached
    assert np.allclose(resumed.table["loss"], full.table["loss"], rtol=0, atol=0)
    assert resumed.table["hr"].dropna().tolist() == full.table["hr"].dropna().tolist()
    assert not (tmp_path / cfg.key() / CHECKPOINT).exists()
    again = run(cfg, data=tiny, cache_dir=tmp_path, progress=False)
    assert again.cached and again.table[["round", "loss", "hr"]].equals(resumed.table[["round", "loss", "hr"]])


def test_keyboard_interrupt_leaves_a_checkpoint(tiny, tmp_path):
    cfg = RunConfig(method="fedmf", **FAST)
    seen = []

    def interrupt(row):
        seen.append(row["round"])
        if row["round"] == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(cfg, data=tiny, cache_dir=tmp_path, progress=False, on_round=interrupt)
    assert (tmp_path / cfg.key() / CHECKPOINT).exists()
    resumed = run(cfg, data=tiny, cache_dir=tmp_path, progress=False)
    assert resumed.table["round"].tolist() == list(range(10))


def test_bandwidth_tiers_make_the_slowest_client_set_the_round(tiny):
    base = RunConfig(method="fedmf", **FAST)
    slow = base.replace(bandwidth_tiers=((0.5, 1.0, 1.0), (0.5, 0.1, 0.1)))
    a = run(base, data=tiny, use_cache=False, progress=False)
    b = run(slow, data=tiny, use_cache=False, progress=False)
    assert (b.table["t_comm"] > 5 * a.table["t_comm"]).all()


def test_default_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LABCORE_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path


def test_load_data_follows_the_data_skew():
    from labcore.fed.engine import load_data
    from labcore.metrics import client_data_gini

    base = RunConfig(synthetic_size="tiny")
    assert client_data_gini(load_data(base.replace(data_skew=0.0))) == 0.0
    assert client_data_gini(load_data(base)) > 0.0


def test_an_unreadable_checkpoint_is_reported_and_training_starts_over(tiny, tmp_path):
    cfg = RunConfig(method="colr", **FAST)
    folder = tmp_path / cfg.key()
    folder.mkdir()
    (folder / CHECKPOINT).write_bytes(b"half-written")
    with pytest.warns(UserWarning, match="ignoring the checkpoint"):
        res = run(cfg, data=tiny, cache_dir=tmp_path, progress=False)
    ref = run(cfg, data=tiny, use_cache=False, progress=False)
    assert res.complete and res.table["loss"].tolist() == ref.table["loss"].tolist()


def test_effective_rank_of_the_aggregated_update_is_recorded_exactly(tiny):
    from labcore.fed.engine import aggregate_rank_stats
    from labcore.methods.base import RoundSetup

    # two orthogonal directions of equal variance, a third unused: N90 = N99 = 2, entropy rank exp(ln 2) = 2
    X = torch.tensor([[1.0, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]])
    assert aggregate_rank_stats(X, RoundSetup()) == {"agg_n90": 2.0, "agg_n99": 2.0, "agg_erank": pytest.approx(2.0)}
    # CoLR's aggregate is A (N, r); the update is A B^T: the same numbers through an orthonormal B
    B = torch.tensor([[0.0, 1], [1, 0], [0, 0]])
    low = RoundSetup(LowRank(B, torch.ones(1, 2), torch.ones(1)))
    assert aggregate_rank_stats(X[:, :2], low)["agg_n90"] == 2.0
    # recorded by the engine on rank_every rounds, from the aggregate the server applied
    sim = Simulation(RunConfig(method="fedmf", **FAST), tiny)
    sim.keep_view = True
    row = sim.step()
    assert row["agg_n90"] == aggregate_rank_stats(sim.view["aggregate"], RoundSetup())["agg_n90"]
    assert 1 <= row["agg_n90"] <= row["agg_n99"] <= FAST["dim"] and "agg_n90" not in sim.step()
