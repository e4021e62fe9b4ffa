"""The shared run cache across processes. One trainer per config (labcore/fed/trainer_lock.py): two processes
asking for the same config at once train it once; a waiter resumes what the first stopped; a waiter can be
stopped. The time a run took is stored beside its result, so a card reading a run another process trained knows
its cost."""
import multiprocessing as mp
import threading

import pandas as pd
import pytest
from filelock import FileLock

from conftest import shared_data
from labcore.config import RunConfig
from labcore.fed.engine import run
from labcore.runner.checkpoint import CHECKPOINT
from labcore.runner.lock import LOCK_NAME
from labcore.runner.store import load_timing
from labcore.runtime import default_cache_dir

CFG = dict(method="colr", synthetic_size="tiny", clients_per_round=8, local_epochs=2, batch_size=16, dim=8, rank=2,
           eval_every=10, rank_every=10)


def _train_counting(cache: str, rounds: int, barrier, out) -> None:
    """In a fresh process: wait for the other one, then ask for the config; report the rounds trained here."""
    trained = []
    cfg = RunConfig(rounds=rounds, **CFG)
    barrier.wait()
    res = run(cfg, cache_dir=cache, progress=False, on_round=lambda row: trained.append(row["round"]))
    out.put((len(trained), res.complete, res.table["loss"].tolist()))


def test_two_processes_asking_for_the_same_config_train_it_once(tmp_path):
    rounds = 200  # seconds of training, against the milliseconds between the two processes leaving the barrier
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_train_counting, args=(str(tmp_path), rounds, barrier, out)) for _ in range(2)]
    for p in procs:
        p.start()
    got = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sorted(n for n, _, _ in got) == [0, rounds]  # one trained every round, the other none
    assert all(complete for _, complete, _ in got)
    assert got[0][2] == got[1][2]  # the waiter read the trainer's result
    straight = run(RunConfig(rounds=rounds, **CFG), use_cache=False, progress=False)
    assert got[0][2] == straight.table["loss"].tolist()


def test_a_waiter_resumes_from_where_the_trainer_stopped(tmp_path):
    """Threads of one process (the app's jobs) exclude each other through the same lock file."""
    cfg = RunConfig(rounds=12, **CFG)
    stop_asked, b_waits, go = threading.Event(), threading.Event(), threading.Event()
    asked = []

    def stop_a() -> bool:  # A trains three rounds, then stops once B is waiting for the lock
        asked.append(1)
        if len(asked) <= 3:
            return False
        stop_asked.set()
        go.wait(60)
        return True

    def stop_b() -> bool:
        b_waits.set()
        return False

    results, b_rounds = {}, []
    a = threading.Thread(target=lambda: results.setdefault("a", run(cfg, cache_dir=tmp_path, progress=False,
                                                                     should_stop=stop_a)))
    b = threading.Thread(target=lambda: results.setdefault("b", run(
        cfg, cache_dir=tmp_path, progress=False, should_stop=stop_b, on_round=lambda row: b_rounds.append(row["round"]))))
    a.start()
    assert stop_asked.wait(120)
    b.start()
    assert b_waits.wait(60)  # B asks should_stop only while it waits for the lock (and between its rounds)
    go.set()
    a.join(120), b.join(120)
    assert not results["a"].complete and len(results["a"].table) == 3
    straight = run(cfg, use_cache=False, progress=False)
    assert results["b"].complete and b_rounds == straight.table["round"].tolist()[3:]  # resumed, not from 0
    assert results["b"].table["loss"].tolist() == straight.table["loss"].tolist()
    assert not (tmp_path / cfg.key() / CHECKPOINT).exists()


def test_a_waiter_stopped_before_the_lock_is_free_trains_nothing(tmp_path):
    cfg = RunConfig(rounds=5, **CFG)
    folder = tmp_path / cfg.key()
    folder.mkdir()
    asked = []
    with FileLock(folder / LOCK_NAME):  # held by "another trainer"
        res = run(cfg, cache_dir=tmp_path, progress=False, should_stop=lambda: asked.append(1) or len(asked) >= 2)
    assert len(asked) == 2 and not res.complete and len(res.table) == 0
    assert not (folder / CHECKPOINT).exists() and not (folder / "result.json").exists()
    again = run(cfg, cache_dir=tmp_path, progress=False)  # the lock is free: it trains
    assert again.complete and len(again.table) == 5


# --- the time a run took, stored beside its result -------------------------------------------------------------
def test_a_finished_run_stores_its_timing_and_a_resumed_one_where_it_resumed(tmp_path):
    cfg = RunConfig(rounds=10, **CFG)
    run(cfg, cache_dir=tmp_path, progress=False)
    first = load_timing(tmp_path / cfg.key())
    assert first["resumed_at"] == 0 and first["rounds"] == 10 and first["cpu_clock"] == "process"
    assert first["seconds"] >= 0 and first["cpu_seconds"] >= 0
    other = RunConfig(rounds=10, seed=1, **CFG)
    stops = iter([False] * 4 + [True])
    run(other, cache_dir=tmp_path, progress=False, should_stop=lambda: next(stops))
    assert load_timing(tmp_path / other.key()) is None  # a stopped run has no timing yet
    run(other, cache_dir=tmp_path, progress=False)
    assert load_timing(tmp_path / other.key())["resumed_at"] == 4


def _train_one_in_child(cfg, out) -> None:
    from labcore.figures.runs import _train_one

    out.put(_train_one(cfg)[1])


@pytest.mark.skipif(shared_data() is None, reason="needs $LABCORE_DATA (ML-100K)")
def test_a_card_reading_a_run_another_process_trained_gets_that_process_timing(monkeypatch):
    from labcore.figures import runs as R

    cfg = RunConfig(dataset="ml-100k", method="colr", rounds=2, clients_per_round=16, dim=8, rank=2, eval_every=2,
                    rank_every=0)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_train_one_in_child, args=(cfg, out))  # the same $LABCORE_CACHE as this test
    child.start()
    trained = out.get(timeout=300)
    child.join(60)
    assert trained["cpu_source"] == "measured"
    res, read = R._train_one(cfg)
    assert res.cached and read["cpu_source"] == "stored" and read["resumed_at"] == 0
    assert trained["seconds"] >= read["seconds"] - 0.1  # the child's clock ran around the stored rounds' clock
    # a stored time fills a gap in results/run_times.csv but never replaces a time logged there
    monkeypatch.setattr(R, "RUN_SECONDS", {cfg.key(): read, "other": {**read, "key": "other"}})
    folder = default_cache_dir().parent / "results"
    folder.mkdir()
    logged = pd.DataFrame([{**trained, "seconds": 123.4}])
    logged.to_csv(folder / R.RUN_TIMES_FILE, index=False)
    times = R.run_times(folder).set_index("key")
    assert times.loc[cfg.key(), "seconds"] == 123.4 and times.loc["other", "seconds"] == read["seconds"]
    # ... unless the stored one is of a later training: the run was made again from an empty cache
    monkeypatch.setattr(R, "RUN_SECONDS", {cfg.key(): {**read, "date": "2999-01-01T00:00:00Z"}})
    assert R.run_times(folder).set_index("key").loc[cfg.key(), "seconds"] == read["seconds"]
