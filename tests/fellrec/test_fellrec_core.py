"""FELLRec: config errors, the split model, eqs. (1)-(4) and the three defects of the public code."""
import math

import numpy as np
import pytest

from labcore.runtime import use_threads
import torch

from labcore.fellrec import aggregate as A
from labcore.fellrec.config import ConfigError, FellrecConfig, check_fits
from labcore.fellrec.data import chrono_split, eval_inputs, windows
from labcore.fellrec.federated import dataset as load
from labcore.fellrec.metrics import imbalance, rank_metrics
from labcore.fellrec.model import freeze_base, get_lora, make_model
from labcore.fellrec.offload import Channel, DeviceHalf, ServerHalf, device_memory, full_step, split, split_step


use_threads()  # one intra-op thread, as the lab's runs (two spin-wait on a loaded 2-core machine)


# --- bad input ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("field,value,words", [
    ("client_layers", 7, "allowed range is 1..6"),  # k >= N - 1 with N = 8
    ("client_layers", 9, "k + 1 < N"),
    ("alpha", 0.0, "must be > 0"),
    ("alpha", -1.0, "must be > 0"),
    ("beta", 0.0, "must be > 0"),
    ("lora_rank", 33, "hidden size"),
    ("method", "fedsgd", "allowed values are central, fedavg"),
    ("dirichlet_c", 0.0, "must be > 0"),
    ("tune", "adapters", "allowed values are lora, full"),
])
def test_bad_config_names_field(field, value, words):
    with pytest.raises(ConfigError) as e:
        FellrecConfig(**{field: value})
    assert str(e.value).startswith(f"{field}={value!r} is invalid")
    assert words in str(e.value)


def test_more_clients_than_users_is_refused():
    with pytest.raises(ConfigError, match=r"n_clients=500 is invalid: .* only 64 client users"):
        check_fits(FellrecConfig(n_clients=500), 64)


def test_full_tuning_trains_every_base_weight_and_keeps_lora_keys():
    cfg = FellrecConfig(n_layer=4, n_embd=16, history=6)
    model = make_model(cfg, load(cfg))
    full = freeze_base(model, "full")
    assert len(full) == sum(1 for n, _ in model.named_parameters() if "lora_" not in n)
    assert not any(p.requires_grad for n, p in model.named_parameters() if "lora_" in n)
    assert all(p.requires_grad for p in full)
    lora = freeze_base(model)
    assert lora and all("lora_" in n for n, p in model.named_parameters() if p.requires_grad)
    assert cfg.replace(tune="full").key() != cfg.key()
    from labcore.typed_config import hash_key

    d = cfg.to_dict()
    for f in ("tune", "backbone", "title_tokens", "samples", "temperature"):  # defaults of fields added later
        d.pop(f)
    assert cfg.key() == hash_key(d, "fellrec-")  # runs cached before the field existed keep their key


# --- data -------------------------------------------------------------------------------------------------
def test_chronological_811_split():
    assert chrono_split(10) == (8, 1)
    assert chrono_split(20) == (16, 2)
    assert chrono_split(5) == (3, 1)  # validation and test keep one item each


def test_windows_predict_the_next_item_and_eval_uses_the_past_only():
    d = load(FellrecConfig())
    u = d.client_users[0]
    x, y = windows(d, np.array([u]), 4)
    s = d.train(u)
    real = x >= 0
    assert (y[real] >= 0).all()
    pairs = {(a, b) for a, b in zip(s[:-1], s[1:])}
    assert all((a, b) in pairs for a, b in zip(x[real], y[real]))
    xe, last, seen, targets = eval_inputs(d, np.array([u]), 4, "test")
    assert list(targets[0]) == list(d.test(u))
    past = d.seqs[u][: d.n_train[u] + d.n_val[u]]
    assert list(xe[0][xe[0] >= 0]) == list(past[-4:])  # the model reads only the user's past
    assert list(seen[0]) == list(past)  # and the past is excluded from the ranking
    assert xe[0][last[0]] == d.seqs[u][d.n_train[u] + d.n_val[u] - 1]


# --- the split model: Must show #1 --------------------------------------------------------------------------
def _grads(model):
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_split_equals_unsplit_loss_and_gradients(k):
    cfg = FellrecConfig(n_layer=8, n_embd=16, history=6)
    d = load(cfg)
    model = make_model(cfg, d, seed=3)
    with torch.no_grad():  # non-zero adapters so their gradients are not trivially equal
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    x, y = (torch.as_tensor(a[:8]) for a in windows(d, d.client_users, 6))
    model.zero_grad()
    loss_full = full_step(model, x, y)
    g_full = _grads(model)
    model.zero_grad(set_to_none=True)
    ch = Channel()
    loss_split = split_step(*split(model, k), x, y, ch)
    g_split = _grads(model)
    assert abs(float(loss_full) - float(loss_split)) <= 1e-6
    assert g_full.keys() == g_split.keys()
    for n in g_full:
        assert torch.allclose(g_full[n], g_split[n], atol=1e-6, rtol=0), n
    # the four crossings were serialized: h_k and grad_{N-1} up, h_{N-1} and grad_k down
    assert set(ch.bytes) == {("up", "hidden_k"), ("down", "hidden_N-1"), ("up", "grad_N-1"), ("down", "grad_k")}
    assert ch.bytes[("up", "hidden_k")] >= x.numel() * cfg.n_embd * 4


def test_offloading_really_runs_split_defect_3():
    """The public code builds the split and merges it back. Here the halves hold disjoint layers."""
    cfg = FellrecConfig()
    model = make_model(cfg, load(cfg))
    dev, srv = split(model, 2)
    dev_ids = {id(p) for p in dev.parameters()}
    srv_ids = {id(p) for p in srv.parameters()}
    assert not dev_ids & srv_ids
    assert dev.layers() == [1, 2, 8] and srv.layers() == [3, 4, 5, 6, 7]
    assert {id(p) for p in model.blocks[3].parameters()} <= srv_ids
    assert len(dev_ids | srv_ids) == len(list(model.parameters()))
    with pytest.raises(ValueError, match="client_layers=7 is invalid"):
        split(model, 7)


def test_device_memory_grows_with_k():
    cfg = FellrecConfig()
    d = load(cfg)
    model = make_model(cfg, d)
    freeze_base(model)
    x, y = (torch.as_tensor(a[:16]) for a in windows(d, d.client_users, cfg.history))
    m = [device_memory(model, k, x, y) for k in (1, 2, 3)]
    full = device_memory(model, None, x, y)
    step_p = m[1]["param_bytes"] - m[0]["param_bytes"]
    assert step_p > 0 and m[2]["param_bytes"] - m[1]["param_bytes"] == step_p  # O(k + 1): one layer per step
    assert m[0]["activation_bytes"] < m[1]["activation_bytes"] < m[2]["activation_bytes"] < full["activation_bytes"]
    assert full["param_bytes"] > m[2]["param_bytes"]


# --- eqs. (1)-(4) -------------------------------------------------------------------------------------------------
def test_cosine_similarity_by_hand():
    s = A.cosine_similarity_matrix(torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]]))
    r = 1 / math.sqrt(2)
    assert torch.allclose(s, torch.tensor([[1, r, 0], [r, 1, r], [0, r, 1]]), atol=1e-6)


def test_warmup_by_hand_and_exponent_precedence_defect_1():
    losses = [1.0, 2.0]
    p = np.exp(losses) / np.exp(losses).sum()
    alpha, beta, epoch = 0.3, 3.0, 1  # 0-based epoch 1 = t = 2
    w = A.warmup(losses, epoch + 1, alpha, beta).numpy()
    assert np.allclose(w, np.tanh(alpha / p ** ((epoch + 1) / beta)))
    buggy = np.tanh(alpha / p ** (epoch + 1 / beta))  # the public code's `epoch+1/beta`
    assert not np.allclose(w, buggy, atol=1e-3)


def test_wc_applied_at_beta_1_defect_2():
    """The public code skips w_c when beta == 1 (its default), which switches curriculum heating off."""
    states = [{"a": torch.tensor([1.0, 0.0])}, {"a": torch.tensor([1.0, 1.0])}]
    out, w, d = A.fellrec_aggregate(states, [0.5, 1.5], t=1, alpha=0.1, beta=1.0)
    assert (w < 0.99).all()
    s01 = 1 / math.sqrt(2)
    assert d[0, 1].item() == pytest.approx(w[0].item() * s01)
    no_heat, _, _ = A.fellrec_aggregate(states, [0.5, 1.5], t=1, alpha=0.1, beta=1.0, dyn_speed=False)
    assert not torch.allclose(out[0]["a"], no_heat[0]["a"])
    # eq. (2) by hand for client 0: (1 * R_0 + w_0 s_01 R_1) / (1 + w_0 s_01)
    a = w[0].item() * s01
    assert torch.allclose(out[0]["a"], (states[0]["a"] + a * states[1]["a"]) / (1 + a), atol=1e-6)


def test_wc_rises_to_one_faster_for_low_loss_clients():
    losses = [0.5, 1.0, 2.0]
    w = np.stack([A.warmup(losses, t, 0.1, 3.0).numpy() for t in range(1, 30)])
    assert (np.diff(w, axis=0) >= -1e-12).all()  # rises with t
    assert w[-1].min() > 0.99  # toward 1
    assert (w[:10, 0] > w[:10, 1]).all() and (w[:10, 1] > w[:10, 2]).all()  # low loss heats first


def test_aggregation_rows_give_each_clients_own_share_and_similarity_by_hand():
    from labcore.fellrec.federated import _aggregation_rows

    states = [{"a": torch.tensor([1.0, 0.0])}, {"a": torch.tensor([1.0, 1.0])}]
    _, w, d = A.fellrec_aggregate(states, [0.5, 1.5], t=1, alpha=0.1, beta=1.0)
    rows = _aggregation_rows(0, states, d)
    s01 = 1 / math.sqrt(2)
    for c in (0, 1):  # eq. (2)'s weight on the client's own model: 1 / (1 + w_c s_01)
        assert rows[c]["own_share"] == pytest.approx(1 / (1 + w[c].item() * s01))
        assert rows[c]["similarity"] == pytest.approx(s01)


def test_the_aggregation_trace_replays_the_runs_warmup():
    from labcore.fellrec import experiments as E
    from labcore.fellrec.federated import run

    trace = E.aggregation_trace("smoke", "tiny")
    stored = run(E.base("smoke", method="fellrec")).rounds
    assert len(trace) == len(stored) and trace["round"].min() == 1
    assert np.allclose(trace.sort_values(["round", "client"])["w"], stored.sort_values(["round", "client"])["w"])
    assert ((trace["own_share"] > 0) & (trace["own_share"] <= 1)).all()


def test_client_changes_are_fellrecs_r10_minus_fedavgs_per_client():
    from labcore.fellrec import experiments as E
    from labcore.fellrec.federated import run

    ch = E.client_changes("smoke", "tiny")
    fa = run(E.base("smoke", method="fedavg")).clients["R@10"].to_numpy()
    fe = run(E.base("smoke", method="fellrec")).clients["R@10"].to_numpy()
    assert np.allclose(ch["change"], fe - fa) and list(ch["client"]) == list(range(1, len(fa) + 1))


def test_fedavg_is_size_weighted_mean():
    st = [{"a": torch.tensor([0.0])}, {"a": torch.tensor([3.0])}]
    assert A.fedavg(st, [1, 2])["a"].item() == pytest.approx(2.0)


# --- metrics ---------------------------------------------------------------------------------------------------
def test_full_ranking_metrics_by_hand():
    scores = torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]])
    m = rank_metrics(scores, [np.array([0])], [np.array([2, 5])], ks=(2,))
    # item 0 excluded; top-2 = items 1, 2; one of two targets at rank 2
    assert m["R@2"][0] == pytest.approx(0.5)
    assert m["N@2"][0] == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert imbalance(np.array([0.1, 0.2, 0.15])) == pytest.approx(1.0)


# --- loaders on small files in the real formats ------------------------------------------------------------------
def test_ml100k_and_video_loaders_on_small_files(tmp_path, monkeypatch):
    from labcore.fellrec.data import load as load_files

    ml = tmp_path / "ml-100k"
    ml.mkdir()
    titles = ["Toy Story (1995)", "GoldenEye (1995)", "Four Rooms (1995)", "Get Shorty (1995)", "Copycat (1995)",
              "Se7en (1995)"]
    (ml / "u.item").write_bytes("".join(f"{i + 1}|{t}|01-Jan-1995||http://x|0|1\n" for i, t in enumerate(titles))
                                 .encode("latin-1"))
    rows = []
    for u in (1, 2, 3):
        for j, i in enumerate([6, 1, 5, 2, 4, 3][: 4 + u % 3]):
            rows.append(f"{u}\t{i}\t4\t{1000 - 10 * j}\n")  # timestamps decrease: time order = reversed rows
    (ml / "u.data").write_text("".join(rows))
    vg = tmp_path / "amazon-games"
    vg.mkdir()
    (vg / "Video.txt").write_text("".join(f"{u} {i}\n" for u in (1, 2) for i in (3, 1, 2, 5, 4)))
    monkeypatch.setenv("LABCORE_DATA", str(tmp_path))
    d = load_files(FellrecConfig(dataset="ml-100k", vocab_size=60, foundation_share=0.34))
    assert d.n_items == 6 and d.titles[0] == "Toy Story (1995)"
    assert d.n_users == 2  # user 3 has 4 items (< 5) and is dropped
    assert list(d.seqs[0]) == [3, 1, 4, 0, 5]  # user 1's items 4 2 5 1 6 (1-based): time order = reversed file
    assert d.meta["item_text"] == "title" and d.vocab > 6
    v = load_files(FellrecConfig(dataset="amazon-games", foundation_share=0.5))
    assert v.meta["item_text"] == "id" and v.n_items == 5 and list(v.seqs[1]) == [2, 0, 1, 4, 3]
    assert (v.item_tokens[:, 0] == np.arange(5)).all()  # one id token per item


def test_ml1m_loader_on_small_files_in_the_real_format(tmp_path, monkeypatch):
    """movies.dat `MovieID::Title::Genres` in latin-1, ratings.dat `UserID::MovieID::Rating::Timestamp`; MovieIDs
    have gaps (as in ML-1M: 3,883 movies, ids up to 3,952), and the download path is kept."""
    from labcore.fellrec.data import load as load_files

    ml = tmp_path / "ml-1m"
    ml.mkdir()
    movies = {1: "Toy Story (1995)", 2: "Jumanji (1995)", 4: "Cité des enfants perdus, La (1995)",
              5: "Heat (1995)", 7: "Sabrina (1995)"}
    (ml / "movies.dat").write_bytes("".join(f"{i}::{t}::Comedy|Drama\n" for i, t in movies.items()).encode("latin-1"))
    rows = [f"{u}::{i}::4::{978300000 + 60 * t}\n" for u, order in ((1, (7, 4, 1, 2, 5)), (2, (5, 2, 1, 7, 4)))
            for t, i in zip((5, 1, 3, 2, 4), order)]  # written out of time order
    rows.append("3::1::5::978300000\n")  # one rating: fewer than 5, dropped
    (ml / "ratings.dat").write_text("".join(rows))
    monkeypatch.setenv("LABCORE_DATA", str(tmp_path))
    d = load_files(FellrecConfig(dataset="ml-1m", vocab_size=60, foundation_share=0.5))
    assert d.n_items == 7 and d.titles[3] == "Cité des enfants perdus, La (1995)" and d.titles[2] == ""
    assert d.n_users == 2
    assert list(d.seqs[0]) == [3, 1, 0, 4, 6]  # user 1 at times 5 1 3 2 4 -> items 4 2 1 5 7 (1-based) in time order
    assert "ml-1m ratings.dat" in d.notes
    FellrecConfig(dataset="ml-1m", backbone="minilm")  # titled: the MiniLM backbone reads it


def test_ml1m_without_ratings_says_what_to_put_where(tmp_path, monkeypatch):
    from labcore.fellrec import data as D

    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m" / "movies.dat").write_text("1::Toy Story (1995)::Animation\n")
    monkeypatch.setenv("LABCORE_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="ratings.dat and movies.dat not found"):
        D.find_files("ml-1m", ("ratings.dat", "movies.dat"), download=False)
    (tmp_path / "ml-1m" / "movies.dat").write_text("1|Toy Story (1995)|Animation\n")
    (tmp_path / "ml-1m" / "ratings.dat").write_text("1::1::5::978300000\n")
    with pytest.raises(ValueError, match="MovieID::Title::Genres"):
        D.read_ml1m(tmp_path / "ml-1m")


def test_real_ml100k_counts():
    from conftest import shared_data

    if shared_data() is None:
        pytest.skip("LABCORE_DATA is not set")
    from labcore.fellrec.data import load as load_files

    d = load_files(FellrecConfig(dataset="ml-100k"))
    assert d.n_items == 1682 and d.n_users == 943
    assert sum(len(s) for s in d.seqs) == 100_000
    assert len(d.foundation_users) + len(d.client_users) == 943
    u = d.client_users[0]
    assert len(d.train(u)) + len(d.valid(u)) + len(d.test(u)) == len(d.seqs[u])


def test_minilm_tables_average_their_seeds(monkeypatch):
    """Table 6 and Figs. 5 and 7 on MiniLM run every seed of Table 1 and show their means (runs faked: R@10 = the
    seed / 10, so the mean of seeds 0 and 1 is 0.05)."""
    import pandas as pd
    from labcore.fellrec import experiments as E

    class Fake:
        def __init__(self, cfg):
            self.cfg = cfg
            self.rounds = pd.DataFrame({"round": [0, 1], "val_R@10": [0.0, cfg.seed / 10]})

        def overall(self):
            return {"R@10": self.cfg.seed / 10, "imbalance": 1.0}

    monkeypatch.setattr(E, "SEEDS", {**E.SEEDS, "smoke": (0, 1)})
    monkeypatch.setattr(E, "run_all", lambda cfgs, progress=False: [Fake(c) for c in cfgs])
    f7 = E.fig7("smoke", backbone="minilm")
    assert np.allclose(f7["R@10"], 0.05) and (f7["seeds"] == 2).all()
    assert len(f7) == len(E.ALPHAS["smoke"]) + len(E.BETAS["smoke"])
    f5 = E.fig5("smoke", backbone="minilm")
    assert np.allclose(f5["R@10"], 0.05) and (f5["seeds"] == 2).all()
    t6 = E.table6("smoke", backbone="minilm")
    assert sorted(t6["seed"].unique()) == [0, 1]
    assert len(E.fig7_configs("smoke")) == len(E.ALPHAS["smoke"]) + len(E.BETAS["smoke"])  # the tiny: one seed
