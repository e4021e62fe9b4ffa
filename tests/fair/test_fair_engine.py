"""FAIR's round loop against an independent per-device implementation, FedAvg, the ledger and the baselines."""
import math

import numpy as np
import pytest
import torch

from labcore.config import ConfigError
from labcore.fair import FairSimulation, baselines, fedhm, paper_mlp, paper_ranking, paper_rating, run
from labcore.fair.data import make_synthetic_ranking, make_synthetic_ratings
from labcore.fair.engine import training_ratio
from labcore.fair.metrics import ndcg_at_k
from labcore.fair.model import bpr_loss, l2_penalty, neumf_scores
from labcore.net.message import frame_bytes


def tiny(**kw):
    base = dict(rounds=3, clients_per_round=4, batch_size=16, local_epochs=2, eval_every=2, lr=0.05,
                optimizer="sgd", weight_decay=1e-4)
    return paper_ranking("synthetic", **{**base, **kw})


@pytest.fixture(scope="module")
def data():
    return make_synthetic_ranking(n_users=12, n_items=96, seed=1)


def _round_inputs(sim):
    """What sim.step() will draw for its next round (the same seeded generators)."""
    from labcore.fair.engine import round_rng, sample_clients, STREAM_CLIENTS

    cfg, t = sim.cfg, sim.round
    k = min(cfg.clients_per_round, sim.eligible.size)
    users = sim.eligible[sample_clients(sim.eligible.size, k, round_rng(cfg.seed, t, STREAM_CLIENTS))]
    counts = sim.data.train_counts()[users]
    order = np.argsort(-counts, kind="stable")
    users, counts = users[order], counts[order]
    ratios = training_ratio(cfg, sim.device_ratio[users])
    return users, counts, sim._groups(users, ratios, t), sim._plan(users, counts, t)


def _oracle_round(sim):
    """One round device by device: psi as a parameter, theta_c = S psi through the dense matrix S,
    torch autograd, torch optimizers (SGD; SparseAdam + Adam at full capacity), FedAvg in the server basis."""
    cfg, spec = sim.cfg, sim.spec
    users, counts, groups, (steps, n_steps, samples) = _round_inputs(sim)
    T, d, rows = sim.n_tables, sim.d, sim.rows
    dense0 = sim.server_dense()
    p = torch.from_numpy(counts / counts.sum()).double()
    new_theta = [torch.zeros(sim.n, dtype=torch.float64) for _ in range(T)]
    new_dense = {k: torch.zeros_like(v, dtype=torch.float64) for k, v in dense0.items()}
    new_users = {}
    for g in groups:
        for pos in g.members:
            dense = {k: v.clone().requires_grad_(True) for k, v in dense0.items()}
            user = sim.P[users[pos]].view(T, d).clone().requires_grad_(True)
            if cfg.optimizer == "adam":  # full capacity only: the table is an embedding with sparse gradients
                embs = [torch.nn.Embedding(rows, d, sparse=True, _weight=sim.theta[t].view(rows, d).clone())
                        for t in range(T)]
                opt_t = torch.optim.SparseAdam([e.weight for e in embs], lr=cfg.lr)
                opt_d = torch.optim.Adam(list(dense.values()) + [user], lr=cfg.lr)
            else:
                S = [g.subs[t].matrix().float() for t in range(T)]
                psi = [(torch.linalg.pinv(S[t].double()) @ sim.theta[t].double()).float().requires_grad_(True)
                       for t in range(T)]  # Eq. 3 (an empty column makes S rank-deficient: pinv, not lstsq)
                opt = torch.optim.SGD(psi + list(dense.values()) + [user], lr=cfg.lr)
            for s in range(int(n_steps[pos])):
                ids = torch.from_numpy(steps[s, pos])
                ids = ids[ids >= 0]
                items = samples["items"][ids]  # (B, J)
                if cfg.optimizer == "adam":
                    realized = torch.stack([embs[t](items) for t in range(T)], 2)
                else:
                    realized = torch.stack([(S[t] @ psi[t]).view(rows, d)[items] for t in range(T)], 2)
                realized = realized[None]  # (1, B, J, T, d)
                scores = neumf_scores(spec, {k: v[None] for k, v in dense.items()}, user[None], realized)
                mask, count = torch.ones(1, items.shape[0]), torch.tensor([float(items.shape[0])])
                loss = bpr_loss(scores, mask, count) + cfg.weight_decay * l2_penalty(user[None], realized, mask,
                                                                                       count)
                if cfg.optimizer == "adam":
                    opt_t.zero_grad()
                    opt_d.zero_grad()
                    loss.backward()
                    opt_t.step()
                    opt_d.step()
                else:
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            for t in range(T):
                theta_c = embs[t].weight.reshape(-1) if cfg.optimizer == "adam" else S[t] @ psi[t]
                new_theta[t] += p[pos] * theta_c.detach().double()
            for k in new_dense:
                new_dense[k] += p[pos] * dense[k].detach().double()
            new_users[int(users[pos])] = user.detach().reshape(-1)
    return new_theta, new_dense, new_users


@pytest.mark.parametrize("kw", [dict(method="fair", capacities="1x-2x"), dict(method="fair", capacities="2x-4x-8x"),
                                dict(method="fair", capacities="1x-4x", block=1),
                                dict(method="fair", capacities="2x-4x", consistent=False),
                                dict(method="fair", capacities="1x-2x", signed=False),
                                dict(method="fedavg", optimizer="adam", lr=0.01)])
def test_vectorized_round_matches_a_per_device_oracle(data, kw):
    sim = FairSimulation(tiny(**kw), data)
    sim.step()  # the second round starts from a trained model
    theta, dense, users = _oracle_round(sim)
    sim.step()
    for t in range(sim.n_tables):
        assert torch.allclose(sim.theta[t].double(), theta[t], atol=2e-6), t
    got = sim.server_dense()
    # Adam divides by sqrt(v): a unit whose gradient is ~0 (a dead ReLU) moves by up to lr with a sign set by
    # rounding, so batched and per-device sums may differ there by a fraction of lr
    tol = sim.cfg.lr / 20 if sim.cfg.optimizer == "adam" else 2e-6
    for k in dense:
        assert torch.allclose(got[k].double(), dense[k], atol=tol), k
    for u, row in users.items():
        assert torch.allclose(sim.P[u], row, atol=2e-6)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_fair_with_every_device_at_1x_equals_fedavg_exactly(data, optimizer):
    a = FairSimulation(tiny(method="fair", capacities="1x", optimizer=optimizer, rounds=4), data)
    b = FairSimulation(tiny(method="fedavg", capacities="1x", optimizer=optimizer, rounds=4), data)
    for _ in range(4):
        ra, rb = a.step(), b.step()
        assert ra["loss"] == rb["loss"]
        assert ra.get("metric") == rb.get("metric")
    for ta, tb in zip(a.theta, b.theta):
        assert torch.equal(ta, tb)
    assert torch.equal(a.dense, b.dense) and torch.equal(a.P, b.P)
    # the only difference on the wire: FAIR sends the hash seed (Algorithm 1), FedAvg does not
    seed_bytes = frame_bytes("hash_seed", 0) + 8
    assert ra["bytes_up"] - rb["bytes_up"] == seed_bytes * ra["clients"]


def test_ledger_counts_psi_values_plus_the_seed_per_device_and_direction(data):
    sim = FairSimulation(tiny(method="fair", capacities="1x-2x-4x", clients_per_round=6), data)
    row = sim.step()
    led = sim.ledger.frame()
    users, counts, groups, _ = _round_inputs_of_last(sim)
    n, D = sim.n, sim.dense.numel()
    m_of = {1: n, 2: sim.families[0].dim(2), 4: sim.families[0].dim(4)}
    ratios = training_ratio(sim.cfg, sim.device_ratio[users])
    for direction in ("down", "up"):
        part = led[(led.direction == direction)].set_index("part")
        for t in range(sim.n_tables):
            expect = sum(frame_bytes(f"psi_{t}", 1) + 4 * m_of[int(r)] for r in ratios)
            assert part.loc[f"psi_{t}", "bytes"] == expect
            assert part.loc[f"psi_{t}", "bits"] == 32 * sum(m_of[int(r)] for r in ratios)
        assert part.loc["hash_seed", "messages"] == len(users)
        assert part.loc["hash_seed", "bytes"] == len(users) * (frame_bytes("hash_seed", 0) + 8)
        assert part.loc["dense", "bytes"] == len(users) * (frame_bytes("dense", 1) + 4 * D)
    assert row["bytes_up"] == led[led.direction == "up"]["bytes"].sum()


def _round_inputs_of_last(sim):
    sim.round -= 1
    try:
        return _round_inputs(sim)
    finally:
        sim.round += 1


def test_device_memory_per_tier(data):
    cfg = tiny(method="fair", capacities="1x-2x-4x")
    sim = FairSimulation(cfg, data)
    tab = sim.device_table().set_index("tier")
    fam = sim.families[0]
    for r in (1, 2, 4):
        v = tab.loc[f"{r}x"]
        assert v["table_values"] == fam.dim(r)
        assert v["values"] == sim.n_tables * fam.dim(r) + sim.dense.numel() + sim.P.shape[1]
        assert v["bytes"] == 4 * v["values"]
    assert tab.loc["1x", "ratio_actual"] == 1.0
    assert tab.loc["4x", "ratio_actual"] > tab.loc["2x", "ratio_actual"] > 1.5
    hm = FairSimulation(tiny(method="fedhm", capacities="1x-2x"), data).device_table().set_index("tier")
    assert hm.loc["2x", "table_values"] == (sim.d // 2) * (sim.rows + sim.d)  # U (rows x k) + V (k x d)


def test_capacity_schemes_and_who_takes_part():
    c = tiny(capacities="1x-2x")
    r = baselines.device_ratios(c, 10)
    assert r.tolist() == [1] * 5 + [2] * 5  # first half of the users by id at 1x
    r3 = baselines.device_ratios(c.replace(capacities="4x-8x-16x"), 9)
    assert r3.tolist() == [4] * 3 + [8] * 3 + [16] * 3
    rnd = baselines.device_ratios(c.replace(assign="random", full_fraction=0.2), 99)
    assert (rnd == 1).sum() == 20 and (rnd == 2).sum() == 79
    assert np.array_equal(rnd, baselines.device_ratios(c.replace(assign="random", full_fraction=0.2), 99))
    assert (baselines.device_ratios(c.replace(assign="random", full_fraction=0.01), 99) == 1).sum() == 1
    ft = c.replace(method="full-trn")
    assert baselines.eligible_users(ft, r).tolist() == [0, 1, 2, 3, 4]
    hom = c.replace(method="fair-hom", capacities="1x-8x")
    assert baselines.training_ratio(hom, np.array([1, 8])).tolist() == [8, 8]


def test_full_trn_trains_only_full_devices(data):
    sim = FairSimulation(tiny(method="full-trn", capacities="1x-2x", clients_per_round=10), data)
    row = sim.step()
    assert row["clients"] == 6 and row["clients_1x"] == 6  # only the 6 devices at 1x, all of them


def test_fedhm_is_na_beyond_a_compression_of_d():
    assert fedhm.fedhm_rank(8, 4) == 2
    paper_ranking("synthetic", method="fedhm", capacities="1x-4x")
    with pytest.raises(ConfigError, match="capacities=.*FedHM cannot compress 8x"):
        paper_ranking("synthetic", method="fedhm", capacities="1x-8x")
    with pytest.raises(ConfigError, match="N/A"):
        paper_rating("synthetic-ratings", method="fedhm", capacities="16x-32x")
    with pytest.raises(ConfigError, match="FedHM"):
        paper_mlp(method="fedhm", capacities="2x-4x-8x-16x-32x-64x")
    W = torch.randn(50, 8)
    U, V = fedhm.lowrank_factors(W, 8)
    assert torch.allclose(U @ V, W, atol=1e-5)
    U, V = fedhm.lowrank_factors(W, 3)
    u, s, vh = torch.linalg.svd(W, full_matrices=False)
    assert torch.allclose(U @ V, (u[:, :3] * s[:3]) @ vh[:3], atol=1e-4)


def test_config_errors_name_the_field_and_the_allowed_values():
    with pytest.raises(ConfigError, match="method='fairx' is invalid: allowed values are fair, fair-hom"):
        tiny(method="fairx")
    with pytest.raises(ConfigError, match="capacities='1x-3x' is invalid"):
        tiny(capacities="1x-3x")
    with pytest.raises(ConfigError, match="dataset='digits' is invalid: task='ranking' runs on"):
        paper_ranking("digits")
    with pytest.raises(ConfigError, match="method='full-trn' is invalid"):
        tiny(method="full-trn", capacities="2x-4x")
    with pytest.raises(ConfigError, match="unknown config field"):
        tiny().replace(colour=1)


def test_resumed_run_equals_an_uninterrupted_one(tmp_path, data):
    cfg = tiny(method="fair", capacities="1x-4x", rounds=4, checkpoint_every=2)
    full = run(cfg, data=data, cache_dir=tmp_path / "a")
    calls = iter(range(100))
    part = run(cfg, data=data, cache_dir=tmp_path / "b", should_stop=lambda: next(calls) >= 2)
    assert not part.complete
    resumed = run(cfg, data=data, cache_dir=tmp_path / "b")
    cols = ["round", "loss", "metric", "bytes_up", "bytes_down"]
    assert full.table[cols].equals(resumed.table[cols])
    again = run(cfg, data=data, cache_dir=tmp_path / "a")
    assert again.cached and again.best == full.best


def test_ndcg_matches_its_definition():
    rng = np.random.default_rng(0)
    n_users, n_items, k = 5, 40, 10
    scores = torch.randn(n_users, n_items)
    train = [np.sort(rng.choice(n_items, 6, replace=False)) for _ in range(n_users)]
    test = [np.sort(rng.choice(np.setdiff1d(np.arange(n_items), tr), 4, replace=False)) for tr in train]
    indptr = lambda ls: np.concatenate([[0], np.cumsum([len(x) for x in ls])])  # noqa: E731
    got = ndcg_at_k(lambda u: scores[u], n_items, indptr(train), np.concatenate(train), indptr(test),
                    np.concatenate(test), k, chunk=2)
    want = []
    for u in range(n_users):
        s = scores[u].clone()
        s[train[u]] = -math.inf
        top = torch.argsort(s, descending=True)[:k].numpy()
        dcg = sum(1 / math.log2(r + 2) for r, i in enumerate(top) if i in set(test[u]))
        idcg = sum(1 / math.log2(r + 2) for r in range(min(k, len(test[u]))))
        want.append(dcg / idcg)
    assert got == pytest.approx(float(np.mean(want)), abs=1e-12)


def test_rating_and_general_model_tasks_run():
    r = run(paper_rating("synthetic-ratings", method="fair", capacities="8x-16x", rounds=3, eval_every=3),
            data=make_synthetic_ratings(), use_cache=False)
    assert r.metric_name == "mse" and r.final > 0
    cfg = paper_mlp(method="fair", capacities="2x-4x", rounds=2, eval_every=2, local_epochs=1, n_devices=6,
                    clients_per_round=3, hidden=32)
    res = run(cfg, use_cache=False)
    assert 0 <= res.final <= 1 and res.ledger["part"].tolist().count("psi_0") == 4


def test_one_model_size_takes_only_the_devices_that_hold_it(data):
    sim = FairSimulation(tiny(method="fixed", model_ratio=2, capacities="1x-2x-4x", clients_per_round=10), data)
    assert sim.eligible.tolist() == list(range(8))  # 1x and 2x devices (ids 0..7), not the 4x third
    row = sim.step()
    assert row["clients"] == 8 and row["clients_1x"] == 0  # everybody trains the 2x model
    with pytest.raises(ConfigError, match="model_ratio"):
        tiny(method="fixed", model_ratio=1, capacities="2x-4x")


def test_a_new_hash_every_round_when_asked(data):
    sim = FairSimulation(tiny(method="fair", capacities="2x-4x", hash_per_round=True), data)
    seeds = []
    for _ in range(3):
        sim.step()
        seeds.append(sim.families[0].seed)
    assert len(set(seeds)) == 3
    fixed = FairSimulation(tiny(method="fair", capacities="2x-4x"), data)
    assert fixed.hash_seed(0) == fixed.hash_seed(5)
