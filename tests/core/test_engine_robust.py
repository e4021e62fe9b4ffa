"""The model-replacement backdoor and robust aggregation on the core engine: tiny exact cases for each defense and
for the attack's scale, then rounds of the engine."""
import numpy as np
import pytest
import torch

from labcore.config import ConfigError, RunConfig
from labcore.fed.algorithms import attacks, defenses
from labcore.fed import sampling as S
from labcore.fed.aggregate import aggregate
from labcore.fed.engine import Simulation
from labcore.fed.local_train import RowUpdate
from labcore.scale.federation import check_supported

from conftest import assert_a_stopped_run_resumes

FAST = dict(method="fedmf", clients_per_round=10, local_epochs=1, batch_size=16, dim=8, eval_every=3, rounds=3,
            rank_every=0)


def _rows(dense: np.ndarray, touched: np.ndarray) -> RowUpdate:
    return RowUpdate.from_dense(torch.tensor(dense, dtype=torch.float32), torch.tensor(touched))


# 3 clients, 3 items, width 2; item 0 touched by all, item 1 by clients 0 and 2, item 2 by nobody
X = np.array([[[1.0, -4.0], [2.0, 0.0], [0.0, 0.0]],
              [[5.0, 1.0], [0.0, 0.0], [0.0, 0.0]],
              [[3.0, 10.0], [8.0, 6.0], [0.0, 0.0]]])
T = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 0]], dtype=bool)


def test_median_and_trimmed_mean_are_taken_per_item_over_the_clients_that_touched_it():
    med, counts = defenses.per_item(_rows(X, T), "median", 0.0)
    assert counts.tolist() == [3, 2, 0]
    assert med.tolist() == [[3.0, 1.0], [5.0, 3.0], [0.0, 0.0]]  # odd count: the middle; even: the mean of two
    trimmed, _ = defenses.per_item(_rows(X, T), "trimmed", 0.34)  # cut floor(0.34 x 3) = 1 at each end of item 0
    assert trimmed.tolist() == [[3.0, 1.0], [5.0, 3.0], [0.0, 0.0]]
    untrimmed, _ = defenses.per_item(_rows(X, T), "trimmed", 0.0)
    assert torch.allclose(untrimmed, torch.tensor([[3.0, 7 / 3], [5.0, 3.0], [0.0, 0.0]]))


def test_per_item_statistics_scale_by_the_touchers_weight_under_weighted_aggregation():
    w = torch.tensor([0.5, 0.25, 0.25])
    agg = defenses.robust_aggregate(_rows(X, T), "median", "weighted", w)
    assert torch.allclose(agg, torch.tensor([[3.0, 1.0], [5 * 0.75, 3 * 0.75], [0.0, 0.0]]))
    assert torch.equal(defenses.robust_aggregate(_rows(X, T), "median", "item_mean", w), defenses.per_item(_rows(X, T),
                                                                                                      "median", 0)[0])
    one = _rows(X[:1], T[:1])  # one client: its own weighted update, as FedAvg
    assert torch.allclose(defenses.robust_aggregate(one, "median", "weighted", torch.tensor([0.4])),
                          aggregate(one, "weighted", torch.tensor([0.4]), None))


def test_clipping_bounds_every_clients_norm_and_leaves_small_updates_alone():
    rows = _rows(X, T)
    norms = defenses.client_norms(rows)
    assert torch.allclose(norms, torch.tensor([np.sqrt(21.0), np.sqrt(26.0), np.sqrt(209.0)], dtype=torch.float64))
    clipped = defenses.clip(rows, 5.0)
    assert torch.allclose(defenses.client_norms(clipped), torch.tensor([np.sqrt(21.0), 5.0, 5.0], dtype=torch.float64))
    assert torch.equal(clipped.dense()[0], rows.dense()[0])
    w = torch.full((3,), 1 / 3)
    plain = defenses.robust_aggregate(rows, "clip", "weighted", w, clip_norm=100.0)
    assert torch.allclose(plain, aggregate(rows, "weighted", w, None))  # nobody above the norm: FedAvg
    noisy = defenses.robust_aggregate(rows, "clip", "weighted", w, clip_norm=100.0, dp_noise=0.3,
                                    rng=np.random.default_rng(0))
    noise = (noisy - plain).double()
    assert 0 < float(noise.std()) and not torch.equal(noisy, plain)
    expect = np.random.default_rng(0).standard_normal((3, 2)) * 0.3 * 100 / 3
    assert np.allclose(noise.numpy(), expect, atol=1e-5)  # std = dp_noise x clip_norm / M


def test_planting_overwrites_or_adds_the_attackers_target_row_and_nothing_else():
    rows = _rows(X, T)
    v = torch.tensor([7.0, 7.0])
    planted = attacks.plant(rows, np.array([1, 2]), target=1, value=v)
    D = planted.dense()
    assert torch.equal(D[1, 1], v) and torch.equal(D[2, 1], v)  # client 1 had no row of item 1: added
    assert torch.equal(D[0], rows.dense()[0]) and torch.equal(D[:, [0, 2]], rows.dense()[:, [0, 2]])
    keys = (planted.client * 3 + planted.item).tolist()
    assert keys == sorted(keys) and len(keys) == len(set(keys))  # still one row per (client, item), in order
    assert attacks.plant(rows, np.array([], dtype=np.int64), 1, v) is rows


def test_the_replacement_boost_makes_the_attackers_share_land_the_target_row_exactly():
    rows = _rows(X, T)
    w = torch.tensor([0.5, 0.3, 0.2])
    bad = np.array([1])
    gamma = attacks.replacement_boost(rows, bad, 2, w, "weighted")
    assert gamma == pytest.approx(1 / 0.3)
    Q = torch.zeros(3, 2)
    goal = torch.tensor([4.0, -2.0])
    agg = aggregate(attacks.plant(rows, bad, 2, gamma * (goal - Q[2])), "weighted", w, None)
    assert torch.allclose(Q[2] + agg[2], goal)  # nobody else touched item 2: the target row is replaced
    # per-item mean: the attacker is one of the item's touchers (item 1: clients 0 and 2, plus the attacker)
    assert attacks.replacement_boost(rows, bad, 1, w, "item_mean") == 3.0


def test_krum_keeps_the_clients_closest_to_their_neighbours_and_drops_the_outlier():
    # 5 clients, one item, width 1: values 0, 1, 2, 3, 100; f = 1 scores each by its 5 - 1 - 2 = 2 nearest
    # (c0: 1 + 4, c1: 1 + 1, c2: 1 + 1, c3: 1 + 4, c4: 97^2 + 98^2) and keeps the 4 lowest
    rows = _rows(np.array([[[0.0]], [[1.0]], [[2.0]], [[3.0]], [[100.0]]]), np.ones((5, 1), dtype=bool))
    assert defenses.krum_keep(rows, 1).tolist() == [0, 1, 2, 3]
    w = torch.tensor([0.1, 0.2, 0.3, 0.2, 0.2])
    agg = defenses.robust_aggregate(rows, "krum", "weighted", w, krum_f=1)
    assert torch.allclose(agg, torch.tensor([[(0.2 + 0.6 + 0.6) / 0.8]]))  # the kept clients' weights renormalized
    with pytest.raises(ConfigError, match=r"krum_f=2 .*more than 2 krum_f \+ 2 clients.*has 5"):
        defenses.krum_keep(rows, 2)


def test_krum_distances_from_sparse_rows_equal_the_dense_ones():
    g = torch.Generator().manual_seed(0)
    dense = torch.randn(9, 6, 3, generator=g)
    touched = torch.rand(9, 6, generator=g) < 0.4
    rows = RowUpdate.from_dense(dense, touched)
    flat = rows.dense().reshape(9, -1).double()  # a client that did not touch an item sends zeros for it
    dist = torch.cdist(flat[None], flat[None])[0] ** 2
    score = dist.sort(1).values[:, 1: 9 - 2 - 1].sum(1)
    assert defenses.krum_keep(rows, 2).tolist() == sorted(torch.argsort(score)[:7].tolist())


def test_dba_deals_the_attackers_into_groups_and_cuts_the_row_into_blocks():
    mal = np.array([False, True, True, False, True, True, True])
    assert attacks.dba_groups(mal, 2).tolist() == [-1, 0, 1, -1, 0, 1, 0]
    assert attacks.dba_blocks(8, 3) == [slice(0, 3), slice(3, 5), slice(5, 8)]
    assert sum(b.stop - b.start for b in attacks.dba_blocks(64, 4)) == 64


def test_dba_groups_plant_only_their_block_and_the_blocks_add_up_to_the_goal():
    rows = _rows(X, T)  # item 1 is touched by clients 0 and 2 (client 0 is honest)
    w = torch.tensor([0.5, 0.3, 0.2])
    goal = torch.tensor([4.0, -2.0])
    planted = rows
    for members, cols in ((np.array([1]), slice(0, 1)), (np.array([2]), slice(1, 2))):
        gamma = attacks.replacement_boost(rows, np.array([1, 2]), 1, w, "weighted", group=members)
        planted = attacks.plant(planted, members, 1, gamma * goal, cols)
    D = planted.dense()
    assert D[1, 1].tolist() == pytest.approx([4.0 / 0.3, 0.0])  # client 1 had no row of item 1: its block, else 0
    assert D[2, 1].tolist() == pytest.approx([8.0, -2.0 / 0.2])  # client 2 keeps its own first coordinate
    agg = aggregate(planted, "weighted", w, None)
    assert torch.allclose(agg[1], goal + torch.tensor([0.5 * 2.0 + 0.2 * 8.0, 0.0]))  # plus the honest parts


def test_the_target_row_points_where_the_attackers_users_do_and_ignores_its_own_length():
    Q = torch.tensor([[3.0, 4.0], [0.0, 1.0], [100.0, 0.0]])
    P_bad = torch.tensor([[0.0, 2.0], [0.0, 4.0]])
    assert torch.allclose(attacks.target_row(Q, 2, P_bad), torch.tensor([0.0, 10.0]))  # 2 x |row 0| = 10


def test_backdoor_success_counts_users_whose_top_k_of_their_untrained_items_holds_the_target():
    P = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    Q = torch.tensor([[5.0, 0.0], [0.0, 5.0], [2.0, 2.0], [1.0, 0.0]])  # target: item 2
    indptr = np.array([0, 1, 2, 3])
    train = np.array([0, 2, 3])  # user 0 trained item 0, user 1 the target (not counted), user 2 item 3
    # user 0: untrained 1, 2, 3 score 0, 2, 1: the target is first; user 2: 0, 1, 2 score 5, 5, 4: third
    assert attacks.backdoor_success(P, Q, indptr, train, 2, top_k=1) == 0.5
    assert attacks.backdoor_success(P, Q, indptr, train, 2, top_k=3) == 1.0
    assert attacks.backdoor_success(P, Q, indptr, train, 2, top_k=1, chunk=1) == 0.5


def test_attackers_are_a_fixed_share_drawn_from_the_seed():
    a = attacks.attackers(1000, 0.05, seed=3)
    assert a.sum() == 50 and np.array_equal(a, attacks.attackers(1000, 0.05, seed=3))
    assert not np.array_equal(a, attacks.attackers(1000, 0.05, seed=4))
    assert attacks.default_target(np.array([0, 0, 1, 3, 3, 3]), 5) == 1  # least popular with data (2, 4 have none)


@pytest.mark.parametrize("attack, defense, reach", [
    ("replacement", "none", lambda r: r < 0.2), ("replacement", "clip", lambda r: r > 0.5),
    ("replacement", "krum", lambda r: r > 0.5), ("dba", "none", lambda r: r < 0.2)])
def test_an_attacked_round_moves_the_target_row_to_the_attackers_goal_unless_defended(tiny, attack, defense, reach):
    cfg = RunConfig(attack=attack, attacker_share=0.2, aggregation="weighted", defense=defense, krum_f=3,
                    dba_parts=2, **FAST)
    sim = Simulation(cfg, tiny)
    for t in range(20):
        before = sim.Q[sim.attack.target].clone()
        goal = attacks.target_row(sim.Q, sim.attack.target, sim.P[torch.from_numpy(sim.attack.malicious)])
        clients = S.round_clients(cfg.client_schedule, tiny.n_users, cfg.clients_per_round, cfg.seed, t)
        row = sim.step()
        groups = set(sim.attack.dba_group[clients].tolist()) - {-1} if attack == "dba" else {0}
        if row["attackers"] and len(groups) == (2 if attack == "dba" else 1):  # DBA: every block sent
            break
    assert row["attackers"] > 0 and (defense != "krum" or row["attackers"] <= cfg.krum_f)
    # the attackers' weights cover the target row: it lands near the goal (the honest touchers add their own bit);
    # clipped to norm 1, the boosted update moves it by a fraction of the way
    assert reach(float((sim.Q[sim.attack.target] - goal).norm()) / float((before - goal).norm()))


def test_the_backdoor_success_is_reported_and_the_same_seed_gives_the_same_numbers(tiny):
    cfg = RunConfig(attack="replacement", attacker_share=0.2, defense="median", **{**FAST, "rounds": 6})
    a = [Simulation(cfg, tiny) for _ in range(2)]
    rows = [[s.step() for _ in range(6)] for s in a]
    assert [r["loss"] for r in rows[0]] == [r["loss"] for r in rows[1]]
    ev = [r for r in rows[0] if "backdoor_success" in r]
    assert len(ev) == 2 and all(0.0 <= r["backdoor_success"] <= 1.0 for r in ev)
    assert torch.equal(a[0].Q, a[1].Q)


def test_a_stopped_attacked_run_with_clipping_and_noise_resumes_to_the_same_numbers(tiny, tmp_path):
    cfg = RunConfig(attack="replacement", attacker_share=0.1, defense="clip", clip_norm=0.5, dp_noise=0.1,
                    **{**FAST, "rounds": 8})
    assert_a_stopped_run_resumes(cfg, tiny, tmp_path, stop_after=3)


@pytest.mark.parametrize("bad, message", [
    (dict(attack="backdoor"), r"attack='backdoor' .*none, replacement, dba"),
    (dict(defense="bulyan"), r"defense='bulyan' .*none, clip, median, trimmed, krum"),
    (dict(dba_parts=1), r"dba_parts=1 .*2"),
    (dict(krum_f=-1), r"krum_f=-1"),
    (dict(attacker_share=0.6, attack="replacement"), r"attacker_share=0.6 .*0.0.*0.5"),
    (dict(trim_frac=0.5), r"trim_frac=0.5 .*0.49"),
    (dict(clip_norm=0.0), r"clip_norm=0.0"),
    (dict(dp_noise=-1.0), r"dp_noise=-1.0"),
])
def test_bad_attack_and_defense_settings_name_the_field(bad, message):
    with pytest.raises(ConfigError, match=message):
        RunConfig(**bad)


@pytest.mark.parametrize("bad, message", [
    (dict(attacker_share=0.1), r"attacker_share=0.1 .*must be 0 with attack='none'"),
    (dict(attack="replacement"), r"attacker_share=0.0 .*must be above 0"),
    (dict(defense="median", method="colr"), r"defense='median' .*method='fedmf' only"),
    (dict(defense="clip", encryption="secagg"),
     r"encryption='secagg' .*must be 'none' with defense='clip'.*only the sum"),
    (dict(attack="replacement", attacker_share=0.1, scaffold=True, aggregation="weighted"), r"scaffold=True .*off"),
    (dict(attack="replacement", attacker_share=0.1, target_item=10**6), r"target_item=1000000 .*-1 .*0\.\."),
    (dict(defense="krum", krum_f=4), r"krum_f=4 .*clients_per_round > 2 krum_f \+ 2.*at most 3"),
    (dict(attack="dba", attacker_share=0.1, dba_parts=9), r"dba_parts=9 .*2\.\.dim=8"),
])
def test_combinations_the_engine_cannot_run_are_refused_before_training(tiny, bad, message):
    kw = {**FAST, **bad}
    with pytest.raises(ConfigError, match=message):
        Simulation(RunConfig(**kw), tiny)


def test_the_attack_runs_under_secure_aggregation_which_hides_it_from_the_server(tiny):
    kw = dict(attack="replacement", attacker_share=0.2, aggregation="weighted", **FAST)
    plain, masked = Simulation(RunConfig(**kw), tiny), Simulation(RunConfig(encryption="secagg", **kw), tiny)
    for _ in range(2):
        a, b = plain.step(), masked.step()
    assert a["attackers"] == b["attackers"] > 0
    assert float((plain.Q - masked.Q).abs().max()) < 1e-5  # the same boosted sum, now masked


def test_attack_and_defense_settings_change_the_key_only_when_they_can_change_the_numbers():
    base = RunConfig()
    assert RunConfig(clip_norm=3.0, trim_frac=0.3, attack_boost=2.0).key() == base.key()
    assert RunConfig(defense="median", clip_norm=3.0).key() == RunConfig(defense="median").key()
    assert RunConfig(defense="clip", clip_norm=3.0).key() != RunConfig(defense="clip").key()
    assert RunConfig(attack="replacement", attacker_share=0.1).key() != base.key()
    assert RunConfig(defense="median", krum_f=3).key() == RunConfig(defense="median").key()
    assert RunConfig(defense="krum", krum_f=3).key() != RunConfig(defense="krum").key()
    replacement = dict(attack="replacement", attacker_share=0.1)
    assert RunConfig(dba_parts=3, **replacement).key() == RunConfig(**replacement).key()
    assert RunConfig(attack="dba", attacker_share=0.1, dba_parts=3).key() != RunConfig(attack="dba",
                                                                                      attacker_share=0.1).key()


def test_krum_refuses_a_round_that_dropout_left_too_small(tiny):
    cfg = RunConfig(defense="krum", krum_f=3, dropout=0.5, **FAST)  # 10 sampled, Krum needs 9 of them
    sim = Simulation(cfg, tiny)
    with pytest.raises(ConfigError, match=r"krum_f=3 .*this one has [0-8]\b"):
        for _ in range(cfg.rounds):
            sim.step()


def test_flower_refuses_the_backdoor_and_the_defenses():
    for bad in (dict(attack="replacement", attacker_share=0.1), dict(defense="clip")):
        with pytest.raises(ValueError, match="is not available over Flower"):
            check_supported(RunConfig(**bad))


def test_the_engines_defenses_equal_the_dense_ones_where_every_client_touched_every_item():
    """One math, two views: the engine's defenses work on each item's rows (`fed/algorithms/defenses.py`), the
    FL-algorithms topic's on dense update vectors (`flalgos/defenses.py`). Where every client touched every item they
    are the same statistic, and give the same aggregate."""
    from labcore.flalgos import defenses as dense

    g = torch.Generator().manual_seed(5)
    M, N, k = 7, 4, 3
    x = torch.randn(M, N, k, generator=g)
    x[2] *= 40.0  # one large update, for the clip and Krum to act on
    rows = RowUpdate.from_dense(x, torch.ones(M, N, dtype=torch.bool))
    flat = x.reshape(M, -1)
    equal = torch.full((M,), 1.0 / M)
    for name in ("median", "trimmed"):
        engine = defenses.robust_aggregate(rows, name, "item_mean", equal, trim=0.2)
        cfg = type("Cfg", (), {"trim_frac": 0.2, "krum_f": 1})()
        assert torch.allclose(engine.reshape(-1), dense.robust(name, flat, cfg), rtol=0, atol=1e-6), name
    clipped = defenses.robust_aggregate(rows, "clip", "weighted", equal, clip_norm=2.0)
    assert torch.allclose(clipped.reshape(-1), dense.clip_rows(flat, 2.0).mean(0), rtol=0, atol=1e-6)
    kept = defenses.krum_keep(rows, 1)  # multi-Krum keeps the M - f best scored; plain Krum the best of them
    _, best = dense.krum(flat, 1)
    assert best in kept.tolist() and 2 not in kept.tolist()
