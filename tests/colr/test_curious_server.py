"""A curious server on real engine runs (labcore/colr/curious_server.py): it recovers each client's items from
plain FedMF and CoLR uploads, and no more than chance from CKKS ciphertexts or masked vectors."""
import pytest

from labcore.colr.curious_server import attack_summary, curious_server
from labcore.config import RunConfig, paper_ml1m

from conftest import shared_data

FAST = dict(clients_per_round=8, local_epochs=2, batch_size=16, dim=8, rank=2, eval_every=5, rounds=4, rank_every=0)
needs_ml1m = pytest.mark.skipif(shared_data() is None or not (shared_data() / "ml-1m").is_dir(),
                                reason="set LABCORE_DATA to a folder with ml-1m/")


def test_curious_server_recovers_items_in_plain_runs_and_not_under_protection():
    from labcore.data import load_dataset

    data = load_dataset("synthetic", size="small", seed=0)
    base = RunConfig(dim=16, rank=4, clients_per_round=12)
    runs = [curious_server(base.replace(**kw), rounds=1, data=data)
            for kw in (dict(method="fedmf"), dict(method="colr"), dict(method="fedmf", encryption="ckks"),
                       dict(method="colr", encryption="secagg"))]
    plain_mf, plain_colr, ckks, secagg = runs
    for r in (plain_mf, plain_colr):
        assert r["upload"]["precision"] > 0.9 and r["upload"]["recall"] > 0.9 and r["upload"]["clients"] == 12
        assert r["bitmap"]["recall"] == 1.0  # the clear item bitmap names every trained item
    for r in (ckks, secagg):
        assert r["upload"]["lift"] < 1.6 and r["upload"]["clients"] == 12 and "bitmap" not in r
    table = attack_summary(runs)
    assert set(table["encryption"]) == {"none", "ckks", "secagg"}


def test_topk_indices_reveal_trained_items_even_under_paillier(tiny):
    cfg = RunConfig(method="topk", topk_ratio=0.05, aggregation="weighted", compress_down=False,
                    encryption="paillier", paillier_key_bits=1024, he_real_values=2, **FAST)
    r = curious_server(cfg, rounds=1, data=tiny, real_clients=2)
    assert r["topk_indices_touched"]["precision"] == 1.0  # every index names an item the client trained on
    assert r["upload"]["clients"] == 2


@pytest.mark.slow
@pytest.mark.timeout(1800)
@needs_ml1m
def test_ml1m_attack_plain_ckks_secagg():
    """2 rounds x 60 clients each, every client protected for real (~2.5 min, secagg's key agreement dominates)."""
    cfgs = [paper_ml1m(method="fedmf"), paper_ml1m(method="colr", rank=4),
            paper_ml1m(method="colr", rank=4, encryption="ckks"), paper_ml1m(method="colr", rank=4, encryption="secagg")]
    res = [curious_server(c, rounds=2) for c in cfgs]
    for r in res[:2]:
        assert r["upload"]["precision"] > 0.9 and r["upload"]["recall"] > 0.9
    for r in res[2:]:
        assert r["upload"]["lift"] < 1.5
    assert all(r["aggregate"]["lift"] < 3 for r in res)
