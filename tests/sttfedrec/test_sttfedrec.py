"""STTFedRec: hashing, towers, split == unsplit gradients, the chain's exact sum, obfuscated requests, metrics."""
import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from labcore.config import ConfigError
from labcore.privacy.chain import ChainBrokenError
from labcore.privacy.secagg import FixedPoint
from labcore.sttfedrec.config import STTConfig
from labcore.sttfedrec.features import bucket, letter_trigrams
from labcore.sttfedrec.frameworks import (FedAdam, FedTrainer, build_requests, chain_sum, load_bundle,
                                          obfuscated_request, rank_metrics, split_forward_backward, split_gradients,
                                          unsplit_gradients)
from labcore.sttfedrec.towers import CLSMTower, TwoTower

TINY = dict(synthetic_users=60, synthetic_items=80, n_features=128, clients_per_round=6, eval_users=0)


@pytest.fixture(scope="module")
def bundle():
    return load_bundle(STTConfig(**TINY))


def _requests(bundle, cfg, seed=0, k=6, batches=2):
    rng = np.random.default_rng(seed)
    clients = np.sort(rng.choice(bundle.catalog.n_users, k, replace=False))
    return build_requests(bundle, clients, cfg.n_click, cfg.n_neg, batches, rng)


# --- features ---------------------------------------------------------------------------------------------
def test_letter_trigrams_and_stable_hash():
    import zlib

    assert letter_trigrams("toy") == ["#to", "toy", "oy#"]
    assert bucket("#to", 4096) == zlib.crc32(b"#to") % 4096  # the same on every machine and run


def test_profile_titles_are_features_not_targets(bundle):
    cat = bundle.catalog
    for u in range(cat.n_users):
        assert not np.intersect1d(cat.user_history(u), cat.user_train(u)).size
        assert len(cat.user_train(u)) >= 2
    # the user's bag holds the trigrams of its profile titles
    fs = bundle.features
    u = int(np.flatnonzero(np.diff(cat.history_indptr) > 0)[0])
    word = cat.item_words[int(cat.user_history(u)[0])][0]
    f = bucket(letter_trigrams(word)[0], fs.n_features)
    x = fs.users.batch(np.array([u]))
    assert f in set(x.ids.tolist())


def test_bag_is_the_sum_of_word_bags(bundle):
    fs = bundle.features
    x = fs.items.batch(np.array([3, 7]))
    for e in range(2):
        lo = int(x.offsets[e])
        hi = int(x.offsets[e + 1]) if e + 1 < x.size else x.ids.shape[0]
        bag = np.zeros(fs.n_features)
        np.add.at(bag, x.ids[lo:hi].numpy(), x.weights[lo:hi].numpy())
        words = x.seq[e][x.seq[e] >= 0].numpy()
        want = np.zeros(fs.n_features)
        for w in words:
            a = int(x.word_offsets[w])
            b = int(x.word_offsets[w + 1]) if w + 1 < len(x.word_offsets) else x.word_ids.shape[0]
            np.add.at(want, x.word_ids[a:b].numpy(), x.word_weights[a:b].numpy())
        np.testing.assert_array_equal(bag, want)


# --- towers ---------------------------------------------------------------------------------------------------
def test_clsm_is_a_window3_convolution_with_max_pooling(bundle):
    torch.manual_seed(0)
    tower = CLSMTower(128, conv=7, out=5, dropout=0.0).double()
    x = bundle.features.items.batch(np.array([1, 4, 9]))
    got = tower(x.to(torch.float64))
    # dense reference: word trigram vectors, Conv1d over positions with zero padding, max over words
    W = tower.conv.weight.detach().view(128, 3, 7)  # feature x offset x channel
    for e in range(3):
        words = x.seq[e][x.seq[e] >= 0].numpy()
        V = torch.zeros(len(words), 128, dtype=torch.float64)
        for p, w in enumerate(words):
            a = int(x.word_offsets[w])
            b = int(x.word_offsets[w + 1]) if w + 1 < len(x.word_offsets) else x.word_ids.shape[0]
            V[p].index_add_(0, x.word_ids[a:b], x.word_weights[a:b].double())
        conv = torch.nn.functional.conv1d(V.T.unsqueeze(0), W.permute(2, 0, 1), tower.conv_bias.detach(), padding=1)
        h = torch.tanh(conv[0]).max(dim=1).values
        want = torch.tanh(tower.fc(h))
        torch.testing.assert_close(got[e], want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["dssm", "clsm"])
def test_split_gradients_equal_unsplit_exactly(bundle, kind):
    """Split learning does not change the math: same seeds and dropout masks, bit-identical float64 gradients."""
    cfg = STTConfig(**TINY)
    req = _requests(bundle, cfg)
    torch.manual_seed(0)
    model = TwoTower(kind, 128, dropout=0.2).double()
    torch.manual_seed(7)
    l1, gu1, gv1 = unsplit_gradients(model, bundle.features, req, 10.0)
    torch.manual_seed(7)
    l2, gu2, gv2 = split_gradients(model, bundle.features, req, 10.0)
    assert torch.equal(l1, l2)
    assert all(torch.equal(a, b) for a, b in zip(gu1 + gv1, gu2 + gv2))
    assert any(float(g.abs().max()) > 0 for g in gv2)


def test_chain_sum_of_shares_equals_sum_of_gradients(bundle):
    cfg = STTConfig(**TINY)
    req = _requests(bundle, cfg, seed=1)
    torch.manual_seed(0)
    model = TwoTower("dssm", 128, dropout=0.0).double()
    rnd = split_forward_backward(model, bundle.features, req, 10.0, per_client=True)
    G = rnd.per_client  # (K, n): [user-tower grads | item-embedding grads | loss] of each device
    K = G.shape[0]
    total, reports = chain_sum(G, cfg, seed=3, chunk=5000)
    codec = FixedPoint(cfg.frac_bits, cfg.ring_bits)
    ring = np.zeros(G.shape[1], np.uint64)
    for row in G:
        ring = codec.add(ring, codec.encode(row, K))
    np.testing.assert_array_equal(total, codec.decode(ring))  # exact in the ring
    assert np.abs(total - G.sum(0)).max() <= K * 2.0 ** -(cfg.frac_bits + 1)
    # the mean is what the split round computed for the aggregation server
    n_u = sum(g.numel() for g in rnd.user_grads)
    direct = torch.cat([torch.cat([g.reshape(-1) for g in rnd.user_grads]), rnd.emb_grad.reshape(-1)]).numpy()
    assert np.abs(total[:-1] / K - direct).max() <= 2.0 ** -cfg.frac_bits
    assert n_u + rnd.emb_grad.numel() + 1 == G.shape[1]
    assert all(r.sequential_hops == 2 for r in reports)


def test_dropped_client_raises_or_is_rerouted(bundle):
    cfg = STTConfig(**TINY)
    G = np.random.default_rng(0).normal(0, 1e-2, size=(5, 300))
    with pytest.raises(ChainBrokenError, match="c1 -> c2"):
        chain_sum(G, cfg, seed=0, dropouts={2: "before"})
    total, _ = chain_sum(G, cfg, seed=0, dropouts={2: "before"}, on_dropout="reroute")
    np.testing.assert_allclose(total, G[[0, 1, 3, 4]].sum(0), atol=5 * 2.0 ** -25)
    with pytest.raises(ChainBrokenError, match="cannot be recovered"):
        chain_sum(G, cfg, seed=0, dropouts={2: "after"}, on_dropout="reroute")


# --- requests ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rho", [0.5, 0.7, 0.9])
def test_obfuscated_request_holds_every_clicked_item(bundle, rho):
    cfg = STTConfig(**TINY, rho=rho)
    req = _requests(bundle, cfg, seed=2, batches=3)
    cat = bundle.catalog
    assert req.items.shape == (6 * 3, 10)
    assert (req.labels.sum(1) == cfg.n_click).all() and cfg.n_click == round((1 - rho) * 10)
    for m, u in enumerate(req.clients):
        sent = req.obfuscated(m)
        assert np.isin(req.clicked(m), sent).all()
        assert np.isin(req.clicked(m), cat.user_train(u)).all()
        rows = req.client_rows(m)
        negatives = req.items[rows][req.labels[rows] == 0]
        assert not np.isin(negatives, np.union1d(cat.user_train(u), cat.user_history(u))).any()
        assert np.array_equal(sent, np.sort(sent))  # sorted: positions carry nothing
    assert np.array_equal(obfuscated_request(np.array([[5, 2], [2, 9]])), [2, 5, 9])


# --- optimisation and frameworks --------------------------------------------------------------------------
def test_fedadam_follows_eq13():
    p = torch.tensor([1.0, -2.0])
    opt = FedAdam([p], 0.9, 0.99, 1e-3)
    m = v = np.zeros(2)
    theta = np.array([1.0, -2.0])
    for g in ([0.5, -1.0], [0.1, 0.2]):
        opt.step([torch.tensor(g)], 0.01)
        g = np.array(g)
        m = 0.9 * m + 0.1 * g
        v = 0.99 * v + 0.01 * g * g
        theta = theta - 0.01 * m / (np.sqrt(v) + 1e-3)
    np.testing.assert_allclose(p.numpy(), theta, rtol=1e-6)


def test_sttfedrec_trains_like_naive_fl_without_dropout(bundle):
    """Same clients, requests and seeds: the split framework ends where naive FL ends (float rounding only)."""
    kw = dict(**TINY, rounds=4, dropout=0.0, eval_every=100, chain_every=2)
    a = FedTrainer(STTConfig(framework="sttfedrec", **kw), bundle)
    b = FedTrainer(STTConfig(framework="fl", chain_every=0, **{k: v for k, v in kw.items() if k != "chain_every"}),
                   bundle)
    for _ in range(4):
        ra, rb = a.step(), b.step()
        assert abs(ra["loss"] - rb["loss"]) < 1e-5
    assert a.rows[0]["chain_max_diff"] <= 6 * 2.0 ** -24 * 6  # the real chain ran on rounds 0 and 2
    for pa, pb in zip(a.model.parameters(), b.model.parameters()):
        torch.testing.assert_close(pa, pb, rtol=0, atol=2e-3)
    ea, eb = a.evaluate(), b.evaluate()
    assert abs(ea["auc"] - eb["auc"]) < 0.01


def test_round_messages_are_measured(bundle):
    cfg = STTConfig(framework="sttfedrec", **TINY, rounds=1, chain_every=0)
    tr = FedTrainer(cfg, bundle)
    req = tr.requests(0)
    tr.step()
    led = tr.ledger.frame()
    by = {r["part"]: r for r in tr.ledger.rows}
    K, d = cfg.clients_per_round, 128
    n_user = sum(p.numel() for p in tr.model.user.parameters())
    assert by["share_user_grad"]["bytes"] == by["mixed_user_grad"]["bytes"]
    assert by["share_user_grad"]["bits"] == K * n_user * 64
    requested = sum(len(req.obfuscated(m)) for m in range(K))
    assert by["item_embeddings"]["bits"] == requested * d * 32  # one float32 embedding per requested item
    assert by["request"]["bits"] == requested * 32
    union = len(np.unique(req.items))
    assert by["share_emb_grad"]["bits"] == K * union * d * 64  # embedding gradients in the round's union space
    assert by["share_user_grad"]["link"] == "device->device" and by["mixed_user_grad"]["link"] == "device->sas"
    assert set(led["direction"]) == {"up", "down"}
    fl = FedTrainer(STTConfig(framework="fl", **TINY, rounds=1, chain_every=0), bundle)
    fl.step()
    parts = {r["part"]: r for r in fl.ledger.rows}
    assert parts["item_tower_grad"]["bits"] == K * n_user * 32 and "raw_items" in parts


# --- metrics and config ----------------------------------------------------------------------------------
def test_rank_metrics_match_sklearn_and_hand_values():
    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(4), 15)
    labels = (rng.random(60) < 0.3).astype(np.int8)
    labels[::15] = 1
    labels[1::15] = 0
    scores = rng.random(60)
    m = rank_metrics(users, scores, labels, k=10)
    aucs = [roc_auc_score(labels[users == u], scores[users == u]) for u in range(4)]
    assert m["auc"] == pytest.approx(np.mean(aucs))
    p, n = [], []
    for u in range(4):
        lab = labels[users == u][np.argsort(-scores[users == u])]
        p.append(lab[:10].mean())
        dcg = (lab[:10] / np.log2(np.arange(2, 12))).sum()
        idcg = (1 / np.log2(np.arange(2, 2 + min(10, lab.sum())))).sum()
        n.append(dcg / idcg)
    assert m["p10"] == pytest.approx(np.mean(p)) and m["ndcg10"] == pytest.approx(np.mean(n))


def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match="framework=.*allowed values are centralized, fl, sttfedrec"):
        STTConfig(framework="split")
    with pytest.raises(ConfigError, match=r"rho=1.0 is invalid: allowed range is \[0, 1\)"):
        STTConfig(rho=1.0)
    with pytest.raises(ConfigError, match="unknown config field"):
        STTConfig().replace(clients=3)
    c = STTConfig(rho=0.9)
    assert (c.n_click, c.n_neg, c.effective_rho) == (1, 9, 0.9)
    assert c.key() == STTConfig(rho=0.9, eval_users=5).key() != STTConfig(rho=0.8).key()
