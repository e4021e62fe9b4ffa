"""GIST: config errors, the Planetoid loader on generated files, the partition / merge math, bytes, baseline."""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from conftest import shared_data
from labcore.gist import planetoid, subnets
from labcore.gist.config import GistConfig, KipfConfig
from labcore.gist.model import forward, init_params
from labcore.typed_config import ConfigError


# --- config --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, field", [
    (dict(subnets=32, split="both", hidden=16), "subnets"),       # more subnets than hidden units
    (dict(subnets=4, split="both", hidden=18), "hidden"),         # hidden units do not split evenly
    (dict(graph="pubmed", subnets=501), "subnets"),                # more subnets than features (500)
    (dict(graph="reddit"), "graph"),
    (dict(local=0), "local"),
    (dict(local=300, epochs=200), "local"),
    (dict(variant="column", split="both"), "variant"),
    (dict(dropout=1.0), "dropout"),
])
def test_bad_config_names_the_field(kw, field):
    with pytest.raises(ConfigError, match=rf"^{field}=.* is invalid"):
        GistConfig(**kw)


def test_error_messages_say_what_is_allowed():
    with pytest.raises(ConfigError, match=r"subnets=501 is invalid: must be <= the feature count of pubmed \(500\)"):
        GistConfig(graph="pubmed", subnets=501)
    with pytest.raises(ConfigError, match=r"subnets=32 is invalid: must be <= hidden \(16\)"):
        GistConfig(subnets=32, split="both")
    with pytest.raises(ConfigError, match="local=0 is invalid: allowed range is 1"):
        GistConfig(local=0)
    with pytest.raises(ConfigError, match="graph='reddit' is invalid: allowed values are cora, citeseer"):
        GistConfig(graph="reddit")


def test_config_key_and_query_round_trip():
    cfg = GistConfig(subnets=4, split="both", hidden=64)
    assert cfg.key() == GistConfig(**cfg.to_dict()).key() != GistConfig().key()
    from labcore.gist.config import from_dict

    assert from_dict(cfg.to_query()) == cfg
    assert cfg.n_features() == 1432 and GistConfig(subnets=1).n_features() == 1433  # projected to 4 x 358
    assert GistConfig(subnets=4, random_projection=False).n_features() == 1436  # zero-padded to 4 x 359


# --- Planetoid loader on generated files in the real format ----------------------------------------------------------
def _write_planetoid(folder, name, n_train=2, n_allx=6, test_ids=(9, 6, 7), n=10, f=5, c=3, seed=0):
    """A Planetoid graph of n nodes; ids in range(min(test), max(test)+1) missing from test_ids are isolated."""
    rng = np.random.default_rng(seed)
    onehot = lambda k: np.eye(c)[rng.integers(0, c, k)]  # noqa: E731
    feats = lambda k: sp.csr_matrix(rng.integers(0, 2, (k, f)).astype(np.float32))  # noqa: E731
    allx, ally = feats(n_allx), onehot(n_allx)
    objs = {"x": allx[:n_train], "y": ally[:n_train], "allx": allx, "ally": ally,
            "tx": feats(len(test_ids)), "ty": onehot(len(test_ids)),
            "graph": {i: [(i + 1) % n, (i + 3) % n] for i in range(n)}}
    for k, v in objs.items():
        with open(folder / f"ind.{name}.{k}", "wb") as fh:
            pickle.dump(v, fh, protocol=2)
    (folder / f"ind.{name}.test.index").write_text("\n".join(str(i) for i in test_ids) + "\n")
    return objs


def test_loader_permutes_test_rows_into_place(tmp_path):
    objs = _write_planetoid(tmp_path, "cora", test_ids=(9, 6, 7, 8), n_allx=6)
    g = planetoid.load("cora", root=tmp_path, download=False)
    assert g.n_nodes == 10 and g.n_features == 5
    # row k of tx belongs to node test_ids[k]
    for k, node in enumerate((9, 6, 7, 8)):
        np.testing.assert_array_equal(g.features[node].toarray(), objs["tx"][k].toarray())
        assert g.labels[node] == objs["ty"][k].argmax()
    np.testing.assert_array_equal(g.features[:6].toarray(), objs["allx"].toarray())
    assert list(g.train) == [0, 1] and list(g.val) == [2, 3, 4, 5, 6, 7, 8, 9][: len(g.val)]
    assert list(g.test) == [6, 7, 8, 9]
    assert (g.adj != g.adj.T).nnz == 0 and g.adj.max() == 1


def test_loader_zero_pads_citeseer_isolated_test_nodes(tmp_path):
    objs = _write_planetoid(tmp_path, "citeseer", test_ids=(9, 6, 8), n_allx=6)  # node 7 is isolated
    g = planetoid.load("citeseer", root=tmp_path, download=False)
    assert g.n_nodes == 10
    assert g.features[7].nnz == 0 and g.labels[7] == -1
    assert list(g.test) == [6, 8, 9]
    np.testing.assert_array_equal(g.features[9].toarray(), objs["tx"][0].toarray())


def test_pubmed_without_allx_gets_a_clear_message(tmp_path):
    _write_planetoid(tmp_path, "pubmed")
    (tmp_path / "ind.pubmed.allx").unlink()
    with pytest.raises(planetoid.PlanetoidError, match="ind.pubmed.allx.*not in the local copy"):
        planetoid.load("pubmed", root=tmp_path, download=False)


def test_unknown_graph_and_bad_file(tmp_path):
    with pytest.raises(planetoid.PlanetoidError, match="graph='reddit' is invalid"):
        planetoid.load("reddit", root=tmp_path, download=False)
    _write_planetoid(tmp_path, "cora")
    (tmp_path / "ind.cora.x").write_bytes(b"not a pickle")
    with pytest.raises(planetoid.PlanetoidError, match="ind.cora.x is not a Planetoid pickle"):
        planetoid.load("cora", root=tmp_path, download=False)


@pytest.mark.skipif(shared_data() is None, reason="LABCORE_DATA is not set")
def test_real_planetoid_counts():
    with warnings.catch_warnings():  # the files name SciPy's old module paths (scipy.sparse.csr), gone in SciPy 2.0
        warnings.simplefilter("error", DeprecationWarning)
        cora = planetoid.load("cora", download=False)
    assert cora.summary() == {"graph": "cora", "nodes": 2708, "features": 1433, "classes": 7, "edges": 5278,
                              "train": 140, "val": 500, "test": 1000}
    cs = planetoid.load("citeseer", download=False)
    assert (cs.n_nodes, cs.n_features, cs.n_edges, int((cs.labels < 0).sum())) == (3327, 3703, 4552, 15)


@pytest.mark.skipif(shared_data() is None, reason="LABCORE_DATA is not set")
def test_kipf_baseline_on_cora():
    from labcore.gist.baseline import train_gcn

    with warnings.catch_warnings():  # the input dropout's sparse tensor declines torch's invariant check explicitly
        warnings.filterwarnings("error", message="Sparse invariant checks")
        hist, _ = train_gcn(KipfConfig(graph="cora", seed=1))
    assert hist["test_acc"].iloc[-1] >= 0.805  # Kipf: 81.5 %


# --- partition, blocks, merge -------------------------------------------------------------------------------------
@pytest.mark.parametrize("split, variant", [("layer1", "row"), ("both", "row"), ("layer1", "column")])
def test_partition_is_disjoint_and_covering(split, variant):
    cfg = GistConfig(graph="synthetic", subnets=4, split=split, variant=variant, hidden=16)
    part = subnets.draw(cfg, 0, 200)
    for groups, n in ((part.features, 200), (part.hidden, 16)):
        if groups is None:
            continue
        allidx = torch.cat(groups)
        assert len(allidx) == n and torch.equal(torch.sort(allidx).values, torch.arange(n))
    assert subnets.draw(cfg, 0, 200).features is None or all(
        torch.equal(a, b) for a, b in zip(subnets.draw(cfg, 0, 200).features, part.features))
    other = subnets.draw(cfg, 1, 200)  # a new round draws a new partition
    assert not all(torch.equal(a, b) for a, b in zip(other.features or other.hidden, part.features or part.hidden))


def _numbered(f, h, c):
    return {"theta1": torch.arange(f * h, dtype=torch.float32).reshape(f, h), "b1": torch.arange(h) + 0.5,
            "theta2": torch.arange(h * c, dtype=torch.float32).reshape(h, c) + 1000, "b2": torch.zeros(c) + 7}


def test_merge_writes_blocks_back_and_averages_the_rest():
    cfg = GistConfig(graph="synthetic", subnets=2, split="both", hidden=4)
    p = _numbered(6, 4, 3)
    part = subnets.Partition(2, (torch.tensor([0, 2, 4]), torch.tensor([1, 3, 5])),
                             (torch.tensor([1, 2]), torch.tensor([0, 3])))
    blocks = [subnets.extract(p, part, i) for i in range(2)]
    assert blocks[0]["theta1"].shape == (3, 2) and blocks[0]["theta2"].shape == (2, 3)
    assert torch.equal(blocks[1]["theta1"], p["theta1"][[1, 3, 5]][:, [0, 3]])
    new = [{k: -v - 1 for k, v in b.items()} for b in blocks]  # each subnet "trains" its blocks
    new[1]["b2"] = new[1]["b2"] * 3
    out = subnets.merge(p, part, new)
    assert torch.equal(out["theta1"][[0, 2, 4]][:, [1, 2]], new[0]["theta1"])
    assert torch.equal(out["theta1"][[1, 3, 5]][:, [0, 3]], new[1]["theta1"])
    own = part.owner_map(6, 4)
    assert torch.equal(out["theta1"][torch.from_numpy(own == -1)], p["theta1"][torch.from_numpy(own == -1)])
    assert (own >= 0).sum() == 6 * 4 // 2  # m blocks of (F/m)(H/m): 1/m of theta1 trained per round
    assert torch.equal(out["theta2"][[1, 2]], new[0]["theta2"]) and torch.equal(out["b1"][[0, 3]], new[1]["b1"])
    assert torch.equal(out["b2"], (new[0]["b2"] + new[1]["b2"]) / 2)  # the output bias is merged (-8 and -24)
    assert torch.equal(out["b2"], torch.full((3,), -16.0))


def test_layer1_subnets_sum_to_the_full_first_layer():
    """Feature split: the m subnets' first-layer pre-activations add up to the full model's."""
    cfg = GistConfig(graph="synthetic", subnets=4, hidden=8)
    torch.manual_seed(0)
    x = torch.randn(5, 12)
    p = init_params(12, 8, 3, 0)
    part = subnets.draw(cfg, 0, 12)
    full = x @ p["theta1"]
    parts = sum(subnets.subnet_input(x, part, i) @ subnets.extract(p, part, i)["theta1"] for i in range(4))
    torch.testing.assert_close(parts, full)
    adj = torch.eye(5).to_sparse()
    assert forward(p, adj, x, True).shape == (5, 3)


@pytest.mark.parametrize("split, hidden", [("layer1", 16), ("both", 64)])
@pytest.mark.parametrize("m", [2, 4])
def test_ledger_bytes_per_subnet_per_sync(split, hidden, m):
    from labcore.gist.simulate import run
    from labcore.net.message import frame_bytes

    cfg = GistConfig(graph="synthetic", subnets=m, split=split, hidden=hidden, epochs=2, local=1)
    res = run(cfg)
    f, c = res.params["theta1"].shape[0], res.params["theta2"].shape[1]
    up = res.ledger[res.ledger.direction == "up"]
    per = up.groupby(["round", "part"])["bytes"].sum() / m
    theta1 = f * hidden // m if split == "layer1" else f * hidden // m**2
    assert set(per.loc[0]["theta1":"theta1"]) == {4 * theta1 + frame_bytes("theta1", 2)}
    if split == "both":
        assert per.loc[(0, "theta2")] == 4 * hidden * c // m + frame_bytes("theta2", 2)
    # bits column: the ideal encoding of the blocks, no framing
    bits = up.groupby(["round", "part"])["bits"].sum() / m
    assert bits.loc[(1, "theta1")] == 32 * theta1
    assert (res.history["bytes_up"] == up.groupby("round")["bytes"].sum().to_numpy()).all()


def test_subnet_input_is_rescaled_like_inverted_dropout():
    """With the features split, a subnet trains on m x its columns of X (the merged model sums all m of them)."""
    import torch.nn.functional as F

    from labcore.gist.graph import for_config
    from labcore.gist.model import dropout_mask, seeded
    from labcore.gist.trainer import DROPOUT_STREAM, train_subnet

    cfg = GistConfig(graph="synthetic", subnets=4, epochs=2)
    g = for_config(cfg)
    p = init_params(g.n_features, cfg.hidden, g.n_classes, cfg.seed)
    part = subnets.draw(cfg, 0, g.n_features)

    def first_loss(scale):
        blocks = subnets.extract(p, part, 1)
        mask = dropout_mask((g.n_nodes, cfg.hidden), cfg.dropout, seeded(cfg.seed, DROPOUT_STREAM, 0, 1))
        logits = forward(blocks, g.adj, scale * subnets.subnet_input(g.x, part, 1), cfg.layernorm, hidden_mask=mask)
        return F.cross_entropy(logits[g.train], g.y[g.train]).item()

    for c, scale in ((cfg, 4.0), (cfg.replace(rescale_input=False), 1.0)):
        _, losses = train_subnet(c, g, subnets.extract(p, part, 1), part, 1, 0, 1)
        assert losses[0] == pytest.approx(first_loss(scale), rel=1e-6)
    assert first_loss(4.0) != pytest.approx(first_loss(1.0), rel=1e-3)
    # where it changes nothing (m = 1, or every subnet sees all features) the cache key stays the one of before
    assert GistConfig(subnets=1).key() == GistConfig(subnets=1, rescale_input=False).key()
    assert GistConfig(subnets=2).key() != GistConfig(subnets=2, rescale_input=False).key()
    assert GistConfig(subnets=2, variant="column").input_scale == 1.0


def test_features_are_zero_padded_to_equal_groups_or_projected():
    """Without the projection the bag of words is kept and zero columns make m equal groups (200 -> 201 at m = 3)."""
    from labcore.gist.graph import for_config, tensors

    raw = tensors("synthetic", None, 0).x
    g = for_config(GistConfig(graph="synthetic", subnets=3, random_projection=False))
    assert g.x.shape[1] == 201 and torch.equal(g.x[:, :200], raw) and not g.x[:, 200].any()
    assert all(len(s) == 67 for s in subnets.draw(GistConfig(graph="synthetic", subnets=3), 0, 201).features)
    proj = for_config(GistConfig(graph="synthetic", subnets=3, random_projection=True))
    assert proj.x.shape[1] == 198 and proj.x.abs().sum() > 0 and not torch.equal(proj.x[:, :198], raw[:, :198])


def test_cards_keep_per_row_the_features_with_the_better_validation():
    import pandas as pd

    from labcore.gist.cards import select_features

    rows = [GistConfig(subnets=m, random_projection=p).to_dict() for m in (2, 4) for p in (True, False)]
    table = pd.DataFrame(rows).assign(val_best=[79.8, 80.6, 78.0, 78.0], test_last=[80.2, 81.8, 78.4, 78.9])
    got = select_features(table)
    assert list(got["subnets"]) == [2, 4] and list(got["features"]) == ["bag of words", "projection"]  # a tie keeps the projection
    assert list(got["test_last"]) == [81.8, 78.4] and list(got["val_best_other"]) == [79.8, 78.0]


def test_same_seed_same_numbers_and_seed_matters():
    from labcore.gist.simulate import run

    cfg = GistConfig(graph="synthetic", subnets=2, epochs=4)
    a, b = run(cfg), run(cfg)
    assert all(torch.equal(a.params[k], b.params[k]) for k in a.params)
    c = run(cfg.replace(seed=1))
    assert not torch.equal(a.params["theta1"], c.params["theta1"])


def test_training_learns_the_synthetic_graph():
    from labcore.gist.simulate import run

    res = run(GistConfig(graph="synthetic", subnets=2, epochs=30, lr=0.02))
    s = res.summary()
    assert s["test_at_best_val"] > 0.7  # 4 classes: chance is 0.25
    assert res.history["train_loss"].iloc[-1] < res.history["train_loss"].iloc[0]
    assert set(res.subnet_loss["subnet"]) == {0, 1}


def test_output_bias_is_trained_when_both_layers_are_split():
    """The authors' code never merges b2 when the output layer is split (it stays 0); here it is averaged."""
    from labcore.gist.simulate import run

    res = run(GistConfig(graph="synthetic", subnets=2, split="both", hidden=16, epochs=3))
    assert res.params["b2"].abs().sum() > 0


def test_column_variant_blocks():
    cfg = GistConfig(graph="synthetic", subnets=4, variant="column", hidden=16)
    p = init_params(200, 16, 4, 0)
    part = subnets.draw(cfg, 0, 200)
    b = subnets.extract(p, part, 2)
    assert part.features is None and b["theta1"].shape == (200, 4) and b["theta2"].shape == (4, 4)
    x = torch.randn(3, 200)
    assert subnets.subnet_input(x, part, 2) is x  # every subnet sees all features
    assert (part.owner_map(200, 16) >= 0).all()  # all of θ1 moves every round
