"""A curious server recovers a FedMF client's items from its plain update; not from protected views."""
import numpy as np
import pytest

from labcore.privacy.attacks import (
    attack_protected_view,
    attack_scores,
    recover_interacted_items,
    synthetic_fedmf_update,
    topk_index_leak,
)
from labcore.privacy.ckks import CkksParams, encrypt_update, make_context
from labcore.privacy.secagg import secure_aggregate

N, D, NPOS = 1000, 8, 25


def test_attack_scores_definition():
    rec = np.array([1, 1, 0, 0, 1], bool)
    truth = np.array([1, 0, 1, 0, 1], bool)
    s = attack_scores(rec, truth)
    assert s["precision"] == pytest.approx(2 / 3) and s["recall"] == pytest.approx(2 / 3)
    assert s["base_rate"] == pytest.approx(3 / 5)
    assert s["chance_recall"] == pytest.approx(3 / 5)  # a random guess of 3 of 5 items recalls 3/5 of any set


def test_chance_recall_is_what_a_random_guess_recalls():
    """Over many random guesses of k items, the mean recall of a fixed true set is k / N."""
    rng = np.random.default_rng(0)
    truth = np.zeros(50, bool)
    truth[:7] = True
    guesses = [np.isin(np.arange(50), rng.choice(50, 20, replace=False)) for _ in range(4000)]
    recalls = [attack_scores(g, truth)["recall"] for g in guesses]
    assert np.mean(recalls) == pytest.approx(attack_scores(guesses[0], truth)["chance_recall"], abs=0.01)


@pytest.mark.parametrize(
    "kw",
    [{}, {"local_steps": 5}, {"weight_decay": 1e-3}, {"weight_decay": 1e-3, "local_steps": 3}, {"neg_ratio": 2}],
)
def test_attack_on_plain_update(kw):
    u = synthetic_fedmf_update(n_items=N, d=D, n_pos=NPOS, seed=1, **kw)
    s = attack_scores(recover_interacted_items(u["delta"]), u["pos_mask"])
    assert s["recall"] > 0.8 and s["precision"] > 0.8
    # with the global table the server sent, decay is removed first: same result
    s2 = attack_scores(recover_interacted_items(u["delta"], q=u["q"]), u["pos_mask"])
    assert s2["recall"] > 0.8 and s2["precision"] > 0.8


@pytest.mark.parametrize("seed", range(4))
def test_one_negative_per_positive(seed):
    # the logistic-MF update is symmetric under (p_u, pos, neg) -> (-p_u, neg, pos): with as many
    # negatives as positives the split is exact but which side is positive is a coin flip
    u = synthetic_fedmf_update(n_items=N, d=D, n_pos=NPOS, neg_ratio=1, local_steps=3, seed=seed)
    rec = recover_interacted_items(u["delta"])
    assert np.array_equal(rec, u["pos_mask"]) or np.array_equal(rec, u["neg_mask"])


def test_topk_indices_alone_reveal_touched_items():
    u = synthetic_fedmf_update(n_items=N, d=D, n_pos=NPOS, seed=2)
    flat = u["delta"].ravel()
    k = flat.size // 64
    idx = np.argsort(-np.abs(flat))[:k]
    leaked = topk_index_leak(idx, N, D)
    touched = u["pos_mask"] | u["neg_mask"]
    s = attack_scores(leaked, touched)
    assert s["precision"] == 1.0 and s["lift"] > 5  # every revealed row is an item the user touched


def test_attack_on_ckks_ciphertext_is_chance():
    u = synthetic_fedmf_update(n_items=N, d=D, n_pos=NPOS, seed=3)
    cts = encrypt_update(make_context(CkksParams()), u["delta"].ravel())
    s = attack_protected_view(cts, N, D, u["pos_mask"])
    assert s["lift"] < 2.0  # plain: lift 40


def test_attack_on_masked_vector_is_chance():
    us = [synthetic_fedmf_update(n_items=N, d=D, n_pos=NPOS, seed=s) for s in range(4)]
    X = np.stack([u["delta"].ravel() for u in us])
    _, rep = secure_aggregate(X, seed=4)
    lifts = [attack_protected_view(rep.masked[i], N, D, us[i]["pos_mask"])["lift"] for i in range(4)]
    assert np.mean(lifts) < 1.6


def test_attack_on_aggregate_of_many_clients_is_chance():
    """Even the decrypted aggregate (what clients see) tells little about one client when many take part."""
    q = np.random.default_rng(0).normal(0.0, 0.1, (N, D))
    us = [synthetic_fedmf_update(n_items=N, d=D, n_pos=20, seed=s, q=q) for s in range(200)]
    rec = recover_interacted_items(sum(u["delta"] for u in us))
    lifts = [attack_scores(rec, u["pos_mask"])["lift"] for u in us]
    assert np.mean(lifts) < 1.5
