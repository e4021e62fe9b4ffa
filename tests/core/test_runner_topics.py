"""Every topic that keeps its runs keeps them in the runner's one format (labcore/runner/store.py): a tiny run of
each, then its cache folder read back by `load_run` alone, with the config, command, versions and timing."""
import json

import pytest

from labcore.runner.store import load_run
from labcore.runtime import default_cache_dir


def _engine(tiny):
    from labcore.config import RunConfig
    from labcore.fed.engine import run

    cfg = RunConfig(method="colr", rank=2, dim=8, rounds=2, clients_per_round=4, eval_every=2, rank_every=0)
    run(cfg, data=tiny, progress=False)
    return default_cache_dir() / cfg.key(), ("table", "ledger"), cfg.to_dict()


def _fair(_):
    from labcore.fair.config import paper_ranking
    from labcore.fair.engine import run

    cfg = paper_ranking("synthetic", rounds=2, clients_per_round=4, batch_size=16, local_epochs=1, eval_every=2)
    run(cfg)
    return default_cache_dir() / cfg.key(), ("table", "ledger", "devices"), cfg.to_dict()


def _flalgos(_):
    from labcore.flalgos.config import FLConfig
    from labcore.flalgos.simulation import cache_dir, run

    cfg = FLConfig(task="quadratic", rounds=3)
    run(cfg)
    return cache_dir() / cfg.key(), ("history", "clients", "ledger"), cfg.to_dict()


def _sttfedrec(_):
    from labcore.sttfedrec.config import STTConfig
    from labcore.sttfedrec.frameworks import cache_dir, run

    cfg = STTConfig(synthetic_users=60, synthetic_items=80, n_features=128, clients_per_round=6, eval_users=0,
                    rounds=2)
    run(cfg)
    return cache_dir() / cfg.key(), ("history", "ledger"), cfg.to_dict()


def _fellrec(_):
    from labcore.fellrec.experiments import base
    from labcore.fellrec.federated import cache_dir, run

    cfg = base("smoke", method="fedavg", rounds=1)
    run(cfg)
    return cache_dir() / "runs" / cfg.key(), ("clients", "rounds", "ledger"), cfg.to_dict()


def _gist(_):
    from labcore.gist.config import GistConfig
    from labcore.gist.experiments import cache_dir, train_one

    cfg = GistConfig(graph="synthetic", subnets=2, epochs=2)
    train_one(cfg)
    return cache_dir() / cfg.key(), ("curve",), cfg.to_dict()


def _completion(_):
    from labcore.completion.config import CompletionConfig
    from labcore.completion.harness import cache_dir, run

    cfg = CompletionConfig(n=40, m=40, rank=2, share=0.5, max_iters=5, log_points=3)
    run(cfg)
    return cache_dir() / cfg.key(), ("log",), cfg.to_dict()


def _sdp(_):
    from labcore.sdp.config import SdpConfig
    from labcore.sdp.run import _folder, build_problem, solve_stored

    cfg = SdpConfig(graph="random", n=30, method="mixing", max_iters=20, cert_every=5)
    solve_stored(build_problem(cfg), cfg)
    return _folder(cfg), ("trace", "V"), cfg.to_dict()


@pytest.mark.parametrize("topic", [_engine, _fair, _flalgos, _sttfedrec, _fellrec, _gist, _completion, _sdp],
                         ids=lambda f: f.__name__.strip("_"))
def test_each_topic_stores_its_run_in_the_one_format(topic, tiny):
    folder, tables, config = topic(tiny)
    frames, meta = load_run(folder, tables)
    assert all(len(frames[n].columns) for n in tables)
    assert meta["config"] == json.loads(json.dumps(config, default=list))  # tuples read back as lists
    assert meta["command"] and "labcore" in meta["versions"]
    assert meta["timing"]["cpu_seconds"] >= 0 and meta["timing"]["seconds"] >= 0


@pytest.mark.parametrize("topic", [_flalgos, _completion, _sdp], ids=lambda f: f.__name__.strip("_"))
def test_a_topics_damaged_run_is_named_and_made_again(topic, tiny):
    folder, tables, _ = topic(tiny)
    first = load_run(folder, tables)[0]
    path = folder / f"{tables[0]}.csv"
    path.write_text(path.read_text() + "0\n")
    with pytest.warns(UserWarning, match=f"{tables[0]}.csv.*recomputing"):
        topic(tiny)
    again = load_run(folder, tables)[0]
    measured = ["t", "wall_s", "seconds", "cert_seconds"]  # seconds measured: the rest is the same numbers
    assert all(first[n].drop(columns=measured, errors="ignore").equals(again[n].drop(columns=measured, errors="ignore"))
               for n in tables)
